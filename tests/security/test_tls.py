"""With MUSTER_NATS_TLS, the embedded NATS speaks TLS with a certificate from its own CA."""

from __future__ import annotations

import ssl

import nats
import pytest
from muster.events import WorkloadSubmitted
from muster.runtime.security import tls_context

from tests.security.conftest import SUBJECTS

pytestmark = pytest.mark.nats


async def test_the_server_url_says_tls(tls_nats):
    assert tls_nats.url.startswith("tls://")


async def test_a_client_trusting_the_generated_ca_connects_and_publishes(tls_nats):
    bus = await tls_nats.bus("framework")
    try:
        seq = await bus.publish(
            SUBJECTS.workloads,
            [WorkloadSubmitted(uid="t/tls", manifests=[], submitted_at=0.0)],
            msg_id="t/tls",
        )
        assert seq > 0
    finally:
        await bus.close()


async def test_a_client_that_does_not_trust_the_ca_is_refused(tls_nats):
    login = tls_nats.login("framework")
    with pytest.raises((ssl.SSLError, nats.errors.Error, OSError)):
        await nats.connect(
            tls_nats.url, user=login.user, password=login.password, tls=ssl.create_default_context(),
            allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2,
        )  # fmt: skip


async def test_a_plain_text_client_is_refused(tls_nats):
    login = tls_nats.login("framework")
    plain = tls_nats.url.replace("tls://", "nats://")
    with pytest.raises((ssl.SSLError, nats.errors.Error, OSError)):
        await nats.connect(
            plain, user=login.user, password=login.password,
            allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2,
        )  # fmt: skip


def test_the_context_trusts_exactly_the_given_ca(tls_nats):
    context = tls_context(tls_nats.ca)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert len(context.get_ca_certs()) == 1
