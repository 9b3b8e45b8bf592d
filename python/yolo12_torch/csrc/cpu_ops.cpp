// cpu_ops.cpp - CPU kernels of the yolo12 operators (NCHW, float32 and float64).
//
// float32 forwards run the engine's CPU backend (src/backends/cpu: conv2d, area_attention with its
// softmax statistics, detect_decode) on its own thread pool. The backwards, and everything in
// float64 (for torch.autograd.gradcheck), are plain loops written from the formulas in
// src/backends/cuda/{conv,attention,detect}_backward.cuh, accumulated in double, parallel over
// independent outputs with at::parallel_for: the oracle of the CUDA kernels, not a fast path.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <mutex>
#include <vector>

#include "backends/cpu/attention.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/detect_head.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "checks.h"

namespace yolo12_torch {
namespace {

using yolo12::cpu::TensorView;

// The engine's CPU kernels run on its own pool, one call at a time.
struct EnginePool {
  std::mutex mutex;
  yolo12::cpu::ThreadPool pool{at::get_num_threads()};
};
EnginePool& engine() {
  static EnginePool e;
  return e;
}

void check_cpu_dtype(const char* op, const at::Tensor& t) {
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble, op,
                   " on the CPU takes float32 or float64, got ", t.scalar_type());
}

// A contiguous float (B, C, H, W) tensor as the engine's view of all its channels.
TensorView nchw_view(const at::Tensor& t, int64_t h, int64_t w) {
  TensorView v;
  v.data = t.data_ptr<float>();
  v.channels = static_cast<int>(t.size(1));
  v.c = v.channels;
  v.h = static_cast<int>(h);
  v.w = static_cast<int>(w);
  return v;
}

at::Tensor maybe_contiguous(const std::optional<at::Tensor>& t) {
  return t && t->defined() ? t->contiguous() : at::Tensor();
}

template <typename T>
T sigmoid(T z) {
  return T(1) / (T(1) + std::exp(-z));
}

// ---- conv2d -----------------------------------------------------------------------------------------

// y = act(conv(x, w) + b) + r; x (B, C, H, W), w (O, C / g, k, k), y (B, O, Ho, Wo), all contiguous.
template <typename T>
void conv_forward_loops(const ConvArgs& a, const T* x, const T* w, const T* b, const T* r, T* y, bool silu) {
  const int64_t cin_g = a.c_in / a.groups, cout_g = a.c_out / a.groups, kk = a.k * a.k, plane = a.ho * a.wo;
  at::parallel_for(0, a.batch * a.c_out, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / a.c_out, o = t % a.c_out, g = o / cout_g;
      const T* wo = w + o * cin_g * kk;  // (cin_g, k, k)
      for (int64_t oy = 0; oy < a.ho; ++oy)
        for (int64_t ox = 0; ox < a.wo; ++ox) {
          double acc = b ? static_cast<double>(b[o]) : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const T* xp = x + (n * a.c_in + g * cin_g + ci) * a.h * a.w;  // (H, W)
            for (int64_t ky = 0; ky < a.k; ++ky) {
              const int64_t iy = oy * a.stride - a.pad + ky * a.dilation;
              if (iy < 0 || iy >= a.h) continue;
              for (int64_t kx = 0; kx < a.k; ++kx) {
                const int64_t ix = ox * a.stride - a.pad + kx * a.dilation;
                if (ix >= 0 && ix < a.w) acc += static_cast<double>(xp[iy * a.w + ix]) * wo[(ci * a.k + ky) * a.k + kx];
              }
            }
          }
          if (silu) acc = acc * sigmoid(acc);
          const int64_t e = t * plane + oy * a.wo + ox;
          y[e] = static_cast<T>(r ? acc + r[e] : acc);
        }
    }
  });
}

