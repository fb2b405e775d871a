"""A reader bounds a message's nesting from its bytes where it can, and finds exactly what walking
the decoded documents finds (``bounds.within_nesting``): the same messages admitted, the same refused."""

from __future__ import annotations

import random

import msgspec
import pytest
from muster.bounds import MAX_NESTING, within_nesting
from muster.bus.admission import Refused, admit, json_nests_within
from muster.events import WorkloadSubmitted, encode_envelope
from muster.subjects import Subjects

S = Subjects("muster")
# Characters that look like structure inside strings: brackets, quotes, escapes, and what is left
# of an escape once its backslash is taken away.
TRICKY = ["[", "]", "{", "}", '"', "\\", '\\"', "\\\\", '""', "x", "\n", "é", "a"]


def nested(levels: int, inner: object = 1) -> object:
    value = inner
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


def random_document(rng: random.Random, depth: int = 0, deepest: int = 8) -> object:
    def text() -> str:
        return "".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 6)))

    roll = rng.random()
    if depth >= deepest or roll < 0.25:
        return text()
    if roll < 0.6:
        return [random_document(rng, depth + 1, deepest) for _ in range(rng.randint(0, 3))]
    return {text(): random_document(rng, depth + 1, deepest) for _ in range(rng.randint(0, 3))}


def test_the_bytes_tell_the_depth_a_walk_of_the_decoded_value_finds():
    rng = random.Random(24)
    for _ in range(3000):
        value = random_document(rng, deepest=rng.randint(1, 9))
        data = msgspec.json.encode(value)
        for levels in range(10):
            assert json_nests_within(data, levels) == within_nesting(value, levels), (data, levels)


@pytest.mark.parametrize(
    "text",
    ['["]"]', '[["[[[[["]]', '{"a\\"[": ["\\\\", "]"]}', '["\\\\\\"]]"]', '[{"k": "}{"}, "x"]', '""'],
)
def test_brackets_quotes_and_escapes_inside_strings_are_no_structure(text):
    value = msgspec.json.decode(text.encode())
    for levels in range(4):
        assert json_nests_within(text.encode(), levels) == within_nesting(value, levels)


def submission(manifest: object) -> bytes:
    return encode_envelope([WorkloadSubmitted(uid="u", manifests=[manifest])])


def test_a_submission_at_the_limit_is_admitted_and_one_level_past_it_refused():
    # The limit counts the manifests list as level 1 and the manifest as level 2.
    assert admit(S, S.workloads, submission({"spec": nested(MAX_NESTING - 2)}))
    with pytest.raises(Refused, match=r"manifests: nested deeper than the limit of 64 levels"):
        admit(S, S.workloads, submission({"spec": nested(MAX_NESTING - 1)}))


def test_strings_full_of_brackets_do_not_make_a_shallow_submission_deep():
    manifest = {"metadata": {"name": "[" * 200, "labels": {"a": "]" * 200 + '\\"{' * 100}}}
    assert admit(S, S.workloads, submission(manifest))
