// src/backends/cuda/conv_backward.cu - the conv backward of conv_backward.cuh.
//
// dx: the transposed conv is a stride-1 conv of dz (zero-inserted between pixels when the forward
// stride s > 1) with the weights transposed per group (c_in <-> c_out) and the taps flipped, padded by
// dilation (k - 1) - pad. So it runs on the tested forward kernels (tensor cores in fp16), packed by
// conv_pack_weights_device. The zero-inserted buffer costs s^2 times the FLOPs for s = 2 (3/4 of the
// products are with zeros); a direct stride-2 transposed kernel is the next step.
//   conv2d_dgrad_naive: one thread per dx element (gather form), for shapes the dx conv cannot take.
//
// dW: per group the matrix product dW[co, n] = sum_p dz[p, co] * X[p, n] over the B * Ho * Wo output
// pixels p, with n = tap * cin_g + ci (the x-patch channels of tap (ky, kx) for pixel p are contiguous
// in NHWC memory, so a block's loads coalesce along ci) and reordered to OIHW when reduced.
//   wgrad_gemm: 64 x 64 output tiles of (co, n), 16 pixels per step through shared memory, 4 x 4
//       fp32 outputs per thread (CUDA cores); the pixels are split over blockIdx.z so that the grid has
//       about four blocks per SM, each split writing its partial tile to the workspace.
//   wgrad_depthwise<K>: depthwise K = 3, 5, 7: one thread per (channel, pixel lane), the K*K sums in
//       registers, 8 pixel lanes x splits partial sums.
//   channel_sums: dbias, the same shape as wgrad_depthwise without taps.
//   reduce_partials: sums the partial sums of each output in a fixed order (the result does not
//       depend on timing) and writes OIHW in the element type.
#include "conv_backward.cuh"

#include <algorithm>
#include <string>

#include "common.cuh"
#include "conv_detail.cuh"
#include "yolo12/errors.hpp"

