"""The share book keeps each queue's figures as they change and integrates them lazily; a naive oracle
recomputes every figure from scratch at every step and integrates every queue every step. On random
trees and random histories, both agree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from muster.report.book import ShareBook
from muster.report.shares import QueueTree, moment

QUOTAS = st.sampled_from([-1.0, 0.0, 1.0, 2.0, 4.0])


@st.composite
def trees(draw) -> QueueTree:
    n = draw(st.integers(1, 6))
    rows = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        rows.append((f"q{i}", None if parent is None else f"q{parent}", draw(QUOTAS)))
    return QueueTree.of(rows)


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["used", "waiting", "capacity", "fair"]),
        st.integers(0, 5),
        st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0]),
        st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    ),
    max_size=40,
)


def _naive_rates(tree, own_used, own_waiting, capacity, fair):
    m = moment(tree, own_used, own_waiting, capacity)
    return {
        q: (m.used[q], m.quota[q], fair.get(q, 0.0), m.borrowed[q], m.lent[q], 1.0 if q in m.starved else 0.0)
        for q in tree.order
    }


@settings(max_examples=100, deadline=None)
@given(trees(), STEPS)
def test_the_book_integrates_what_recomputing_everything_at_every_step_integrates(tree, steps):
    book = ShareBook()
    book.set_queues(tree)
    book.set_capacity(8.0)
    book.move_to(0.0)
    own_used: dict[str, float] = {}
    own_waiting: dict[str, int] = {}
    fair: dict[str, float] = {}
    capacity, now = 8.0, 0.0
    naive = dict.fromkeys(tree.order, (0.0,) * 6)
    for kind, i, amount, dt in steps:
        rates = _naive_rates(tree, own_used, own_waiting, capacity, fair)
        naive = {q: tuple(a + r * dt for a, r in zip(naive[q], rates[q], strict=True)) for q in tree.order}
        now += dt
        book.move_to(now)
        q = tree.order[i % len(tree.order)]
        if kind == "used" and own_used.get(q, 0.0) + amount >= 0:
            own_used[q] = own_used.get(q, 0.0) + amount
            book.add_used(q, amount)
        elif kind == "waiting" and own_waiting.get(q, 0) + int(amount) >= 0:
            own_waiting[q] = own_waiting.get(q, 0) + int(amount)
            book.add_waiting(q, int(amount))
        elif kind == "capacity":
            capacity = max(0.0, capacity + 2 * amount)
            book.set_capacity(capacity)
        elif kind == "fair":
            fair[q] = abs(amount)
            book.set_fair_share(q, abs(amount))
    book.close()
    for q in tree.order:
        acc = book.integrals.get(q)
        got = (
            (0.0,) * 6
            if acc is None
            else (acc.used, acc.quota, acc.fair_share, acc.borrowed, acc.lent, acc.below_quota)
        )
        assert got == pytest.approx(naive[q], abs=1e-6), q
