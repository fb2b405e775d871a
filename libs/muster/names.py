"""What things may be called: Kubernetes' naming rules, in one place.

A name travels far: into subjects, database keys and indexes, file and
folder names on agents, terminals. Kubernetes bounds each kind's names,
and muster takes the same rules for the same kinds:

- a job (KAI's PodGroup), a queue (KAI's Queue) and a node are named as
  Kubernetes names those objects: a DNS-1123 subdomain, at most 253
  characters of lowercase letters, digits, ``-`` and ``.``, each
  dot-separated part starting and ending with a letter or digit;
- a tenant is named as a namespace, which it plays the part of: a DNS-1123
  label, at most 63 of lowercase letters, digits and ``-``, starting and
  ending with a letter or digit (it is one NATS subject token, so no ``.``);
- a node pool is named by a label value (``kai.scheduler/node-pool``): 1 to
  63 of letters, digits, ``-``, ``_`` and ``.``, starting and ending with a
  letter or digit; a label key is an optional DNS subdomain prefix and ``/``
  before a name with the label value's characters (1 to 63).

So no name holds a space, ``/``, a newline, a control or format character
(a right-to-left override) or anything outside ASCII. ``Rule.refusal`` says
what is wrong with a name in words, naming a character by its code point
where printing it would mislead; ``quoted`` shows a name in a message,
escaped and cut short.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

MAX_NAME = 253
"""Characters of a DNS-1123 subdomain: the longest job, queue or node name."""
MAX_LABEL = 63
"""Characters of a DNS-1123 label, a label value, a label key's name part: the longest tenant name."""

_LABEL_PART = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL_PART}(?:\.{_LABEL_PART})*")
_LABEL = re.compile(_LABEL_PART)
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_QUALIFIED = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")

KNOWN = 4096
"""Valid names each rule remembers: queues, pools, tenants and nodes recur in event after event."""
SHOWN = 60
"""Characters of a name a message shows; the rest is counted, not printed."""


@dataclass(frozen=True)
class Rule:
    """One kind of name: its pattern, its length, and how a message describes it."""

    kind: str
    pattern: re.Pattern[str]
    longest: int
    allowed: str
    """The characters it may hold, in words."""
    punctuation: str
    """The characters besides letters and digits it may hold."""
    lowercase: bool
    dotted: bool
    """Dots separate parts that each start and end with a letter or digit."""
    _known: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def fits(self, name: str) -> bool:
        """Whether ``name`` follows the rule.

        Every reader asks for every name an event introduces: a name seen valid before is
        one set lookup, a new one a length and a match."""
        if name in self._known:
            return True
        if len(name) > self.longest or self.pattern.fullmatch(name) is None:
            return False
        if len(self._known) >= KNOWN:
            self._known.clear()
        self._known.add(name)
        return True

    def problem(self, name: str) -> str | None:
        """What is wrong with ``name``, in words; None if nothing is."""
        if self.fits(name):
            return None
        if not name:
            return "must not be empty"
        if len(name) > self.longest:
            return f"is {len(name)} characters long, more than the {self.longest} a {self.kind} name may have"
        for i, char in enumerate(name):
            if not self._may_hold(char):
                return f"holds {_describe(char)} as character {i + 1}; {self.summary}"
        return f"must start and end with a letter or digit{self._parts}; {self.summary}"

    def refusal(self, name: str) -> str | None:
        """Why ``name`` is refused, as a sentence that shows it (``"Coll x" is not a valid job name:
        it holds a space...``); None if it is valid."""
        why = self.problem(name)
        return None if why is None else f"{quoted(name)} is not a valid {self.kind} name: it {why}"

    @property
    def summary(self) -> str:
        return f"a {self.kind} name is {self.allowed}, at most {self.longest} characters"

    @property
    def _parts(self) -> str:
        return " (so must each part between dots)" if self.dotted else ""

    def _may_hold(self, char: str) -> bool:
        if char.isascii() and char.isdigit():
            return True
        if char.isascii() and char.isalpha():
            return char.islower() or not self.lowercase
        return char in self.punctuation


def subdomain(kind: str) -> Rule:
    """A DNS-1123 subdomain, named ``kind`` in messages."""
    words = "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
    return Rule(kind, _SUBDOMAIN, MAX_NAME, words, "-.", lowercase=True, dotted=True)


def _label_value(kind: str, pattern: re.Pattern[str]) -> Rule:
    words = "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return Rule(kind, pattern, MAX_LABEL, words, "-_.", lowercase=False, dotted=False)


JOB = subdomain("job")
QUEUE = subdomain("queue")
NODE = subdomain("node")
TENANT = Rule(
    "tenant",
    _LABEL,
    MAX_LABEL,
    "lowercase letters, digits and '-', starting and ending with a letter or digit",
    "-",
    lowercase=True,
    dotted=False,
)
POOL = _label_value("pool", _QUALIFIED)
"""A pool is named by a label value, and is never empty."""
LABEL_VALUE = _label_value("label value", _LABEL_VALUE)
_PREFIX = subdomain("label prefix")
"""The part of a label key before '/'."""
_QUALIFIED_NAME = _label_value("label key", _QUALIFIED)
"""The part of a label key after '/' (or all of it)."""


def label_key_refusal(key: str) -> str | None:
    """Why a label key (``[prefix/]name``) is refused, as ``Rule.refusal`` says it; None if it is valid."""
    prefix, slash, name = key.rpartition("/")
    if slash and (why := _PREFIX.problem(prefix)) is not None:
        why = f"has a prefix that {why}"
    elif (why := _QUALIFIED_NAME.problem(name)) is not None:
        why = f"has a name part that {why}" if slash else why
    return None if why is None else f"{quoted(key)} is not a valid label key: it {why}"


def quoted(name: str) -> str:
    """``name`` for a message: in double quotes, escaped (no newline, control or bidirectional
    character reaches a terminal raw), and cut after ``SHOWN`` characters."""
    if len(name) <= SHOWN:
        return json.dumps(name)
    return f'{json.dumps(name[:SHOWN])[:-1]}..." ({len(name)} characters)'


def _describe(char: str) -> str:
    code = f"U+{ord(char):04X}"
    if char == " ":
        return f"a space ({code})"
    if char == "/":
        return "'/'"
    if char.isascii() and char.isalpha():
        return f"an uppercase letter {char!r}"
    if char.isascii() and char.isprintable():
        return f"{char!r}"
    what = unicodedata.name(char, "").lower() or _CATEGORIES.get(unicodedata.category(char), "unassigned")
    return f"{code} ({what})"


_CATEGORIES = {"Cc": "a control character", "Cs": "a lone surrogate", "Co": "a private-use character"}
