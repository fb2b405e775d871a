"""The process between the agent and one pod's command: ``python -m muster.agent.shim``.

    python -m muster.agent.shim AGENT_PID EXIT_FILE -- COMMAND...

It leads the pod's process group, runs the command in it, and

* when the agent dies (SIGKILL included), kills the whole group, so no pod
  outlives the agent that answers for it: the node monitor will requeue it
  elsewhere, and it must not run twice (Linux: the parent-death signal);
* ignores SIGTERM itself, so the agent's SIGTERM to the group reaches the
  command while the shim stays to record how it ended;
* writes the command's exit status to EXIT_FILE (negative -N: killed by
  signal N) and exits with it, so an agent that restarts can learn the end
  of a pod it did not see finish.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_AGENT_GONE = signal.SIGUSR1


def _on_agent_gone(*_) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _arm_parent_death(agent_pid: int) -> None:
    signal.signal(_AGENT_GONE, _on_agent_gone)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(_AGENT_GONE), 0, 0, 0)
    if os.getppid() != agent_pid:  # the agent died before the signal was armed
        _on_agent_gone()


def write_exit(path: str, code: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{code}\n")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m muster.agent.shim AGENT_PID EXIT_FILE -- COMMAND...", file=sys.stderr)
        return 2
    agent_pid, exit_file, command = int(argv[0]), argv[1], argv[3:]
    _arm_parent_death(agent_pid)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = subprocess.Popen(
            command,
            # The command gets default dispositions, whatever the shim ignores.
            preexec_fn=lambda: (
                signal.signal(signal.SIGTERM, signal.SIG_DFL),
                signal.signal(signal.SIGINT, signal.SIG_DFL),
            ),
        )
    except OSError as exc:
        print(f"muster agent: cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
        write_exit(exit_file, 127)
        return 127
    code = child.wait()
    write_exit(exit_file, code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
