"""A pod group travels with only what differs from its defaults: every service decodes, and Postgres
stores, each group once per reader, so the bytes of fields nobody set are paid many times over. Logs
written when every field was spelled out still read the same."""

from __future__ import annotations

import msgspec
from muster import events as ev
from muster.events import decode_envelope, encode_event


def one_gpu_group() -> ev.PodGroupCreated:
    return ev.PodGroupCreated(
        name="job-1",
        queue="q",
        runtime="simulated",
        pods=[ev.PodSpec(resources=ev.Resources(gpu=1, cpu=1000))],
    )


def test_a_group_on_the_wire_spells_only_fields_that_differ_from_their_defaults():
    wire = msgspec.json.decode(encode_event(one_gpu_group()))
    assert wire == {
        "type": "PodGroupCreated",
        "name": "job-1",
        "queue": "q",
        "runtime": "simulated",
        "pods": [{"resources": {"gpu": 1.0, "cpu": 1000}}],
    }


def test_a_group_with_every_field_spelled_out_reads_as_the_same_group():
    group = one_gpu_group()
    spelled_out = _all_fields(group)
    assert "tolerations" in spelled_out["pods"][0] and "memory" in spelled_out["pods"][0]["resources"]
    assert decode_envelope(msgspec.json.encode({"events": [spelled_out]})) == [group]


def _all_fields(group: ev.PodGroupCreated) -> dict:
    """The group as a log written before defaults were left out holds it: every field, defaults too."""
    out = {f: msgspec.to_builtins(getattr(group, f)) for f in group.__struct_fields__}
    out["pods"] = [
        {
            **{f: msgspec.to_builtins(getattr(pod, f)) for f in pod.__struct_fields__},
            "resources": {f: getattr(pod.resources, f) for f in pod.resources.__struct_fields__},
        }
        for pod in group.pods
    ]
    return {"type": "PodGroupCreated", **out}
