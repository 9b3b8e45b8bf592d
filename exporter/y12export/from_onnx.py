"""Ultralytics ONNX export (YOLO11 / YOLOv8 detect, fp32/fp16 or int8-quantized) -> (header, tensors).

An ONNX export has no yaml and no module objects, so the architecture is reconstructed:

1. Weights. Initializer names are Ultralytics state-dict names after BN fusion (`model.0.conv.weight`,
   `model.23.cv2.0.2.bias`). Quantized weights are dequantized as `scale * (q - zero_point)` (per
   tensor, or per output channel): `X_quantized` + `X_scale` + `X_zero_point` initializers (the
   onnxruntime dynamic-quantization naming, used by ConvInteger/MatMulInteger) and
   DequantizeLinear nodes reading an initializer (QDQ models).
2. Convolutions. Each weight is followed to the Conv / ConvInteger node that reads it: kernel, stride,
   pads, groups and dilation come from that node; its float input is found by looking through
   (Dynamic)QuantizeLinear/DequantizeLinear; its output through the Cast/Mul/Add (bias) chain of
   ConvInteger; SiLU is recognized as `Mul(x, Sigmoid(x))`.
3. Modules. The tensor names of each top-level index `model.I` tell the module type: `conv` -> Conv;
   `cv1, cv2` only -> SPPF (with its MaxPool nodes); `cv1, cv2, m.N.cv1/cv2` -> C2f (bottleneck hidden =
   c) or C3k2 (hidden = c/2); `m.N.cv3` -> C3k2 with C3k blocks; `m.N.attn.qkv` -> C2PSA; `cv2.L, cv3.L,
   dfl` -> Detect (legacy or DWConv class branch from the tensors present). Indices without weights are
   Upsample (a Resize node named `/model.I/...`) or Concat (a Concat node named `/model.I/...`).
   Bottleneck and PSABlock shortcuts are read from the Add nodes of the graph.
4. Wiring. Each layer's inputs are matched to the layer that produced that tensor, so `from` comes from
   the graph itself, not from a known yaml.
The result is a synthetic module tree (pt_reader Records) which goes through the same checks and BN-free
tensor emission as a .pt checkpoint (pt_arch.ModelTree).
"""

import ast
import collections
import re

import numpy as np

from . import limits, pt_reader as pr
from .errors import ExportError, require
from .onnx_reader import read_onnx_model
from .pt_arch import ModelTree

# Known scale multipliers [depth, width, max_channels] of the Ultralytics yamls (facts, for the header).
_SCALES = {
    "yolov8": {"n": [0.33, 0.25, 1024], "s": [0.33, 0.50, 1024], "m": [0.67, 0.75, 768],
               "l": [1.00, 1.00, 512], "x": [1.00, 1.25, 512]},
    "yolo11": {"n": [0.50, 0.25, 1024], "s": [0.50, 0.50, 1024], "m": [0.50, 1.00, 512],
               "l": [1.00, 1.00, 512], "x": [1.00, 1.50, 512]},
}


def _rec(cls_name, attrs=None, modules=None, params=None):
    """A synthetic module Record, shaped like an unpickled torch module."""
    cls = pr._record_class(cls_name)
    r = cls.__new__(cls)
    r.state = dict(attrs or {})
    r.state["_modules"] = collections.OrderedDict(modules or {})
    r.state["_parameters"] = collections.OrderedDict(params or {})
    return r


def _dequantize(q, scale, zp, axis, what):
    q = np.asarray(q, np.float64)
    scale = np.asarray(scale, np.float64)
    zp = np.zeros_like(scale) if zp is None else np.asarray(zp, np.float64)
    require(scale.shape == zp.shape, f"{what}: scale {list(scale.shape)} and zero point {list(zp.shape)} differ")
    if scale.size == 1:
        return scale.reshape(()) * (q - zp.reshape(()))
    require(scale.ndim == 1 and q.ndim >= 1, f"{what}: unsupported quantization scale shape {list(scale.shape)}")
    axis = axis % q.ndim
    require(q.shape[axis] == scale.size, f"{what}: {scale.size} scales for axis {axis} of shape {list(q.shape)}")
    shape = [1] * q.ndim
    shape[axis] = scale.size
    return scale.reshape(shape) * (q - zp.reshape(shape))


