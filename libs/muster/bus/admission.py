"""What a reader admits from the bus: one check, the same for every reader.

A message is admitted when it decodes as an envelope, every event's type may
travel on the message's subject (``muster.subjects.EVENT_TYPES``), and every
value is within ``muster.bounds``, and on a machine agent's own subject
(``<prefix>.pods.<pool>.<node>``, ``<prefix>.nodes.<pool>.<node>``) every
event names that node and that pool: a login allowed one node's subjects
speaks for that node only. Anything else is ``Refused`` with a reason
naming the field, or the type and the subject: folds, durable consumers and
the projector dead-letter it, and nobody applies or projects any part of it.
Whatever the bytes, admitting them raises nothing but ``Refused``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import msgspec

from muster import bounds
from muster.events import (
    EVENT_TYPES,
    Event,
    NodeRegistered,
    NodeRemoved,
    NodeUpdated,
    decode_envelope,
    encode_envelope,
    event_type,
)
from muster.subjects import Subjects, node_token

# A NUL character, written the only way JSON can carry it: `\u0000` after an even number of backslashes
# (an odd number would make the backslash before `u` literal text).
_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


class Refused(ValueError):
    """A message no reader may apply; the message says why, naming the field or the type."""


@lru_cache(maxsize=64)
def _classes(allowed: frozenset[str]) -> frozenset[type]:
    """The event classes whose tags are ``allowed``."""
    return frozenset(t for t in EVENT_TYPES if t.__struct_config__.tag in allowed)


def check_events(
    subjects: Subjects, subject: str, events: Sequence[Event], *, nesting_bounded: bool = False
) -> None:
    """Raise ``Refused`` unless every event may travel on ``subject`` and is within bounds.

    ``nesting_bounded``: the caller knows that no free-form document of ``events`` nests past
    ``bounds.MAX_NESTING`` (``bounds.check``)."""
    allowed = subjects.allowed_types(subject)
    # Every reader admits every message: the classes are compared in one pass of C, and only a
    # message carrying a foreign type is walked to name it.
    if not _classes(allowed).issuperset(map(type, events)):
        _refuse_foreign(subject, allowed, events)
    if (pool_and_node := subjects.pool_and_node(subject)) is not None:
        _refuse_other_node(subject, *pool_and_node, events)
    try:
        bounds.check(events, nesting_bounded=nesting_bounded)
    except bounds.OutOfBounds as exc:
        raise Refused(str(exc)) from None


def _refuse_foreign(subject: str, allowed: frozenset[str], events: Sequence[Event]) -> None:
    for i, event in enumerate(events):
        name = event_type(event)
        if name not in allowed:
            raise Refused(f"$.events[{i}]: a {name} may not travel on {subject}")


def _node_field(event: Event) -> tuple[str, str]:
    """The path and value of the field naming the node ``event`` is about."""
    if isinstance(event, NodeRegistered | NodeUpdated):
        return "node.name", event.node.name
    if isinstance(event, NodeRemoved):
        return "name", event.name
    return "node", event.node  # type: ignore[union-attr]


def _pool_field(event: Event) -> tuple[str, str]:
    if isinstance(event, NodeRegistered | NodeUpdated):
        return "node.pool", event.node.pool
    return "pool", event.pool  # type: ignore[union-attr]


def _refuse_other_node(subject: str, pool: str, node: str, events: Sequence[Event]) -> None:
    # Only the types `EVENT_TYPES` lets on a node's subject reach here, and each of them names a node.
    for i, event in enumerate(events):
        path, value = _node_field(event)
        # A token names one node name; `_` is in no node's name, so `a_b` is not `a.b`'s.
        if node_token(value) != node or "_" in value:
            raise Refused(f"$.events[{i}].{path}: {value!r} is not the node of {subject}")
        path, value = _pool_field(event)
        if value != pool:
            raise Refused(f"$.events[{i}].{path}: {value!r} is not the pool of {subject}")


def admit(subjects: Subjects, subject: str, data: bytes) -> list[Event]:
    """The events of the message ``data`` published on ``subject``, or ``Refused``."""
    try:
        events = decode_envelope(data)
    except msgspec.MsgspecError as exc:
        raise Refused(str(exc)) from None
    except RecursionError:
        raise Refused(
            f"nested deeper than the decoder can follow; readers take at most {bounds.MAX_NESTING} levels"
        ) from None
    _check_message(subjects, subject, events, data)
    return events


def encode_admitted(subjects: Subjects, subject: str, events: Sequence[Event]) -> bytes:
    """The envelope of ``events``, encoded once, if every reader of ``subject`` would admit it; else
    ``Refused``, naming the field. A publisher checks what it sends as its readers will, so a message
    they would dead-letter is refused to its sender instead."""
    data = encode_envelope(list(events))
    _check_message(subjects, subject, events, data)
    return data


def _check_message(subjects: Subjects, subject: str, events: Sequence[Event], data: bytes) -> None:
    """Admission of the message ``data`` that encodes ``events``: a reader's check after decoding."""
    if b"\\u0000" in data and _NUL.search(data):
        # Postgres stores no NUL in text: the projection would stop at this message for good.
        raise Refused("a string holds the NUL character (\\u0000), which no reader can store")
    # Only submissions and allocator settings carry free-form documents (every other message skips
    # the look at its bytes); where the bytes show them within bounds, they are not walked again.
    documents = b'"manifests"' in data or b'"config"' in data
    check_events(
        subjects, subject, events, nesting_bounded=documents and json_nests_within(data, _DOCUMENT_LEVELS)
    )


_ENVELOPE_LEVELS = 3
"""Levels of a message above a free-form document: the envelope, its events list, the event."""
_DOCUMENT_LEVELS = bounds.MAX_NESTING + _ENVELOPE_LEVELS
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_STRING = re.compile(rb'"[^"]*"')


def json_nests_within(data: bytes, levels: int) -> bool:
    """Whether the valid JSON text ``data`` nests objects and arrays at most ``levels`` deep (its
    outermost value is level 1); False also when it cannot tell cheaply.

    A reader admits every message, and walking a submission's decoded manifests to bound their
    nesting costs more than grouping some of them: on the bytes, it is a few passes of C over the
    brackets alone. Where this says True, walking the documents would find them within bounds too.
    """
    if b"\\" in data:
        # An escaped backslash, then an escaped quote: what is left of each escape is no quote.
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Quotes now open and close strings by turns: keep brackets and quotes, then drop the strings
    # (two quotes side by side close one string and open the next, with no bracket between).
    text = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in text:
        text = _STRING.sub(b"", text)
    # Each pass takes away the innermost pairs (marked first, so that no pass takes two levels).
    for _ in range(levels):
        if not text:
            return True
        marked = text.replace(b"[]", b"x").replace(b"{}", b"x")
        if marked == text:
            return False  # not brackets that pair up: let the walk decide
        text = marked.replace(b"x", b"")
    return not text
