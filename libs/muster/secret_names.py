"""What a secret is called, and where its value is kept: pure rules for ``muster.secrets_store``.

Names: ``NAME`` or ``NAME/KEY``, as a Kubernetes ``secretKeyRef`` names a key
of a Secret: ``NAME`` a DNS-1123 subdomain (a Secret's name), ``KEY`` letters,
digits, ``-``, ``_`` and ``.`` with no empty part between dots. Each owner's
secrets are keys under a space of its own in one bucket: ``_system`` for the
system's logins (owner ''), the tenant's name for a tenant (``_`` starts no
tenant's name, so no tenant's space is the system's).
"""

from __future__ import annotations

import re

from muster import names

SYSTEM_SPACE = "_system"
"""The space of the system's own logins (owner ''); no tenant's name starts with ``_``."""
MAX_VALUE = 64 * 1024
"""Bytes of one value: an environment variable, well under Linux's 128 KiB for one string."""

SECRET = names.subdomain("secret")
# A Secret's key (Kubernetes: letters, digits, '-', '_', '.'), less what a NATS subject cannot hold: an
# empty part between dots, a '.' at the end. A leading '.' (``.dockerconfigjson``) follows the '/'.
_KEY = names.Rule(
    "secret key",
    re.compile(r"\.?[-_A-Za-z0-9]+(?:\.[-_A-Za-z0-9]+)*"),
    names.MAX_NAME,
    "letters, digits, '-', '_' and '.'",
    "-_.",
    lowercase=False,
    dotted=False,
)


class SecretError(ValueError):
    """A secret's name or value that cannot be stored, with the field to blame."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class MissingSecret(LookupError):
    """A pod's variable names a secret its owner does not have."""

    def __init__(self, variable: str, secret: str, owner: str):
        whose = f"tenant {owner}" if owner else "the system"
        super().__init__(
            f"variable {variable} names secret {names.quoted(secret)}, which {whose} does not have"
            " (muster secret set)"
        )
        self.variable = variable
        self.secret = secret


def bucket(stream: str) -> str:
    """The key-value bucket of the system whose stream is ``stream``."""
    return f"{stream}_SECRETS"


def space(owner: str) -> str:
    """The key prefix of ``owner``'s secrets (a tenant's name, '' for the system's logins)."""
    return owner or SYSTEM_SPACE


def refusal(name: str) -> str | None:
    """Why ``name`` cannot name a secret, in words; None if it can."""
    base, slash, key = name.partition("/")
    if (why := SECRET.refusal(base)) is not None:
        return why
    if not slash or (why := _KEY.problem(key)) is None:
        return None
    if why.startswith("must start and end"):  # the characters are right: the dots are not
        why = "has two dots in a row, or ends with '.'"
    return f"{names.quoted(key)} is not a valid secret key: it {why}"


def check_name(name: str, field: str) -> str:
    """``name``, if it can name a secret; else a ``SecretError`` naming ``field``."""
    if (why := refusal(name)) is not None:
        raise SecretError(field, why)
    return name


def key_ref_name(name: str, key: str) -> str:
    """The secret a Kubernetes ``secretKeyRef`` ``{name, key}`` names."""
    return f"{name}/{key}"


def check_value(value: bytes, field: str = "value") -> bytes:
    """``value``, if a process's environment can hold it: text, no NUL, at most ``MAX_VALUE`` bytes."""
    if len(value) > MAX_VALUE:
        raise SecretError(field, f"is {len(value)} bytes, more than the {MAX_VALUE} a secret may hold")
    try:
        text = value.decode()
    except UnicodeDecodeError:
        raise SecretError(field, "is not UTF-8 text; an environment variable holds text") from None
    if "\0" in text:
        raise SecretError(field, "holds a NUL character, which no environment variable can")
    return value


def subject_prefix(stream: str) -> str:
    """What every key of the bucket is published under."""
    return f"$KV.{bucket(stream)}."