// gx, gw, gb (each may be null) from gz = dL/dz; layouts as conv_forward_loops.
template <typename T>
void conv_backward_loops(const ConvArgs& a, const T* gz, const T* x, const T* w, T* gx, T* gw, T* gb) {
  const int64_t cin_g = a.c_in / a.groups, cout_g = a.c_out / a.groups, kk = a.k * a.k;
  const int64_t plane_in = a.h * a.w, plane_out = a.ho * a.wo;
  if (gx) {  // scatter form: one task per (image, input channel) owns its plane
    at::parallel_for(0, a.batch * a.c_in, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> acc(plane_in);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = t / a.c_in, ci = t % a.c_in, g = ci / cin_g, ci_l = ci % cin_g;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co) {
          const T* gzp = gz + (n * a.c_out + co) * plane_out;  // (Ho, Wo)
          for (int64_t ky = 0; ky < a.k; ++ky)
            for (int64_t kx = 0; kx < a.k; ++kx) {
              const double wv = w[(co * cin_g + ci_l) * kk + ky * a.k + kx];
              for (int64_t oy = 0; oy < a.ho; ++oy) {
                const int64_t iy = oy * a.stride - a.pad + ky * a.dilation;
                if (iy < 0 || iy >= a.h) continue;
                for (int64_t ox = 0; ox < a.wo; ++ox) {
                  const int64_t ix = ox * a.stride - a.pad + kx * a.dilation;
                  if (ix >= 0 && ix < a.w) acc[iy * a.w + ix] += wv * gzp[oy * a.wo + ox];
                }
              }
            }
        }
        T* out = gx + t * plane_in;
        for (int64_t i = 0; i < plane_in; ++i) out[i] = static_cast<T>(acc[i]);
      }
    });
  }
  if (gw || gb) {  // one task per output channel
    at::parallel_for(0, a.c_out, 1, [&](int64_t begin, int64_t end) {
      for (int64_t co = begin; co < end; ++co) {
        const int64_t g = co / cout_g;
        if (gb) {
          double s = 0.0;
          for (int64_t n = 0; n < a.batch; ++n) {
            const T* gzp = gz + (n * a.c_out + co) * plane_out;
            for (int64_t i = 0; i < plane_out; ++i) s += gzp[i];
          }
          gb[co] = static_cast<T>(s);
        }
        if (!gw) continue;
        for (int64_t ci_l = 0; ci_l < cin_g; ++ci_l)
          for (int64_t ky = 0; ky < a.k; ++ky)
            for (int64_t kx = 0; kx < a.k; ++kx) {
              double s = 0.0;
              for (int64_t n = 0; n < a.batch; ++n) {
                const T* gzp = gz + (n * a.c_out + co) * plane_out;
                const T* xp = x + (n * a.c_in + g * cin_g + ci_l) * plane_in;
                for (int64_t oy = 0; oy < a.ho; ++oy) {
                  const int64_t iy = oy * a.stride - a.pad + ky * a.dilation;
                  if (iy < 0 || iy >= a.h) continue;
                  for (int64_t ox = 0; ox < a.wo; ++ox) {
                    const int64_t ix = ox * a.stride - a.pad + kx * a.dilation;
                    if (ix >= 0 && ix < a.w) s += static_cast<double>(gzp[oy * a.wo + ox]) * xp[iy * a.w + ix];
                  }
                }
              }
              gw[(co * cin_g + ci_l) * kk + ky * a.k + kx] = static_cast<T>(s);
            }
      }
    });
  }
}

// y (B, O, Ho, Wo) contiguous: the engine for float32, the loops for float64.
at::Tensor conv_forward(const ConvArgs& a, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        const at::Tensor& r, bool silu) {
  at::Tensor y = at::empty({a.batch, a.c_out, a.ho, a.wo}, x.options());
  if (x.scalar_type() == at::kDouble) {
    conv_forward_loops<double>(a, x.data_ptr<double>(), w.data_ptr<double>(), b.defined() ? b.data_ptr<double>() : nullptr,
                               r.defined() ? r.data_ptr<double>() : nullptr, y.data_ptr<double>(), silu);
    return y;
  }
  const at::Tensor bias = b.defined() ? b : at::zeros({a.c_out}, x.options());
  yolo12::cpu::ConvParams p;
  p.c_in = static_cast<int>(a.c_in);
  p.c_out = static_cast<int>(a.c_out);
  p.k = static_cast<int>(a.k);
  p.stride = static_cast<int>(a.stride);
  p.pad = static_cast<int>(a.pad);
  p.dilation = static_cast<int>(a.dilation);
  p.groups = static_cast<int>(a.groups);
  p.act = silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  p.x = nchw_view(x, a.h, a.w);
  p.y = nchw_view(y, a.ho, a.wo);
  if (r.defined()) p.residual = nchw_view(r, a.ho, a.wo);
  p.weight = w.data_ptr<float>();
  p.bias = bias.data_ptr<float>();
  p.batch = static_cast<int>(a.batch);
  std::lock_guard<std::mutex> lock(engine().mutex);
  yolo12::cpu::conv2d(p, engine().pool);
  return y;
}

