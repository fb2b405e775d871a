"""``muster agent --taint KEY[=VALUE]:EFFECT`` registers a tainted node, as kubectl spells a taint."""

from __future__ import annotations

import re

import pytest
from muster import events as ev
from muster.agent.machine import Gpus, node_spec
from muster.cli.agent_cmd import parse_taints
from muster.cli.common import CliError


def test_a_taint_with_and_without_a_value_reads_as_kubectl_writes_it():
    assert parse_taints(["gpu=reserved:NoSchedule", "maintenance:NoExecute"]) == [
        ev.Taint(key="gpu", value="reserved", effect="NoSchedule"),
        ev.Taint(key="maintenance", effect="NoExecute"),
    ]


@pytest.mark.parametrize(
    ("item", "why"),
    [("gpu=reserved", "expected KEY[=VALUE]:EFFECT"), ("gpu:Sometimes", "expected one of NoSchedule")],
)
def test_a_malformed_taint_is_refused_naming_the_flag(item, why):
    with pytest.raises(CliError, match=f"^--taint.*{re.escape(why)}"):
        parse_taints([item])


def test_the_agent_node_carries_its_taints():
    taint = ev.Taint(key="gpu", value="reserved", effect="NoSchedule")
    spec = node_spec(
        "box", pool="default", labels={}, gpus=Gpus(1, 0), cpu=1000, memory=2**30, taints=[taint]
    )
    assert spec.taints == [taint]


def test_a_taint_key_kubernetes_would_refuse_is_refused_naming_the_flag():
    with pytest.raises(ValueError, match="^--taint: "):
        node_spec(
            "box", pool="default", labels={}, gpus=Gpus(1, 0), cpu=1000, memory=2**30,
            taints=[ev.Taint(key="bad key", effect="NoSchedule")],
        )  # fmt: skip