class Graph:
    """Producer/consumer indexes over the ONNX nodes, and the dequantized float tensors."""

    def __init__(self, m, path):
        self.m, self.path = m, path
        self.producer = {}
        self.consumers = collections.defaultdict(list)
        for n in m.nodes:
            for o in n.outputs:
                self.producer[o] = n
            for i in n.inputs:
                if i:
                    self.consumers[i].append(n)
        self.constants = dict(m.initializers)  # initializers and Constant node values
        for n in m.nodes:
            if n.op_type == "Constant" and n.outputs and isinstance(n.attrs.get("value"), np.ndarray):
                self.constants[n.outputs[0]] = n.attrs["value"]
        self.floats = {}        # Ultralytics tensor name -> float64 array
        self.alias = {}         # graph tensor name (e.g. X_quantized, DQ output) -> Ultralytics name
        inits = m.initializers
        qparams = set()  # scales and zero points: parameters of the quantization, not tensors of the model
        for name in inits:
            if name.endswith("_quantized"):
                qparams |= {name[: -len("_quantized")] + "_scale", name[: -len("_quantized")] + "_zero_point"}
        for n in m.nodes:
            if n.op_type in ("DequantizeLinear", "QuantizeLinear"):
                qparams |= set(n.inputs[1:])
        weights = sum(a.size for name, a in inits.items() if name.startswith("model.") and name not in qparams)
        require(weights <= limits.MAX_PARAMETERS,
                f"{path}: the model has more than {limits.MAX_PARAMETERS:,} parameters (the exporter's limit)")
        for name, a in inits.items():
            if a.dtype.kind == "f" and name.startswith("model.") and name not in qparams:
                self.floats[name] = np.asarray(a, np.float64)
                self.alias[name] = name
        for n in m.nodes:  # QDQ: DequantizeLinear(initializer, scale, zero point)
            if n.op_type == "DequantizeLinear" and n.inputs and n.inputs[0] in inits:
                q = inits[n.inputs[0]]
                scale = inits.get(n.inputs[1]) if len(n.inputs) > 1 else None
                zp = inits.get(n.inputs[2]) if len(n.inputs) > 2 and n.inputs[2] else None
                require(scale is not None, f"{path}: {n.name}: DequantizeLinear scale is not a constant")
                out = n.outputs[0]
                candidates = [re.sub(r"_quantized$", "", n.inputs[0]),
                              re.sub(r"(_DequantizeLinear(_Output)?|_dequantized)$", "", out), out]
                name = next((c for c in candidates if re.match(r"^model\..*\.(weight|bias)$", c)), None)
                if name is None:
                    continue
                self.floats[name] = _dequantize(q, scale, zp, n.attrs.get("axis", 1), name)
                self.alias[out] = self.alias[n.inputs[0]] = name
        for name, q in inits.items():  # dynamic quantization: X_quantized, X_scale, X_zero_point
            if name.endswith("_quantized") and name.startswith("model.") and name not in self.alias:
                base = name[: -len("_quantized")]
                require(base + "_scale" in inits, f"{path}: {name} has no {base}_scale")
                self.floats[base] = _dequantize(q, inits[base + "_scale"], inits.get(base + "_zero_point"), 0, base)
                self.alias[name] = base
        for n in m.nodes:  # deduplicated initializers: Identity(model.X) -> model.Y
            if n.op_type == "Identity" and n.inputs and n.inputs[0] in self.alias and n.outputs[0].startswith("model."):
                self.floats[n.outputs[0]] = self.floats[self.alias[n.inputs[0]]]
                self.alias[n.outputs[0]] = n.outputs[0]
        for name in self.floats:
            require(".bn." not in name and not name.endswith("running_mean"),
                    f"{path}: {name}: an unfused BatchNorm (export the model with fused Conv+BN)")
        self.graph_names = collections.defaultdict(list)  # Ultralytics name -> the graph tensors it goes by
        for gname, uname in self.alias.items():
            self.graph_names[uname].append(gname)

    def float_source(self, t):
        """The float tensor behind a (dynamically) quantized activation."""
        for _ in range(4):
            n = self.producer.get(t)
            if n is None:
                return t
            if n.op_type == "DynamicQuantizeLinear" and t == n.outputs[0]:
                t = n.inputs[0]
            elif n.op_type in ("DequantizeLinear", "QuantizeLinear") and t not in self.m.initializers:
                t = n.inputs[0]
            else:
                return t
        return t

    def only_consumer(self, t, ops):
        cs = self.consumers.get(t, [])
        return cs[0] if len(cs) == 1 and cs[0].op_type in ops else None