at::Tensor conv2d_cpu(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                      const std::optional<at::Tensor>& residual, int64_t stride, int64_t padding, int64_t dilation,
                      int64_t groups, bool silu) {
  const ConvArgs a = check_conv("yolo12::conv2d", x, weight, bias, residual, stride, padding, dilation, groups);
  check_cpu_dtype("yolo12::conv2d", x);
  return conv_forward(a, x.contiguous(), weight.contiguous(), maybe_contiguous(bias), maybe_contiguous(residual), silu);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv2d_backward_cpu(const at::Tensor& grad_y, const at::Tensor& x,
                                                                   const at::Tensor& weight,
                                                                   const std::optional<at::Tensor>& bias, int64_t stride,
                                                                   int64_t padding, int64_t dilation, int64_t groups,
                                                                   bool silu, std::array<bool, 3> mask) {
  const char* op = "yolo12::conv2d_backward";
  const ConvArgs a = check_conv(op, x, weight, bias, std::nullopt, stride, padding, dilation, groups);
  check_cpu_dtype(op, x);
  TORCH_CHECK_VALUE(grad_y.sizes() == at::IntArrayRef({a.batch, a.c_out, a.ho, a.wo}) &&
                        grad_y.scalar_type() == x.scalar_type(),
                    op, ": grad_y must be (", a.batch, ", ", a.c_out, ", ", a.ho, ", ", a.wo, ") of x's dtype, got ",
                    grad_y.sizes(), " ", grad_y.scalar_type());
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = maybe_contiguous(bias);
  at::Tensor gz = grad_y.contiguous();
  if (silu) {  // dz = dy * silu'(z), z recomputed
    const at::Tensor z = conv_forward(a, xc, wc, bc, at::Tensor(), false);
    const at::Tensor sg = at::sigmoid(z);
    gz = gz * sg * (1 + z * (1 - sg));
  }
  at::Tensor gx = mask[0] ? at::empty_like(xc) : at::empty({0}, x.options());
  at::Tensor gw = mask[1] ? at::empty_like(wc) : at::empty({0}, x.options());
  at::Tensor gb = mask[2] ? at::empty({a.c_out}, x.options()) : at::empty({0}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "conv2d_backward_cpu", [&] {
    conv_backward_loops<scalar_t>(a, gz.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(),
                                  mask[0] ? gx.data_ptr<scalar_t>() : nullptr, mask[1] ? gw.data_ptr<scalar_t>() : nullptr,
                                  mask[2] ? gb.data_ptr<scalar_t>() : nullptr);
  });
  return {gx, gw, gb};
}

// ---- area attention ---------------------------------------------------------------------------------

const double kScale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));

// Per (image, chunk, head) task: out and lse of each query (float64 path).
template <typename T>
void attention_forward_loops(const AttentionArgs& a, at::TensorAccessor<T, 4> q, at::TensorAccessor<T, 4> k,
                             at::TensorAccessor<T, 4> v, at::TensorAccessor<T, 4> out, at::TensorAccessor<T, 3> lse) {
  const int64_t n = a.tokens / a.area;
  at::parallel_for(0, a.batch * a.area * a.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> s(n);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t h = t % a.heads, c = (t / a.heads) % a.area, b = t / (a.heads * a.area), t0 = c * n;
      for (int64_t i = 0; i < n; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < kHeadDim; ++d) dot += static_cast<double>(q[b][t0 + i][h][d]) * k[b][t0 + j][h][d];
          s[j] = dot * kScale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t d = 0; d < kHeadDim; ++d) {
          double o = 0.0;
          for (int64_t j = 0; j < n; ++j) o += s[j] * v[b][t0 + j][h][d];
          out[b][t0 + i][h][d] = static_cast<T>(o / sum);
        }
        lse[b][h][t0 + i] = static_cast<T>(mx + std::log(sum));
      }
    }
  });
}

