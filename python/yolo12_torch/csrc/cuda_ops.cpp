// cuda_ops.cpp - CUDA kernels of the yolo12 operators: tensors in, the engine's kernels
// (src/backends/cuda) and the backward kernels (src/backends/cuda/*_backward.cu) launched on the current
// stream, tensors out. Also the autocast wrappers.
//
// Layouts. The engine's kernels are NHWC. A 4-D image tensor is read in place when its memory is
// NHWC: channels_last, or a channel slice of a channels_last tensor (what torch.chunk / split of a
// C2f block gives); anything else is copied to channels_last first. Image outputs are channels_last.
// Attention tensors (B, N, heads, 32) are read in place when token-major with unit dim stride (the
// q, k, v slices of a channels_last qkv conv output), else made contiguous; its outputs are contiguous.
//
// dtypes: conv2d and detect_decode take float32 and float16 (the engine has no bf16 conv);
// area_attention takes float32, float16 and bfloat16. Accumulation is fp32.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <limits>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/attention_backward.cuh"
#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_backward.cuh"
#include "backends/cuda/detect.cuh"
#include "backends/cuda/detect_backward.cuh"
#include "checks.h"

namespace yolo12_torch {
namespace {

namespace yc = yolo12::cuda;

template <typename T>
T* ptr(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

cudaStream_t stream() { return at::cuda::getCurrentCUDAStream().stream(); }

int to_int(int64_t v, const char* op) {
  TORCH_CHECK_VALUE(v <= std::numeric_limits<int>::max(), op, ": size ", v, " does not fit the kernels' 32-bit sizes");
  return static_cast<int>(v);
}

void check_dtype(const char* op, const at::Tensor& t, bool bf16) {
  const auto d = t.scalar_type();
  TORCH_CHECK_TYPE(d == at::kFloat || d == at::kHalf || (bf16 && d == at::kBFloat16), op, " on CUDA takes float32",
                   bf16 ? ", float16 or bfloat16" : " or float16", ", got ", d);
}

// Runs f with the CUDA element type of t's dtype: f(float{}), f(__half{}) or f(__nv_bfloat16{}).
template <typename F>
void with_element_type(const at::Tensor& t, F&& f) {
  switch (t.scalar_type()) {
    case at::kFloat: f(float{}); break;
    case at::kHalf: f(__half{}); break;
    case at::kBFloat16: f(__nv_bfloat16{}); break;
    default: TORCH_CHECK_TYPE(false, "yolo12: unsupported dtype ", t.scalar_type());
  }
}

// ---- views ------------------------------------------------------------------------------------------

struct Nhwc {
  at::Tensor t;  // keeps a copy alive
  int ld;        // channel stride of a pixel
};

Nhwc nhwc(const at::Tensor& t) {
  const int64_t C = t.size(1), H = t.size(2), W = t.size(3);
  if (t.is_contiguous(at::MemoryFormat::ChannelsLast)) return {t, static_cast<int>(C)};
  const int64_t ld = t.stride(3);
  const bool slice = t.stride(1) == 1 && H > 1 && W > 1 && ld >= C && t.stride(2) == W * ld &&
                     (t.size(0) == 1 || t.stride(0) == H * W * ld) && ld <= std::numeric_limits<int>::max();
  if (slice) return {t, static_cast<int>(ld)};
  return {t.contiguous(at::MemoryFormat::ChannelsLast), static_cast<int>(C)};
}

at::Tensor empty_nhwc(at::IntArrayRef sizes, const at::TensorOptions& o) {
  return at::empty(sizes, o.memory_format(at::MemoryFormat::ChannelsLast));
}

struct TokenView {
  at::Tensor t;
  int ld, head_stride;  // token and head strides in elements
};

TokenView token_major(const at::Tensor& t) {
  const int64_t B = t.size(0), N = t.size(1), heads = t.size(2);
  const int64_t hs = heads > 1 ? t.stride(2) : kHeadDim;
  const int64_t ld = N > 1 ? t.stride(1) : (B > 1 ? t.stride(0) : (heads - 1) * hs + kHeadDim);
  const bool ok = t.stride(3) == 1 && hs >= kHeadDim && ld >= (heads - 1) * hs + kHeadDim &&
                  (B == 1 || t.stride(0) == N * ld) && ld <= std::numeric_limits<int>::max();
  if (ok) return {t, static_cast<int>(ld), static_cast<int>(hs)};
  return {t.contiguous(), static_cast<int>(heads * kHeadDim), static_cast<int>(kHeadDim)};
}

// ---- conv2d -----------------------------------------------------------------------------------------

// The engine's shape of the conv; act is set by each launch (conv_forward).
yc::ConvShape conv_shape(const ConvArgs& a, const char* op) {
  yc::ConvShape s;
  s.batch = to_int(a.batch, op);
  s.h = to_int(a.h, op);
  s.w_in = to_int(a.w, op);
  s.c_in = to_int(a.c_in, op);
  s.ho = to_int(a.ho, op);
  s.wo = to_int(a.wo, op);
  s.c_out = to_int(a.c_out, op);
  s.k = to_int(a.k, op);
  s.stride = to_int(a.stride, op);
  s.pad = to_int(a.pad, op);
  s.groups = to_int(a.groups, op);
  s.dilation = to_int(a.dilation, op);
  s.act = yolo12::graph::Act::None;
  TORCH_CHECK_VALUE(yc::conv_can_implement(s), op, ": the CUDA conv kernels cannot run this shape (an image of more ",
                    "than 2^31 bytes?)");
  return s;
}

// Weights (OIHW, contiguous) packed for the conv of shape s (or, transposed, for its dx conv).
template <typename T>
at::Tensor pack_weights(const yc::ConvShape& s, const at::Tensor& w, bool transposed) {
  const yc::ConvShape target = transposed ? yc::conv2d_dgrad_shape(s) : s;
  at::Tensor packed = at::empty({static_cast<int64_t>(yc::conv_packed_weight_elems(target))}, w.options());
  yc::ConvPackParams<T> p;
  static_cast<yc::ConvShape&>(p) = s;
  p.w = ptr<T>(w);
  p.dst = ptr<T>(packed);
  p.transposed = transposed;
  yc::conv_pack_weights_device(p, stream());
  return packed;
}

// y (channels_last) = act(conv(x, w) + bias) + residual on the engine's forward kernels.
template <typename T>
void conv_forward(const yc::ConvShape& s, const Nhwc& x, const at::Tensor& w, const at::Tensor& bias,
                  const Nhwc* residual, const at::Tensor& y, bool silu) {
  const at::Tensor packed = pack_weights<T>(s, w, false);
  const at::Tensor bias_f32 = bias.defined() ? bias.to(at::kFloat).contiguous() : at::Tensor();
  yc::ConvParams<T> p;
  static_cast<yc::ConvShape&>(p) = s;
  p.act = silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  p.x = ptr<T>(x.t);
  p.ldx = x.ld;
  p.w = ptr<T>(packed);
  p.bias = bias_f32.defined() ? bias_f32.data_ptr<float>() : nullptr;
  if (residual) {
    p.residual = ptr<T>(residual->t);
    p.ldr = residual->ld;
  }
  p.y = ptr<T>(y);
  p.ldy = s.c_out;
  yc::conv2d_forward(p, stream());
}

at::Tensor conv2d_cuda(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       const std::optional<at::Tensor>& residual, int64_t stride, int64_t padding, int64_t dilation,
                       int64_t groups, bool silu) {
  const char* op = "yolo12::conv2d";
  const ConvArgs a = check_conv(op, x, weight, bias, residual, stride, padding, dilation, groups);
  check_dtype(op, x, false);
  const c10::cuda::CUDAGuard guard(x.device());
  const yc::ConvShape s = conv_shape(a, op);
  at::Tensor y = empty_nhwc({a.batch, a.c_out, a.ho, a.wo}, x.options());
  with_element_type(x, [&](auto e) {
    using T = decltype(e);
    if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
      const Nhwc xv = nhwc(x);
      std::optional<Nhwc> rv;
      if (residual && residual->defined()) rv = nhwc(*residual);
      conv_forward<T>(s, xv, weight.contiguous(), bias ? *bias : at::Tensor(), rv ? &*rv : nullptr, y, silu);
    }
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv2d_backward_cuda(const at::Tensor& grad_y, const at::Tensor& x,
                                                                    const at::Tensor& weight,
                                                                    const std::optional<at::Tensor>& bias,
                                                                    int64_t stride, int64_t padding, int64_t dilation,
                                                                    int64_t groups, bool silu, std::array<bool, 3> mask) {
  const char* op = "yolo12::conv2d_backward";
  const ConvArgs a = check_conv(op, x, weight, bias, std::nullopt, stride, padding, dilation, groups);
  check_dtype(op, x, false);
  TORCH_CHECK_VALUE(grad_y.sizes() == at::IntArrayRef({a.batch, a.c_out, a.ho, a.wo}) &&
                        grad_y.scalar_type() == x.scalar_type() && grad_y.device() == x.device(),
                    op, ": grad_y must be (", a.batch, ", ", a.c_out, ", ", a.ho, ", ", a.wo, ") of x's dtype and device");
  const c10::cuda::CUDAGuard guard(x.device());
  const yc::ConvShape s = conv_shape(a, op);
  at::Tensor gx = mask[0] ? empty_nhwc(x.sizes(), x.options()) : at::empty({0}, x.options());
  at::Tensor gw = mask[1] ? at::empty(weight.sizes(), weight.options()) : at::empty({0}, x.options());
  at::Tensor gb = mask[2] ? at::empty({a.c_out}, x.options()) : at::empty({0}, x.options());
  with_element_type(x, [&](auto e) {
    using T = decltype(e);
    if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
      const at::Tensor wc = weight.contiguous();
      const Nhwc xv = nhwc(x);
      Nhwc dz = nhwc(grad_y);
      if (silu) {  // dz = dy * silu'(z), z recomputed on the forward kernels
        const at::Tensor z = empty_nhwc({a.batch, a.c_out, a.ho, a.wo}, x.options());
        conv_forward<T>(s, xv, wc, bias ? *bias : at::Tensor(), nullptr, z, false);
        const at::Tensor dzt = empty_nhwc({a.batch, a.c_out, a.ho, a.wo}, x.options());
        yc::SiluBackwardParams<T> sp;
        sp.pixels = a.batch * a.ho * a.wo;
        sp.c = s.c_out;
        sp.dy = ptr<T>(dz.t);
        sp.lddy = dz.ld;
        sp.z = ptr<T>(z);
        sp.ldz = s.c_out;
        sp.dz = ptr<T>(dzt);
        sp.lddz = s.c_out;
        yc::silu_backward(sp, stream());
        dz = {dzt, s.c_out};
      }
      if (mask[0]) {
        const bool direct = yc::conv2d_dgrad_uses_forward_kernels(s);
        yc::ConvDgradParams<T> dp;
        static_cast<yc::ConvShape&>(dp) = s;
        dp.dz = ptr<T>(dz.t);
        dp.lddz = dz.ld;
        dp.w = ptr<T>(wc);
        dp.dx = ptr<T>(gx);
        dp.lddx = s.c_in;
        at::Tensor packed, inserted;
        if (direct) {
          packed = at::empty({static_cast<int64_t>(yc::conv_packed_weight_elems(yc::conv2d_dgrad_shape(s)))},
                             x.options());
          dp.packed = ptr<T>(packed);
          if (s.stride > 1) {
            inserted = at::empty({static_cast<int64_t>(yc::conv2d_dgrad_inserted_elems(s))}, x.options());
            dp.inserted = ptr<T>(inserted);
          }
        }
        yc::conv2d_dgrad(dp, stream());
      }
      if (mask[1] || mask[2]) {
        const auto bytes = static_cast<int64_t>(yc::conv2d_wgrad_workspace_bytes(s));
        const at::Tensor ws = at::empty({(bytes + 3) / 4}, x.options().dtype(at::kFloat));
        yc::ConvWgradParams<T> wp;
        static_cast<yc::ConvShape&>(wp) = s;
        wp.x = ptr<T>(xv.t);
        wp.ldx = xv.ld;
        wp.dz = ptr<T>(dz.t);
        wp.lddz = dz.ld;
        wp.dw = mask[1] ? ptr<T>(gw) : nullptr;
        wp.dbias = mask[2] ? ptr<T>(gb) : nullptr;
        wp.workspace = ws.data_ptr<float>();
        yc::conv2d_wgrad(wp, stream());
      }
    }
  });
  return {gx, gw, gb};
}

// ---- area attention ---------------------------------------------------------------------------------

const float kScale = 0.17677669529663687f;  // 32 ** -0.5

// The inputs shared by AreaAttentionParams and AreaAttentionBackwardParams: the attributes (dqk = dv =
// 32, the views' head strides, area, scale), the q, k, v views and sizes.
template <typename T, typename P>
void set_qkv(P& p, const AttentionArgs& a, const TokenView& qv, const TokenView& kv, const TokenView& vv,
             const char* op) {
  p.q = ptr<T>(qv.t);
  p.k = ptr<T>(kv.t);
  p.v = ptr<T>(vv.t);
  p.ldq = qv.ld;
  p.ldk = kv.ld;
  p.ldv = vv.ld;
  p.q_head_stride = qv.head_stride;
  p.k_head_stride = kv.head_stride;
  p.v_head_stride = vv.head_stride;
  p.batch = to_int(a.batch, op);
  p.tokens = to_int(a.tokens, op);
  p.area = to_int(a.area, op);
  p.heads = to_int(a.heads, op);
  p.dqk = p.dv = static_cast<int>(kHeadDim);
  p.scale = kScale;
}

std::tuple<at::Tensor, at::Tensor> area_attention_fwd_cuda(const at::Tensor& q, const at::Tensor& k,
                                                           const at::Tensor& v, int64_t area) {
  const char* op = "yolo12::area_attention";
  const AttentionArgs a = check_attention(op, q, k, v, area);
  check_dtype(op, q, true);
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = at::empty(q.sizes(), q.options());
  at::Tensor lse = at::empty({a.batch, a.heads, a.tokens}, q.options().dtype(at::kFloat));
  const TokenView qv = token_major(q), kv = token_major(k), vv = token_major(v);
  with_element_type(q, [&](auto e) {
    using T = decltype(e);
    yc::AreaAttentionParams<T> p;
    set_qkv<T>(p, a, qv, kv, vv, op);
    p.out = ptr<T>(out);
    p.ldo = to_int(a.heads * kHeadDim, op);
    p.lse = lse.data_ptr<float>();
    yc::area_attention_forward(p, stream());
  });
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> area_attention_backward_cuda(const at::Tensor& grad_out,
                                                                            const at::Tensor& q, const at::Tensor& k,
                                                                            const at::Tensor& v, const at::Tensor& out,
                                                                            const at::Tensor& lse, int64_t area) {
  const char* op = "yolo12::area_attention_backward";
  const AttentionArgs a = check_attention(op, q, k, v, area);
  check_dtype(op, q, true);
  TORCH_CHECK_VALUE(grad_out.sizes() == q.sizes() && out.sizes() == q.sizes() &&
                        lse.sizes() == at::IntArrayRef({a.batch, a.heads, a.tokens}),
                    op, ": grad_out and out must be ", q.sizes(), " and lse (", a.batch, ", ", a.heads, ", ", a.tokens,
                    ")");
  TORCH_CHECK_TYPE(grad_out.scalar_type() == q.scalar_type() && out.scalar_type() == q.scalar_type() &&
                       lse.scalar_type() == at::kFloat,
                   op, ": grad_out and out must have q's dtype and lse float32");
  const c10::cuda::CUDAGuard guard(q.device());
  const TokenView qv = token_major(q), kv = token_major(k), vv = token_major(v);
  const at::Tensor go = grad_out.contiguous(), oc = out.contiguous(), lc = lse.contiguous();
  at::Tensor dq = at::empty(q.sizes(), q.options()), dk = at::empty(q.sizes(), q.options()),
             dv = at::empty(q.sizes(), q.options());
  const at::Tensor delta = at::empty({a.batch, a.heads, a.tokens}, lse.options());
  const int ld = to_int(a.heads * kHeadDim, op);
  with_element_type(q, [&](auto e) {
    using T = decltype(e);
    yc::AreaAttentionBackwardParams<T> p;
    set_qkv<T>(p, a, qv, kv, vv, op);
    p.out = ptr<T>(oc);
    p.ldo = ld;
    p.dout = ptr<T>(go);
    p.lddo = ld;
    p.lse = lc.data_ptr<float>();
    p.delta = delta.data_ptr<float>();
    p.grad_q = ptr<T>(dq);
    p.grad_k = ptr<T>(dk);
    p.grad_v = ptr<T>(dv);
    p.ldgq = p.ldgk = p.ldgv = ld;
    yc::area_attention_backward(p, stream());
  });
  return {dq, dk, dv};
}

// ---- detect decode ----------------------------------------------------------------------------------

// The per-level inputs shared by DetectHeadParams and DetectBackwardParams: sizes, strides and the NHWC maps.
template <typename T, typename P>
void set_levels(P& p, const DetectArgs& a, const std::vector<Nhwc>& bv, const std::vector<Nhwc>& cv,
                at::IntArrayRef strides, const char* op) {
  p.batch = to_int(a.batch, op);
  p.nc = to_int(a.nc, op);
  p.reg_max = static_cast<int>(a.reg_max);
  p.levels = static_cast<int>(a.levels());
  for (size_t l = 0; l < a.levels(); ++l) {
    p.box[l] = ptr<T>(bv[l].t);
    p.ldb[l] = bv[l].ld;
    p.cls[l] = ptr<T>(cv[l].t);
    p.ldc[l] = cv[l].ld;
    p.h[l] = to_int(a.h[l], op);
    p.w[l] = to_int(a.w[l], op);
    p.stride[l] = static_cast<float>(strides[l]);
  }
  p.anchors = to_int(a.anchors, op);
}

at::Tensor detect_decode_cuda(at::TensorList box, at::TensorList cls, at::IntArrayRef strides) {
  const char* op = "yolo12::detect_decode";
  const DetectArgs a = check_detect(op, box, cls, strides);
  check_dtype(op, box[0], false);
  const c10::cuda::CUDAGuard guard(box[0].device());
  at::Tensor raw = at::empty({a.batch, 4 + a.nc, a.anchors}, box[0].options().dtype(at::kFloat));
  std::vector<Nhwc> bv, cv;
  for (size_t l = 0; l < a.levels(); ++l) {
    bv.push_back(nhwc(box[l]));
    cv.push_back(nhwc(cls[l]));
  }
  with_element_type(box[0], [&](auto e) {
    using T = decltype(e);
    if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
      yc::DetectHeadParams<T> p;  // raw head only (no candidates: no NMS)
      set_levels<T>(p, a, bv, cv, strides, op);
      p.raw = raw.data_ptr<float>();
      TORCH_CHECK_VALUE(a.batch <= 65535 && yc::detect_can_implement(p.levels, p.reg_max, p.nc, p.max_det), op,
                        ": the CUDA decode takes batch <= 65535");
      yc::detect_forward(p, stream());
    }
  });
  return box[0].scalar_type() == at::kFloat ? raw : raw.to(box[0].scalar_type());
}

std::tuple<std::vector<at::Tensor>, std::vector<at::Tensor>> detect_decode_backward_cuda(const at::Tensor& grad_out,
                                                                                         at::TensorList box,
                                                                                         at::TensorList cls,
                                                                                         at::IntArrayRef strides) {
  const char* op = "yolo12::detect_decode_backward";
  const DetectArgs a = check_detect(op, box, cls, strides);
  check_dtype(op, box[0], false);
  TORCH_CHECK_VALUE(grad_out.sizes() == at::IntArrayRef({a.batch, 4 + a.nc, a.anchors}), op, ": grad_out must be (",
                    a.batch, ", ", 4 + a.nc, ", ", a.anchors, ")");
  const c10::cuda::CUDAGuard guard(box[0].device());
  const at::Tensor g = grad_out.to(box[0].scalar_type()).contiguous();
  std::vector<Nhwc> bv, cv;
  std::vector<at::Tensor> gbox, gcls;
  for (size_t l = 0; l < a.levels(); ++l) {
    bv.push_back(nhwc(box[l]));
    cv.push_back(nhwc(cls[l]));
    gbox.push_back(empty_nhwc(box[l].sizes(), box[l].options()));
    gcls.push_back(empty_nhwc(cls[l].sizes(), cls[l].options()));
  }
  with_element_type(box[0], [&](auto e) {
    using T = decltype(e);
    if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
      yc::DetectBackwardParams<T> p;
      set_levels<T>(p, a, bv, cv, strides, op);
      for (size_t l = 0; l < a.levels(); ++l) {
        p.dbox[l] = ptr<T>(gbox[l]);
        p.lddb[l] = static_cast<int>(4 * a.reg_max);
        p.dcls[l] = ptr<T>(gcls[l]);
        p.lddc[l] = p.nc;
      }
      p.dout = ptr<T>(g);
      yc::detect_decode_backward(p, stream());
    }
  });
  return {gbox, gcls};
}

// ---- autocast -----------------------------------------------------------------------------------------
// Under torch.autocast("cuda"): conv2d runs in float16 when the autocast dtype is float16 and in
// float32 otherwise (the engine has no bf16 conv); area_attention in the autocast dtype. detect_decode
// has no autocast rule (it takes what the head's convs give).

at::Tensor cast(at::ScalarType dt, const at::Tensor& t) { return at::autocast::cached_cast(dt, t, c10::DeviceType::CUDA); }
std::optional<at::Tensor> cast(at::ScalarType dt, const std::optional<at::Tensor>& t) {
  return t && t->defined() ? std::optional<at::Tensor>(cast(dt, *t)) : t;
}

at::Tensor conv2d_autocast(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                           const std::optional<at::Tensor>& residual, int64_t stride, int64_t padding, int64_t dilation,
                           int64_t groups, bool silu) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
  const at::ScalarType dt =
      at::autocast::get_autocast_dtype(c10::DeviceType::CUDA) == at::kHalf ? at::kHalf : at::kFloat;
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("yolo12::conv2d", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                         const std::optional<at::Tensor>&, int64_t, int64_t, int64_t, int64_t, bool)>();
  return op.call(cast(dt, x), cast(dt, weight), cast(dt, bias), cast(dt, residual), stride, padding, dilation, groups,
                 silu);
}

std::tuple<at::Tensor, at::Tensor> area_attention_fwd_autocast(const at::Tensor& q, const at::Tensor& k,
                                                               const at::Tensor& v, int64_t area) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
  const at::ScalarType dt = at::autocast::get_autocast_dtype(c10::DeviceType::CUDA);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("yolo12::area_attention_fwd", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                 const at::Tensor&, int64_t)>();
  return op.call(cast(dt, q), cast(dt, k), cast(dt, v), area);
}

}  // namespace
}  // namespace yolo12_torch

TORCH_LIBRARY_IMPL(yolo12, CUDA, m) {
  m.impl("conv2d", &yolo12_torch::conv2d_cuda);
  m.impl("conv2d_backward", &yolo12_torch::conv2d_backward_cuda);
  m.impl("area_attention_fwd", &yolo12_torch::area_attention_fwd_cuda);
  m.impl("area_attention_backward", &yolo12_torch::area_attention_backward_cuda);
  m.impl("detect_decode", &yolo12_torch::detect_decode_cuda);
  m.impl("detect_decode_backward", &yolo12_torch::detect_decode_backward_cuda);
}

TORCH_LIBRARY_IMPL(yolo12, AutocastCUDA, m) {
  m.impl("conv2d", &yolo12_torch::conv2d_autocast);
  m.impl("area_attention_fwd", &yolo12_torch::area_attention_fwd_autocast);
}
