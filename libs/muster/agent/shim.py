"""The process between the agent and one pod's command.

    python -I .../muster/agent/shim.py AGENT_PID EXIT_FILE [--user UID:GID] [--cwd DIR] -- COMMAND... < ENV

It needs nothing but the standard library, so it runs as a plain script in
isolated mode, with an empty environment of its own. It reads the command's
whole environment (see ``muster.agent.sandbox``) as one JSON object on its
standard input: what the command gets is exactly that, with nothing the
interpreter adds to its own (it sets ``LC_CTYPE`` where the locale is C).
It leads the pod's process group, runs the command in it, and

* runs the command as ``--user`` (an agent running as root asks for an
  unprivileged one) in ``--cwd``, entered as that user: a folder the user
  may not enter is an error, not a way in;
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
import json
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_AGENT_GONE = signal.SIGUSR1
CANNOT_START = 127
USAGE = "usage: shim.py AGENT_PID EXIT_FILE [--user UID:GID] [--cwd DIR] -- COMMAND... < ENV_JSON"


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


def parse(argv: list[str]) -> tuple[int, str, dict[str, str], list[str]]:
    """(agent pid, exit file, options, command); raises ValueError on a malformed line."""
    if "--" not in argv or argv.index("--") < 2 or argv.index("--") == len(argv) - 1:
        raise ValueError(USAGE)
    split = argv.index("--")
    flags = argv[2:split]
    if len(flags) % 2 or any(f not in ("--user", "--cwd") for f in flags[::2]):
        raise ValueError(USAGE)
    return int(argv[0]), argv[1], dict(zip(flags[::2], flags[1::2], strict=True)), argv[split + 1 :]


def _child_setup(cwd: str | None):
    """What the command's process does between fork and exec, once it runs as its own user."""

    def setup() -> None:
        # The command gets default dispositions, whatever the shim ignores.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if cwd is None:
            return
        try:
            os.chdir(cwd)
        except OSError as exc:
            os.write(2, f"muster agent: cannot enter {cwd} as uid {os.getuid()}: {exc.strerror}\n".encode())
            os._exit(CANNOT_START)

    return setup


def main(argv: list[str]) -> int:
    try:
        agent_pid, exit_file, options, command = parse(argv)
        environment = json.load(sys.stdin)
    except ValueError:
        print(USAGE, file=sys.stderr)
        return 2
    _arm_parent_death(agent_pid)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    user = {}
    if "--user" in options:
        uid, _, gid = options["--user"].partition(":")
        user = {"user": int(uid), "group": int(gid), "extra_groups": []}
    try:
        child = subprocess.Popen(
            command,
            env=environment,
            stdin=subprocess.DEVNULL,
            preexec_fn=_child_setup(options.get("--cwd")),
            **user,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"muster agent: cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
        write_exit(exit_file, CANNOT_START)
        return CANNOT_START
    code = child.wait()
    write_exit(exit_file, code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
