"""`muster status` laid out for a person: queues in tree order with quota and limit, tables fitted to the
terminal with long names cut, never wrapped."""

from __future__ import annotations

import io

import pytest
from muster.cli.columns import ELLIPSIS, ellipsize, fit_widths
from muster.cli.status_cmd import render
from muster.cli.status_view import tree_order
from rich.console import Console


def queues(**parents: str | None) -> dict[str, dict]:
    return {name: {"parent": parent} for name, parent in parents.items()}


def test_each_child_comes_directly_under_its_own_parent_however_the_queues_are_listed():
    # Listed by name, children come before their parents and grandchildren before those.
    tree = queues(
        **{
            "a-leaf": "zz-mid",
            "b-leaf": "aa-root",
            "zz-mid": "aa-root",
            "aa-root": None,
            "m-root": None,
            "y-leaf": "zz-mid",
        }
    )
    assert tree_order(tree) == [
        ("aa-root", 0),
        ("b-leaf", 1),
        ("zz-mid", 1),
        ("a-leaf", 2),
        ("y-leaf", 2),
        ("m-root", 0),
    ]


def test_a_deep_chain_given_leaf_first_is_ordered_root_first_with_growing_depth():
    chain = {f"q{i:02d}": {"parent": f"q{i - 1:02d}" if i else None} for i in range(40)}
    reversed_chain = dict(reversed(list(chain.items())))
    assert tree_order(reversed_chain) == [(f"q{i:02d}", i) for i in range(40)]


def test_a_queue_whose_parent_is_not_shown_heads_its_own_tree():
    assert tree_order(queues(child="gone", other=None)) == [("child", 0), ("other", 0)]


def test_queues_whose_parents_form_a_loop_are_still_listed():
    order = tree_order(queues(a="b", b="a", c=None))
    assert sorted(name for name, _ in order) == ["a", "b", "c"]


def test_a_name_longer_than_its_column_is_cut_with_an_ellipsis():
    assert ellipsize("vision-research", 8) == "vision-" + ELLIPSIS
    assert ellipsize("nlp", 8) == "nlp"
    assert ellipsize("nlp", 3) == "nlp"


def test_columns_keep_their_widths_when_they_fit():
    assert fit_widths([10, 5, 20], [4, 5, 8], 40) == [10, 5, 20]


def test_the_widest_shrinkable_column_gives_way_first_and_none_below_its_minimum():
    assert fit_widths([30, 5, 12], [6, 5, 6], 30) == [13, 5, 12]
    assert fit_widths([30, 5, 30], [6, 5, 6], 30) == [13, 5, 12]
    assert fit_widths([30, 5, 30], [6, 5, 6], 10) == [6, 5, 6]


def test_wrapping_text_gives_way_before_any_name_is_cut():
    wraps = [False, False, True]
    assert fit_widths([20, 20, 60], [6, 6, 30], 100, wraps) == [20, 20, 60]
    assert fit_widths([20, 20, 60], [6, 6, 30], 80, wraps) == [20, 20, 40]
    assert fit_widths([20, 20, 60], [6, 6, 30], 60, wraps) == [15, 15, 30]


LONG = "research-computer-vision-self-supervised-pretraining"
STATE = {
    "queues": {
        "vision": {
            "parent": LONG,
            "fair_share": {"gpu": 4.0},
            "allocated": {"gpu": 2.0},
            "quota": {"gpu": 4.0},
            "limit": {"gpu": None},
        },
        LONG: {
            "parent": "zeta",
            "fair_share": {"gpu": 6.0},
            "allocated": {"gpu": 2.0},
            "quota": {"gpu": 6.0},
            "limit": {"gpu": 12.0},
        },
        "zeta": {
            "parent": None,
            "fair_share": {"gpu": 8.0},
            "allocated": {"gpu": 2.0},
            "quota": {"gpu": 8.0},
        },
        "alpha": {"parent": None, "fair_share": {"gpu": 0.0}, "allocated": {}, "quota": {"gpu": 0.0}},
    },
    "jobs": {
        f"{LONG}-job-{i}": {
            "status": "pending",
            "queue": LONG,
            "pods": [],
            "reason": "gang of 4 pods does not fit: 2 nodes have room for 1 pod each (each pod needs 8 gpu)",
        }
        for i in range(3)
    },
    "nodes": {
        f"node-with-a-rather-long-name-in-rack-{i:02d}": {
            "pool": "default",
            "total": {"gpu": 8.0, "cpu": 96.0},
            "free": {"gpu": 6.0, "cpu": 40.0},
        }
        for i in range(2)
    },
}


def shown(width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(render(STATE))
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [60, 80, 120, 150, 220])
def test_status_fits_the_terminal_width(width):
    assert max(len(line) for line in shown(width)) <= width


NAMES = [*STATE["queues"], *STATE["jobs"], *STATE["nodes"]]


@pytest.mark.parametrize("width", [60, 80, 150])
def test_no_name_wraps_onto_a_second_line(width):
    # A wrapped name would leave its tail in the first cell of a row of its own.
    for line in shown(width):
        first = line.split("│")[1].strip() if line.startswith("│") else ""
        assert not first or any(name.startswith(first.rstrip(ELLIPSIS)) for name in NAMES), line


def test_long_names_are_shown_whole_when_the_terminal_is_wide_enough():
    text = "\n".join(shown(220))
    assert LONG in text and f"{LONG}-job-0" in text and "node-with-a-rather-long-name-in-rack-00" in text
    assert ELLIPSIS not in text


def test_long_names_are_cut_with_an_ellipsis_in_a_narrow_terminal():
    text = "\n".join(shown(80))
    assert LONG not in text
    assert ELLIPSIS in text


def test_queues_are_listed_in_tree_order_each_child_indented_under_its_parent():
    lines = shown(150)
    names = [line.split("│")[1] for line in lines if line.startswith("│")][: len(STATE["queues"])]
    assert [n.rstrip() for n in names] == ["alpha", "zeta", f"  {LONG}", "    vision"]


def test_quota_and_limit_columns_show_set_values_and_a_dash_where_unset():
    lines = shown(150)
    header = next(line for line in lines if line.startswith("┃queue"))
    assert [c.strip() for c in header.strip("┃").split("┃")][-3:] == ["quota", "limit", "cpu"]
    long_row = next(line for line in lines if line.startswith(f"│  {LONG}"))
    vision_row = next(line for line in lines if line.startswith("│    vision"))
    assert [c.strip() for c in long_row.split("│")[-4:-1]] == ["6", "12", "-"]
    assert [c.strip() for c in vision_row.split("│")[-4:-1]] == ["4", "-", "-"]
