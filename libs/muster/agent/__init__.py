"""``muster agent``: runs the pods bound to one real machine as processes.

``plan`` is the pure part (what to start, stop and report, given the log and
the processes); ``procs`` and ``shim`` are process I/O; ``machine`` finds the
machine's resources; ``runtime`` wires them to the bus; ``logs`` is the
request/reply protocol ``muster logs`` reads pod output through.
"""
