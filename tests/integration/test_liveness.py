"""A process's presence on NATS (``muster.liveness``): gone once it dies, never while it is only slow."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from muster import liveness
from muster.bus import NatsBus

from tests.polling import wait_until

pytestmark = [pytest.mark.nats]

TIMEOUT = 0.5


@pytest.fixture
async def nc(endpoints):
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    yield bus.nc
    await bus.close()


async def test_an_instance_that_answers_is_not_gone(nc, endpoints):
    subject = endpoints.subjects.alive("default", "a1")
    await liveness.answer_probes(nc, subject)
    assert not await liveness.gone(nc, subject, TIMEOUT)


async def test_nobody_ever_answering_is_gone(nc, endpoints):
    assert await liveness.gone(nc, endpoints.subjects.alive("default", "never-started"), TIMEOUT)


async def test_an_instance_too_busy_to_answer_is_not_gone(nc, endpoints):
    subject = endpoints.subjects.alive("default", "busy")
    await nc.subscribe(subject)  # subscribed, never answering: a holder stuck in a long cycle
    assert not await liveness.gone(nc, subject, TIMEOUT)


async def test_a_killed_process_is_gone_as_soon_as_its_connection_closes(nc, endpoints):
    subject = endpoints.subjects.alive("default", "killed")
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from muster import liveness
        from muster.bus import NatsBus
        from muster.subjects import Subjects

        async def main():
            bus = await NatsBus.connect({endpoints.nats_url!r}, Subjects({endpoints.prefix!r}), service="test")
            await liveness.answer_probes(bus.nc, {subject!r})
            await bus.nc.flush()
            print("answering", flush=True)
            await asyncio.Event().wait()

        asyncio.run(main())
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=os.environ.copy())
    try:
        assert (await asyncio.to_thread(child.stdout.readline)).strip() == b"answering"
        assert not await liveness.gone(nc, subject, TIMEOUT)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert await wait_until(lambda: liveness.gone(nc, subject, TIMEOUT), what="the probe finding it gone")
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