// dq, dk, dv (contiguous (B, N, heads, 32)) from do; see attention_backward.cuh for the formulas.
template <typename T>
void attention_backward_loops(const AttentionArgs& a, at::TensorAccessor<T, 4> gout, at::TensorAccessor<T, 4> q,
                              at::TensorAccessor<T, 4> k, at::TensorAccessor<T, 4> v, at::TensorAccessor<T, 4> out,
                              at::TensorAccessor<T, 3> lse, at::TensorAccessor<T, 4> dq, at::TensorAccessor<T, 4> dk,
                              at::TensorAccessor<T, 4> dv) {
  const int64_t n = a.tokens / a.area, D = kHeadDim;
  at::parallel_for(0, a.batch * a.area * a.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> delta(n), gq(n * D), gk(n * D), gv(n * D);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t h = t % a.heads, c = (t / a.heads) % a.area, b = t / (a.heads * a.area), t0 = c * n;
      std::fill(gq.begin(), gq.end(), 0.0);
      std::fill(gk.begin(), gk.end(), 0.0);
      std::fill(gv.begin(), gv.end(), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (int64_t d = 0; d < D; ++d) s += static_cast<double>(gout[b][t0 + i][h][d]) * out[b][t0 + i][h][d];
        delta[i] = s;
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0.0, dp = 0.0;
          for (int64_t d = 0; d < D; ++d) {
            s += static_cast<double>(q[b][t0 + i][h][d]) * k[b][t0 + j][h][d];
            dp += static_cast<double>(gout[b][t0 + i][h][d]) * v[b][t0 + j][h][d];
          }
          const double p = std::exp(s * kScale - static_cast<double>(lse[b][h][t0 + i]));
          const double ds = p * (dp - delta[i]) * kScale;
          for (int64_t d = 0; d < D; ++d) {
            gq[i * D + d] += ds * k[b][t0 + j][h][d];
            gk[j * D + d] += ds * q[b][t0 + i][h][d];
            gv[j * D + d] += p * gout[b][t0 + i][h][d];
          }
        }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < D; ++d) {
          dq[b][t0 + i][h][d] = static_cast<T>(gq[i * D + d]);
          dk[b][t0 + i][h][d] = static_cast<T>(gk[i * D + d]);
          dv[b][t0 + i][h][d] = static_cast<T>(gv[i * D + d]);
        }
    }
  });
}

// A (B, N, heads, 32) float tensor as the engine's CPU attention reads it: channel-major storage
// (token stride 1, dims N apart, heads head_stride channels apart, images `channels` channels apart).
// A view when it already is (the q, k, v slices of an NCHW qkv conv output), else a copy.
struct ChannelMajor {
  at::Tensor t;
  int channels, head_stride;  // in channels of N tokens
};

ChannelMajor channel_major(const at::Tensor& t) {
  const int64_t B = t.size(0), N = t.size(1), heads = t.size(2);
  auto layout = [&](const at::Tensor& u) -> std::optional<ChannelMajor> {
    if (u.stride(1) != 1 && N > 1) return std::nullopt;
    if (u.stride(3) != N || (heads > 1 && (u.stride(2) % N != 0 || u.stride(2) < kHeadDim * N))) return std::nullopt;
    const int64_t hs = heads > 1 ? u.stride(2) / N : kHeadDim;
    const int64_t used = (heads - 1) * hs + kHeadDim;
    if (B > 1 && (u.stride(0) % N != 0 || u.stride(0) / N < used)) return std::nullopt;
    return ChannelMajor{u, static_cast<int>(B > 1 ? u.stride(0) / N : used), static_cast<int>(hs)};
  };
  if (auto direct = layout(t)) return *direct;
  return *layout(t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}));
}