class ConvSite:
    """One convolution as the graph runs it: node attributes, float input, output after bias and act."""

    def __init__(self, g, base, weight_name):
        self.base = base
        w = g.floats[weight_name]
        require(w.ndim == 4, f"{g.path}: {weight_name}: not a 4-D conv weight")
        node = None
        for gname in g.graph_names[weight_name]:
            for n in g.consumers.get(gname, []):
                if n.op_type in ("Conv", "ConvInteger") and len(n.inputs) > 1 and n.inputs[1] == gname:
                    node = n
        require(node is not None, f"{g.path}: {weight_name}: no Conv node reads this weight")
        a = node.attrs
        require(a.get("auto_pad", "NOTSET") in ("NOTSET", ""), f"{g.path}: {node.name}: auto_pad is not supported")
        pads = list(a.get("pads", [0, 0, 0, 0]))
        require(len(set(pads)) == 1, f"{g.path}: {node.name}: asymmetric pads {pads}")
        strides = list(a.get("strides", [1, 1]))
        dil = list(a.get("dilations", [1, 1]))
        require(len(set(strides)) == 1 and len(set(dil)) == 1, f"{g.path}: {node.name}: non-square stride/dilation")
        groups = int(a.get("group", 1))
        k = list(a.get("kernel_shape", w.shape[2:]))
        require(k == list(w.shape[2:]) and k[0] == k[1], f"{g.path}: {node.name}: kernel {k} vs weight {list(w.shape)}")
        self.attrs = dict(in_channels=int(w.shape[1]) * groups, out_channels=int(w.shape[0]), kernel_size=(k[0], k[1]),
                          stride=(strides[0], strides[0]), padding=(pads[0], pads[0]), dilation=(dil[0], dil[0]),
                          groups=groups, padding_mode="zeros", transposed=False)
        self.weight = w
        self.input = g.float_source(node.inputs[0])
        out = node.outputs[0]
        if node.op_type == "ConvInteger":  # Cast -> Mul(scale) -> Add(bias)
            for ops in (("Cast",), ("Mul",), ("Add",)):
                nxt = g.only_consumer(out, ops)
                if nxt is None:
                    require(ops == ("Add",), f"{g.path}: {node.name}: unexpected ConvInteger output chain")
                    break
                out = nxt.outputs[0]
        self.output = out
        self.bias = g.floats.get(base + ".bias")
        if node.op_type == "Conv" and len(node.inputs) > 2 and node.inputs[2]:
            bname = g.alias.get(node.inputs[2], node.inputs[2])
            self.bias = g.floats.get(bname, self.bias)
        # SiLU = Mul(x, Sigmoid(x))
        self.act, self.act_output = "none", out
        for s in g.consumers.get(out, []):
            if s.op_type == "Sigmoid":
                for mnode in g.consumers.get(s.outputs[0], []):
                    if mnode.op_type == "Mul" and set(mnode.inputs) == {out, s.outputs[0]}:
                        self.act, self.act_output = "silu", mnode.outputs[0]
        if self.act == "none":
            for s in g.consumers.get(out, []):
                require(s.op_type not in ("Sigmoid", "Relu", "LeakyRelu", "HardSwish", "Clip"),
                        f"{g.path}: {base}: unsupported activation ({s.op_type} without the SiLU pattern)")


def _sort_key(k):
    return (0, int(k)) if k.isdigit() else (1, k)


