"""C2PSA (YOLO11): cv1 1x1 c1 -> 2c, n PSABlocks (multi-head attention + FFN, with shortcuts) on the
second half, cv2 1x1 2c -> c1. Heads = c/64 and key_dim = head size / 2, as Ultralytics builds it."""

from .. import pt_reader as pr
from ..errors import require
from .common import cv1_cv2_m, ratio


def read(tree, rec, path, cin):
    c1 = cin[0]
    kids, c_ = cv1_cv2_m(tree, rec, path, c1, split=True)
    c = c_ // 2
    tree.conv_shape(kids["cv2"], path + ".cv2", 2 * c, c1, 1, act="silu")
    ms = list(pr.children(kids["m"]).items())
    require(len(ms) >= 1, f"{path}.m: no blocks")
    heads = c // 64
    require(heads >= 1, f"{path}: {c} channels give no 64-channel attention head")
    key_dim = int((c // heads) * 0.5)
    for i, blk in ms:
        bp = f"{path}.m.{i}"
        require(blk.name == "PSABlock", f"{bp}: unsupported module {blk.name} (expected PSABlock)")
        require(blk.state.get("add") is True, f"{bp}: PSABlock without shortcut is not supported")
        bk = pr.children(blk)
        require(set(bk) == {"attn", "ffn"}, f"{bp}: unexpected PSABlock sub-modules {sorted(bk)}")
        at = bk["attn"]
        require(at.name == "Attention", f"{bp}.attn: unsupported module {at.name} (expected Attention)")
        require(at.state.get("num_heads") == heads and at.state.get("key_dim") == key_dim,
                f"{bp}.attn: {at.state.get('num_heads')} heads of key_dim {at.state.get('key_dim')}, "
                f"expected {heads} and {key_dim}")
        ak = pr.children(at)
        require(set(ak) == {"qkv", "proj", "pe"}, f"{bp}.attn: unexpected sub-modules {sorted(ak)}")
        tree.conv_shape(ak["qkv"], bp + ".attn.qkv", c, c + 2 * key_dim * heads, 1, act="none")
        tree.conv_shape(ak["proj"], bp + ".attn.proj", c, c, 1, act="none")
        tree.conv_shape(ak["pe"], bp + ".attn.pe", c, c, 3, g=c, act="none")
        ffn = list(pr.children(bk["ffn"]).items())
        require(len(ffn) == 2, f"{bp}.ffn: expected 2 convs")
        tree.conv_shape(ffn[0][1], bp + ".ffn.0", c, 2 * c, 1, act="silu")
        tree.conv_shape(ffn[1][1], bp + ".ffn.1", 2 * c, c, 1, act="none")
    return dict(type="C2PSA", c1=c1, c2=c1, n=len(ms), e=ratio(c, c1)), c1