namespace yolo12::cuda {

using conv_detail::GemmLayout;
using conv_detail::gemm_layout;
using conv_detail::is_depthwise;
using conv_detail::kChunk;
using conv_detail::round_up;

namespace {

constexpr int kThreads = 256;
constexpr int kTargetBlocks = 528;  // four blocks per SM of an H200 (132 SMs)

int grid_blocks(long long total) {
  const long long b = (total + kThreads - 1) / kThreads;
  return static_cast<int>(std::max(1LL, std::min(b, 65536LL * 8)));
}

long long ceil_div_ll(long long a, long long b) { return (a + b - 1) / b; }

[[noreturn]] void fail(const std::string& what) { throw InputError("conv backward: " + what); }

// ---- packing ----------------------------------------------------------------------------------------

template <typename T>
struct PackArgs {
  const T* w;        // source OIHW (c_out_src, cin_g_src, k, k)
  T* dst;            // packed for the target conv
  long long total;   // conv_packed_weight_elems(target)
  int kk;            // k * k
  bool depthwise;    // target is depthwise: (kk, c_pad)
  int c_pad, c;      // depthwise: padded and real channels
  int k_pad, cin_pad, cin_g, n_g;  // GEMM layout of the target
  bool transposed;
};

template <typename T>
__global__ void conv_pack_kernel(const PackArgs<T> a) {
  for (long long e = blockIdx.x * 1LL * blockDim.x + threadIdx.x; e < a.total; e += 1LL * gridDim.x * blockDim.x) {
    float v = 0.f;
    if (a.depthwise) {
      const int tap = static_cast<int>(e / a.c_pad), c = static_cast<int>(e % a.c_pad);
      if (c < a.c) v = to_f32(a.w[static_cast<long long>(c) * a.kk + (a.transposed ? a.kk - 1 - tap : tap)]);
    } else {
      const long long co = e / a.k_pad;  // target output channel
      const int r = static_cast<int>(e % a.k_pad);
      const int tap = r / a.cin_pad, ci = r % a.cin_pad;  // target input channel in the group
      if (tap < a.kk && ci < a.cin_g) {
        if (!a.transposed) {
          v = to_f32(a.w[(co * a.cin_g + ci) * a.kk + tap]);
        } else {
          // target (c_out' = c_in, groups g, n_g' = cin_g of the source, cin_g' = cout_g of the source)
          const long long g = co / a.n_g, ci_src = co % a.n_g, co_src = g * a.cin_g + ci;
          v = to_f32(a.w[(co_src * a.n_g + ci_src) * a.kk + (a.kk - 1 - tap)]);
        }
      }
    }
    a.dst[e] = from_f32<T>(v);
  }
}

// ---- dx ---------------------------------------------------------------------------------------------

template <typename T>
struct ScatterArgs {
  const T* dz;  // (B, Ho, Wo, lddz)
  int lddz;
  T* u;         // (B, Hu, Wu, c) contiguous
  int c, ho, wo, hu, wu, stride;
  long long total;
};

template <typename T>
__global__ void zero_insert_kernel(const ScatterArgs<T> a) {
  for (long long e = blockIdx.x * 1LL * blockDim.x + threadIdx.x; e < a.total; e += 1LL * gridDim.x * blockDim.x) {
    const int c = static_cast<int>(e % a.c);
    const long long pix = e / a.c;
    const int ux = static_cast<int>(pix % a.wu);
    const int uy = static_cast<int>((pix / a.wu) % a.hu);
    const long long n = pix / (1LL * a.wu * a.hu);
    float v = 0.f;
    if (uy % a.stride == 0 && ux % a.stride == 0)
      v = to_f32(a.dz[((n * a.ho + uy / a.stride) * a.wo + ux / a.stride) * a.lddz + c]);
    a.u[e] = from_f32<T>(v);
  }
}

template <typename T>
__global__ void dgrad_naive_kernel(const ConvDgradParams<T> p) {
  const ConvShape& s = p;
  const int cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups, kk = s.k * s.k;
  const long long total = 1LL * s.batch * s.h * s.w_in * s.c_in;
  for (long long e = blockIdx.x * 1LL * blockDim.x + threadIdx.x; e < total; e += 1LL * gridDim.x * blockDim.x) {
    const int ci = static_cast<int>(e % s.c_in);
    const long long pix = e / s.c_in;
    const int ix = static_cast<int>(pix % s.w_in), iy = static_cast<int>((pix / s.w_in) % s.h);
    const long long n = pix / (1LL * s.w_in * s.h);
    const int g = ci / cin_g, ci_l = ci % cin_g;
    float acc = 0.f;
    for (int ky = 0; ky < s.k; ++ky) {
      const int ty = iy + s.pad - ky * s.dilation;
      if (ty < 0 || ty % s.stride != 0 || ty / s.stride >= s.ho) continue;
      for (int kx = 0; kx < s.k; ++kx) {
        const int tx = ix + s.pad - kx * s.dilation;
        if (tx < 0 || tx % s.stride != 0 || tx / s.stride >= s.wo) continue;
        const T* dzp = p.dz + ((n * s.ho + ty / s.stride) * s.wo + tx / s.stride) * p.lddz + g * cout_g;  // (cout_g)
        const T* wp = p.w + (static_cast<long long>(g) * cout_g * cin_g + ci_l) * kk + ky * s.k + kx;  // stride cin_g*kk
        for (int co = 0; co < cout_g; ++co) acc += to_f32(dzp[co]) * to_f32(wp[static_cast<long long>(co) * cin_g * kk]);
      }
    }
    p.dx[pix * p.lddx + ci] = from_f32<T>(acc);
  }
}

// ---- dW, dbias --------------------------------------------------------------------------------------

constexpr int kWgBM = 64, kWgBN = 64, kWgBK = 16;  // wgrad_gemm tile: (co, n, pixels)
constexpr int kLanes = 8, kLaneChannels = 32;      // wgrad_depthwise / channel_sums block: 32 channels x 8 lanes

// How conv2d_wgrad cuts the pixels; conv2d_wgrad_workspace_bytes and the launch share it.
struct WgradPlan {
  bool depthwise = false;    // wgrad_depthwise (else wgrad_gemm)
  int mtiles = 1, ntiles = 1, n_cols = 1;  // gemm: tiles per group, columns N = k*k*cin_g
  int splits = 1;            // dW pixel splits (blockIdx.z of the gemm, blockIdx.y of the depthwise kernel)
  long long per_split = 0;   // pixels per split
  int parts = 1;             // partial sums per dW element (splits, or splits * kLanes)
  int bias_splits = 1;
  long long bias_per_split = 0;
  std::size_t w_floats = 0, bias_floats = 0;
};

WgradPlan wgrad_plan(const ConvShape& s) {
  WgradPlan pl;
  const long long pixels = 1LL * s.batch * s.ho * s.wo;
  const int cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups, kk = s.k * s.k;
  const int channel_blocks = (s.c_out + kLaneChannels - 1) / kLaneChannels;
  pl.depthwise = is_depthwise(s) && (s.k == 3 || s.k == 5 || s.k == 7);
  if (pl.depthwise) {
    pl.splits = static_cast<int>(std::clamp(ceil_div_ll(kTargetBlocks / 2, channel_blocks), 1LL,
                                            std::max(1LL, pixels / (kLanes * 8))));
    pl.per_split = ceil_div_ll(pixels, pl.splits);
    pl.parts = pl.splits * kLanes;
    pl.w_floats = static_cast<std::size_t>(pl.parts) * s.c_out * kk;
  } else {
    pl.n_cols = kk * cin_g;
    pl.mtiles = (cout_g + kWgBM - 1) / kWgBM;
    pl.ntiles = (pl.n_cols + kWgBN - 1) / kWgBN;
    const long long blocks = 1LL * pl.mtiles * pl.ntiles * s.groups;
    pl.splits = static_cast<int>(std::clamp(ceil_div_ll(kTargetBlocks, blocks), 1LL, std::max(1LL, pixels / 256)));
    pl.per_split = round_up(static_cast<int>(std::min<long long>(ceil_div_ll(pixels, pl.splits), 1 << 30)), kWgBK);
    pl.splits = static_cast<int>(ceil_div_ll(pixels, pl.per_split));
    pl.parts = pl.splits;
    pl.w_floats = static_cast<std::size_t>(pl.parts) * s.c_out * pl.n_cols;
  }
  pl.bias_splits = static_cast<int>(std::clamp(ceil_div_ll(kTargetBlocks / 2, channel_blocks), 1LL,
                                               std::max(1LL, pixels / (kLanes * 8))));
  pl.bias_per_split = ceil_div_ll(pixels, pl.bias_splits);
  pl.bias_floats = static_cast<std::size_t>(pl.bias_splits) * kLanes * s.c_out;
  pl.w_floats = align_up(pl.w_floats, 4);  // the bias region starts 16-byte aligned
  return pl;
}

template <typename T>
struct WgradArgs {
  ConvWgradParams<T> p;
  long long pixels, per_split;
  int mtiles, n_cols;
  float* partial;  // (parts, c_out, n_cols) or (parts, c_out) for the sums
};

template <typename T>
__global__ void __launch_bounds__(kThreads) wgrad_gemm(const WgradArgs<T> a) {
  __shared__ float a_tile[kWgBK][kWgBM];  // (pixels, co): dz
  __shared__ float b_tile[kWgBK][kWgBN];  // (pixels, n): x patches
  __shared__ int pix_img[kWgBK], pix_y0[kWgBK], pix_x0[kWgBK];  // image (-1: past the split), oy*s - pad, ox*s - pad
  const ConvShape& s = a.p;
  const int cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  const int tid = threadIdx.x;
  const int g = blockIdx.y / a.mtiles, m0 = (blockIdx.y % a.mtiles) * kWgBM, n0 = blockIdx.x * kWgBN;
  const long long p_begin = blockIdx.z * a.per_split;
  const long long p_end = min(a.pixels, p_begin + a.per_split);

  // This thread's load column of each tile, the same for every step (256 threads = 4 rows x 64 columns).
  const int lcol = tid % kWgBM, lrow = tid / kWgBM;
  const int co = m0 + lcol;
  const bool co_ok = co < cout_g;
  const T* dz_col = a.p.dz + static_cast<long long>(g) * cout_g + co;  // + pixel * lddz
  const int nn = n0 + lcol;
  const bool n_ok = nn < a.n_cols;
  const int tap = n_ok ? nn / cin_g : 0, ci = n_ok ? nn % cin_g : 0;
  const int dy = (tap / s.k) * s.dilation, dx = (tap % s.k) * s.dilation;
  const T* x_col = a.p.x + static_cast<long long>(g) * cin_g + ci;  // + input pixel * ldx

  const int tm = tid / 16, tn = tid % 16;  // outputs rows tm + 16 i, columns tn + 16 j
  float acc[4][4] = {};
  for (long long p0 = p_begin; p0 < p_end; p0 += kWgBK) {
    if (tid < kWgBK) {
      const long long pix = p0 + tid;
      if (pix < p_end) {
        const int ox = static_cast<int>(pix % s.wo), oy = static_cast<int>((pix / s.wo) % s.ho);
        pix_img[tid] = static_cast<int>(pix / (1LL * s.wo * s.ho));
        pix_y0[tid] = oy * s.stride - s.pad;
        pix_x0[tid] = ox * s.stride - s.pad;
      } else {
        pix_img[tid] = -1;
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kWgBK / 4; ++r) {
      const int kr = lrow + 4 * r;
      const int img = pix_img[kr];
      float av = 0.f, bv = 0.f;
      if (img >= 0) {
        if (co_ok) av = to_f32(dz_col[(p0 + kr) * a.p.lddz]);
        const int iy = pix_y0[kr] + dy, ix = pix_x0[kr] + dx;
        if (n_ok && iy >= 0 && iy < s.h && ix >= 0 && ix < s.w_in)
          bv = to_f32(x_col[((1LL * img * s.h + iy) * s.w_in + ix) * a.p.ldx]);
      }
      a_tile[kr][lcol] = av;
      b_tile[kr][lcol] = bv;
    }
    __syncthreads();
#pragma unroll
    for (int kq = 0; kq < kWgBK; ++kq) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = a_tile[kq][tm + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = b_tile[kq][tn + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  float* out = a.partial + static_cast<long long>(blockIdx.z) * s.c_out * a.n_cols;  // (c_out, n_cols)
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = m0 + tm + 16 * i;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + tn + 16 * j;
      if (row < cout_g && col < a.n_cols) out[(static_cast<long long>(g) * cout_g + row) * a.n_cols + col] = acc[i][j];
    }
  }
}

template <typename T, int K>
__global__ void __launch_bounds__(kLaneChannels * kLanes) wgrad_depthwise(const WgradArgs<T> a) {
  const ConvShape& s = a.p;
  const int c = blockIdx.x * kLaneChannels + threadIdx.x, lane = threadIdx.y;
  float acc[K * K] = {};
  const long long p_begin = blockIdx.y * a.per_split;
  const long long p_end = min(a.pixels, p_begin + a.per_split);
  if (c < s.c_out) {
    for (long long pix = p_begin + lane; pix < p_end; pix += kLanes) {
      const int ox = static_cast<int>(pix % s.wo), oy = static_cast<int>((pix / s.wo) % s.ho);
      const long long img = pix / (1LL * s.wo * s.ho);
      const float d = to_f32(a.p.dz[pix * a.p.lddz + c]);
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
        const int iy = oy * s.stride - s.pad + ky * s.dilation;
        if (iy < 0 || iy >= s.h) continue;
        const T* row = a.p.x + (img * s.h + iy) * s.w_in * a.p.ldx + c;  // (W, ldx)
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          const int ix = ox * s.stride - s.pad + kx * s.dilation;
          if (ix >= 0 && ix < s.w_in) acc[ky * K + kx] = fmaf(d, to_f32(row[static_cast<long long>(ix) * a.p.ldx]), acc[ky * K + kx]);
        }
      }
    }
    float* out = a.partial + ((static_cast<long long>(blockIdx.y) * kLanes + lane) * s.c_out + c) * (K * K);  // (K*K)
#pragma unroll
    for (int t = 0; t < K * K; ++t) out[t] = acc[t];
  }
}

template <typename T>
__global__ void __launch_bounds__(kLaneChannels * kLanes) channel_sums(const WgradArgs<T> a) {
  const int c_out = a.p.c_out;
  const int c = blockIdx.x * kLaneChannels + threadIdx.x, lane = threadIdx.y;
  const long long p_begin = blockIdx.y * a.per_split;
  const long long p_end = min(a.pixels, p_begin + a.per_split);
  if (c >= c_out) return;
  float acc = 0.f;
  for (long long pix = p_begin + lane; pix < p_end; pix += kLanes) acc += to_f32(a.p.dz[pix * a.p.lddz + c]);
  a.partial[(static_cast<long long>(blockIdx.y) * kLanes + lane) * c_out + c] = acc;
}

// out[co, ci, tap] (OIHW) = sum over parts of partial[part, co, tap * cin_g + ci].
template <typename T>
__global__ void reduce_partials(const float* partial,  // (parts, c_out, kk * cin_g)
                                int parts, int c_out, int cin_g, int kk, T* out) {
  const long long per_part = 1LL * c_out * cin_g * kk;
  for (long long e = blockIdx.x * 1LL * blockDim.x + threadIdx.x; e < per_part; e += 1LL * gridDim.x * blockDim.x) {
    const long long co = e / (1LL * cin_g * kk);
    const int r = static_cast<int>(e % (1LL * cin_g * kk));
    const int ci = r / kk, tap = r % kk;
    const float* src = partial + co * (1LL * kk * cin_g) + tap * cin_g + ci;
    float sum = 0.f;
    for (int q = 0; q < parts; ++q) sum += src[q * per_part];
    out[e] = from_f32<T>(sum);
  }
}

template <typename T>
__global__ void silu_backward_kernel(const SiluBackwardParams<T> p) {
  const long long total = p.pixels * p.c;
  for (long long e = blockIdx.x * 1LL * blockDim.x + threadIdx.x; e < total; e += 1LL * gridDim.x * blockDim.x) {
    const long long pix = e / p.c;
    const int c = static_cast<int>(e % p.c);
    const float z = to_f32(p.z[pix * p.ldz + c]);
    const float sg = 1.f / (1.f + expf(-z));
    p.dz[pix * p.lddz + c] = from_f32<T>(to_f32(p.dy[pix * p.lddy + c]) * sg * (1.f + z * (1.f - sg)));
  }
}

void check_shape(const ConvShape& s) {
  if (!conv_can_implement(s))
    fail("unsupported shape (batch " + std::to_string(s.batch) + ", " + std::to_string(s.c_in) + "x" +
         std::to_string(s.h) + "x" + std::to_string(s.w_in) + " -> " + std::to_string(s.c_out) + "x" +
         std::to_string(s.ho) + "x" + std::to_string(s.wo) + ", k " + std::to_string(s.k) + ", stride " +
         std::to_string(s.stride) + ", pad " + std::to_string(s.pad) + ", groups " + std::to_string(s.groups) + ")");
}

}  // namespace

// ---- host entry points ------------------------------------------------------------------------------

template <typename T>
void conv_pack_weights_device(const ConvPackParams<T>& p, cudaStream_t stream) {
  if (p.w == nullptr || p.dst == nullptr) fail("null weights to pack");
  const ConvShape t = p.transposed ? conv2d_dgrad_shape(p) : static_cast<const ConvShape&>(p);
  const GemmLayout l = gemm_layout(t);
  PackArgs<T> a;
  a.w = p.w;
  a.dst = p.dst;
  a.total = static_cast<long long>(conv_packed_weight_elems(t));
  a.kk = t.k * t.k;
  a.depthwise = is_depthwise(t);
  a.c_pad = round_up(t.c_out, kChunk);
  a.c = t.c_out;
  a.k_pad = l.k_pad;
  a.cin_pad = l.cin_pad;
  a.cin_g = l.cin_g;
  a.n_g = l.n_g;
  a.transposed = p.transposed;
  conv_pack_kernel<T><<<grid_blocks(a.total), kThreads, 0, stream>>>(a);
  YOLO12_CUDA_CHECK_LAUNCH();
}

ConvShape conv2d_dgrad_shape(const ConvShape& s) {
  ConvShape d;
  d.batch = s.batch;
  d.h = s.h + 2 * s.pad - s.dilation * (s.k - 1);
  d.w_in = s.w_in + 2 * s.pad - s.dilation * (s.k - 1);
  d.c_in = s.c_out;
  d.ho = s.h;
  d.wo = s.w_in;
  d.c_out = s.c_in;
  d.k = s.k;
  d.stride = 1;
  d.pad = s.dilation * (s.k - 1) - s.pad;
  d.groups = s.groups;
  d.dilation = s.dilation;
  d.act = graph::Act::None;  // dx is linear in dz
  return d;
}

bool conv2d_dgrad_uses_forward_kernels(const ConvShape& s) {
  const ConvShape d = conv2d_dgrad_shape(s);
  return conv_can_implement(s) && d.pad >= 0 && d.h >= 1 && d.w_in >= 1 && conv_can_implement(d);
}

std::size_t conv2d_dgrad_inserted_elems(const ConvShape& s) {
  if (s.stride == 1) return 0;
  const ConvShape d = conv2d_dgrad_shape(s);
  return static_cast<std::size_t>(s.batch) * d.h * d.w_in * s.c_out;
}

template <typename T>
void conv2d_dgrad_naive(const ConvDgradParams<T>& p, cudaStream_t stream) {
  check_shape(p);
  if (p.dz == nullptr || p.w == nullptr || p.dx == nullptr) fail("null dz, w or dx");
  dgrad_naive_kernel<T><<<grid_blocks(1LL * p.batch * p.h * p.w_in * p.c_in), kThreads, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
}

template <typename T>
void conv2d_dgrad(const ConvDgradParams<T>& p, cudaStream_t stream) {
  check_shape(p);
  if (p.dz == nullptr || p.w == nullptr || p.dx == nullptr) fail("null dz, w or dx");
  if (p.lddz < p.c_out || p.lddx < p.c_in) fail("lddz / lddx smaller than the channels");
  if (!conv2d_dgrad_uses_forward_kernels(p)) {
    conv2d_dgrad_naive(p, stream);
    return;
  }
  if (p.packed == nullptr || (p.stride > 1 && p.inserted == nullptr)) fail("missing dx workspace");
  const ConvShape d = conv2d_dgrad_shape(p);
  ConvPackParams<T> pack;
  static_cast<ConvShape&>(pack) = p;
  pack.w = p.w;
  pack.dst = p.packed;
  pack.transposed = true;
  conv_pack_weights_device(pack, stream);
  ConvParams<T> f;
  static_cast<ConvShape&>(f) = d;
  f.x = p.dz;
  f.ldx = p.lddz;
  if (p.stride > 1) {
    ScatterArgs<T> a{p.dz, p.lddz, p.inserted, p.c_out, p.ho, p.wo, d.h, d.w_in, p.stride,
                     static_cast<long long>(conv2d_dgrad_inserted_elems(p))};
    zero_insert_kernel<T><<<grid_blocks(a.total), kThreads, 0, stream>>>(a);
    YOLO12_CUDA_CHECK_LAUNCH();
    f.x = p.inserted;
    f.ldx = p.c_out;
  }
  f.w = p.packed;
  f.y = p.dx;
  f.ldy = p.lddx;
  conv2d_forward(f, stream);
}

std::size_t conv2d_wgrad_workspace_bytes(const ConvShape& s) {
  const WgradPlan pl = wgrad_plan(s);
  return (pl.w_floats + pl.bias_floats) * sizeof(float);
}

template <typename T>
void conv2d_wgrad(const ConvWgradParams<T>& p, cudaStream_t stream) {
  const ConvShape& s = p;
  check_shape(s);
  if (p.dz == nullptr || (p.dw != nullptr && p.x == nullptr)) fail("null dz or x");
  if (p.dw == nullptr && p.dbias == nullptr) return;
  if (p.workspace == nullptr) fail("missing workspace");
  if (p.lddz < s.c_out || (p.dw != nullptr && p.ldx < s.c_in)) fail("lddz / ldx smaller than the channels");
  const WgradPlan pl = wgrad_plan(s);
  WgradArgs<T> a;
  a.p = p;
  a.pixels = 1LL * s.batch * s.ho * s.wo;
  a.mtiles = pl.mtiles;
  a.n_cols = pl.n_cols;
  const int cin_g = s.c_in / s.groups, kk = s.k * s.k;
  const int channel_blocks = (s.c_out + kLaneChannels - 1) / kLaneChannels;
  if (p.dw != nullptr) {
    a.per_split = pl.per_split;
    a.partial = p.workspace;
    if (pl.depthwise) {
      const dim3 grid(channel_blocks, pl.splits), block(kLaneChannels, kLanes);
      if (s.k == 3) wgrad_depthwise<T, 3><<<grid, block, 0, stream>>>(a);
      else if (s.k == 5) wgrad_depthwise<T, 5><<<grid, block, 0, stream>>>(a);
      else wgrad_depthwise<T, 7><<<grid, block, 0, stream>>>(a);
    } else {
      const dim3 grid(pl.ntiles, pl.mtiles * s.groups, pl.splits);
      wgrad_gemm<T><<<grid, kThreads, 0, stream>>>(a);
    }
    YOLO12_CUDA_CHECK_LAUNCH();
    reduce_partials<T><<<grid_blocks(1LL * s.c_out * cin_g * kk), kThreads, 0, stream>>>(p.workspace, pl.parts, s.c_out,
                                                                                           cin_g, kk, p.dw);
    YOLO12_CUDA_CHECK_LAUNCH();
  }
  if (p.dbias != nullptr) {
    a.per_split = pl.bias_per_split;
    a.partial = p.workspace + pl.w_floats;
    channel_sums<T><<<dim3(channel_blocks, pl.bias_splits), dim3(kLaneChannels, kLanes), 0, stream>>>(a);
    YOLO12_CUDA_CHECK_LAUNCH();
    reduce_partials<T><<<grid_blocks(s.c_out), kThreads, 0, stream>>>(a.partial, pl.bias_splits * kLanes, s.c_out, 1,
                                                                      1, p.dbias);
    YOLO12_CUDA_CHECK_LAUNCH();
  }
}

template <typename T>
void silu_backward(const SiluBackwardParams<T>& p, cudaStream_t stream) {
  if (p.pixels <= 0 || p.c <= 0) return;
  if (p.dy == nullptr || p.z == nullptr || p.dz == nullptr) fail("silu backward: null dy, z or dz");
  silu_backward_kernel<T><<<grid_blocks(p.pixels * p.c), kThreads, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
}

#define YOLO12_CONV_BACKWARD_INSTANTIATE(T)                                          \
  template void conv_pack_weights_device<T>(const ConvPackParams<T>&, cudaStream_t); \
  template void conv2d_dgrad<T>(const ConvDgradParams<T>&, cudaStream_t);            \
  template void conv2d_dgrad_naive<T>(const ConvDgradParams<T>&, cudaStream_t);      \
  template void conv2d_wgrad<T>(const ConvWgradParams<T>&, cudaStream_t);            \
  template void silu_backward<T>(const SiluBackwardParams<T>&, cudaStream_t);
YOLO12_CONV_BACKWARD_INSTANTIATE(float)
YOLO12_CONV_BACKWARD_INSTANTIATE(__half)
#undef YOLO12_CONV_BACKWARD_INSTANTIATE

}  // namespace yolo12::cuda
