"""What a tenant may read, tried as an attacker would on a real secured NATS: its own subjects only.

Another tenant's manifests, commands and env travel on ``workloads.<tenant>.<queue>`` and
``podgroups``; a tenant's login may create only consumers filtered to its own subjects
(``answers.<tenant>`` and its queues' request subjects), and the server refuses the rest.
"""

from __future__ import annotations

import asyncio
import json

import nats
import pytest
from muster.events import PodGroupCreated, PodSpec, RequestAnswered, WorkloadSubmitted
from muster.runtime.security import DURABLE_CONSUMERS, nats_connect_options
from muster.runtime.settings import Endpoints
from muster.sdk import Client
from muster.tenants import TenantLogin
from nats.errors import TimeoutError as NatsTimeoutError

from tests.security import test_tenants
from tests.security.conftest import SUBJECTS, LoginsServer
from tests.security.test_tenants import TENANTS

pytestmark = pytest.mark.nats

secured = test_tenants.secured
"""The tenants' module's server: the system's logins and two tenants."""

READER, OTHER = TENANTS
SECRET = {"TOKEN": "team-b-only"}
STREAM = SUBJECTS.stream


@pytest.fixture(scope="module")
def others_work(secured: LoginsServer) -> None:
    """The other tenant's submission, its group and the podgrouper's answer to it, all in the stream."""
    asyncio.run(publish_others_work(secured))


async def publish_others_work(secured: LoginsServer) -> None:
    manifest = {"kind": "Command", "metadata": {"name": "secret-b"}, "spec": {"env": SECRET}}
    other = await secured.bus(OTHER.name)
    podgrouper = await secured.bus("podgrouper")
    try:
        await other.publish(
            SUBJECTS.tenant_workloads(OTHER.name, OTHER.queues[0]),
            [WorkloadSubmitted(uid="secret-b", manifests=[manifest])],
            msg_id="others:submit",
        )
        group = PodGroupCreated(name="secret-b", queue="qb", owner=OTHER.name, pods=[PodSpec(env=SECRET)])
        await podgrouper.publish(SUBJECTS.podgroups, [group], msg_id="others:group")
        answered = RequestAnswered(request="WorkloadSubmitted", uid="secret-b", jobs=["secret-b"])
        await podgrouper.publish(SUBJECTS.answers(OTHER.name), [answered], msg_id="others:answer")
        mine = RequestAnswered(request="WorkloadSubmitted", uid="mine", jobs=["mine"])
        await podgrouper.publish(SUBJECTS.answers(READER.name), [mine], msg_id="reader:answer")
    finally:
        await other.close()
        await podgrouper.close()


async def read_as(secured: LoginsServer, who: str, subjects: list[str]) -> list:
    bus = await secured.bus(who)
    try:
        return [e async for d in bus.read(subjects) for e in d.events]
    finally:
        await bus.close()


async def test_a_tenant_reads_the_answers_to_its_own_requests(secured, others_work):
    answers = await read_as(secured, READER.name, [SUBJECTS.answers(READER.name)])
    assert ("mine", ["mine"]) in [(a.uid, a.jobs) for a in answers]
    assert "secret-b" not in [a.uid for a in answers]


async def test_a_tenant_reads_its_own_requests_subject(secured, others_work):
    own = SUBJECTS.tenant_workloads(READER.name, READER.queues[0])
    assert await read_as(secured, READER.name, [own]) == []


@pytest.mark.parametrize(
    "subjects",
    [
        [SUBJECTS.podgroups],  # every team's groups, env included
        [SUBJECTS.tenant_workloads(OTHER.name, OTHER.queues[0])],  # another team's manifests
        [SUBJECTS.tenant_workloads()],  # every team's requests
        [SUBJECTS.answers(OTHER.name)],  # another team's answers
        [SUBJECTS.answers()],
        [],  # the whole stream, `<prefix>.>`
    ],
    ids=["podgroups", "other-workloads", "all-workloads", "other-answers", "all-answers", "everything"],
)
async def test_a_tenant_may_not_read_what_is_not_its_own(secured, others_work, subjects):
    with pytest.raises(NatsTimeoutError):
        await read_as(secured, READER.name, subjects)


async def tenant_connection(secured: LoginsServer) -> nats.NATS:
    login = secured.login(READER.name)
    return await nats.connect(
        secured.server.url, allow_reconnect=False, **nats_connect_options(secured.server.url, login)
    )


async def api(nc: nats.NATS, subject: str, body: dict) -> dict | None:
    """The JetStream API's answer to ``body`` on ``subject``; None when the server stayed silent
    (a permissions violation)."""
    try:
        reply = await nc.request(subject, json.dumps(body).encode(), timeout=1.0)
    except NatsTimeoutError:
        return None
    return json.loads(reply.data)


def consumer(name: str, **config) -> dict:
    inbox = f"_INBOX.{READER.user}.attack"
    return {
        "stream_name": STREAM,
        "config": {"name": name, "deliver_subject": inbox, "ack_policy": "none", **config},
    }


