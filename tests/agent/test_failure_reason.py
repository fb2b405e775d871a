"""A failed pod's reason says how it ended and the last thing it wrote, as a user would look for it."""

from __future__ import annotations

from muster import events as ev
from muster.agent.plan import Local
from muster.agent.procs import LAST_LINE_CHARS, Processes
from muster.agent.sandbox import PodFolders

from tests.agent.test_plan import NODE, act, bind, command_job, log_of


def processes(tmp_path) -> Processes:
    procs = Processes(tmp_path / "agent", "n", PodFolders(tmp_path / "pods", None))
    procs.folders.prepare()
    return procs


async def test_the_last_line_a_process_wrote_is_what_its_log_ends_with(tmp_path):
    procs = processes(tmp_path)
    script = "import sys; print('epoch 1', flush=True); print('RuntimeError: CUDA error: out of memory', file=sys.stderr); print()"
    proc = await procs.start(("j", 0), 1, ["python3", "-c", script], {}, {}, None, [], 0.0)
    assert await proc.wait() == 0
    assert procs.last_line(("j", 0)) == "RuntimeError: CUDA error: out of memory"


async def test_a_long_last_line_is_cut_short(tmp_path):
    procs = processes(tmp_path)
    proc = await procs.start(("j", 0), 1, ["python3", "-c", "print('x' * 5000)"], {}, {}, None, [], 0.0)
    assert await proc.wait() == 0
    line = procs.last_line(("j", 0))
    assert len(line) == LAST_LINE_CHARS and line.endswith("…")


def test_a_pod_without_a_log_has_no_last_words(tmp_path):
    assert processes(tmp_path).last_line(("never", 0)) == ""


def test_a_failed_pod_is_reported_with_its_exit_code_and_last_words():
    log = log_of(command_job(), bind(), ev.PodBound(job="train", pod=0, node=NODE, gpus=[0]))
    ended = {
        ("train", 0): Local(key=("train", 0), seq=2, gpus=(0,), share=0.0, exit_code=3, last_words="boom")
    }
    (failed,) = act(log, ended)
    assert (failed.event.exit_code, failed.event.reason) == (3, "exited with code 3: boom")
