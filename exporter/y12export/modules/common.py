"""Small helpers shared by the module readers."""

from .. import pt_reader as pr
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


def cv1_cv2_m(tree, rec, path, c1, split=False):
    """The start shared by the layers built as cv1 -> blocks m -> cv2 (C2f, C3k2, A2C2f, C2PSA): checks
    the sub-modules and cv1 (1x1, SiLU, from the c1 input channels; an even width where the layer
    `split`s it in two). Returns (the sub-modules, cv1's output channels)."""
    kids = pr.children(rec)
    require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected {rec.name} sub-modules {sorted(kids)}")
    f1 = tree.conv(kids["cv1"], path + ".cv1", "silu")
    require(f1["c1"] == c1 and f1["k"] == 1 and (not split or f1["c2"] % 2 == 0), f"{path}.cv1: unexpected conv {f1}")
    return kids, f1["c2"]
