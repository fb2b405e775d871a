"""Kubernetes quantities in muster's base units: every spelling of an amount reads the same."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from muster.quantity import QuantityError, byte_count, cpu_millis


@given(st.integers(0, 10**15))
def test_a_whole_number_of_cores_or_bytes_reads_as_its_string_does(n):
    assert cpu_millis(n) == cpu_millis(str(n)) == n * 1000
    assert byte_count(n) == byte_count(str(n)) == n


@pytest.mark.parametrize(("value", "millis"), [("500m", 500), (2.5, 2500), ("0.0001", 1), ("1k", 1_000_000)])
def test_cpu_in_other_spellings_is_rounded_up_to_whole_millicores(value, millis):
    assert cpu_millis(value) == millis


@pytest.mark.parametrize("value", [-1, "-1", True, "ten"])
def test_negative_or_unreadable_amounts_are_refused(value):
    with pytest.raises(QuantityError):
        cpu_millis(value)
    with pytest.raises(QuantityError):
        byte_count(value)
