"""The binder's image: restored anywhere in a log, folding on gives what folding from the start gives."""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import Delivery
from muster.fleet.sim import SimFleet
from muster.snapshotting import ImageError
from muster.subjects import Subjects

from services.binder import snapshot as codec
from services.binder.handlers import BinderHandlers
from tests.unit.snapshots.logs import digests_under_two_hash_seeds, golden

S = Subjects("muster")
SUBJECTS = [S.nodes("*"), S.podgroups, S.decisions("*"), S.pods("*")]


def new_binder() -> BinderHandlers:
    return BinderHandlers(bus=None, subjects=S, fleet=SimFleet(), clock=lambda: 0.0)


def binder_messages():
    return golden(SUBJECTS)


@pytest.fixture(scope="module")
def messages():
    return binder_messages()


def fold(binder: BinderHandlers, messages) -> BinderHandlers:
    deliveries = [Delivery(subject=m.subject, seq=m.seq, events=m.events) for m in messages]
    if deliveries:
        asyncio.run(binder.handle(deliveries, live=False))
    return binder


def restored_at(messages, k: int) -> BinderHandlers:
    binder = new_binder()
    image = codec.image_of(fold(new_binder(), messages[:k]))
    codec.restore_image(binder, image.data, image.digest)
    return binder


@pytest.mark.parametrize("split", [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])
def test_a_binder_restored_mid_log_ends_with_the_image_of_one_from_the_start(messages, split):
    k = int(len(messages) * split)
    restored = fold(restored_at(messages, k), messages[k:])
    assert codec.image_of(restored) == codec.image_of(fold(new_binder(), messages))


@pytest.mark.parametrize("split", [0.2, 0.4, 0.6])
def test_a_binder_restored_mid_log_confirms_what_one_from_the_start_confirms(messages, split):
    # Cut short there, the log leaves pods running: far enough on, both complete them alike.
    k = int(len(messages) * split)
    whole = fold(new_binder(), messages[:k])
    restored = restored_at(messages, k)
    confirmed = whole.fleet.step(1e12)
    assert confirmed and restored.fleet.step(1e12) == confirmed
    assert restored.fleet.bound() == whole.fleet.bound()


def test_a_binder_restored_with_binds_outstanding_answers_them_as_one_from_the_start(messages):
    cuts = [k for k in range(len(messages)) if fold(new_binder(), messages[:k]).fleet.has_work()]
    assert cuts
    for k in cuts:
        whole, restored = fold(new_binder(), messages[:k]), restored_at(messages, k)
        assert restored.fleet.step(1e12) == whole.fleet.step(1e12)


def test_the_image_carries_the_watermark_the_fence_and_the_binds_to_reject(messages):
    binder = fold(new_binder(), messages)
    binder.fence.epochs["default"] = 7
    binder.to_reject[("j", 0, 3)] = next(
        e for m in messages for e in m.events if type(e).__name__ == "BindRequested"
    )
    binder.rejected[("default", 3)] = 12
    restored = new_binder()
    codec.restore_image(restored, codec.image_of(binder).data)
    assert restored.applied_seq == binder.applied_seq == messages[-1].seq
    assert restored.fence.epochs == {"default": 7}
    assert list(restored.to_reject.values()) == list(binder.to_reject.values())
    assert restored.rejected == {("default", 3): 12}


def test_rejections_counted_by_this_process_are_not_digested(messages):
    binder = fold(new_binder(), messages)
    before = codec.digest_of(binder)
    binder.rejected[("default", 1)] = 3
    assert codec.digest_of(binder) == before


def test_a_fleet_that_confirmed_and_one_that_only_folded_have_the_same_digest(messages):
    # The live binder steps its fleet before its confirmations come back; once they have, it holds
    # what a binder that only read the log holds (completions it popped from its heap included).
    k = len(messages) // 2
    live = fold(new_binder(), messages[:k])
    assert live.fleet.step(1e12)
    reading = fold(new_binder(), messages)
    live = fold(live, messages[k:])
    live.fleet.step(1e12)
    reading.fleet.step(1e12)
    assert codec.digest_of(live) == codec.digest_of(reading)


def test_every_attribute_is_imaged_or_said_why_not():
    handlers, fleet = vars(new_binder()), vars(SimFleet())
    fence = {"epochs", "refused_elections", "last_refused"}
    imaged = set(codec.BinderImage.__struct_fields__) - fence | {"fence"}
    assert set(handlers) - set(codec.NOT_IMAGED[BinderHandlers]) == imaged
    fleet_fields = {"_" + name for name in codec.FleetImage.__struct_fields__}
    assert set(fleet) - set(codec.NOT_IMAGED[SimFleet]) == fleet_fields


def test_bytes_that_are_not_an_image_are_refused_and_leave_the_binder_as_it_was(messages):
    binder = fold(new_binder(), messages[:20])
    before = codec.image_of(binder)
    with pytest.raises(ImageError):
        codec.restore_image(binder, b"\x93not an image")
    with pytest.raises(ImageError, match="digest"):
        codec.restore_image(binder, codec.image_of(new_binder()).data, "0" * 64)
    assert codec.image_of(binder) == before


def test_the_digest_does_not_depend_on_the_process_string_hashing():
    script = (
        "from tests.unit.binder.test_snapshot_image import binder_messages, fold, new_binder\n"
        "from services.binder import snapshot as codec\n"
        "print(codec.digest_of(fold(new_binder(), binder_messages())))\n"
    )
    assert len(digests_under_two_hash_seeds(script)) == 1


def test_pods_handed_over_running_survive_a_restore_and_are_answered_alike(messages):
    from muster import events as ev
    from muster.replay import LoggedMessage

    node = next(e.node.name for m in messages for e in m.events if isinstance(e, ev.NodeRegistered))
    last = messages[-1].seq
    handed = [
        # One pod of a group the log has not made yet (it waits), one of a group it is about to make.
        LoggedMessage(
            last + 1,
            S.pods("default"),
            [
                ev.AdoptPods(pods=[ev.AdoptedPod(job="later", pod=0, node=node, gpus=[0], started_at=5.0)]),
                ev.AdoptPods(pods=[ev.AdoptedPod(job="known", pod=0, node=node, gpus=[1], started_at=6.0)]),
            ],
        ),
        LoggedMessage(
            last + 2,
            S.podgroups,
            [ev.PodGroupCreated(name="known", queue="q", pods=[ev.PodSpec(resources=ev.Resources(gpu=1.0))])],
        ),
    ]
    whole = fold(new_binder(), [*messages, *handed])
    restored = restored_at([*messages, *handed], len(messages) + 2)
    assert codec.image_of(restored) == codec.image_of(whole)
    assert restored.fleet.step(1e12) == whole.fleet.step(1e12)
