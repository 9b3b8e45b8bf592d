"""SPPF: cv1 1x1 c1 -> c1/2, three chained k x k max-pools (stride 1, 'same'), cv2 1x1 4 c1/2 -> c2."""

from .. import pt_reader as pr
from ..errors import require
from .common import pair


def read(tree, rec, path, cin):
    c1 = cin[0]
    kids = pr.children(rec)
    require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected SPPF sub-modules {sorted(kids)}")
    c_ = c1 // 2
    require(rec.state.get("n", 3) == 3, f"{path}: SPPF with {rec.state.get('n')} pooling steps (only 3)")
    require(not rec.state.get("add", False), f"{path}: SPPF with a shortcut is not supported")
    act1 = tree.conv_shape(kids["cv1"], path + ".cv1", c1, c_, 1)["act"]  # silu (v8/11) or none (newer)
    c2 = tree.conv_shape(kids["cv2"], path + ".cv2", 4 * c_, None, 1, act="silu")["c2"]
    mp = kids["m"]
    require(mp.name == "MaxPool2d", f"{path}.m: unsupported module {mp.name} (expected MaxPool2d)")
    k = pair(mp.state.get("kernel_size"), "kernel_size", path + ".m")
    s = pair(mp.state.get("stride") or k, "stride", path + ".m")
    p = pair(mp.state.get("padding", 0), "padding", path + ".m")
    require(s == 1 and p == k // 2 and pair(mp.state.get("dilation", 1), "dilation", path) == 1
            and not mp.state.get("ceil_mode", False), f"{path}.m: max-pool stride {s} pad {p} (expected 1, {k // 2})")
    return dict(type="SPPF", c1=c1, c2=c2, k=k, cv1_act=act1), c2
