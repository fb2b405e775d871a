"""How many NATS servers keep the system's streams: one unless MUSTER_STREAM_REPLICAS says more."""

from __future__ import annotations

import pytest
from muster.stream_replicas import stream_replicas


def test_a_single_server_is_the_default():
    assert stream_replicas({}) == 1


def test_the_variable_sets_the_replicas():
    assert stream_replicas({"MUSTER_STREAM_REPLICAS": "3"}) == 3


@pytest.mark.parametrize("raw", ["0", "6", "three", "-1"])
def test_a_value_jetstream_cannot_keep_is_refused_naming_the_variable(raw):
    with pytest.raises(ValueError, match="MUSTER_STREAM_REPLICAS"):
        stream_replicas({"MUSTER_STREAM_REPLICAS": raw})
