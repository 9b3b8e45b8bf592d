"""Small helpers shared by the module readers."""

from ..errors import require


def pair(v, what, path):
    """A torch attribute stored as an int or a pair; only square values are supported."""
    if isinstance(v, int):
        return v
    require(isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v),
            f"{path}: unsupported {what} {v!r}")
    require(v[0] == v[1], f"{path}: non-square {what} {tuple(v)} is not supported")
    return v[0]


def ratio(part, whole):
    """The expansion ratio e with int(whole * e) == part, as a short decimal when one fits."""
    for digits in (2, 3, 4, 6):
        e = round(part / whole, digits)
        if int(whole * e) == part:
            return e
    return part / whole


def kind_of(rec):
    """A record's class name, or None for a missing module (for 'expected X' messages)."""
    return getattr(rec, "name", None)