def read_onnx(path, warn):
    m = read_onnx_model(path)
    meta = m.metadata
    task = meta.get("task", "detect")
    require(task == "detect", f"{path}: unsupported task {task!r} (only detect)")
    require(meta.get("end2end", "False") != "True", f"{path}: end-to-end (NMS-free) exports are not supported")
    g = Graph(m, path)

    # convolutions grouped by top-level layer
    sites = {}  # module path ("model.2.m.0.cv1", Conv module) or plain conv path -> (ConvSite, is_module)
    dfl = {}  # Detect path -> DFL weight (fixed, checked and not stored)
    for name in sorted(g.floats):
        if name.endswith(".dfl.conv.weight"):
            dfl[name[: -len(".dfl.conv.weight")]] = g.floats[name]
        elif name.endswith(".conv.weight"):
            base = name[: -len(".conv.weight")]
            sites[base] = (ConvSite(g, base + ".conv", name), True)
        elif name.endswith(".weight"):
            base = name[: -len(".weight")]
            sites[base] = (ConvSite(g, base, name), False)
    used = {p + ".dfl.conv.weight" for p in dfl}
    for base, (site, is_mod) in sites.items():
        bias_name = (base + ".conv.bias") if is_mod else (base + ".bias")
        used.add(bias_name)
        used.add(base + (".conv.weight" if is_mod else ".weight"))
        require(site.bias is not None, f"{path}: {bias_name}: missing (BN-fused convs carry a bias)")
    leftover = sorted(set(g.floats) - used)
    require(not leftover, f"{path}: {leftover[0] if leftover else ''}: unexpected tensor (not part of a supported module)")

    by_layer = collections.defaultdict(dict)  # I -> {relative path: (site, is_mod)}
    for base, v in sites.items():
        mt = re.match(r"^model\.(\d+)(?:\.(.*))?$", base)
        require(mt is not None, f"{path}: {base}: tensor name outside model.N")
        by_layer[int(mt.group(1))][mt.group(2) or ""] = v
    node_layers = collections.defaultdict(list)
    for n in m.nodes:
        mt = re.match(r"^/model\.(\d+)/", n.name)
        if mt:
            node_layers[int(mt.group(1))].append(n)
    count = max(list(by_layer) + list(node_layers)) + 1
    require(set(by_layer) | set(node_layers) == set(range(count)), f"{path}: layer indices are not contiguous")

    image = m.inputs[0] if m.inputs else "images"
    produced_by = {}  # tensor name -> layer index
    layers = collections.OrderedDict()
    for i in range(count):
        rel = by_layer.get(i, {})
        lp = f"model.{i}"
        if not rel:
            ops = [n for n in node_layers[i] if n.op_type in ("Resize", "Concat", "Upsample")]
            require(len(ops) == 1, f"{path}: {lp}: no weights and not a single Resize/Concat node")
            n = ops[0]
            if n.op_type == "Concat":
                rec = _rec("ultralytics.nn.modules.conv.Concat", {"d": int(n.attrs.get("axis", 1))})
                inputs = n.inputs
            else:
                scales = g.constants.get(n.inputs[2]) if len(n.inputs) > 2 else None
                if scales is None and n.op_type == "Upsample" and len(n.inputs) > 1:
                    scales = g.constants.get(n.inputs[1])
                require(scales is not None and list(np.asarray(scales).reshape(-1)) == [1, 1, 2, 2],
                        f"{path}: {lp}: Resize without constant scales [1, 1, 2, 2]")
                rec = _rec("torch.nn.modules.upsampling.Upsample", {"scale_factor": 2.0, "mode": n.attrs.get("mode", "nearest"),
                                                                    "size": None})
                inputs = [n.inputs[0]]
            output = n.outputs[0]
        else:
            rec, inputs, output = _module_layer(g, path, lp, rel, node_layers[i], dfl.get(lp))
        frm = []
        for t in inputs:
            if t == image:
                frm.append(-1)
            else:
                require(t in produced_by, f"{path}: {lp}: input {t} is not the output of an earlier layer")
                frm.append(produced_by[t])
        if i == 0:
            require(frm == [-1], f"{path}: model.0 does not read the input image")
        else:
            require(-1 not in frm, f"{path}: {lp}: reads the input image directly (not supported)")
        rec.state.update(i=i, f=frm if len(frm) > 1 else frm[0])
        produced_by[output] = i
        layers[str(i)] = rec

    # downsampling factor of every layer -> strides of the Detect inputs
    factor = {}
    for i, rec in enumerate(layers.values()):
        frm = rec.state["f"] if isinstance(rec.state["f"], list) else [rec.state["f"]]
        f_in = [1 if x == -1 else factor[x] for x in frm]
        require(len(set(f_in)) == 1 or rec.name == "Detect", f"{path}: model.{i}: concatenates different resolutions")
        if rec.name == "Conv":
            factor[i] = f_in[0] * pr.child(rec, "conv").state["stride"][0]
        elif rec.name == "Upsample":
            require(f_in[0] % 2 == 0, f"{path}: model.{i}: upsamples above the input resolution")
            factor[i] = f_in[0] // 2
        else:
            factor[i] = f_in[0]
    last = list(layers.values())[-1]
    require(last.name == "Detect", f"{path}: the last layer is not a Detect head")
    strides = [factor[x] for x in last.state["f"]]
    meta_stride = meta.get("stride")
    if meta_stride and meta_stride.isdigit():
        require(int(meta_stride) == max(strides), f"{path}: metadata stride {meta_stride} != graph strides {strides}")

    model = _rec("ultralytics.nn.tasks.DetectionModel", {},
                 {"model": _rec("torch.nn.modules.container.Sequential", {}, layers)})
    tree = ModelTree(model)
    out_layers = tree.extract()
    detect = out_layers[-1]
    kinds = {L["type"] for L in out_layers}
    family = "yolo11" if ("C3k2" in kinds or "C2PSA" in kinds) else "yolov8" if "C2f" in kinds else None
    require(family is not None, f"{path}: cannot tell the model family (no C3k2, C2PSA or C2f layer)")

    nc = detect["nc"]
    names = _names(meta.get("names"), nc, path, warn)
    imgsz = _imgsz(meta.get("imgsz"), m.input_dims.get(image), path, warn)
    desc = meta.get("description", "")
    ms = re.search(r"YOLO(?:v8|11)([nsmlx])\b", desc)
    scale = ms.group(1) if ms else ""
    depth, width, max_ch = _SCALES[family].get(scale, [1.0, 1.0, 0])
    header = {"format": "yolo12-model", "family": family, "task": "detect", "scale": scale,
              "depth_multiple": depth, "width_multiple": width, "max_channels": max_ch,
              "nc": nc, "names": names, "strides": strides, "imgsz": imgsz, "reg_max": detect["reg_max"]}
    version = meta.get("version")
    producer = f"ultralytics {version}" if version else (m.producer or "unknown")
    if m.producer and version:
        producer += f" ({m.producer})"
    return header, out_layers, tree.tensors, "onnx", producer