async def test_a_consumer_filtered_to_the_tenants_own_answers_is_created(secured):
    nc = await tenant_connection(secured)
    try:
        own = SUBJECTS.answers(READER.name)
        created = await api(
            nc, f"$JS.API.CONSUMER.CREATE.{STREAM}.mine.{own}", consumer("mine", filter_subject=own)
        )
    finally:
        await nc.close()
    assert created is not None and "error" not in created, created


@pytest.mark.parametrize(
    ("api_subject", "config"),
    [
        # Its own filter in the API subject, another in the request: the server compares them.
        (f"CONSUMER.CREATE.{STREAM}.x.{SUBJECTS.answers(READER.name)}", {"filter_subject": SUBJECTS.all}),
        (f"CONSUMER.CREATE.{STREAM}.x.{SUBJECTS.answers(READER.name)}", {"filter_subjects": [SUBJECTS.all]}),
        (f"CONSUMER.CREATE.{STREAM}.x.{SUBJECTS.answers(READER.name)}", {}),
        # Another filter in the API subject: refused by its permissions.
        (f"CONSUMER.CREATE.{STREAM}.x.{SUBJECTS.all}", {"filter_subject": SUBJECTS.all}),
        (f"CONSUMER.CREATE.{STREAM}.x.{SUBJECTS.podgroups}", {"filter_subject": SUBJECTS.podgroups}),
        (f"CONSUMER.CREATE.{STREAM}", {"filter_subject": SUBJECTS.all}),
        (f"CONSUMER.CREATE.{STREAM}", {}),
    ],
    ids=["other-filter", "several-filters", "no-filter", "everything", "podgroups", "unnamed", "unfiltered"],
)
async def test_a_consumer_not_filtered_to_the_tenants_own_subject_is_refused(secured, api_subject, config):
    nc = await tenant_connection(secured)
    try:
        answer = await api(nc, f"$JS.API.{api_subject}", consumer("x", **config))
    finally:
        await nc.close()
    assert answer is None or "error" in answer, answer


@pytest.mark.parametrize(
    "api_subject",
    [
        f"STREAM.INFO.{STREAM}",  # with a subjects filter, every subject's name and count
        f"STREAM.MSG.GET.{STREAM}",
        f"DIRECT.GET.{STREAM}",
        f"CONSUMER.LIST.{STREAM}",
    ],
)
async def test_a_tenant_may_not_ask_the_stream_about_its_contents(secured, others_work, api_subject):
    nc = await tenant_connection(secured)
    try:
        answer = await api(nc, f"$JS.API.{api_subject}", {"seq": 1, "subjects_filter": ">"})
    finally:
        await nc.close()
    assert answer is None


@pytest.mark.parametrize("name", DURABLE_CONSUMERS)
async def test_a_tenant_may_not_refilter_a_services_durable_consumer_to_its_own_subject(secured, name):
    podgrouper = await secured.bus("podgrouper")
    try:
        await podgrouper.js.add_consumer(
            STREAM, durable_name=name, filter_subject=SUBJECTS.workloads, ack_policy="explicit"
        )
        before = (await podgrouper.js.consumer_info(STREAM, name)).config
        nc = await tenant_connection(secured)
        try:
            own = SUBJECTS.answers(READER.name)
            hijack = {
                "stream_name": STREAM,
                "config": {**before.as_dict(), "name": name, "filter_subject": own},
            }
            answer = await api(nc, f"$JS.API.CONSUMER.CREATE.{STREAM}.{name}.{own}", hijack)
        finally:
            await nc.close()
        after = (await podgrouper.js.consumer_info(STREAM, name)).config
    finally:
        await podgrouper.close()
    assert answer is None
    assert after.filter_subject == SUBJECTS.workloads


async def test_a_tenants_own_jobs_are_those_its_answers_made_and_did_not_cancel(secured, others_work):
    podgrouper = await secured.bus("podgrouper")
    try:
        for uid, request, jobs in [
            ("c1", "CancelRequested", ["gone"]),
            ("s2", "WorkloadSubmitted", ["gone"]),
        ]:
            answered = RequestAnswered(request=request, uid=uid, jobs=jobs)
            await podgrouper.publish(SUBJECTS.answers(READER.name), [answered], msg_id=f"reader:{uid}")
        refused = RequestAnswered(request="WorkloadSubmitted", uid="s3", error="taken", field="metadata.name")
        await podgrouper.publish(SUBJECTS.answers(READER.name), [refused], msg_id="reader:s3")
        cancelled = RequestAnswered(request="CancelRequested", uid="c4", jobs=["gone"])
        await podgrouper.publish(SUBJECTS.answers(READER.name), [cancelled], msg_id="reader:c4")
    finally:
        await podgrouper.close()
    login = TenantLogin(READER.name, READER.queues, READER.user, READER.password)
    client = Client(await secured.bus(READER.name), Endpoints(nats_url=secured.server.url, pg_dsn=""), login)
    try:
        assert await client.own_jobs() == ["mine"]
    finally:
        await client.close()
