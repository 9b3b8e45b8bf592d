"""Architecture and tensors of an Ultralytics detection checkpoint, from its pickled module tree.

The checkpoint's `model` (a DetectionModel record, see pt_reader) holds `model` (a Sequential of the
top-level layers, each with its `i` index and `f` "from"), `yaml` (the architecture description and
scale), `names` and `stride`. For every top-level layer we read the resolved attributes of its
sub-modules (Conv2d channels, kernel, stride, padding, groups; AAttn area and heads; ...), check each
weight's shape against them, fold BatchNorm, and emit the layer entry of docs/model-format.md. Then
the layers are cross-checked against the yaml (module types, `from`, repeats after the depth multiple,
output channels after the width multiple). Any module, tensor or field we do not understand stops
the export with one line naming it.
"""

import collections
import math

import numpy as np

from . import pt_reader as pr
from .bn_fold import fold_bn
from .errors import ExportError


def _require(cond, msg):
    if not cond:
        raise ExportError(msg)


def _pair(v, what, path):
    """A Conv2d attribute stored as an int or a pair; only square values are supported."""
    if isinstance(v, int):
        return v
    _require(isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v),
             f"{path}: unsupported {what} {v!r}")
    _require(v[0] == v[1], f"{path}: non-square {what} {tuple(v)} is not supported")
    return v[0]


