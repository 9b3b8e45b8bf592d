"""Architecture and tensors of an Ultralytics detection checkpoint, from its pickled module tree.

The checkpoint's `model` (a DetectionModel record, see pt_reader) holds `model` (a Sequential of the
top-level layers, each with its `i` index and `f` "from"), `yaml` (the architecture description and
scale), `names` and `stride`. Each top-level layer is read by the reader its class has in the module
table (y12export/modules): it reads the resolved attributes of its sub-modules (Conv2d channels,
kernel, stride, padding, groups; AAttn area and heads; ...), checks each weight's shape against them,
folds BatchNorm through the helpers below, and returns the layer entry of docs/model-format.md. Then
the layers are cross-checked against the yaml (module types, `from`, repeats after the depth multiple,
output channels after the width multiple). Any module, tensor or field we do not understand stops
the export with one line naming it.
"""

import collections
import math

import numpy as np

from . import limits, pt_reader as pr
from .bn_fold import fold_bn
from .errors import ExportError, require
from .modules import OTHER_HEADS, READERS, supported
from .modules.common import pair
from .writer import check_finite


class ModelTree:
    """Walks one DetectionModel record; collects folded tensors and layer entries."""

    def __init__(self, model_rec):
        self.model = model_rec
        self.tensors = collections.OrderedDict()  # name -> (float64 array, kind "weight"|"gamma")
        self.used = set()                         # checkpoint tensor names consumed
        self.attn_kinds = set()                   # "qkv" / "qk_v" seen in A2C2f blocks
        self.pe_ks = set()
        self.parameters = 0                       # elements of the checkpoint tensors read so far

    # -- tensors ---------------------------------------------------------------------------------
    def tensor(self, rec, path, name, shape=None, optional=False):
        t = pr.tensors_of(rec).get(name)
        full = f"{path}.{name}"
        if t is None:
            require(optional, f"{full}: missing tensor")
            return None
        require(isinstance(t, np.ndarray), f"{full}: not a tensor")
        if shape is not None:
            require(tuple(t.shape) == tuple(shape),
                    f"{full}: shape {list(t.shape)} does not match the module (expected {list(shape)})")
        if t.dtype.kind == "f":
            check_finite(full, t)
        self.parameters += t.size
        require(self.parameters <= limits.MAX_PARAMETERS,
                f"{full}: the model has more than {limits.MAX_PARAMETERS:,} parameters (the exporter's limit)")
        self.used.add(full)
        return t

    def add(self, name, array, kind="weight"):
        require(name not in self.tensors, f"{name}: duplicate tensor")
        check_finite(name, array)  # after BatchNorm folding (the checkpoint's tensors were checked on reading)
        self.tensors[name] = (array, kind)

    # -- convolutions ----------------------------------------------------------------------------
    def conv2d(self, rec, path):
        """Attributes of an nn.Conv2d record, its weight shape checked."""
        require(rec is not None, f"{path}: missing Conv2d")
        require(rec.name == "Conv2d", f"{path}: unsupported module {rec.name} (expected Conv2d)")
        a = rec.state
        c1, c2 = a.get("in_channels"), a.get("out_channels")
        g = a.get("groups", 1)
        k = pair(a.get("kernel_size"), "kernel_size", path)
        s = pair(a.get("stride", 1), "stride", path)
        p = a.get("padding", 0)
        require(not isinstance(p, str), f"{path}: padding {p!r} is not supported")
        p = pair(p, "padding", path)
        d = pair(a.get("dilation", 1), "dilation", path)
        require(all(isinstance(v, int) for v in (c1, c2, g)), f"{path}: Conv2d without channel counts")
        require(not a.get("transposed", False), f"{path}: transposed convolution is not supported")
        require(a.get("padding_mode", "zeros") == "zeros", f"{path}: padding_mode {a.get('padding_mode')!r} "
                "is not supported")
        require(g >= 1 and c1 % g == 0 and c2 % g == 0, f"{path}: groups {g} do not divide {c1} -> {c2}")
        w = self.tensor(rec, path, "weight", (c2, c1 // g, k, k))
        b = self.tensor(rec, path, "bias", (c2,), optional=True)
        return dict(c1=c1, c2=c2, k=k, s=s, p=p, g=g, d=d), w, b

    def conv(self, rec, path, act=None):
        """An Ultralytics Conv (Conv2d + BatchNorm2d + activation), or DWConv. Folds BN and stores
        `path.conv.weight/bias`. Returns dict(c1 c2 k s p g d act). `act` ("silu"/"none") is checked
        if given."""
        require(rec is not None, f"{path}: missing Conv module")
        require(rec.name in ("Conv", "DWConv"), f"{path}: unsupported module {rec.name} (expected Conv)")
        kids = pr.children(rec)
        extra = set(kids) - {"conv", "bn", "act"}
        if extra:
            raise ExportError(f"{path}.{(sorted(extra) or [''])[0]}: unsupported sub-module in Conv")
        f, w, b = self.conv2d(kids.get("conv"), path + ".conv")
        bn = kids.get("bn")
        if bn is not None:
            bpath = path + ".bn"
            require(bn.name == "BatchNorm2d", f"{bpath}: unsupported module {bn.name} (expected BatchNorm2d)")
            c2 = f["c2"]
            require(bn.state.get("num_features") == c2, f"{bpath}: num_features {bn.state.get('num_features')} "
                    f"!= conv out_channels {c2}")
            eps = bn.state.get("eps")
            require(isinstance(eps, float) and eps > 0, f"{bpath}: missing or bad eps {eps!r}")
            gamma = self.tensor(bn, bpath, "weight", (c2,), optional=True)
            beta = self.tensor(bn, bpath, "bias", (c2,), optional=True)
            mean = self.tensor(bn, bpath, "running_mean", (c2,))
            var = self.tensor(bn, bpath, "running_var", (c2,))
            self.tensor(bn, bpath, "num_batches_tracked", optional=True)
            require(np.all(np.asarray(var, np.float64) + eps > 0), f"{bpath}: running_var + eps is not positive")
            wf, bf = fold_bn(w, b, gamma, beta, mean, var, eps)
        else:  # an already fused Conv: the conv carries the bias
            wf = np.asarray(w, np.float64)
            bf = np.zeros(f["c2"]) if b is None else np.asarray(b, np.float64)
        self.add(path + ".conv.weight", wf)
        self.add(path + ".conv.bias", bf)
        a = kids.get("act")
        if a is None or a.name == "Identity":
            f["act"] = "none"
        elif a.name == "SiLU":
            f["act"] = "silu"
        else:
            raise ExportError(f"{path}.act: unsupported activation {a.name}")
        if act is not None:
            require(f["act"] == act, f"{path}: activation {f['act']}, expected {act}")
        return f

    def plain_conv2d(self, rec, path):
        """An nn.Conv2d with bias (last conv of a Detect branch): stores path.weight/bias."""
        f, w, b = self.conv2d(rec, path)
        require(b is not None, f"{path}.bias: missing tensor")
        self.add(path + ".weight", np.asarray(w, np.float64))
        self.add(path + ".bias", np.asarray(b, np.float64))
        return f

    def conv_shape(self, rec, path, c1, c2, k, s=1, g=1, act=None):
        """A Conv whose fields must be exactly these (c2=None: any output width). Returns its fields."""
        f = self.conv(rec, path, act)
        want = dict(c1=c1, c2=f["c2"] if c2 is None else c2, k=k, s=s, p=k // 2, g=g, d=1)
        got = {key: f[key] for key in want}
        require(got == want, f"{path}: conv {got} does not match the block's structure {want}")
        return f

    # -- the whole model -------------------------------------------------------------------------
    def _module_tensors(self):
        """The names of every tensor in the layer list. A pickle can make one module or tensor appear
        in many places (its memo), which would multiply the work and the copies: a module that holds
        tensors, or a tensor, reached a second time is refused before anything is read. (Modules
        without tensors are shared in real checkpoints: Ultralytics' Conv has one SiLU for all.)"""
        names, seen, holds = set(), {}, {}  # holds: id(module) -> whether its subtree has tensors

        def walk(rec, path):
            if id(rec) in seen:
                require(not holds.get(id(rec), True), f"{path}: the same module as {seen[id(rec)]} (shared modules with "
                        "weights are not supported)")
                return False
            seen[id(rec)] = path
            has = False
            for k, v in pr.tensors_of(rec).items():
                if isinstance(v, np.ndarray):
                    full = f"{path}.{k}"
                    other = seen.setdefault(id(v), full)
                    require(other == full, f"{full}: the same tensor as {other} (shared tensors are not supported)")
                    names.add(full)
                    has = True
            for k, v in pr.children(rec).items():
                if isinstance(v, pr.Record):
                    has = walk(v, f"{path}.{k}") or has
            holds[id(rec)] = has
            return has
        walk(pr.child(self.model, "model"), "model")
        return names

    def extract(self):
        """Returns the layer entries, each read by its family's reader. Fills self.tensors."""
        seq = pr.child(self.model, "model")
        require(isinstance(seq, pr.Record), "checkpoint model has no 'model' layer list")
        layers_in = list(pr.children(seq).items())
        require(layers_in, "checkpoint model has no layers")
        all_tensors = self._module_tensors()
        layers, chans = [], []
        for pos, (key, rec) in enumerate(layers_in):
            path = f"model.{key}"
            require(isinstance(rec, pr.Record), f"{path}: not a module")
            require(key == str(pos), f"{path}: layer key {key!r} out of order")
            i = rec.state.get("i", pos)
            require(i == pos, f"{path}: layer index i={i}, expected {pos}")
            frm = rec.state.get("f", -1)
            frm = [frm] if isinstance(frm, int) else list(frm)
            require(all(isinstance(x, int) for x in frm) and frm, f"{path}: bad 'from' {frm}")
            if pos == 0:
                require(frm == [-1], f"{path}: the first layer must read the input, got from {frm}")
                absf = [-1]
            else:
                absf = [x if x >= 0 else pos + x for x in frm]
                require(all(0 <= x < pos for x in absf), f"{path}: 'from' {frm} refers to a later layer")
            cin = [3] if pos == 0 else [chans[x] for x in absf]
            name = rec.name
            require(name not in OTHER_HEADS, f"{path}: unsupported head {name} (only detection models are supported)")
            reader = READERS.get(name)
            require(reader is not None, f"{path}: unsupported module {rec.cls} (supported: {supported()})")
            require(reader.many_inputs or len(absf) == 1, f"{path}: {name} with several inputs")
            last = pos == len(layers_in) - 1
            require(reader.head == last, f"{path}: {name} must be the last layer" if reader.head else
                    f"{path}: the last layer is {name}, not a Detect head")
            entry, cout = reader.read(self, rec, path, cin)
            layers.append(dict(index=pos, type=entry.pop("type"), **{"from": absf}, **entry))
            chans.append(cout)
        leftover = sorted(all_tensors - self.used)
        require(not leftover, f"{leftover[0] if leftover else ''}: unexpected tensor (not part of any supported module)")
        return layers


# -- yaml cross-check ------------------------------------------------------------------------------

def scale_of(yaml):
    """(scale letter, depth, width, max_channels) from a model yaml dict."""
    scale = yaml.get("scale") or ""
    scales = yaml.get("scales")
    if isinstance(scales, dict) and scales:
        if scale not in scales:
            raise ExportError(f"yaml: scale {scale!r} is not one of its scales {sorted(scales)}")
        vals = scales[scale]
        require(isinstance(vals, (list, tuple)) and len(vals) == 3, f"yaml: bad scales entry for {scale!r}")
        return scale, float(vals[0]), float(vals[1]), vals[2]
    return scale, float(yaml.get("depth_multiple", 1.0)), float(yaml.get("width_multiple", 1.0)), math.inf


def check_against_yaml(yaml, layers, warn):
    """Cross-checks the layers read from the modules with the yaml. Shape-level disagreements stop the
    export; a scale rule (c3k, residual, mlp_ratio) that the modules do not follow is only warned about."""
    rows = list(yaml.get("backbone") or []) + list(yaml.get("head") or [])
    require(len(rows) == len(layers), f"yaml: {len(rows)} layers, the checkpoint has {len(layers)}")
    scale, depth, width, max_ch = scale_of(yaml)
    for row, L in zip(rows, layers):
        i = L["index"]
        require(isinstance(row, (list, tuple)) and len(row) == 4, f"yaml: layer {i} is not [from, n, module, args]")
        frm, n, mod, args = row
        mod = str(mod).split(".")[-1]
        require(mod == L["type"] or (mod == "DWConv" and L["type"] == "Conv"),
                f"model.{i}: the yaml says {mod}, the checkpoint holds {L['type']}")
        frm = [frm] if isinstance(frm, int) else list(frm)
        absf = [-1] if i == 0 else [x if x >= 0 else i + x for x in frm]
        require(absf == L["from"], f"model.{i}: the yaml says from {absf}, the checkpoint {L['from']}")
        require(isinstance(n, int) and isinstance(args, (list, tuple)), f"yaml: layer {i} has a bad repeat count or args")
        reader = READERS[mod]  # L["type"], or DWConv (stored as a Conv)
        if reader.yaml_repeats:
            n_ = max(round(n * depth), 1) if n > 1 else n
            require(n_ == L["n"], f"model.{i}: the yaml gives {n_} repeats (n={n} x depth {depth}), "
                    f"the checkpoint has {L['n']}")
        if reader.yaml_channels and args and isinstance(args[0], (int, float)):
            c2 = args[0]
            nc = yaml.get("nc")
            if c2 != nc:
                c2 = int(math.ceil(min(c2, max_ch) * width / 8) * 8)
            require(c2 == L["c2"], f"model.{i}: the yaml gives {c2} output channels, the weights {L['c2']}")
        if reader.check_yaml is not None:
            reader.check_yaml(args, L, scale, warn)
    return scale, depth, width, max_ch
