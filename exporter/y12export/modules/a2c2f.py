"""The A2C2f family (YOLO12): A2C2f, its ABlock pairs and their area attention AAttn.

    A2C2f(c1, c2, n, a2, area): cv1 1x1 c1 -> c_, n blocks each kept, cv2 1x1 (1 + n) c_ -> c2.
    a2=True: each block is Sequential(ABlock, ABlock) (attention + MLP); a2=False: a C3k block.
    Residual variants (l/x scales) carry a layer-scale `gamma` (c2,), stored in f32.
    AAttn: Ultralytics' fused qkv conv with a 7x7 positional conv, or the "turbo" (sunsmarterjie)
    separate qk and v convs with a 5x5 one.
"""

import numpy as np

from .. import pt_reader as pr
from ..errors import ExportError, require
from .c2f import c3k
from .common import cv1_cv2_m, kind_of, ratio


def aattn(tree, rec, path, c):
    """AAttn: Ultralytics (qkv, proj, pe 7x7) or turbo (qk, v, proj, pe 5x5). Returns (kind, area, pe_k)."""
    require(rec is not None and rec.name == "AAttn", f"{path}: unsupported module {kind_of(rec)} (expected AAttn)")
    kids = pr.children(rec)
    heads, head_dim, area = rec.state.get("num_heads"), rec.state.get("head_dim"), rec.state.get("area")
    require(all(isinstance(v, int) for v in (heads, head_dim, area)), f"{path}: AAttn without num_heads/head_dim/area")
    require(head_dim == 32 and heads * 32 == c, f"{path}: AAttn with {heads} heads of {head_dim} on {c} "
            "channels (only head_dim 32, heads = c/32 is supported)")
    require(area >= 1, f"{path}: area {area}")
    if set(kids) == {"qkv", "proj", "pe"}:
        kind = "qkv"
        tree.conv_shape(kids["qkv"], path + ".qkv", c, 3 * c, 1, act="none")
    elif set(kids) == {"qk", "v", "proj", "pe"}:
        kind = "qk_v"
        tree.conv_shape(kids["qk"], path + ".qk", c, 2 * c, 1, act="none")
        tree.conv_shape(kids["v"], path + ".v", c, c, 1, act="none")
    else:
        raise ExportError(f"{path}: unsupported AAttn sub-modules {sorted(kids)}")
    tree.conv_shape(kids["proj"], path + ".proj", c, c, 1, act="none")
    pe = tree.conv(kids["pe"], path + ".pe", "none")
    pe_k = pe["k"]
    want = dict(c1=c, c2=c, k=pe_k, s=1, p=pe_k // 2, g=c, d=1)
    require({k: pe[k] for k in want} == want, f"{path}.pe: {pe} is not a depthwise 'same' conv")
    return kind, area, pe_k


def ablock(tree, rec, path, c):
    """ABlock: AAttn then an MLP (1x1 c -> hidden SiLU, 1x1 hidden -> c). Returns (kind, area, pe_k, hidden)."""
    require(rec is not None and rec.name == "ABlock", f"{path}: unsupported module {kind_of(rec)} (expected ABlock)")
    kids = pr.children(rec)
    require(set(kids) == {"attn", "mlp"}, f"{path}: unexpected ABlock sub-modules {sorted(kids)}")
    kind, area, pe_k = aattn(tree, kids["attn"], path + ".attn", c)
    mlp = list(pr.children(kids["mlp"]).items())
    require(len(mlp) == 2, f"{path}.mlp: expected 2 convs, found {len(mlp)}")
    hidden = tree.conv_shape(mlp[0][1], path + ".mlp.0", c, None, 1, act="silu")["c2"]
    tree.conv_shape(mlp[1][1], path + ".mlp.1", hidden, c, 1, act="none")
    return kind, area, pe_k, hidden


def read(tree, rec, path, cin):
    c1 = cin[0]
    kids, c_ = cv1_cv2_m(tree, rec, path, c1)
    ms = list(pr.children(kids["m"]).items())
    n = len(ms)
    require(n >= 1, f"{path}.m: no blocks")
    c2 = tree.conv_shape(kids["cv2"], path + ".cv2", (1 + n) * c_, None, 1, act="silu")["c2"]
    a2 = ms[0][1].name == "Sequential"
    out = dict(type="A2C2f", c1=c1, c2=c2, n=n, a2=a2, area=1, residual=False, mlp_ratio=2.0, e=ratio(c_, c2),
               g=1, shortcut=True, attn="qkv", pe_k=7)
    if a2:
        infos = []
        for i, seq in ms:
            require(seq.name == "Sequential", f"{path}.m.{i}: unsupported module {seq.name} (expected Sequential)")
            blocks = list(pr.children(seq).items())
            require(len(blocks) == 2, f"{path}.m.{i}: {len(blocks)} ABlocks (expected 2)")
            infos += [ablock(tree, b, f"{path}.m.{i}.{j}", c_) for j, b in blocks]
        require(len(set(infos)) == 1, f"{path}: ABlocks disagree on attention kind/area/pe/mlp")
        kind, area, pe_k, hidden = infos[0]
        tree.attn_kinds.add(kind)
        tree.pe_ks.add(pe_k)
        mlp_ratio = next((r for r in (2.0, 1.2, 1.5, 1.0, 4.0) if int(c_ * r) == hidden), hidden / c_)
        require(int(c_ * mlp_ratio) == hidden, f"{path}: mlp hidden {hidden} is not int({c_} * ratio) for any ratio")
        out.update(area=area, mlp_ratio=mlp_ratio, attn=kind, pe_k=pe_k)
    else:
        flags = [c3k(tree, m, f"{path}.m.{i}", c_) for i, m in ms]
        require(len(set(flags)) == 1, f"{path}: C3k blocks disagree on shortcut/groups")
        out.update(shortcut=flags[0][0], g=flags[0][1])
    gamma = pr.tensors_of(rec).get("gamma")
    if gamma is not None:
        require(a2, f"{path}.gamma: layer-scale on an A2C2f without attention")
        tree.tensor(rec, path, "gamma", (c2,))
        require(c1 == c2, f"{path}: residual A2C2f needs c1 == c2 ({c1} != {c2})")
        tree.add(path + ".gamma", np.asarray(gamma, np.float64), "gamma")
        out["residual"] = True
    return out, c2


def check_yaml(args, L, scale, warn):
    """Ultralytics' scale rule (l/x: residual with mlp_ratio 1.2): only warned about."""
    if L["a2"]:
        lx = scale in ("l", "x")
        if L["residual"] != lx or (lx and L["mlp_ratio"] != 1.2):
            warn(f"model.{L['index']}: residual={L['residual']} mlp_ratio={L['mlp_ratio']} differ from the scale-{scale} "
                 "rule (l/x: residual, 1.2); using the checkpoint's modules")