class ModelTree:
    """Walks one DetectionModel record; collects folded tensors and layer entries."""

    def __init__(self, model_rec):
        self.model = model_rec
        self.tensors = collections.OrderedDict()  # name -> (float64 array, kind "weight"|"gamma")
        self.used = set()                         # checkpoint tensor names consumed
        self.attn_kinds = set()                   # "qkv" / "qk_v" seen in A2C2f blocks
        self.pe_ks = set()

    # -- tensors ---------------------------------------------------------------------------------
    def _tensor(self, rec, path, name, shape=None, optional=False):
        t = pr.tensors_of(rec).get(name)
        full = f"{path}.{name}"
        if t is None:
            _require(optional, f"{full}: missing tensor")
            return None
        _require(isinstance(t, np.ndarray), f"{full}: not a tensor")
        if shape is not None:
            _require(tuple(t.shape) == tuple(shape),
                     f"{full}: shape {list(t.shape)} does not match the module (expected {list(shape)})")
        self.used.add(full)
        return t

    def _add(self, name, array, kind="weight"):
        _require(name not in self.tensors, f"{name}: duplicate tensor")
        _require(np.all(np.isfinite(array)), f"{name}: holds NaN or Inf values")
        self.tensors[name] = (array, kind)

    # -- convolutions ----------------------------------------------------------------------------
    def _conv2d(self, rec, path):
        """Attributes of an nn.Conv2d record, its weight shape checked."""
        _require(rec is not None, f"{path}: missing Conv2d")
        _require(rec.name == "Conv2d", f"{path}: unsupported module {rec.name} (expected Conv2d)")
        a = rec.state
        c1, c2 = a.get("in_channels"), a.get("out_channels")
        g = a.get("groups", 1)
        k = _pair(a.get("kernel_size"), "kernel_size", path)
        s = _pair(a.get("stride", 1), "stride", path)
        p = a.get("padding", 0)
        _require(not isinstance(p, str), f"{path}: padding {p!r} is not supported")
        p = _pair(p, "padding", path)
        d = _pair(a.get("dilation", 1), "dilation", path)
        _require(all(isinstance(v, int) for v in (c1, c2, g)), f"{path}: Conv2d without channel counts")
        _require(not a.get("transposed", False), f"{path}: transposed convolution is not supported")
        _require(a.get("padding_mode", "zeros") == "zeros", f"{path}: padding_mode {a.get('padding_mode')!r} "
                 "is not supported")
        _require(g >= 1 and c1 % g == 0 and c2 % g == 0, f"{path}: groups {g} do not divide {c1} -> {c2}")
        w = self._tensor(rec, path, "weight", (c2, c1 // g, k, k))
        b = self._tensor(rec, path, "bias", (c2,), optional=True)
        return dict(c1=c1, c2=c2, k=k, s=s, p=p, g=g, d=d), w, b

    def conv(self, rec, path, act=None):
        """An Ultralytics Conv (Conv2d + BatchNorm2d + activation), or DWConv. Folds BN and stores
        `path.conv.weight/bias`. Returns dict(c1 c2 k s p g d act). `act` ("silu"/"none") is checked
        if given."""
        _require(rec is not None, f"{path}: missing Conv module")
        _require(rec.name in ("Conv", "DWConv"), f"{path}: unsupported module {rec.name} (expected Conv)")
        kids = pr.children(rec)
        extra = set(kids) - {"conv", "bn", "act"}
        if extra:
            raise ExportError(f"{path}.{(sorted(extra) or [''])[0]}: unsupported sub-module in Conv")
        f, w, b = self._conv2d(kids.get("conv"), path + ".conv")
        bn = kids.get("bn")
        if bn is not None:
            bpath = path + ".bn"
            _require(bn.name == "BatchNorm2d", f"{bpath}: unsupported module {bn.name} (expected BatchNorm2d)")
            c2 = f["c2"]
            _require(bn.state.get("num_features") == c2, f"{bpath}: num_features {bn.state.get('num_features')} "
                     f"!= conv out_channels {c2}")
            eps = bn.state.get("eps")
            _require(isinstance(eps, float) and eps > 0, f"{bpath}: missing or bad eps {eps!r}")
            gamma = self._tensor(bn, bpath, "weight", (c2,), optional=True)
            beta = self._tensor(bn, bpath, "bias", (c2,), optional=True)
            mean = self._tensor(bn, bpath, "running_mean", (c2,))
            var = self._tensor(bn, bpath, "running_var", (c2,))
            self._tensor(bn, bpath, "num_batches_tracked", optional=True)
            _require(np.all(np.asarray(var, np.float64) + eps > 0), f"{bpath}: running_var + eps is not positive")
            wf, bf = fold_bn(w, b, gamma, beta, mean, var, eps)
        else:  # an already fused Conv: the conv carries the bias
            wf = np.asarray(w, np.float64)
            bf = np.zeros(f["c2"]) if b is None else np.asarray(b, np.float64)
        self._add(path + ".conv.weight", wf)
        self._add(path + ".conv.bias", bf)
        a = kids.get("act")
        if a is None or a.name == "Identity":
            f["act"] = "none"
        elif a.name == "SiLU":
            f["act"] = "silu"
        else:
            raise ExportError(f"{path}.act: unsupported activation {a.name}")
        if act is not None:
            _require(f["act"] == act, f"{path}: activation {f['act']}, expected {act}")
        return f

    def plain_conv2d(self, rec, path):
        """An nn.Conv2d with bias (last conv of a Detect branch): stores path.weight/bias."""
        f, w, b = self._conv2d(rec, path)
        _require(b is not None, f"{path}.bias: missing tensor")
        self._add(path + ".weight", np.asarray(w, np.float64))
        self._add(path + ".bias", np.asarray(b, np.float64))
        return f

    def conv_shape(self, rec, path, c1, c2, k, s=1, g=1, act=None):
        """A Conv whose fields must be exactly these (c2=None: any output width). Returns its fields."""
        f = self.conv(rec, path, act)
        want = dict(c1=c1, c2=f["c2"] if c2 is None else c2, k=k, s=s, p=k // 2, g=g, d=1)
        got = {key: f[key] for key in want}
        _require(got == want, f"{path}: conv {got} does not match the block's structure {want}")
        return f

    # -- blocks ----------------------------------------------------------------------------------
    def bottleneck(self, rec, path, c, hidden):
        """Bottleneck(c, c, shortcut, g, k=(3,3), e) with cv1 c -> hidden (3x3), cv2 hidden -> c (3x3, g).
        Returns (add, g)."""
        _require(rec is not None and rec.name == "Bottleneck",
                 f"{path}: unsupported module {getattr(rec, 'name', None)} (expected Bottleneck)")
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2"}, f"{path}: unexpected Bottleneck sub-modules {sorted(kids)}")
        f1 = self.conv(kids["cv1"], path + ".cv1", "silu")
        f2 = self.conv(kids["cv2"], path + ".cv2", "silu")
        want1 = dict(c1=c, c2=hidden, k=3, s=1, p=1, g=1, d=1)
        _require({k: f1[k] for k in want1} == want1, f"{path}.cv1: {f1} does not match {want1}")
        g = f2["g"]
        want2 = dict(c1=hidden, c2=c, k=3, s=1, p=1, g=g, d=1)
        _require({k: f2[k] for k in want2} == want2, f"{path}.cv2: {f2} does not match {want2}")
        add = rec.state.get("add")
        _require(isinstance(add, bool), f"{path}: Bottleneck without its 'add' flag")
        return add, g

    def c3k(self, rec, path, c):
        """C3k(c, c, 2, shortcut, g): cv1, cv2 c -> c/2; m = 2 x Bottleneck(c/2, e=1.0); cv3 c -> c.
        Returns (shortcut, g)."""
        _require(rec is not None and rec.name == "C3k",
                 f"{path}: unsupported module {getattr(rec, 'name', None)} (expected C3k)")
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2", "cv3", "m"}, f"{path}: unexpected C3k sub-modules {sorted(kids)}")
        h = int(c * 0.5)
        self.conv_shape(kids["cv1"], path + ".cv1", c, h, 1, act="silu")
        self.conv_shape(kids["cv2"], path + ".cv2", c, h, 1, act="silu")
        self.conv_shape(kids["cv3"], path + ".cv3", 2 * h, c, 1, act="silu")
        ms = list(pr.children(kids["m"]).items())
        _require(len(ms) == 2, f"{path}.m: C3k with {len(ms)} bottlenecks (expected 2)")
        flags = [self.bottleneck(m, f"{path}.m.{n}", h, h) for n, m in ms]
        _require(len(set(flags)) == 1, f"{path}: bottlenecks disagree on shortcut/groups")
        return flags[0]

    def layer_c2f(self, rec, path, c1, c3k2):
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected {rec.name} sub-modules {sorted(kids)}")
        f1 = self.conv(kids["cv1"], path + ".cv1", "silu")
        _require(f1["c1"] == c1 and f1["k"] == 1 and f1["c2"] % 2 == 0, f"{path}.cv1: unexpected conv {f1}")
        c = f1["c2"] // 2
        ms = list(pr.children(kids["m"]).items())
        n = len(ms)
        _require(n >= 1, f"{path}.m: no blocks")
        c2 = self.conv_shape(kids["cv2"], path + ".cv2", (2 + n) * c, None, 1, act="silu")["c2"]
        e = _ratio(c, c2)
        if not c3k2:
            flags = [self.bottleneck(m, f"{path}.m.{i}", c, c) for i, m in ms]
            _require(len(set(flags)) == 1, f"{path}: bottlenecks disagree on shortcut/groups")
            return dict(type="C2f", c1=c1, c2=c2, n=n, shortcut=flags[0][0], g=flags[0][1], e=e), c2
        kinds = {m.name for _, m in ms}
        _require(len(kinds) == 1 and kinds <= {"C3k", "Bottleneck"},
                 f"{path}.m.0: unsupported C3k2 block {(sorted(kinds) or [''])[0]}")
        is_c3k = kinds == {"C3k"}
        if is_c3k:
            flags = [self.c3k(m, f"{path}.m.{i}", c) for i, m in ms]
        else:
            flags = [self.bottleneck(m, f"{path}.m.{i}", c, int(c * 0.5)) for i, m in ms]
        _require(len(set(flags)) == 1, f"{path}: blocks disagree on shortcut/groups")
        return dict(type="C3k2", c1=c1, c2=c2, n=n, c3k=is_c3k, e=e, g=flags[0][1], shortcut=flags[0][0]), c2

    def aattn(self, rec, path, c):
        """AAttn: Ultralytics (qkv, proj, pe 7x7) or turbo (qk, v, proj, pe 5x5). Returns (kind, area, pe_k)."""
        _require(rec is not None and rec.name == "AAttn",
                 f"{path}: unsupported module {getattr(rec, 'name', None)} (expected AAttn)")
        kids = pr.children(rec)
        heads, head_dim, area = rec.state.get("num_heads"), rec.state.get("head_dim"), rec.state.get("area")
        _require(all(isinstance(v, int) for v in (heads, head_dim, area)), f"{path}: AAttn without num_heads/head_dim/area")
        _require(head_dim == 32 and heads * 32 == c, f"{path}: AAttn with {heads} heads of {head_dim} on {c} "
                 "channels (only head_dim 32, heads = c/32 is supported)")
        _require(area >= 1, f"{path}: area {area}")
        if set(kids) == {"qkv", "proj", "pe"}:
            kind = "qkv"
            self.conv_shape(kids["qkv"], path + ".qkv", c, 3 * c, 1, act="none")
        elif set(kids) == {"qk", "v", "proj", "pe"}:
            kind = "qk_v"
            self.conv_shape(kids["qk"], path + ".qk", c, 2 * c, 1, act="none")
            self.conv_shape(kids["v"], path + ".v", c, c, 1, act="none")
        else:
            raise ExportError(f"{path}: unsupported AAttn sub-modules {sorted(kids)}")
        self.conv_shape(kids["proj"], path + ".proj", c, c, 1, act="none")
        pe = self.conv(kids["pe"], path + ".pe", "none")
        pe_k = pe["k"]
        want = dict(c1=c, c2=c, k=pe_k, s=1, p=pe_k // 2, g=c, d=1)
        _require({k: pe[k] for k in want} == want, f"{path}.pe: {pe} is not a depthwise 'same' conv")
        return kind, area, pe_k

    def ablock(self, rec, path, c):
        _require(rec is not None and rec.name == "ABlock",
                 f"{path}: unsupported module {getattr(rec, 'name', None)} (expected ABlock)")
        kids = pr.children(rec)
        _require(set(kids) == {"attn", "mlp"}, f"{path}: unexpected ABlock sub-modules {sorted(kids)}")
        kind, area, pe_k = self.aattn(kids["attn"], path + ".attn", c)
        mlp = list(pr.children(kids["mlp"]).items())
        _require(len(mlp) == 2, f"{path}.mlp: expected 2 convs, found {len(mlp)}")
        hidden = self.conv_shape(mlp[0][1], path + ".mlp.0", c, None, 1, act="silu")["c2"]
        self.conv_shape(mlp[1][1], path + ".mlp.1", hidden, c, 1, act="none")
        return kind, area, pe_k, hidden

    def layer_a2c2f(self, rec, path, c1):
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected A2C2f sub-modules {sorted(kids)}")
        f1 = self.conv(kids["cv1"], path + ".cv1", "silu")
        _require(f1["c1"] == c1 and f1["k"] == 1, f"{path}.cv1: unexpected conv {f1}")
        c_ = f1["c2"]
        ms = list(pr.children(kids["m"]).items())
        n = len(ms)
        _require(n >= 1, f"{path}.m: no blocks")
        c2 = self.conv_shape(kids["cv2"], path + ".cv2", (1 + n) * c_, None, 1, act="silu")["c2"]
        first = ms[0][1]
        a2 = first.name == "Sequential"
        out = dict(type="A2C2f", c1=c1, c2=c2, n=n, a2=a2, area=1, residual=False, mlp_ratio=2.0, e=_ratio(c_, c2),
                   g=1, shortcut=True, attn="qkv", pe_k=7)
        if a2:
            infos = []
            for i, seq in ms:
                _require(seq.name == "Sequential", f"{path}.m.{i}: unsupported module {seq.name} (expected Sequential)")
                blocks = list(pr.children(seq).items())
                _require(len(blocks) == 2, f"{path}.m.{i}: {len(blocks)} ABlocks (expected 2)")
                infos += [self.ablock(b, f"{path}.m.{i}.{j}", c_) for j, b in blocks]
            _require(len(set(infos)) == 1, f"{path}: ABlocks disagree on attention kind/area/pe/mlp")
            kind, area, pe_k, hidden = infos[0]
            self.attn_kinds.add(kind)
            self.pe_ks.add(pe_k)
            ratio = next((r for r in (2.0, 1.2, 1.5, 1.0, 4.0) if int(c_ * r) == hidden), hidden / c_)
            _require(int(c_ * ratio) == hidden, f"{path}: mlp hidden {hidden} is not int({c_} * ratio) for any ratio")
            out.update(area=area, mlp_ratio=ratio, attn=kind, pe_k=pe_k)
        else:
            flags = []
            for i, m in ms:
                flags.append(self.c3k(m, f"{path}.m.{i}", c_))
            _require(len(set(flags)) == 1, f"{path}: C3k blocks disagree on shortcut/groups")
            out.update(shortcut=flags[0][0], g=flags[0][1])
        gamma = pr.tensors_of(rec).get("gamma")
        if gamma is not None:
            _require(a2, f"{path}.gamma: layer-scale on an A2C2f without attention")
            self._tensor(rec, path, "gamma", (c2,))
            _require(c1 == c2, f"{path}: residual A2C2f needs c1 == c2 ({c1} != {c2})")
            self._add(path + ".gamma", np.asarray(gamma, np.float64), "gamma")
            out["residual"] = True
        return out, c2

    def layer_sppf(self, rec, path, c1):
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected SPPF sub-modules {sorted(kids)}")
        c_ = c1 // 2
        _require(rec.state.get("n", 3) == 3, f"{path}: SPPF with {rec.state.get('n')} pooling steps (only 3)")
        _require(not rec.state.get("add", False), f"{path}: SPPF with a shortcut is not supported")
        act1 = self.conv_shape(kids["cv1"], path + ".cv1", c1, c_, 1)["act"]  # silu (v8/11) or none (newer)
        c2 = self.conv_shape(kids["cv2"], path + ".cv2", 4 * c_, None, 1, act="silu")["c2"]
        mp = kids["m"]
        _require(mp.name == "MaxPool2d", f"{path}.m: unsupported module {mp.name} (expected MaxPool2d)")
        k = _pair(mp.state.get("kernel_size"), "kernel_size", path + ".m")
        s = _pair(mp.state.get("stride") or k, "stride", path + ".m")
        p = _pair(mp.state.get("padding", 0), "padding", path + ".m")
        _require(s == 1 and p == k // 2 and _pair(mp.state.get("dilation", 1), "dilation", path) == 1
                 and not mp.state.get("ceil_mode", False), f"{path}.m: max-pool stride {s} pad {p} (expected 1, {k // 2})")
        return dict(type="SPPF", c1=c1, c2=c2, k=k, cv1_act=act1), c2

    def layer_c2psa(self, rec, path, c1):
        kids = pr.children(rec)
        _require(set(kids) == {"cv1", "cv2", "m"}, f"{path}: unexpected C2PSA sub-modules {sorted(kids)}")
        f1 = self.conv(kids["cv1"], path + ".cv1", "silu")
        _require(f1["c1"] == c1 and f1["k"] == 1 and f1["c2"] % 2 == 0, f"{path}.cv1: unexpected conv {f1}")
        c = f1["c2"] // 2
        self.conv_shape(kids["cv2"], path + ".cv2", 2 * c, c1, 1, act="silu")
        ms = list(pr.children(kids["m"]).items())
        _require(len(ms) >= 1, f"{path}.m: no blocks")
        heads = c // 64
        _require(heads >= 1, f"{path}: {c} channels give no 64-channel attention head")
        key_dim = int((c // heads) * 0.5)
        for i, blk in ms:
            bp = f"{path}.m.{i}"
            _require(blk.name == "PSABlock", f"{bp}: unsupported module {blk.name} (expected PSABlock)")
            _require(blk.state.get("add") is True, f"{bp}: PSABlock without shortcut is not supported")
            bk = pr.children(blk)
            _require(set(bk) == {"attn", "ffn"}, f"{bp}: unexpected PSABlock sub-modules {sorted(bk)}")
            at = bk["attn"]
            _require(at.name == "Attention", f"{bp}.attn: unsupported module {at.name} (expected Attention)")
            _require(at.state.get("num_heads") == heads and at.state.get("key_dim") == key_dim,
                     f"{bp}.attn: {at.state.get('num_heads')} heads of key_dim {at.state.get('key_dim')}, "
                     f"expected {heads} and {key_dim}")
            ak = pr.children(at)
            _require(set(ak) == {"qkv", "proj", "pe"}, f"{bp}.attn: unexpected sub-modules {sorted(ak)}")
            self.conv_shape(ak["qkv"], bp + ".attn.qkv", c, c + 2 * key_dim * heads, 1, act="none")
            self.conv_shape(ak["proj"], bp + ".attn.proj", c, c, 1, act="none")
            self.conv_shape(ak["pe"], bp + ".attn.pe", c, c, 3, g=c, act="none")
            ffn = list(pr.children(bk["ffn"]).items())
            _require(len(ffn) == 2, f"{bp}.ffn: expected 2 convs")
            self.conv_shape(ffn[0][1], bp + ".ffn.0", c, 2 * c, 1, act="silu")
            self.conv_shape(ffn[1][1], bp + ".ffn.1", 2 * c, c, 1, act="none")
        return dict(type="C2PSA", c1=c1, c2=c1, n=len(ms), e=_ratio(c, c1)), c1

    def layer_detect(self, rec, path, chs):
        kids = pr.children(rec)
        for bad in ("one2one_cv2", "one2one_cv3"):
            _require(bad not in kids, f"{path}.{bad}: end-to-end (NMS-free) Detect heads are not supported")
        _require(set(kids) == {"cv2", "cv3", "dfl"}, f"{path}: unexpected Detect sub-modules {sorted(kids)}")
        nc, reg_max = rec.state.get("nc"), rec.state.get("reg_max", 16)
        _require(isinstance(nc, int) and nc >= 1, f"{path}: Detect without nc")
        _require(isinstance(reg_max, int) and reg_max > 1, f"{path}: reg_max {reg_max} is not supported")
        box, cls = list(pr.children(kids["cv2"]).values()), list(pr.children(kids["cv3"]).values())
        _require(len(box) == len(chs) and len(cls) == len(chs),
                 f"{path}: {len(box)}/{len(cls)} branches for {len(chs)} inputs")
        c2s, c3s, legacy_flags = set(), set(), set()
        for L, x in enumerate(chs):
            bp = f"{path}.cv2.{L}"
            seq = list(pr.children(box[L]).values())
            _require(len(seq) == 3, f"{bp}: expected 3 modules, found {len(seq)}")
            c2 = self.conv_shape(seq[0], bp + ".0", x, None, 3, act="silu")["c2"]
            self.conv_shape(seq[1], bp + ".1", c2, c2, 3, act="silu")
            f = self.plain_conv2d(seq[2], bp + ".2")
            _require((f["c1"], f["c2"], f["k"], f["g"]) == (c2, 4 * reg_max, 1, 1), f"{bp}.2: unexpected conv {f}")
            c2s.add(c2)
            cp = f"{path}.cv3.{L}"
            seq = list(pr.children(cls[L]).values())
            _require(len(seq) == 3, f"{cp}: expected 3 modules, found {len(seq)}")
            legacy = seq[0].name in ("Conv",)
            legacy_flags.add(legacy)
            if legacy:
                c3 = self.conv_shape(seq[0], cp + ".0", x, None, 3, act="silu")["c2"]
                self.conv_shape(seq[1], cp + ".1", c3, c3, 3, act="silu")
            else:
                _require(seq[0].name == "Sequential", f"{cp}.0: unsupported module {seq[0].name}")
                s0 = list(pr.children(seq[0]).values())
                s1 = list(pr.children(seq[1]).values())
                _require(len(s0) == 2 and len(s1) == 2, f"{cp}: expected [DWConv, Conv] pairs")
                self.conv_shape(s0[0], cp + ".0.0", x, x, 3, g=x, act="silu")
                c3 = self.conv_shape(s0[1], cp + ".0.1", x, None, 1, act="silu")["c2"]
                self.conv_shape(s1[0], cp + ".1.0", c3, c3, 3, g=c3, act="silu")
                self.conv_shape(s1[1], cp + ".1.1", c3, c3, 1, act="silu")
            f = self.plain_conv2d(seq[2], cp + ".2")
            _require((f["c1"], f["c2"], f["k"], f["g"]) == (c3, nc, 1, 1), f"{cp}.2: unexpected conv {f}")
            c3s.add(c3)
        _require(len(c2s) == 1 and len(c3s) == 1 and len(legacy_flags) == 1,
                 f"{path}: branches differ in width or kind")
        # the DFL conv is fixed: weights 0..reg_max-1, not stored
        dfl = kids["dfl"]
        _require(dfl.name == "DFL", f"{path}.dfl: unsupported module {dfl.name}")
        dconv = pr.child(dfl, "conv")
        _require(dconv is not None, f"{path}.dfl.conv: missing")
        _, w, b = self._conv2d(dconv, path + ".dfl.conv")
        _require(w.shape == (1, reg_max, 1, 1) and b is None, f"{path}.dfl.conv: unexpected shape {list(w.shape)}")
        _require(np.array_equal(np.asarray(w, np.float64).reshape(-1), np.arange(reg_max)),
                 f"{path}.dfl.conv.weight: not arange({reg_max}); a modified DFL is not supported")
        return dict(type="Detect", nc=nc, reg_max=reg_max, ch=list(chs), legacy=legacy_flags.pop(),
                    c2=c2s.pop(), c3=c3s.pop())

    # -- the whole model -------------------------------------------------------------------------
    def all_checkpoint_tensors(self):
        names = set()

        def walk(rec, path):
            for k, v in pr.tensors_of(rec).items():
                if isinstance(v, np.ndarray):
                    names.add(f"{path}.{k}")
            for k, v in pr.children(rec).items():
                if isinstance(v, pr.Record):
                    walk(v, f"{path}.{k}")
        walk(pr.child(self.model, "model"), "model")
        return names

    def extract(self):
        """Returns (layers, detect_layer_entry). Fills self.tensors."""
        seq = pr.child(self.model, "model")
        _require(isinstance(seq, pr.Record), "checkpoint model has no 'model' layer list")
        layers_in = list(pr.children(seq).items())
        _require(layers_in, "checkpoint model has no layers")
        layers, chans = [], []
        for pos, (key, rec) in enumerate(layers_in):
            path = f"model.{key}"
            _require(isinstance(rec, pr.Record), f"{path}: not a module")
            _require(key == str(pos), f"{path}: layer key {key!r} out of order")
            i = rec.state.get("i", pos)
            _require(i == pos, f"{path}: layer index i={i}, expected {pos}")
            frm = rec.state.get("f", -1)
            frm = [frm] if isinstance(frm, int) else list(frm)
            _require(all(isinstance(x, int) for x in frm) and frm, f"{path}: bad 'from' {frm}")
            if pos == 0:
                _require(frm == [-1], f"{path}: the first layer must read the input, got from {frm}")
                absf = [-1]
            else:
                absf = [x if x >= 0 else pos + x for x in frm]
                _require(all(0 <= x < pos for x in absf), f"{path}: 'from' {frm} refers to a later layer")
            cin = [3] if pos == 0 else [chans[x] for x in absf]
            name = rec.name
            single = len(absf) == 1
            if name in ("Conv", "DWConv"):
                _require(single, f"{path}: {name} with several inputs")
                f = self.conv(rec, path)
                _require(f["c1"] == cin[0], f"{path}: conv reads {f['c1']} channels, its input has {cin[0]}")
                entry, cout = dict(type="Conv", **f), f["c2"]
            elif name in ("C2f", "C3k2"):
                _require(single, f"{path}: {name} with several inputs")
                entry, cout = self.layer_c2f(rec, path, cin[0], name == "C3k2")
            elif name == "A2C2f":
                _require(single, f"{path}: {name} with several inputs")
                entry, cout = self.layer_a2c2f(rec, path, cin[0])
            elif name == "SPPF":
                _require(single, f"{path}: {name} with several inputs")
                entry, cout = self.layer_sppf(rec, path, cin[0])
            elif name == "C2PSA":
                _require(single, f"{path}: {name} with several inputs")
                entry, cout = self.layer_c2psa(rec, path, cin[0])
            elif name == "Upsample":
                _require(single, f"{path}: {name} with several inputs")
                sf, mode = rec.state.get("scale_factor"), rec.state.get("mode")
                _require(sf in (2, 2.0) and mode == "nearest" and rec.state.get("size") is None,
                         f"{path}: Upsample scale {sf} mode {mode} is not supported (only x2 nearest)")
                entry, cout = dict(type="Upsample", scale=2, mode="nearest"), cin[0]
            elif name == "Concat":
                _require(rec.state.get("d", 1) == 1, f"{path}: Concat on dim {rec.state.get('d')} is not supported")
                entry, cout = dict(type="Concat", dim=1), sum(cin)
            elif name == "Detect":
                _require(pos == len(layers_in) - 1, f"{path}: Detect must be the last layer")
                entry, cout = self.layer_detect(rec, path, cin), 0
            elif name in ("Segment", "Pose", "OBB", "Classify", "WorldDetect", "RTDETRDecoder", "v10Detect",
                          "YOLOEDetect", "YOLOESegment", "Segment26", "Pose26", "OBB26"):
                raise ExportError(f"{path}: unsupported head {name} (only detection models are supported)")
            else:
                raise ExportError(f"{path}: unsupported module {rec.cls}")
            layers.append(dict(index=pos, type=entry.pop("type"), **{"from": absf}, **entry))
            chans.append(cout)
        _require(layers[-1]["type"] == "Detect", f"model.{len(layers) - 1}: the last layer is not a Detect head")
        leftover = sorted(self.all_checkpoint_tensors() - self.used)
        _require(not leftover, f"{leftover[0] if leftover else ''}: unexpected tensor (not part of any supported module)")
        return layers


def _ratio(part, whole):
    """The expansion ratio e with int(whole * e) == part, as a short decimal when one fits."""
    for digits in (2, 3, 4, 6):
        e = round(part / whole, digits)
        if int(whole * e) == part:
            return e
    return part / whole


# -- yaml cross-check ------------------------------------------------------------------------------

_CHANNEL_MODULES = {"Conv", "DWConv", "C2f", "C3k2", "A2C2f", "SPPF", "C2PSA"}
_REPEAT_MODULES = {"C2f", "C3k2", "A2C2f", "C2PSA"}


def scale_of(yaml):
    """(scale letter, depth, width, max_channels) from a model yaml dict."""
    scale = yaml.get("scale") or ""
    scales = yaml.get("scales")
    if isinstance(scales, dict) and scales:
        if scale not in scales:
            raise ExportError(f"yaml: scale {scale!r} is not one of its scales {sorted(scales)}")
        vals = scales[scale]
        _require(isinstance(vals, (list, tuple)) and len(vals) == 3, f"yaml: bad scales entry for {scale!r}")
        return scale, float(vals[0]), float(vals[1]), vals[2]
    return scale, float(yaml.get("depth_multiple", 1.0)), float(yaml.get("width_multiple", 1.0)), math.inf


def check_against_yaml(yaml, layers, warn):
    """Cross-checks the layers read from the modules with the yaml. Shape-level disagreements stop the
    export; a scale rule (c3k, residual, mlp_ratio) that the modules do not follow is only warned about."""
    rows = list(yaml.get("backbone") or []) + list(yaml.get("head") or [])
    _require(len(rows) == len(layers), f"yaml: {len(rows)} layers, the checkpoint has {len(layers)}")
    scale, depth, width, max_ch = scale_of(yaml)
    for row, L in zip(rows, layers):
        i = L["index"]
        _require(isinstance(row, (list, tuple)) and len(row) == 4, f"yaml: layer {i} is not [from, n, module, args]")
        frm, n, mod, args = row
        mod = str(mod).split(".")[-1]
        _require(mod == L["type"] or (mod == "DWConv" and L["type"] == "Conv"),
                 f"model.{i}: the yaml says {mod}, the checkpoint holds {L['type']}")
        frm = [frm] if isinstance(frm, int) else list(frm)
        absf = [-1] if i == 0 else [x if x >= 0 else i + x for x in frm]
        _require(absf == L["from"], f"model.{i}: the yaml says from {absf}, the checkpoint {L['from']}")
        if mod in _REPEAT_MODULES:
            n_ = max(round(n * depth), 1) if n > 1 else n
            _require(n_ == L["n"], f"model.{i}: the yaml gives {n_} repeats (n={n} x depth {depth}), "
                     f"the checkpoint has {L['n']}")
        if mod in _CHANNEL_MODULES and args and isinstance(args[0], (int, float)):
            c2 = args[0]
            nc = yaml.get("nc")
            if c2 != nc:
                c2 = int(math.ceil(min(c2, max_ch) * width / 8) * 8)
            _require(c2 == L["c2"], f"model.{i}: the yaml gives {c2} output channels, the weights {L['c2']}")
        if mod == "Conv" and len(args) >= 3:
            _require(args[1] == L["k"] and args[2] == L["s"],
                     f"model.{i}: the yaml gives kernel {args[1]} stride {args[2]}, the weights {L['k']}, {L['s']}")
            if len(args) >= 5 and isinstance(args[4], int):
                _require(args[4] == L["g"], f"model.{i}: the yaml gives groups {args[4]}, the weights {L['g']}")
        if mod == "C3k2" and scale in ("m", "l", "x") and not L["c3k"]:
            warn(f"model.{i}: scale {scale} normally gives C3k2 c3k=True; the checkpoint has plain bottlenecks")
        if mod == "A2C2f" and L["a2"]:
            lx = scale in ("l", "x")
            if L["residual"] != lx or (lx and L["mlp_ratio"] != 1.2):
                warn(f"model.{i}: residual={L['residual']} mlp_ratio={L['mlp_ratio']} differ from the scale-{scale} "
                     "rule (l/x: residual, 1.2); using the checkpoint's modules")
        if mod == "Detect" and args and isinstance(args[0], int):
            pass  # nc in the yaml may be overridden at build time; the head's nc wins
    return scale, depth, width, max_ch
