"""The ``muster`` command: one module per subcommand, registered in ``main``."""
