"""The C2f family: C2f (YOLOv8), C3k2 (YOLO11/12) and their blocks C3k and Bottleneck.

    C2f/C3k2(c1, c2, n): cv1 1x1 c1 -> 2c, split in two, n blocks on the second half (each output
    kept), cv2 1x1 (2 + n) c -> c2. C2f blocks: Bottleneck(c, c); C3k2 blocks: Bottleneck(c, hidden
    c/2) or C3k(c) (c3k=True).
"""

from .. import pt_reader as pr
from ..errors import require
from .common import cv1_cv2_m, kind_of, ratio


def bottleneck(tree, rec, path, c, hidden):
    """Bottleneck(c, c, shortcut, g, k=(3,3), e) with cv1 c -> hidden (3x3), cv2 hidden -> c (3x3, g).
    Returns (add, g)."""
    require(rec is not None and rec.name == "Bottleneck", f"{path}: unsupported module {kind_of(rec)} (expected Bottleneck)")
    kids = pr.children(rec)
    require(set(kids) == {"cv1", "cv2"}, f"{path}: unexpected Bottleneck sub-modules {sorted(kids)}")
    f1 = tree.conv(kids["cv1"], path + ".cv1", "silu")
    f2 = tree.conv(kids["cv2"], path + ".cv2", "silu")
    want1 = dict(c1=c, c2=hidden, k=3, s=1, p=1, g=1, d=1)
    require({k: f1[k] for k in want1} == want1, f"{path}.cv1: {f1} does not match {want1}")
    g = f2["g"]
    want2 = dict(c1=hidden, c2=c, k=3, s=1, p=1, g=g, d=1)
    require({k: f2[k] for k in want2} == want2, f"{path}.cv2: {f2} does not match {want2}")
    add = rec.state.get("add")
    require(isinstance(add, bool), f"{path}: Bottleneck without its 'add' flag")
    return add, g


def c3k(tree, rec, path, c):
    """C3k(c, c, 2, shortcut, g): cv1, cv2 c -> c/2; m = 2 x Bottleneck(c/2, e=1.0); cv3 c -> c.
    Returns (shortcut, g)."""
    require(rec is not None and rec.name == "C3k", f"{path}: unsupported module {kind_of(rec)} (expected C3k)")
    kids = pr.children(rec)
    require(set(kids) == {"cv1", "cv2", "cv3", "m"}, f"{path}: unexpected C3k sub-modules {sorted(kids)}")
    h = int(c * 0.5)
    tree.conv_shape(kids["cv1"], path + ".cv1", c, h, 1, act="silu")
    tree.conv_shape(kids["cv2"], path + ".cv2", c, h, 1, act="silu")
    tree.conv_shape(kids["cv3"], path + ".cv3", 2 * h, c, 1, act="silu")
    ms = list(pr.children(kids["m"]).items())
    require(len(ms) == 2, f"{path}.m: C3k with {len(ms)} bottlenecks (expected 2)")
    flags = [bottleneck(tree, m, f"{path}.m.{n}", h, h) for n, m in ms]
    require(len(set(flags)) == 1, f"{path}: bottlenecks disagree on shortcut/groups")
    return flags[0]


def _split(tree, rec, path, c1):
    """cv1 and cv2 of a C2f-like layer. Returns (c, the blocks as (name, record) pairs, c2)."""
    kids, c_ = cv1_cv2_m(tree, rec, path, c1, split=True)
    c = c_ // 2
    ms = list(pr.children(kids["m"]).items())
    require(ms, f"{path}.m: no blocks")
    c2 = tree.conv_shape(kids["cv2"], path + ".cv2", (2 + len(ms)) * c, None, 1, act="silu")["c2"]
    return c, ms, c2


def read_c2f(tree, rec, path, cin):
    c, ms, c2 = _split(tree, rec, path, cin[0])
    flags = [bottleneck(tree, m, f"{path}.m.{i}", c, c) for i, m in ms]
    require(len(set(flags)) == 1, f"{path}: bottlenecks disagree on shortcut/groups")
    return dict(type="C2f", c1=cin[0], c2=c2, n=len(ms), shortcut=flags[0][0], g=flags[0][1], e=ratio(c, c2)), c2


def read_c3k2(tree, rec, path, cin):
    c, ms, c2 = _split(tree, rec, path, cin[0])
    kinds = {m.name for _, m in ms}
    require(len(kinds) == 1 and kinds <= {"C3k", "Bottleneck"},
            f"{path}.m.0: unsupported C3k2 block {(sorted(kinds) or [''])[0]}")
    is_c3k = kinds == {"C3k"}
    if is_c3k:
        flags = [c3k(tree, m, f"{path}.m.{i}", c) for i, m in ms]
    else:
        flags = [bottleneck(tree, m, f"{path}.m.{i}", c, int(c * 0.5)) for i, m in ms]
    require(len(set(flags)) == 1, f"{path}: blocks disagree on shortcut/groups")
    return dict(type="C3k2", c1=cin[0], c2=c2, n=len(ms), c3k=is_c3k, e=ratio(c, c2), g=flags[0][1],
                shortcut=flags[0][0]), c2


def check_yaml_c3k2(args, L, scale, warn):
    """Ultralytics' scale rule (m/l/x build C3k blocks): only warned about, the modules are what runs."""
    if scale in ("m", "l", "x") and not L["c3k"]:
        warn(f"model.{L['index']}: scale {scale} normally gives C3k2 c3k=True; the checkpoint has plain bottlenecks")
