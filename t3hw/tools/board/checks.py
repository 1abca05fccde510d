# SPDX-License-Identifier: Apache-2.0
"""The argument checks shared by the board's modules: an integer in a range, a power of two
in a range, each a :exc:`ValueError` that names the argument."""


__all__ = ["check_int", "check_pow2"]


def check_int(name, value, low, high, *, owner=None):
    """``value`` if it is an integer in ``[low, high]``, else :exc:`ValueError`; ``owner``
    (an elaboratable being constructed) is then marked so that Amaranth does not also warn
    that it was never used."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        if owner is not None:
            owner._MustUse__silence = True
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")
    return value


def check_pow2(name, value, low, high, *, owner=None):
    """:func:`check_int`, and ``value`` must be a power of two."""
    check_int(name, value, low, high, owner=owner)
    if value & (value - 1):
        if owner is not None:
            owner._MustUse__silence = True
        raise ValueError(f"{name} must be a power of two in [{low}, {high}], not {value!r}")
    return value
