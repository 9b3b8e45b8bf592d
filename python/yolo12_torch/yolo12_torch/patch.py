"""patch(model) / unpatch(model): Ultralytics' Conv, DWConv, AAttn and Detect (and the plain Conv2d
layers of the Detect heads) call the yolo12 operators instead of cuDNN / matmul-softmax.

Patching changes the class of each module in place to a subclass of its own class (Conv ->
Yolo12Conv, ...): no module is replaced, so parameters, buffers, state_dict keys, optimizer state and
hooks stay as they are, and isinstance checks (Ultralytics' fuse(), the trainer) still hold. A copy
made with copy.deepcopy stays patched (Ultralytics' EMA is one); pickling (torch.save, checkpoints)
writes the original classes, so a checkpoint never needs yolo12_torch to load.

What each patched module computes:
  Conv / DWConv   train mode: yolo12::conv2d (no bias), then PyTorch's BatchNorm and activation.
                  eval mode, or fused (no bn): BatchNorm folded into the weights and the bias, SiLU
                  fused into the conv epilogue: one yolo12::conv2d.
  Conv2d          (the last 1x1 of each Detect branch) yolo12::conv2d with its bias.
  AAttn           both YOLO12 families: Ultralytics (qkv conv, 7x7 pe) and the official YOLOv12
                  "turbo" (qk and v convs, 5x5 pe; a turbo checkpoint loaded into Ultralytics only
                  runs once patched): yolo12::area_attention between its (patched) convs.
  Detect          eval: yolo12::detect_decode for the boxes and scores (training returns the raw head,
                  as before).
Anything the operators cannot take (other paddings, non-square kernels, bf16 or fp16 on the CPU, an
end-to-end or xyxy head, ...) runs the original code.
"""

import copy
import copyreg
import types

import torch
from torch import nn

from . import ops

_CUDA_DTYPES = (torch.float32, torch.float16)
_CPU_DTYPES = (torch.float32, torch.float64)


def _dtype_ok(t, bf16=False):
    if t.device.type == "cuda":
        return t.dtype in _CUDA_DTYPES or (bf16 and t.dtype == torch.bfloat16)
    return t.device.type == "cpu" and t.dtype in _CPU_DTYPES


def _square(v):
    return v if isinstance(v, int) else (v[0] if len(v) == 2 and v[0] == v[1] else None)


def _conv_args(conv):
    """(stride, padding, dilation, groups) when yolo12::conv2d can run this nn.Conv2d, else None."""
    if not isinstance(conv, nn.Conv2d) or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        return None
    k, s, p, d = (_square(v) for v in (conv.kernel_size, conv.stride, conv.padding, conv.dilation))
    if None in (k, s, p, d):
        return None
    return s, p, d, conv.groups


def _fold_bn(weight, bias, bn):
    """Weights and bias of conv followed by eval-mode BatchNorm (differentiable)."""
    scale = torch.rsqrt(bn.running_var + bn.eps)
    if bn.weight is not None:
        scale = scale * bn.weight
    shift = -bn.running_mean * scale
    if bias is not None:
        shift = shift + bias * scale
    if bn.bias is not None:
        shift = shift + bn.bias
    return weight * scale.view(-1, 1, 1, 1), shift


# ---- the patched classes -------------------------------------------------------------------------

class _Patched:
    """Base of every patched class: deep copies stay patched, pickles name the original class."""

    _yolo12_original = None  # set per generated class

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__dict__, memo))
        return new

    def __reduce_ex__(self, protocol):
        rv = super().__reduce_ex__(protocol)
        if not (isinstance(rv, tuple) and len(rv) >= 3 and rv[1] and rv[1][0] is type(self)):
            return rv
        state = rv[2]
        if isinstance(state, dict):
            state = dict(state)
            _original_state(state, self._yolo12_original)
        # copyreg._reconstructor (the standard library's) builds an instance of the original class;
        # pickle refuses __newobj__ with a class other than the object's own.
        return (copyreg._reconstructor, (self._yolo12_original, object, None), state) + tuple(rv[3:])


