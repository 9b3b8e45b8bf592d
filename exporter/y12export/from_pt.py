"""Ultralytics .pt checkpoint -> (header fields, tensors)."""

import numpy as np

from . import pt_reader as pr
from .errors import ExportError
from .pt_arch import ModelTree, check_against_yaml


def _names(raw, nc):
    if isinstance(raw, dict):
        names = [raw.get(i, raw.get(str(i))) for i in range(nc)]
    elif isinstance(raw, (list, tuple)):
        names = list(raw)
    else:
        names = [str(i) for i in range(nc)]
    if len(names) != nc or any(not isinstance(n, str) for n in names):
        raise ExportError(f"checkpoint names ({len(names)} entries) do not match the {nc} classes of the Detect head")
    return names


def _imgsz(ckpt, model):
    for src in (ckpt.get("train_args"), model.state.get("args")):
        v = src.get("imgsz") if isinstance(src, dict) else None
        if isinstance(v, int) and v > 0:
            return [v, v]
        if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v):
            return [int(v[0]), int(v[1])]
    return [640, 640]


def read_pt(path, warn):
    ckpt = pr.load_checkpoint(path)
    if isinstance(ckpt, pr.Record):  # a bare model saved with torch.save(model)
        ckpt = {"model": ckpt}
    if not isinstance(ckpt, dict):
        raise ExportError(f"{path}: the checkpoint is a {type(ckpt).__name__}, not a dict with a 'model'")
    model = ckpt.get("model")
    if model is None:
        model = ckpt.get("ema")
    if model is None and "state_dict" in ckpt:
        raise ExportError(f"{path}: a bare state_dict without the model structure is not supported")
    if not isinstance(model, pr.Record):
        raise ExportError(f"{path}: no 'model' (or 'ema') module in the checkpoint")
    if model.name != "DetectionModel":
        raise ExportError(f"{path}: unsupported model class {model.cls} (only DetectionModel)")
    tree = ModelTree(model)
    layers = tree.extract()
    detect = layers[-1]

    if len(tree.attn_kinds) > 1:
        raise ExportError(f"{path}: mixes fused qkv and separate qk/v attention")
    kinds = {L["type"] for L in layers}
    if "A2C2f" in kinds:
        kind = tree.attn_kinds.pop() if tree.attn_kinds else "qkv"
        family = "yolo12-turbo" if kind == "qk_v" else "yolo12"
        pe_k = tree.pe_ks.pop() if tree.pe_ks else (5 if kind == "qk_v" else 7)
        for L in layers:  # A2C2f blocks without attention still carry the family's attention fields
            if L["type"] == "A2C2f" and not L["a2"]:
                L.update(attn=kind, pe_k=pe_k)
    elif "C3k2" in kinds or "C2PSA" in kinds:
        family = "yolo11"
    elif "C2f" in kinds:
        family = "yolov8"
    else:
        raise ExportError(f"{path}: cannot tell the model family (no A2C2f, C3k2, C2PSA or C2f layer)")

    yaml = model.state.get("yaml")
    if isinstance(yaml, dict) and (yaml.get("backbone") or yaml.get("head")):
        scale, depth, width, max_ch = check_against_yaml(yaml, layers, warn)
    else:
        warn("the checkpoint has no yaml; the architecture comes from the modules alone")
        scale, depth, width, max_ch = "", 1.0, 1.0, 0

    stride = model.state.get("stride")
    strides = [int(round(float(s))) for s in np.asarray(stride).reshape(-1)] if isinstance(stride, np.ndarray) else []
    if len(strides) != len(detect["ch"]) or any(s <= 0 for s in strides):
        raise ExportError(f"{path}: model stride {strides} does not match the {len(detect['ch'])} Detect inputs")

    version = ckpt.get("version")
    header = {
        "format": "yolo12-model",
        "family": family,
        "task": "detect",
        "scale": scale,
        "depth_multiple": depth,
        "width_multiple": width,
        "max_channels": int(max_ch) if isinstance(max_ch, (int, float)) and max_ch != float("inf") else 0,
        "nc": detect["nc"],
        "names": _names(model.state.get("names"), detect["nc"]),
        "strides": strides,
        "imgsz": _imgsz(ckpt, model),
        "reg_max": detect["reg_max"],
    }
    producer = f"ultralytics {version}" if isinstance(version, str) else "ultralytics (unknown version)"
    return header, layers, tree.tensors, "ultralytics-pt", producer
