"""Kubernetes-style quantities, parsed into muster's base units.

Base units: CPU in millicores, memory and GPU memory in bytes, GPUs in
devices (a float; below 1 is a share of one device). Every parser raises
``QuantityError`` naming what it could not read, so callers can prefix the
field path.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "K": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z]*)$")


class QuantityError(ValueError):
    """A value that is not a valid quantity; the message says why."""


def parse_quantity(value: object) -> Decimal:
    """A Kubernetes quantity (``"16Gi"``, ``"500m"``, ``4``) as an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a quantity, got {value!r}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise QuantityError(f"expected a finite quantity, got {value!r}")
        return Decimal(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"expected a quantity, got {type(value).__name__} {value!r}")
    match = _QUANTITY.match(value.strip())
    if not match:
        raise QuantityError(f"cannot parse quantity {value!r}")
    number, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - regex admits only numbers
        raise QuantityError(f"cannot parse quantity {value!r}") from exc
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    raise QuantityError(f"unknown suffix {suffix!r} in quantity {value!r}")


def _non_negative(amount: Decimal, value: object) -> Decimal:
    if amount < 0:
        raise QuantityError(f"quantity must not be negative, got {value!r}")
    return amount


def cpu_millis(value: object) -> int:
    """CPU cores (``4``, ``"2.5"``, ``"500m"``) as whole millicores, rounded up."""
    if type(value) is int and value >= 0:  # the common case, exact without Decimal
        return value * 1000
    amount = _non_negative(parse_quantity(value), value) * 1000
    return int(amount.to_integral_value(rounding="ROUND_CEILING"))


def byte_count(value: object) -> int:
    """Memory (``"16Gi"``, ``"512M"``, ``1024``) as whole bytes, rounded up."""
    if type(value) is int and value >= 0:
        return value
    amount = _non_negative(parse_quantity(value), value)
    return int(amount.to_integral_value(rounding="ROUND_CEILING"))


def gpu_devices(value: object) -> float:
    """GPU devices: a whole count, or a fraction below 1 of one shared device."""
    # The common case, exact without Decimal (a float holds every int up to 2**53).
    if type(value) is int and 0 <= value <= 2**53:
        return float(value)
    amount = _non_negative(parse_quantity(value), value)
    if amount > 1 and amount != amount.to_integral_value():
        raise QuantityError(f"a GPU request above 1 must be a whole number of devices, got {value!r}")
    return float(amount)


def whole_count(value: object) -> int:
    """An extended resource (``rdma/ib: 1``): a non-negative integer."""
    amount = _non_negative(parse_quantity(value), value)
    if amount != amount.to_integral_value():
        raise QuantityError(f"expected a whole number, got {value!r}")
    return int(amount)
