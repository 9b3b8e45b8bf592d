"""The yolo12 operators: autograd formulas and fake (meta) kernels for torch.ops.yolo12.*, and the
Python functions that call them.

The kernels are C++/CUDA (csrc/: the engine's CPU backend and CUDA kernels for the forwards,
src/backends/cuda/*_backward.cu and plain CPU loops for the backwards). Registered here with
torch.library, so that torch.compile traces them:

  conv2d(x, weight, bias, residual, stride, padding, dilation, groups, silu) -> y
      y = act(conv(x, weight) + bias) + residual, act = SiLU or identity; square kernels.
  area_attention(q, k, v, area) -> out        q, k, v, out: (B, N, heads, 32), tokens row-major;
      softmax(q k^T / sqrt(32)) v inside each of `area` contiguous chunks of the N tokens.
      (area_attention_fwd also returns the softmax statistics lse (B, heads, N) for the backward.)
  detect_decode(box, cls, strides) -> (B, 4 + nc, A)
      per level box (B, 4 * reg_max, H, W) and cls (B, nc, H, W): DFL boxes (cx, cy, w, h) in input
      pixels around the cell-centre anchors, and sigmoid class scores; levels in order, cells row-major.

Layouts: CUDA image outputs (y, the gradients of x and of the detect maps) are channels_last, CPU ones
contiguous NCHW; attention outputs and gradients are contiguous. The fake kernels below say the same.
"""

import torch

from . import _C  # noqa: F401  (loads the library: torch.ops.yolo12)

HEAD_DIM = 32


def _empty_image(shape, like):
    """An image-shaped output as the kernels allocate it: channels_last on CUDA, NCHW elsewhere."""
    if like.device.type == "cuda":
        return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=torch.channels_last)
    return torch.empty(shape, dtype=like.dtype, device=like.device)


def _conv_out(size, k, stride, padding, dilation):
    return (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1


# ---- conv2d ------------------------------------------------------------------------------------------

@torch.library.register_fake("yolo12::conv2d")
def _conv2d_fake(x, weight, bias=None, residual=None, stride=1, padding=0, dilation=1, groups=1, silu=False):
    b, _, h, w = x.shape
    o, _, k, _ = weight.shape
    return _empty_image((b, o, _conv_out(h, k, stride, padding, dilation), _conv_out(w, k, stride, padding, dilation)), x)


@torch.library.register_fake("yolo12::conv2d_backward")
def _conv2d_backward_fake(grad_y, x, weight, bias, stride, padding, dilation, groups, silu, output_mask):
    none = x.new_empty((0,))
    gx = _empty_image(x.shape, x) if output_mask[0] else none
    gw = weight.new_empty(weight.shape) if output_mask[1] else x.new_empty((0,))
    gb = x.new_empty((weight.shape[0],)) if output_mask[2] else x.new_empty((0,))
    return gx, gw, gb


def _conv2d_setup(ctx, inputs, output):
    x, weight, bias, residual, stride, padding, dilation, groups, silu = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.args = (stride, padding, dilation, groups, silu)
    ctx.has_bias = bias is not None


def _conv2d_backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    need = tuple(ctx.needs_input_grad) + (False,) * 4  # may be shorter than the inputs when trailing ones are None
    mask = [bool(need[0]), bool(need[1]), bool(ctx.has_bias and need[2])]
    gx = gw = gb = None
    if any(mask):
        gx, gw, gb = torch.ops.yolo12.conv2d_backward(grad, x, weight, bias, *ctx.args, mask)
    return (gx if mask[0] else None, gw if mask[1] else None, gb if mask[2] else None,
            grad if need[3] else None, None, None, None, None, None)


torch.library.register_autograd("yolo12::conv2d", _conv2d_backward, setup_context=_conv2d_setup)


def conv2d(x, weight, bias=None, residual=None, stride=1, padding=0, dilation=1, groups=1, silu=False):
    """y = act(conv2d(x, weight) + bias) + residual with act = SiLU (silu=True) or identity."""
    return torch.ops.yolo12.conv2d(x, weight, bias, residual, stride, padding, dilation, groups, silu)


# ---- area attention ----------------------------------------------------------------------------------

@torch.library.register_fake("yolo12::area_attention_fwd")
def _area_attention_fwd_fake(q, k, v, area):
    b, n, heads, _ = q.shape
    lse_dtype = q.dtype if q.device.type == "cpu" else torch.float32  # the CPU keeps float64 for gradcheck
    return q.new_empty(q.shape), q.new_empty((b, heads, n), dtype=lse_dtype)


@torch.library.register_fake("yolo12::area_attention_backward")
def _area_attention_backward_fake(grad_out, q, k, v, out, lse, area):
    return q.new_empty(q.shape), q.new_empty(q.shape), q.new_empty(q.shape)


def _area_attention_setup(ctx, inputs, output):
    q, k, v, area = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.area = area


def _area_attention_backward(ctx, grad_out, grad_lse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.yolo12.area_attention_backward(grad_out, q, k, v, out, lse, ctx.area)
    return dq, dk, dv, None


torch.library.register_autograd("yolo12::area_attention_fwd", _area_attention_backward,
                                setup_context=_area_attention_setup)


def area_attention(q, k, v, area=1):
    """softmax(q k^T / sqrt(32)) v inside each of `area` contiguous token chunks; q, k, v (B, N, heads, 32)."""
    return torch.ops.yolo12.area_attention(q, k, v, area)


# ---- detect decode -----------------------------------------------------------------------------------

@torch.library.register_fake("yolo12::detect_decode")
def _detect_decode_fake(box, cls, strides):
    anchors = sum(b.shape[2] * b.shape[3] for b in box)
    return box[0].new_empty((box[0].shape[0], 4 + cls[0].shape[1], anchors))


@torch.library.register_fake("yolo12::detect_decode_backward")
def _detect_decode_backward_fake(grad_out, box, cls, strides):
    return [_empty_image(b.shape, b) for b in box], [_empty_image(c.shape, c) for c in cls]


def _detect_decode_setup(ctx, inputs, output):
    box, cls, strides = inputs
    ctx.save_for_backward(*box, *cls)
    ctx.levels = len(box)
    ctx.strides = strides


def _detect_decode_backward(ctx, grad):
    saved = ctx.saved_tensors
    box, cls = list(saved[:ctx.levels]), list(saved[ctx.levels:])
    gbox, gcls = torch.ops.yolo12.detect_decode_backward(grad, box, cls, ctx.strides)
    return list(gbox), list(gcls), None


torch.library.register_autograd("yolo12::detect_decode", _detect_decode_backward, setup_context=_detect_decode_setup)


def detect_decode(box, cls, strides):
    """Decoded head (B, 4 + nc, A): per level box (B, 4 * reg_max, H, W), cls (B, nc, H, W), integer strides."""
    return torch.ops.yolo12.detect_decode(list(box), list(cls), [int(s) for s in strides])