def _conv_forward(m, x):
    """Ultralytics Conv (conv -> bn -> act, or conv -> act once fused) on yolo12::conv2d."""
    args = _conv_args(m.conv)
    bn = getattr(m, "bn", None)
    if args is None or not _dtype_ok(x):
        orig = m._yolo12_original
        return orig.forward(m, x) if bn is not None else orig.forward_fuse(m, x)
    conv, act = m.conv, m.act
    silu, ident = type(act) is nn.SiLU, type(act) is nn.Identity
    if bn is not None and (bn.training or not bn.track_running_stats or bn.running_mean is None):
        return act(bn(ops.conv2d(x, conv.weight, conv.bias, None, *args, False)))
    weight, bias = conv.weight, conv.bias
    if bn is not None:
        weight, bias = _fold_bn(weight, bias, bn)
    y = ops.conv2d(x, weight, bias, None, *args, silu)
    return y if silu or ident else act(y)


class _ConvMixin(_Patched):
    def forward(self, x):
        return _conv_forward(self, x)

    def forward_fuse(self, x):  # what Ultralytics' fuse() binds as forward once the bn is folded
        return _conv_forward(self, x)


class _Conv2dMixin(_Patched):
    def forward(self, x):
        args = _conv_args(self)
        if args is None or not _dtype_ok(x):
            return nn.Conv2d.forward(self, x)
        return ops.conv2d(x, self.weight, self.bias, None, *args, False)


class _AAttnMixin(_Patched):
    def forward(self, x):
        b, _, h, w = x.shape
        n, heads, hd = h * w, self.num_heads, self.head_dim
        c = heads * hd
        turbo = not hasattr(self, "qkv")
        if hd != ops.HEAD_DIM or not _dtype_ok(x, bf16=True):
            if turbo:
                raise TypeError("yolo12_torch: the patched turbo AAttn needs head_dim 32 and float32/float16/"
                                "bfloat16 on CUDA or float32/float64 on the CPU, got head_dim %d, %s on %s"
                                % (hd, x.dtype, x.device.type))
            return self._yolo12_original.forward(self, x)
        if turbo:  # qk conv: all q channels, then all k channels; a separate v conv; pe on v as an image
            qk = self.qk(x).flatten(2).transpose(1, 2)  # (B, N, 2C)
            q, k = qk.view(b, n, 2, heads, hd).unbind(2)
            v_img = self.v(x)
            pe = self.pe(v_img)
            v = v_img.flatten(2).transpose(1, 2).view(b, n, heads, hd)
        else:  # qkv conv: per token and head, q, k, v side by side
            qkv = self.qkv(x).flatten(2).transpose(1, 2)  # (B, N, 3C)
            q, k, v = qkv.view(b, n, heads, 3 * hd).split([hd, hd, hd], dim=3)
            pe = self.pe(v.reshape(b, h, w, c).permute(0, 3, 1, 2))
        out = ops.area_attention(q, k, v, self.area)  # (B, N, heads, 32)
        return self.proj(out.view(b, h, w, c).permute(0, 3, 1, 2) + pe)


class _DetectMixin(_Patched):
    def _inference(self, x):
        levels = self._yolo12_levels(x)
        if levels is None:
            return self._yolo12_original._inference(self, x)
        box, cls = levels
        return ops.detect_decode(box, cls, self._yolo12_strides)

    def _yolo12_levels(self, x):
        """Per-level box and class maps (B, C, H, W) of the raw head, or None where the decode differs."""
        if getattr(self, "end2end", False) or getattr(self, "xyxy", False) or self.reg_max <= 1 or not 1 <= self.nl <= 4:
            return None
        if self._yolo12_strides is None:  # strides not whole numbers
            return None
        r4 = 4 * self.reg_max
        if isinstance(x, dict):  # Ultralytics >= 8.4: {"boxes": (B, 4R, A), "scores": (B, nc, A), "feats": [...]}
            if set(x) - {"boxes", "scores", "feats"}:
                return None
            feats, b = x["feats"], x["boxes"].shape[0]
            sizes = [f.shape[2] * f.shape[3] for f in feats]
            box = [t.view(b, r4, f.shape[2], f.shape[3]) for t, f in zip(x["boxes"].split(sizes, 2), feats)]
            cls = [t.view(b, self.nc, f.shape[2], f.shape[3]) for t, f in zip(x["scores"].split(sizes, 2), feats)]
        else:  # older: a list of (B, 4R + nc, H, W) maps
            box, cls = [t[:, :r4] for t in x], [t[:, r4:] for t in x]
        if not all(_dtype_ok(t) for t in box + cls):
            return None
        return box, cls