# One Python string literal, as repr() writes it ('...' or "..." with backslash escapes).
_STR = r"'(?:[^'\\\n]|\\.)*'" + "|" + r'"(?:[^"\\\n]|\\.)*"'
_NAME_ENTRY = re.compile(r"\s*(?:(\d+)\s*:\s*)?(" + _STR + r")\s*([,}\]])")
_END = re.compile(r"\s*([}\]])\Z")


def _names(text, nc, path, warn):
    """The class names from the metadata `names`: str() of a dict {0: 'person', ...} (or a list), read
    with a linear scanner: each string literal is decoded on its own, the text never evaluated (and
    never parsed whole: an AST of a large literal costs hundreds of times its size)."""
    if not text:
        warn("the ONNX metadata has no class names; using class indices")
        return [str(i) for i in range(nc)]
    bad = f"{path}: metadata 'names' is not a dict or list of class names ({_excerpt(text)})"
    body = text.strip()
    require(body[:1] in "{[" and len(body) >= 2, bad)
    close = "}" if body[0] == "{" else "]"
    found, pos = {}, 1
    if body[1:].strip() != close:
        while True:
            mt = _NAME_ENTRY.match(body, pos)
            require(mt is not None and (mt.group(1) is not None) == (close == "}"), bad)
            key = int(mt.group(1)) if mt.group(1) is not None else len(found)
            require(key not in found and len(found) < nc, bad if key in found else
                    f"{path}: metadata 'names' has more than the {nc} classes of the Detect head")
            found[key] = ast.literal_eval(mt.group(2))  # one string literal: no code, no large AST
            pos = mt.end()
            if mt.group(3) != ",":
                require(mt.group(3) == close and pos == len(body), bad)
                break
            end = _END.match(body, pos)
            if end is not None:  # a trailing comma
                require(end.group(1) == close, bad)
                break
    require(sorted(found) == list(range(nc)),
            f"{path}: metadata 'names' has {len(found)} entries for the {nc} classes of the Detect head")
    return [found[i] for i in range(nc)]