std::tuple<at::Tensor, at::Tensor> area_attention_fwd_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                          int64_t area) {
  const char* op = "yolo12::area_attention";
  const AttentionArgs a = check_attention(op, q, k, v, area);
  check_cpu_dtype(op, q);
  at::Tensor out = at::empty({a.batch, a.tokens, a.heads, kHeadDim}, q.options());
  at::Tensor lse = at::empty({a.batch, a.heads, a.tokens}, q.options());
  if (q.scalar_type() == at::kDouble) {
    attention_forward_loops<double>(a, q.accessor<double, 4>(), k.accessor<double, 4>(), v.accessor<double, 4>(),
                                    out.accessor<double, 4>(), lse.accessor<double, 3>());
    return {out, lse};
  }
  const ChannelMajor qc = channel_major(q), kc = channel_major(k), vc = channel_major(v);
  const int64_t N = a.tokens;
  auto view = [&](const at::Tensor& t, int channels) {  // the storage's channels as a 1 x N image
    TensorView tv;
    tv.data = t.data_ptr<float>();
    tv.channels = tv.c = channels;
    tv.h = 1;
    tv.w = static_cast<int>(N);
    return tv;
  };
  at::Tensor out_cm = at::empty({a.batch, a.heads * kHeadDim, N}, q.options());  // channel-major output
  yolo12::cpu::AttentionParams p;
  p.q = view(qc.t, qc.channels);
  p.k = view(kc.t, kc.channels);
  p.v = view(vc.t, vc.channels);
  p.out = view(out_cm, static_cast<int>(a.heads * kHeadDim));
  p.lse = lse.data_ptr<float>();
  p.batch = static_cast<int>(a.batch);
  p.heads = static_cast<int>(a.heads);
  p.dqk = p.dv = static_cast<int>(kHeadDim);
  p.q_head_stride = qc.head_stride;
  p.k_head_stride = kc.head_stride;
  p.v_head_stride = vc.head_stride;
  p.area = static_cast<int>(area);
  p.scale = static_cast<float>(kScale);
  {
    std::lock_guard<std::mutex> lock(engine().mutex);
    yolo12::cpu::area_attention(p, engine().pool);
  }
  out.copy_(out_cm.view({a.batch, a.heads, kHeadDim, N}).permute({0, 3, 1, 2}));
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> area_attention_backward_cpu(const at::Tensor& grad_out,
                                                                           const at::Tensor& q, const at::Tensor& k,
                                                                           const at::Tensor& v, const at::Tensor& out,
                                                                           const at::Tensor& lse, int64_t area) {
  const char* op = "yolo12::area_attention_backward";
  const AttentionArgs a = check_attention(op, q, k, v, area);
  check_cpu_dtype(op, q);
  TORCH_CHECK_VALUE(grad_out.sizes() == q.sizes() && out.sizes() == q.sizes() &&
                        lse.sizes() == at::IntArrayRef({a.batch, a.heads, a.tokens}),
                    op, ": grad_out and out must be ", q.sizes(), " and lse (", a.batch, ", ", a.heads, ", ", a.tokens,
                    ")");
  TORCH_CHECK_TYPE(grad_out.scalar_type() == q.scalar_type() && out.scalar_type() == q.scalar_type() &&
                       lse.scalar_type() == q.scalar_type(),
                   op, ": grad_out, out and lse must have q's dtype on the CPU");
  at::Tensor dq = at::empty(q.sizes(), q.options()), dk = at::empty(q.sizes(), q.options()),
             dv = at::empty(q.sizes(), q.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "area_attention_backward_cpu", [&] {
    attention_backward_loops<scalar_t>(a, grad_out.accessor<scalar_t, 4>(), q.accessor<scalar_t, 4>(),
                                       k.accessor<scalar_t, 4>(), v.accessor<scalar_t, 4>(), out.accessor<scalar_t, 4>(),
                                       lse.accessor<scalar_t, 3>(), dq.accessor<scalar_t, 4>(),
                                       dk.accessor<scalar_t, 4>(), dv.accessor<scalar_t, 4>());
  });
  return {dq, dk, dv};
}

// ---- detect decode ----------------------------------------------------------------------------------

// One task per (image, level, row); out (B, 4 + nc, A) contiguous; the float64 path.
template <typename T>
void detect_forward_loops(const DetectArgs& a, const std::vector<at::Tensor>& box, const std::vector<at::Tensor>& cls,
                          at::IntArrayRef strides, T* out) {
  const int64_t A = a.anchors, R = a.reg_max;
  std::vector<int64_t> offset(a.levels() + 1, 0);
  for (size_t l = 0; l < a.levels(); ++l) offset[l + 1] = offset[l] + a.h[l] * a.w[l];
  at::parallel_for(0, a.batch * A, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / A, anchor = t % A;
      size_t l = 0;
      while (anchor >= offset[l + 1]) ++l;
      const int64_t cell = anchor - offset[l], plane = a.h[l] * a.w[l];
      const int64_t gy = cell / a.w[l], gx = cell % a.w[l];
      const T* bp = box[l].data_ptr<T>() + n * 4 * R * plane + cell;  // bin i of side s at bp[(s * R + i) * plane]
      const T* cp = cls[l].data_ptr<T>() + n * a.nc * plane + cell;
      T* op = out + n * (4 + a.nc) * A + anchor;  // channel ch at op[ch * A]
      double dist[4];
      for (int side = 0; side < 4; ++side) {
        double m = -INFINITY, sum = 0.0, acc = 0.0;
        for (int64_t i = 0; i < R; ++i) m = std::max(m, static_cast<double>(bp[(side * R + i) * plane]));
        for (int64_t i = 0; i < R; ++i) {
          const double ei = std::exp(bp[(side * R + i) * plane] - m);
          sum += ei;
          acc += ei * static_cast<double>(i);
        }
        dist[side] = acc / sum;
      }
      const double s = static_cast<double>(strides[l]), ax = gx + 0.5, ay = gy + 0.5;
      op[0] = static_cast<T>((ax + (dist[2] - dist[0]) / 2) * s);
      op[A] = static_cast<T>((ay + (dist[3] - dist[1]) / 2) * s);
      op[2 * A] = static_cast<T>((dist[0] + dist[2]) * s);
      op[3 * A] = static_cast<T>((dist[1] + dist[3]) * s);
      for (int64_t c = 0; c < a.nc; ++c) op[(4 + c) * A] = static_cast<T>(sigmoid(static_cast<double>(cp[c * plane])));
    }
  });
}