# ---- patch / unpatch -----------------------------------------------------------------------------

_CLASSES = {}  # original class -> patched class


def _targets():
    """Original class -> mixin, for the classes this Ultralytics has."""
    from ultralytics.nn.modules.block import AAttn
    from ultralytics.nn.modules.conv import Conv, DWConv
    from ultralytics.nn.modules.head import Detect

    return {Conv: _ConvMixin, DWConv: _ConvMixin, AAttn: _AAttnMixin, Detect: _DetectMixin}


def _patched_class(orig, mixin):
    cls = _CLASSES.get(orig)
    if cls is None:
        cls = type("Yolo12" + orig.__name__, (mixin, orig), {"_yolo12_original": orig, "__module__": __name__,
                                                              "__qualname__": "Yolo12" + orig.__name__})
        _CLASSES[orig] = cls
    return cls


def _swap(m, cls):
    # fuse() may have bound an instance-level forward (Conv.forward_fuse); the patched class handles both
    # forms, so keep it aside for unpatch.
    if "forward" in m.__dict__ and "_yolo12_saved_forward" not in m.__dict__:
        m.__dict__["_yolo12_saved_forward"] = m.__dict__.pop("forward")
    if issubclass(cls, _DetectMixin):  # Python ints: Tensor.tolist() inside forward breaks torch.compile graphs
        strides = [float(s) for s in m.stride.tolist()]
        m.__dict__["_yolo12_strides"] = [int(s) for s in strides] if all(s == int(s) for s in strides) else None
    m.__class__ = cls


def _original_state(state, orig):
    """The instance dict of a patched module as its original class expects it."""
    state.pop("_yolo12_strides", None)
    saved = state.pop("_yolo12_saved_forward", None)
    bound = state.get("forward")
    if saved is not None:
        state["forward"] = saved
    elif isinstance(bound, types.MethodType) and isinstance(bound.__self__, _Patched):
        # fuse() ran after patching: bind the original class's method of the same name
        state["forward"] = types.MethodType(getattr(orig, bound.__func__.__name__), bound.__self__)


def patch(model):
    """Makes the model's Conv, DWConv, AAttn and Detect modules call the yolo12 operators; returns the model.

    Works in train and eval mode, before or after Ultralytics' fuse(), and on models already patched."""
    targets = _targets()
    for m in list(model.modules()):
        t = type(m)
        if t in targets:
            _swap(m, _patched_class(t, targets[t]))
    for det in model.modules():
        if isinstance(det, _DetectMixin):
            for name in ("cv2", "cv3", "one2one_cv2", "one2one_cv3"):
                heads = getattr(det, name, None)
                if isinstance(heads, nn.Module):
                    for m in heads.modules():
                        if type(m) is nn.Conv2d:
                            _swap(m, _patched_class(nn.Conv2d, _Conv2dMixin))
    return model


def unpatch(model):
    """Restores the original classes of every patched module; returns the model."""
    for m in model.modules():
        if isinstance(m, _Patched):
            orig = type(m)._yolo12_original
            _original_state(m.__dict__, orig)
            m.__class__ = orig
    return model


def is_patched(model):
    """Whether any module of the model is patched."""
    return any(isinstance(m, _Patched) for m in model.modules())