def _imgsz(text, input_dims, path, warn):
    """The input size: metadata `imgsz` ("[320, 320]" or "640"), checked against the graph input's
    static (N, C, H, W) where it has one. A malformed value is an error, never a silent default."""
    from_graph = None
    if input_dims and len(input_dims) == 4 and all(isinstance(d, int) and d > 0 for d in input_dims[2:]):
        from_graph = [input_dims[2], input_dims[3]]
    if not text:
        if from_graph:
            return from_graph
        warn("no imgsz in the ONNX metadata and a dynamic input shape; recording 640x640")
        return [640, 640]
    value = None
    if len(text) <= 64:
        try:
            value = ast.literal_eval(text)  # a short literal only: never evaluates code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    if isinstance(value, int):
        value = [value, value]
    require(isinstance(value, (list, tuple)) and len(value) == 2 and
            all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 1 << 16 for x in value),
            f"{path}: metadata 'imgsz' is not an input size ({_excerpt(text)})")
    value = [int(value[0]), int(value[1])]
    require(from_graph is None or from_graph == value,
            f"{path}: metadata imgsz {value} differs from the graph input {from_graph[0]}x{from_graph[1]}")
    return value


def _excerpt(text):
    return repr(text) if len(text) <= 40 else repr(text[:37]) + f"... ({len(text):,} characters)"


