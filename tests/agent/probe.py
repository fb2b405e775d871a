"""What a test pod runs: records what it was given, holds a lock while it runs, then sleeps.

    python probe.py OUT_DIR SECONDS [EXIT_CODE]

Appends JSON lines to OUT_DIR/events.jsonl: ``start`` (its muster variables,
and ``twice`` if another process of the same pod held the lock, i.e. ran
at the same time), ``sigterm`` when asked to stop, ``end`` when done.
"""

import fcntl
import json
import os
import signal
import sys
import time

VARS = ("MUSTER_JOB", "MUSTER_POD_INDEX", "MUSTER_NODE", "CUDA_VISIBLE_DEVICES", "MUSTER_GPU_FRACTION", "RANK",
        "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PROBE_EXTRA")  # fmt: skip


def record(out: str, **fields) -> None:
    fields.update(
        pid=os.getpid(), t=time.time(), job=os.environ["MUSTER_JOB"], pod=int(os.environ["MUSTER_POD_INDEX"])
    )
    with open(os.path.join(out, "events.jsonl"), "a") as f:
        f.write(json.dumps(fields) + "\n")


def main() -> int:
    out, seconds = sys.argv[1], float(sys.argv[2])
    code = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    # Held for the whole run: the kernel drops it only when the process is gone.
    lock = open(os.path.join(out, f"{os.environ['MUSTER_JOB']}-{os.environ['MUSTER_POD_INDEX']}.lock"), "w")  # noqa: SIM115
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        twice = False
    except OSError:
        twice = True

    def on_term(*_):
        record(out, event="sigterm")
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_term)
    record(out, event="start", twice=twice, cwd=os.getcwd(), env={k: os.environ.get(k) for k in VARS})
    print(f"hello from rank {os.environ['RANK']}", flush=True)
    time.sleep(seconds)
    record(out, event="end")
    return code


if __name__ == "__main__":
    sys.exit(main())
