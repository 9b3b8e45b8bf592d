"""The Detect head: per input level a box branch cv2.L (Conv3x3, Conv3x3, Conv2d 1x1 -> 4 reg_max) and
a class branch cv3.L (legacy YOLOv8: Conv3x3, Conv3x3; else [DWConv3x3, Conv1x1] twice; then Conv2d
1x1 -> nc), and the fixed DFL conv (weights 0..reg_max-1, checked and not stored)."""

import numpy as np

from .. import pt_reader as pr
from ..errors import require


def _class_branch(tree, seq, cp, x):
    """The first two modules of cv3.L. Returns (c3, legacy)."""
    if seq[0].name == "Conv":  # YOLOv8: two 3x3 convs
        c3 = tree.conv_shape(seq[0], cp + ".0", x, None, 3, act="silu")["c2"]
        tree.conv_shape(seq[1], cp + ".1", c3, c3, 3, act="silu")
        return c3, True
    require(seq[0].name == "Sequential", f"{cp}.0: unsupported module {seq[0].name}")
    s0 = list(pr.children(seq[0]).values())
    s1 = list(pr.children(seq[1]).values())
    require(len(s0) == 2 and len(s1) == 2, f"{cp}: expected [DWConv, Conv] pairs")
    tree.conv_shape(s0[0], cp + ".0.0", x, x, 3, g=x, act="silu")
    c3 = tree.conv_shape(s0[1], cp + ".0.1", x, None, 1, act="silu")["c2"]
    tree.conv_shape(s1[0], cp + ".1.0", c3, c3, 3, g=c3, act="silu")
    tree.conv_shape(s1[1], cp + ".1.1", c3, c3, 1, act="silu")
    return c3, False


def read(tree, rec, path, cin):
    kids = pr.children(rec)
    for bad in ("one2one_cv2", "one2one_cv3"):
        require(bad not in kids, f"{path}.{bad}: end-to-end (NMS-free) Detect heads are not supported")
    require(set(kids) == {"cv2", "cv3", "dfl"}, f"{path}: unexpected Detect sub-modules {sorted(kids)}")
    nc, reg_max = rec.state.get("nc"), rec.state.get("reg_max", 16)
    require(isinstance(nc, int) and nc >= 1, f"{path}: Detect without nc")
    require(isinstance(reg_max, int) and reg_max > 1, f"{path}: reg_max {reg_max} is not supported")
    box, cls = list(pr.children(kids["cv2"]).values()), list(pr.children(kids["cv3"]).values())
    require(len(box) == len(cin) and len(cls) == len(cin), f"{path}: {len(box)}/{len(cls)} branches for {len(cin)} inputs")
    c2s, c3s, legacy_flags = set(), set(), set()
    for L, x in enumerate(cin):
        bp = f"{path}.cv2.{L}"
        seq = list(pr.children(box[L]).values())
        require(len(seq) == 3, f"{bp}: expected 3 modules, found {len(seq)}")
        c2 = tree.conv_shape(seq[0], bp + ".0", x, None, 3, act="silu")["c2"]
        tree.conv_shape(seq[1], bp + ".1", c2, c2, 3, act="silu")
        f = tree.plain_conv2d(seq[2], bp + ".2")
        require((f["c1"], f["c2"], f["k"], f["g"]) == (c2, 4 * reg_max, 1, 1), f"{bp}.2: unexpected conv {f}")
        c2s.add(c2)
        cp = f"{path}.cv3.{L}"
        seq = list(pr.children(cls[L]).values())
        require(len(seq) == 3, f"{cp}: expected 3 modules, found {len(seq)}")
        c3, legacy = _class_branch(tree, seq, cp, x)
        legacy_flags.add(legacy)
        f = tree.plain_conv2d(seq[2], cp + ".2")
        require((f["c1"], f["c2"], f["k"], f["g"]) == (c3, nc, 1, 1), f"{cp}.2: unexpected conv {f}")
        c3s.add(c3)
    require(len(c2s) == 1 and len(c3s) == 1 and len(legacy_flags) == 1, f"{path}: branches differ in width or kind")
    dfl = kids["dfl"]
    require(dfl.name == "DFL", f"{path}.dfl: unsupported module {dfl.name}")
    dconv = pr.child(dfl, "conv")
    require(dconv is not None, f"{path}.dfl.conv: missing")
    _, w, b = tree.conv2d(dconv, path + ".dfl.conv")
    require(w.shape == (1, reg_max, 1, 1) and b is None, f"{path}.dfl.conv: unexpected shape {list(w.shape)}")
    require(np.array_equal(np.asarray(w, np.float64).reshape(-1), np.arange(reg_max)),
            f"{path}.dfl.conv.weight: not arange({reg_max}); a modified DFL is not supported")
    entry = dict(type="Detect", nc=nc, reg_max=reg_max, ch=list(cin), legacy=legacy_flags.pop(),
                 c2=c2s.pop(), c3=c3s.pop())
    return entry, 0