def _module_layer(g, path, lp, rel, nodes, dfl_weight):
    """Builds the Record tree of one weighted top-level layer. Returns (record, inputs, output tensor)."""
    keys = set(rel)
    tops = {k.split(".")[0] for k in keys}
    if keys == {""}:
        site, is_mod = rel[""]
        require(is_mod, f"{path}: {lp}: a bare Conv2d as a layer")
        return _conv_rec(site), [site.input], site.act_output
    if dfl_weight is not None or ("cv2" in tops and "cv3" in tops and any(k.startswith("cv2.0.") for k in keys)):
        return _detect(g, path, lp, rel, dfl_weight)
    require({"cv1", "cv2"} <= keys, f"{path}: {lp}: unrecognized module (tensors under {sorted(tops)})")
    cv1, cv2 = rel["cv1"][0], rel["cv2"][0]
    extra = tops - {"cv1", "cv2", "m"}
    require(not extra, f"{path}: {lp}: unrecognized module (unexpected {(sorted(extra) or [''])[0]})")
    if tops == {"cv1", "cv2"}:  # SPPF: cv1, three chained MaxPools, cv2
        pools, t = [], cv1.act_output
        for _ in range(8):  # SPPF chains 3 (a cycle in a hostile graph must not loop forever)
            nxt = [n for n in g.consumers.get(t, []) if n.op_type == "MaxPool"]
            if len(nxt) != 1:
                break
            pools.append(nxt[0])
            t = nxt[0].outputs[0]
        require(pools, f"{path}: {lp}: cv1 and cv2 without MaxPool nodes (unsupported module)")
        a = pools[0].attrs
        ks = list(a.get("kernel_shape", []))
        require(len(ks) == 2 and ks[0] == ks[1], f"{path}: {lp}: MaxPool kernel {ks}")
        pads, strides = list(a.get("pads", [0] * 4)), list(a.get("strides", [1, 1]))
        mp = _rec("torch.nn.modules.pooling.MaxPool2d", {"kernel_size": ks[0], "stride": strides[0],
                                                         "padding": pads[0] if len(set(pads)) == 1 else -1,
                                                         "dilation": 1, "ceil_mode": bool(a.get("ceil_mode", 0))})
        rec = _rec("ultralytics.nn.modules.block.SPPF", {"n": len(pools)},
                   {"cv1": _conv_rec(cv1), "cv2": _conv_rec(cv2), "m": mp})
        return rec, [cv1.input], cv2.act_output
    if any(re.match(r"^m\.\d+\.\d+\.attn\.", k) for k in keys):
        raise ExportError(f"{path}: {lp}: A2C2f (YOLO12 area attention) is not supported from ONNX; export the .pt")
    tree = _nest(rel)
    m = tree["m"]
    if any("attn" in blk for blk in m.values() if isinstance(blk, dict)):
        blocks = collections.OrderedDict()
        for j in sorted(m, key=_sort_key):
            blocks[j] = _psablock(g, path, f"{lp}.m.{j}", m[j])
        rec = _rec("ultralytics.nn.modules.block.C2PSA", {}, {
            "cv1": _conv_rec(cv1), "cv2": _conv_rec(cv2),
            "m": _rec("torch.nn.modules.container.Sequential", {}, blocks)})
        return rec, [cv1.input], cv2.act_output
    c = cv1.weight.shape[0] // 2
    blocks, kind = collections.OrderedDict(), set()
    for j in sorted(m, key=_sort_key):
        blk = m[j]
        require(isinstance(blk, dict), f"{path}: {lp}.m.{j}: unexpected tensor")
        if "cv3" in blk:  # C3k: cv1, cv2, cv3, m.J bottlenecks
            inner = collections.OrderedDict((q, _bottleneck(g, path, blk["m"][q]))
                                            for q in sorted(blk.get("m", {}), key=_sort_key))
            blocks[j] = _rec("ultralytics.nn.modules.block.C3k", {}, {
                "cv1": _conv_rec(blk["cv1"]), "cv2": _conv_rec(blk["cv2"]), "cv3": _conv_rec(blk["cv3"]),
                "m": _rec("torch.nn.modules.container.Sequential", {}, inner)})
            kind.add("C3k2")
        else:
            require(isinstance(blk.get("cv1"), ConvSite), f"{path}: {lp}.m.{j}: unrecognized block")
            hidden = blk["cv1"].weight.shape[0]
            kind.add("C2f" if hidden == c else "C3k2" if hidden == c // 2 else "?")
            blocks[j] = _bottleneck(g, path, blk)
    require(len(kind) == 1 and "?" not in kind, f"{path}: {lp}: unrecognized C2f/C3k2 blocks")
    cls = kind.pop()
    rec = _rec(f"ultralytics.nn.modules.block.{cls}", {}, {
        "cv1": _conv_rec(cv1), "cv2": _conv_rec(cv2), "m": _rec("torch.nn.modules.container.ModuleList", {}, blocks)})
    return rec, [cv1.input], cv2.act_output


def _nest(rel):
    """{'m.0.cv1': (site, True), ...} -> nested dicts {'m': {'0': {'cv1': site}}}."""
    root = {}
    for k, (site, is_mod) in rel.items():
        parts = k.split(".")
        d = root
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = site
    return root


def _conv_rec(site):
    """A Conv module Record (Conv2d with bias, no BN, activation) from a ConvSite."""
    conv = _plain_rec(site)
    act = _rec("torch.nn.modules.activation.SiLU" if site.act == "silu" else "torch.nn.modules.linear.Identity")
    return _rec("ultralytics.nn.modules.conv.Conv", {}, {"conv": conv, "act": act})


def _plain_rec(site):
    return _rec("torch.nn.modules.conv.Conv2d", site.attrs, params={"weight": site.weight, "bias": site.bias})


def _has_add(g, a, b):
    return any(n.op_type == "Add" and set(n.inputs) == {a, b} for n in g.consumers.get(a, []))


def _bottleneck(g, path, blk):
    require(isinstance(blk, dict) and set(blk) == {"cv1", "cv2"}, f"{path}: unrecognized bottleneck")
    cv1, cv2 = blk["cv1"], blk["cv2"]
    return _rec("ultralytics.nn.modules.block.Bottleneck", {"add": _has_add(g, cv1.input, cv2.act_output)},
                {"cv1": _conv_rec(cv1), "cv2": _conv_rec(cv2)})


def _psablock(g, path, bp, blk):
    require(isinstance(blk, dict) and set(blk) == {"attn", "ffn"}, f"{path}: {bp}: unrecognized PSABlock")
    at, ffn = blk["attn"], blk["ffn"]
    require(set(at) == {"qkv", "proj", "pe"} and set(ffn) == {"0", "1"}, f"{path}: {bp}: unrecognized PSABlock")
    c = at["qkv"].weight.shape[1]
    heads = max(c // 64, 1)
    key_dim = (at["qkv"].weight.shape[0] - c) // (2 * heads)
    x = at["qkv"].input
    attn_out = at["proj"].act_output
    add = _has_add(g, x, attn_out)
    attn = _rec("ultralytics.nn.modules.block.Attention", {"num_heads": heads, "key_dim": key_dim}, {
        "qkv": _conv_rec(at["qkv"]), "proj": _conv_rec(at["proj"]), "pe": _conv_rec(at["pe"])})
    f = _rec("torch.nn.modules.container.Sequential", {}, {"0": _conv_rec(ffn["0"]), "1": _conv_rec(ffn["1"])})
    return _rec("ultralytics.nn.modules.block.PSABlock", {"add": add}, {"attn": attn, "ffn": f})


def _detect(g, path, lp, rel, dfl_weight):
    tree = _nest(rel)
    require(set(tree) <= {"cv2", "cv3"}, f"{path}: {lp}: unsupported head (tensors under {sorted(tree)})")
    box, cls = tree.get("cv2", {}), tree.get("cv3", {})
    levels = sorted(box, key=_sort_key)
    require(levels and levels == sorted(cls, key=_sort_key), f"{path}: {lp}: box and class branches differ")
    cv2s, cv3s, inputs = collections.OrderedDict(), collections.OrderedDict(), []
    for L in levels:
        b, c = box[L], cls[L]
        require(set(b) == {"0", "1", "2"} and set(c) == {"0", "1", "2"}, f"{path}: {lp}: unexpected branch layout")
        cv2s[L] = _rec("torch.nn.modules.container.Sequential", {}, {
            "0": _conv_rec(b["0"]), "1": _conv_rec(b["1"]), "2": _plain_rec(b["2"])})
        if isinstance(c["0"], dict):  # DWConv + Conv pairs
            c0 = _rec("torch.nn.modules.container.Sequential", {}, {"0": _conv_rec(c["0"]["0"]), "1": _conv_rec(c["0"]["1"])})
            c1 = _rec("torch.nn.modules.container.Sequential", {}, {"0": _conv_rec(c["1"]["0"]), "1": _conv_rec(c["1"]["1"])})
            cin = c["0"]["0"].input
        else:
            c0, c1, cin = _conv_rec(c["0"]), _conv_rec(c["1"]), c["0"].input
        cv3s[L] = _rec("torch.nn.modules.container.Sequential", {}, {"0": c0, "1": c1, "2": _plain_rec(c["2"])})
        require(cin == b["0"].input, f"{path}: {lp}.cv2.{L}/cv3.{L}: box and class branches read different inputs")
        inputs.append(b["0"].input)
    reg4 = box[levels[0]]["2"].weight.shape[0]
    require(reg4 % 4 == 0, f"{path}: {lp}: box branch with {reg4} outputs")
    reg_max = reg4 // 4
    nc = cls[levels[0]]["2"].weight.shape[0]
    ar = np.arange(reg_max, dtype=np.float64).reshape(1, reg_max, 1, 1)
    if dfl_weight is not None:
        w = dfl_weight
        # the DFL conv is fixed (0..reg_max-1); a quantized copy is accepted within half an int8 step
        tol = (reg_max - 1) / 254.0 + 1e-3
        require(w.shape == ar.shape and np.abs(w - ar).max() <= tol,
                f"{path}: {lp}.dfl.conv.weight: not arange({reg_max}); a modified DFL is not supported")
    dconv = _rec("torch.nn.modules.conv.Conv2d", dict(in_channels=reg_max, out_channels=1, kernel_size=(1, 1), stride=(1, 1),
                                                      padding=(0, 0), dilation=(1, 1), groups=1),
                 params={"weight": ar, "bias": None})
    rec = _rec("ultralytics.nn.modules.head.Detect", {"nc": nc, "reg_max": reg_max}, {
        "cv2": _rec("torch.nn.modules.container.ModuleList", {}, cv2s),
        "cv3": _rec("torch.nn.modules.container.ModuleList", {}, cv3s),
        "dfl": _rec("ultralytics.nn.modules.block.DFL", {}, {"conv": dconv})})
    return rec, inputs, None