// See detect_backward.cuh for the formulas; maps and grads contiguous NCHW per level.
template <typename T>
void detect_backward_loops(const DetectArgs& a, const T* g, const std::vector<at::Tensor>& box,
                           const std::vector<at::Tensor>& cls, at::IntArrayRef strides, std::vector<at::Tensor>& gbox,
                           std::vector<at::Tensor>& gcls) {
  const int64_t A = a.anchors, R = a.reg_max;
  std::vector<int64_t> offset(a.levels() + 1, 0);
  for (size_t l = 0; l < a.levels(); ++l) offset[l + 1] = offset[l] + a.h[l] * a.w[l];
  at::parallel_for(0, a.batch * A, 64, [&](int64_t begin, int64_t end) {
    std::vector<double> e(R);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / A, anchor = t % A;
      size_t l = 0;
      while (anchor >= offset[l + 1]) ++l;
      const int64_t cell = anchor - offset[l], plane = a.h[l] * a.w[l];
      const T* bp = box[l].data_ptr<T>() + n * 4 * R * plane + cell;
      const T* cp = cls[l].data_ptr<T>() + n * a.nc * plane + cell;
      T* gbp = gbox[l].data_ptr<T>() + n * 4 * R * plane + cell;
      T* gcp = gcls[l].data_ptr<T>() + n * a.nc * plane + cell;
      const T* gp = g + n * (4 + a.nc) * A + anchor;
      const double s = static_cast<double>(strides[l]);
      const double gcx = gp[0], gcy = gp[A], gw = gp[2 * A], gh = gp[3 * A];
      const double dside[4] = {s * (gw - gcx / 2), s * (gh - gcy / 2), s * (gw + gcx / 2), s * (gh + gcy / 2)};
      for (int side = 0; side < 4; ++side) {
        double m = -INFINITY, sum = 0.0, acc = 0.0;
        for (int64_t i = 0; i < R; ++i) m = std::max(m, static_cast<double>(bp[(side * R + i) * plane]));
        for (int64_t i = 0; i < R; ++i) {
          e[i] = std::exp(bp[(side * R + i) * plane] - m);
          sum += e[i];
          acc += e[i] * static_cast<double>(i);
        }
        const double dist = acc / sum;
        for (int64_t i = 0; i < R; ++i)
          gbp[(side * R + i) * plane] = static_cast<T>(e[i] / sum * (static_cast<double>(i) - dist) * dside[side]);
      }
      for (int64_t c = 0; c < a.nc; ++c) {
        const double sg = sigmoid(static_cast<double>(cp[c * plane]));
        gcp[c * plane] = static_cast<T>(gp[(4 + c) * A] * sg * (1 - sg));
      }
    }
  });
}

