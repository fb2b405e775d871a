"""Nearest-name suggestions: a typo gets the name meant; a name like nothing known gets none."""

from __future__ import annotations

from muster.cli.suggest import did_you_mean, nearest, suggestion

QUEUES = ["default-queue", "team-a", "team-b", "research"]


def test_a_transposed_letter_finds_the_name_meant():
    assert nearest("defualt-queue", QUEUES) == "default-queue"
    assert nearest("stauts", ["status", "submit", "simulate"]) == "status"


def test_a_name_like_nothing_known_gets_no_suggestion():
    assert nearest("nosuch-queue", QUEUES) is None
    assert did_you_mean("nosuch-queue", QUEUES) == ""


def test_case_does_not_count_against_a_match_and_the_known_spelling_is_offered():
    assert nearest("RESEARCH", QUEUES) == "research"


def test_the_answer_does_not_depend_on_the_order_names_came_in():
    names = ["train-b", "train-a"]
    assert nearest("train-", names) == nearest("train-", list(reversed(names))) == "train-a"


def test_nothing_known_means_nothing_suggested():
    assert nearest("anything", []) is None
    assert suggestion("anything", [], "the queues there are") == ""


def test_did_you_mean_quotes_the_name_meant():
    assert did_you_mean("team_a", QUEUES) == '; did you mean "team-a"?'


def test_with_nothing_close_a_few_known_names_are_listed():
    assert suggestion("nosuch-queue", QUEUES, "the queues there are") == (
        "; the queues there are: default-queue, research, team-a, team-b"
    )


def test_with_nothing_close_many_known_names_are_not_listed():
    many = [f"queue-{i:02d}" for i in range(20)]
    assert suggestion("zzz", many, "the queues there are") == ""


def test_a_close_name_is_offered_rather_than_the_list():
    assert suggestion("team-c", QUEUES, "the queues there are") == '; did you mean "team-a"?'