std::vector<at::Tensor> contiguous_all(at::TensorList ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.contiguous());
  return out;
}

at::Tensor detect_decode_cpu(at::TensorList box, at::TensorList cls, at::IntArrayRef strides) {
  const char* op = "yolo12::detect_decode";
  const DetectArgs a = check_detect(op, box, cls, strides);
  check_cpu_dtype(op, box[0]);
  const std::vector<at::Tensor> bc = contiguous_all(box), cc = contiguous_all(cls);
  at::Tensor out = at::empty({a.batch, 4 + a.nc, a.anchors}, box[0].options());
  if (box[0].scalar_type() == at::kDouble) {
    detect_forward_loops<double>(a, bc, cc, strides, out.data_ptr<double>());
    return out;
  }
  yolo12::cpu::DetectDecodeParams p;
  for (size_t l = 0; l < a.levels(); ++l) {
    p.box.push_back(nchw_view(bc[l], a.h[l], a.w[l]));
    p.cls.push_back(nchw_view(cc[l], a.h[l], a.w[l]));
    p.strides.push_back(static_cast<int>(strides[l]));
  }
  p.out.data = out.data_ptr<float>();
  p.out.channels = p.out.c = static_cast<int>(4 + a.nc);
  p.out.h = 1;
  p.out.w = static_cast<int>(a.anchors);
  p.batch = static_cast<int>(a.batch);
  p.nc = static_cast<int>(a.nc);
  p.reg_max = static_cast<int>(a.reg_max);
  std::lock_guard<std::mutex> lock(engine().mutex);
  yolo12::cpu::detect_decode(p, engine().pool);
  return out;
}

std::tuple<std::vector<at::Tensor>, std::vector<at::Tensor>> detect_decode_backward_cpu(const at::Tensor& grad_out,
                                                                                        at::TensorList box,
                                                                                        at::TensorList cls,
                                                                                        at::IntArrayRef strides) {
  const char* op = "yolo12::detect_decode_backward";
  const DetectArgs a = check_detect(op, box, cls, strides);
  check_cpu_dtype(op, box[0]);
  TORCH_CHECK_VALUE(grad_out.sizes() == at::IntArrayRef({a.batch, 4 + a.nc, a.anchors}) &&
                        grad_out.scalar_type() == box[0].scalar_type(),
                    op, ": grad_out must be (", a.batch, ", ", 4 + a.nc, ", ", a.anchors, ") of the maps' dtype");
  const std::vector<at::Tensor> bc = contiguous_all(box), cc = contiguous_all(cls);
  std::vector<at::Tensor> gbox, gcls;
  for (size_t l = 0; l < a.levels(); ++l) {
    gbox.push_back(at::empty_like(bc[l]));
    gcls.push_back(at::empty_like(cc[l]));
  }
  const at::Tensor g = grad_out.contiguous();
  AT_DISPATCH_FLOATING_TYPES(box[0].scalar_type(), "detect_decode_backward_cpu", [&] {
    detect_backward_loops<scalar_t>(a, g.data_ptr<scalar_t>(), bc, cc, strides, gbox, gcls);
  });
  return {gbox, gcls};
}

}  // namespace
}  // namespace yolo12_torch

TORCH_LIBRARY_IMPL(yolo12, CPU, m) {
  m.impl("conv2d", &yolo12_torch::conv2d_cpu);
  m.impl("conv2d_backward", &yolo12_torch::conv2d_backward_cpu);
  m.impl("area_attention_fwd", &yolo12_torch::area_attention_fwd_cpu);
  m.impl("area_attention_backward", &yolo12_torch::area_attention_backward_cpu);
  m.impl("detect_decode", &yolo12_torch::detect_decode_cpu);
  m.impl("detect_decode_backward", &yolo12_torch::detect_decode_backward_cpu);
}
