// src/backends/cuda/conv_depthwise.cu - dwconv_direct: depthwise k x k convolution (groups == c_in == c_out), NHWC.
//
//   y[n, oy, ox, c] = act(sum_{ky, kx} x[n, oy*s - p + ky, ox*s - p + kx, c] * W[c, ky, kx] + bias[c])
//                     * gamma[c] + residual[n, oy, ox, c]
// Memory-bound (2 * k*k FLOPs per output element against one element read and one written), so the
// kernel is about bytes: each thread owns V consecutive channels (16 bytes: 8 halves or 4 floats) of
// kOutX horizontally adjacent outputs, reads each input vector of its rows once and reuses it for every
// output whose window covers it. Weights are packed (k*k, c_pad) so a tap's V channels are one vector.
// k in {3, 5, 7}, stride in {1, 2}, dilation 1 are compiled; anything else goes to the naive kernel.
// When channels, leading dimensions or pointers are not 16-byte aligned, V = 1 (scalar loads).
//
// dwconv_tiled_f16 (variant dw_tiled_f16; fp16, 16-byte aligned views, large grids: batch 32): one block
// per tile of 8 x 16 output pixels x 16 channels. The block first copies its input tile (with the halo,
// zero outside the image) and its 16 channels' k x k weights into shared memory with 16-byte cp.async, so
// each input element is read from memory once per tile (the halo aside) instead of once per tap; then each
// thread computes one pixel's 8 channels from shared memory, taps in the same order as dwconv_direct
// (its pieces in conv_depthwise.cuh, which the tests also replay on the CPU).
//
// dwconv_rows_f16 (variant dw_rows_f16; fp16, stride 1, 16-byte aligned views, every grid): register-blocked
// rows. One block of 1, 2 or 4 warps per tile of 8 x 20 output pixels x 8, 16 or 32 channels (one warp per
// 8-channel chunk) copies its input tile with the halo (7 + k rows x 19 + k columns per chunk, zero outside
// the image) with 16-byte cp.async and converts the chunks' weights to fp32 in shared memory, one barrier;
// then each thread computes 5 adjacent outputs x 8 channels: per kernel row it loads and converts each of
// its 4 + k input vectors once and reuses it for every output its window covers, the row's k weight vectors
// in registers. 20-wide tiles leave no padding on yolo12's 160/80/40/20-wide maps. Per thread and kernel
// row at k = 7: 11 input loads, 14 weight loads (warp broadcasts), 88 conversions, 280 FMAs; dwconv_tiled_f16
// needs 14 loads and 112 conversions for 56 FMAs. Taps in dwconv_direct's order: bit-identical results.
#include <cstdint>

#include "common.cuh"
#include "conv_depthwise.cuh"
#include "conv_detail.cuh"
#include "mma.cuh"
#include "launch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

// V consecutive elements as floats: one 16-byte load when V > 1, else a scalar load.
template <typename T, int V>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[V]) {
  if constexpr (V == 1) {
    v[0] = to_float(p[0]);
  } else if constexpr (sizeof(T) == 2) {
    static_assert(V == 8, "fp16 vectors are 8 halves");
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h2[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  } else {
    static_assert(V == 4, "fp32 vectors are 4 floats");
    const float4 f = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = f.x;
    v[1] = f.y;
    v[2] = f.z;
    v[3] = f.w;
  }
}

template <typename T, int V>
__device__ __forceinline__ void store_vec(T* p, const float (&v)[V]) {
  if constexpr (V == 1) {
    p[0] = from_float<T>(v[0]);
  } else if constexpr (sizeof(T) == 2) {
    uint4 raw;
    __half2* h2 = reinterpret_cast<__half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) h2[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// One thread: channels [cv*V, cv*V + V) of outputs (n, oy, ox0 .. ox0 + kOutX - 1).
template <typename T, int K, int S, int V, int kOutX>
__global__ void __launch_bounds__(256) dwconv_direct(const DwParams<T> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int kSpan = (kOutX - 1) * S + K;  // input columns one row of the window group touches
  const int chunks = a.c_out / V;
  const int groups_x = (a.wo + kOutX - 1) / kOutX;
  const long long total = 1LL * a.batch * a.ho * groups_x * chunks;
  const long long idx = blockIdx.x * 1LL * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int cv = static_cast<int>(idx % chunks);
  long long rest = idx / chunks;
  const int gx = static_cast<int>(rest % groups_x);
  rest /= groups_x;
  const int oy = static_cast<int>(rest % a.ho);
  const int n = static_cast<int>(rest / a.ho);
  const int c0 = cv * V;
  const int ox0 = gx * kOutX;
  const int ix0 = ox0 * S - a.pad;

  float acc[kOutX][V];
#pragma unroll
  for (int o = 0; o < kOutX; ++o)
#pragma unroll
    for (int v = 0; v < V; ++v) acc[o][v] = 0.f;

  const T* ximg = a.x + static_cast<long long>(n) * a.h * a.w_in * a.ldx + c0;  // (H, W, ldx) at channel c0
#pragma unroll 1
  for (int ky = 0; ky < K; ++ky) {
    const int iy = oy * S - a.pad + ky;
    if (iy < 0 || iy >= a.h) continue;
    float wr[K][V];  // this row's taps
#pragma unroll
    for (int kx = 0; kx < K; ++kx) load_vec<T, V>(a.w + (ky * K + kx) * a.c_pad + c0, wr[kx]);
    const T* xrow = ximg + static_cast<long long>(iy) * a.w_in * a.ldx;
#pragma unroll
    for (int j = 0; j < kSpan; ++j) {
      const int ix = ix0 + j;
      if (ix < 0 || ix >= a.w_in) continue;
      float xv[V];
      load_vec<T, V>(xrow + static_cast<long long>(ix) * a.ldx, xv);
#pragma unroll
      for (int o = 0; o < kOutX; ++o) {
        const int kx = j - o * S;  // compile-time after unrolling
        if (kx >= 0 && kx < K) {
#pragma unroll
          for (int v = 0; v < V; ++v) acc[o][v] = fmaf(xv[v], wr[kx][v], acc[o][v]);
        }
      }
    }
  }

#pragma unroll
  for (int o = 0; o < kOutX; ++o) {
    const int ox = ox0 + o;
    if (ox >= a.wo) break;
    const long long pix = (static_cast<long long>(n) * a.ho + oy) * a.wo + ox;
    float out[V];
#pragma unroll
    for (int v = 0; v < V; ++v) out[v] = epilogue<T>(acc[o][v], a.bias, a.gamma, a.silu(), c0 + v);
    if (a.residual) {
      float r[V];
      load_vec<T, V>(a.residual + pix * a.ldr + c0, r);
#pragma unroll
      for (int v = 0; v < V; ++v) out[v] += r[v];
    }
    store_vec<T, V>(a.y + pix * a.ldy + c0, out);
  }
}

// dwconv_tiled_f16: the block's loads, one barrier, each thread's pixel (conv_depthwise.cuh).
template <int K, int S>
__global__ void __launch_bounds__(kDwTiledThreads) dwconv_tiled_f16(const DwParams<__half> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  __shared__ __align__(16) __half xs[DwTile<K, S>::kXHalves];  // (kInH, kInW, 16) input tile
  __shared__ __align__(16) __half ws[DwTile<K, S>::kWHalves];  // (K * K, 16) weights
  const DwTileCoords at = dw_tile_coords(a, blockIdx.x, blockIdx.y, blockIdx.z);
  dw_tiled_load<K, S>(a, at, threadIdx.x, xs, ws, CpAsyncZfill16<false>{a.x});
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  dw_tiled_pixel<K, S>(a, at, threadIdx.x, xs, ws);
}

// dwconv_rows_f16: the block's loads, one barrier, each thread's 5 outputs (conv_depthwise.cuh). At most
// 16 warps per SM (128 registers per thread): the 40 sums, a kernel row's 7 x 8 weights and the input vector.
template <int K, int CH>
__global__ void __launch_bounds__(DwRowsTile<K, CH>::kThreads, 16 / CH) dwconv_rows_f16(const DwParams<__half> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  __shared__ __align__(16) __half xs[DwRowsTile<K, CH>::kXHalves];  // (CH, kInH, 28, 8) input tiles
  __shared__ __align__(16) float ws[DwRowsTile<K, CH>::kWFloats];   // (CH, K * K, 8) fp32 weights
  const DwTileCoords at = dw_rows_coords(a, CH, blockIdx.x, blockIdx.y, blockIdx.z);
  dw_rows_load<K, CH>(a, at, threadIdx.x, xs, ws, CpAsyncZfill16<false>{a.x});
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  dw_rows_outputs<K, CH>(a, at, threadIdx.x, xs, ws);
}

template <int K, int CH>
void launch_dw_rows(const DwParams<__half>& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(dw_rows_groups(a.c_out, CH) * ceil_div(a.wo, kDwRowsTileW)),
                  static_cast<unsigned>(ceil_div(a.ho, kDwRowsTileH)), static_cast<unsigned>(a.batch));
  launch_kernel(dwconv_rows_f16<K, CH>, grid, DwRowsTile<K, CH>::kThreads, 0, stream, a);
}

template <int CH>
void launch_dw_rows_k(const DwParams<__half>& a, cudaStream_t stream) {
  switch (a.k) {
    case 3: launch_dw_rows<3, CH>(a, stream); break;
    case 5: launch_dw_rows<5, CH>(a, stream); break;
    default: launch_dw_rows<7, CH>(a, stream); break;
  }
}

template <int K, int S>
void launch_dw_tiled(const DwParams<__half>& a, cudaStream_t stream) {
  const int pairs = dw_channel_pairs(a.c_out);
  const dim3 grid(static_cast<unsigned>(pairs * ceil_div(a.wo, kDwTileW)), static_cast<unsigned>(ceil_div(a.ho, kDwTileH)),
                  static_cast<unsigned>(a.batch));
  launch_kernel(dwconv_tiled_f16<K, S>, grid, kDwTiledThreads, 0, stream, a);
}

// Whether every view (and the packed weights) can be read and written in 16-byte vectors of channels.
template <typename T>
bool dw_vec_views(const ConvParams<T>& p) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  return p.c_out % kVec == 0 && p.ldx % kVec == 0 && p.ldy % kVec == 0 && aligned(p.x) && aligned(p.y) &&
         aligned(p.w) && (!p.residual || (p.ldr % kVec == 0 && aligned(p.residual)));
}

// Threads dwconv_direct would run (kOutX outputs each); below two blocks of 256 per SM the grid does not
// fill the GPU and dw_one_output takes over.
long long dw_direct_threads(const ConvShape& s, int out_x, int vec) {
  return 1LL * s.batch * s.ho * ceil_div(s.wo, out_x) * (s.c_out / vec);
}
bool dw_grid_fills_gpu(const ConvShape& s, int out_x, int vec) {
  return dw_direct_threads(s, out_x, vec) >= 2LL * device_info().sm_count * 256;
}

template <typename T, int K, int S, int V, int kOutX>
void launch_dw_out(const DwParams<T>& a, cudaStream_t stream) {
  const long long total = 1LL * a.batch * a.ho * ceil_div(a.wo, kOutX) * (a.c_out / V);
  const int threads = 256;
  launch_kernel(dwconv_direct<T, K, S, V, kOutX>, static_cast<unsigned>((total + threads - 1) / threads), threads, 0, stream, a);
}

template <typename T, int K, int S, int V>
void launch_dw(const DwParams<T>& a, cudaStream_t stream) {
  // 4 outputs per thread at stride 1 (each input vector feeds up to 4 of them), 2 at stride 2.
  constexpr int kOutX = S == 1 ? 4 : 2;
  // Batch 1 at P5 (dw7x7 128 @ 20x20): 1600 threads, 7 blocks, 20 us, every thread a long serial
  // chain. With one output per thread there are kOutX times more, shorter chains.
  if (conv_variants().dw_one_output && !dw_grid_fills_gpu(a, kOutX, V)) launch_dw_out<T, K, S, V, 1>(a, stream);
  else launch_dw_out<T, K, S, V, kOutX>(a, stream);
}

template <typename T, int K, int S>
void launch_dw_vec(const DwParams<T>& a, bool vec, cudaStream_t stream) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  if (vec) launch_dw<T, K, S, kVec>(a, stream);
  else launch_dw<T, K, S, 1>(a, stream);
}

}  // namespace

bool dwconv_direct_supports(const ConvShape& s) {
  return (s.k == 3 || s.k == 5 || s.k == 7) && (s.stride == 1 || s.stride == 2) && s.dilation == 1;
}

bool dwconv_tiled_f16_supports(const ConvParams<__half>& p) {
  return is_depthwise(p) && dwconv_direct_supports(p) && dw_vec_views(p);
}

bool dwconv_tiled_f16_takes(const ConvParams<__half>& p) {
  const ConvVariants& v = conv_variants();
  return v.dw_tiled_f16 && dwconv_tiled_f16_supports(p) && !dwconv_rows_f16_takes(p) &&
         (v.dw_tiled_small || dw_grid_fills_gpu(p, p.stride == 1 ? 4 : 2, 8));
}

bool dwconv_rows_f16_supports(const ConvParams<__half>& p) {
  return is_depthwise(p) && (p.k == 3 || p.k == 5 || p.k == 7) && p.stride == 1 && p.dilation == 1 && dw_vec_views(p);
}

// Where its 8-channel warps (tiles x chunks) are fewer than 4 per SM (batch 1) it was slower than the tiled
// kernel (eleventh session, call 3: yolo12n's 7x7 64 at 40x40, batch 1, 0.007 -> 0.011 ms), so there it runs
// only under dw_rows_small. For 3x3 the threshold is 16 warps per SM (thirty-first session, from the tuning logs
// of two GPUs: at batch 1 the tiled kernel was 7-14 % faster on every 3x3 shape of 4-15 warps per SM, yolo12m / l's
// 256 at 80x80 and 512 at 40x40 on the H100, x's 384 at 80x80 and 768 at 40x40 on the H200).
bool dwconv_rows_f16_takes(const ConvParams<__half>& p) {
  const ConvVariants& v = conv_variants();
  if (!v.dw_rows_f16 || !dwconv_rows_f16_supports(p)) return false;
  const long long warps = 1LL * p.batch * ceil_div(p.ho, kDwRowsTileH) * ceil_div(p.wo, kDwRowsTileW) * ceil_div(p.c_out, kChunk);
  const long long per_sm = p.k == 3 ? 16 : 4;
  // Variant dw_tiled_80 (thirty-fifth session, off): 3x3 over maps of 80x80 and more go to dwconv_tiled_f16 instead.
  if (v.dw_tiled_80 && p.k == 3 && 1LL * p.ho * p.wo >= 80 * 80 && !v.dw_rows_small) return false;
  return v.dw_rows_small || warps >= per_sm * device_info().sm_count;
}

// 32 channels per block (64 contiguous bytes of every input pixel per copy) where the channel count allows it
// and the grid still gives every SM a block; else 16; else 8 (batch 1 at 40x40 and 20x20: yolo12n's 7x7 128
// at 20x20 has 3 tiles x 16 chunks, 48 blocks of 8 channels). Warps are independent after the barrier, so a
// smaller block costs only the narrower copies.
ConvPlan dwconv_rows_f16_plan(const ConvShape& s, const DeviceInfo& dev) {
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::dwconv_rows_f16;
  plan.bn = 8;
  const int chunks = ceil_div(s.c_out, kChunk);
  const long long tiles = 1LL * s.batch * ceil_div(s.ho, kDwRowsTileH) * ceil_div(s.wo, kDwRowsTileW);
  // 4 chunks per block (32 channels) first, then 2. Variant dw_rows_c16 (nineteenth session) starts at 2: tuning
  // preferred 16 channels on every batch-32 shape of yolo12n (H100) and yolo12l / x (H200), by 2-6 %. (32 never
  // follows 16: where 32 channels per block fill the grid, 16 do too.)
  for (int per_block = conv_variants().dw_rows_c16 ? 2 : 4; per_block >= 2; per_block /= 2)
    if (chunks % per_block == 0 && tiles * (chunks / per_block) >= dev.sm_count) {
      plan.bn = per_block * kChunk;
      break;
    }
  return plan;
}

void launch_dwconv_rows_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream) {
  const DwParams<__half> a = make_dw_params(p);
  switch (plan.bn) {
    case 8: launch_dw_rows_k<1>(a, stream); break;
    case 16: launch_dw_rows_k<2>(a, stream); break;
    default: launch_dw_rows_k<4>(a, stream); break;
  }
}

void launch_dwconv_tiled_f16(const ConvParams<__half>& p, cudaStream_t stream) {
  const DwParams<__half> a = make_dw_params(p);
  switch (p.k * 10 + p.stride) {
    case 31: launch_dw_tiled<3, 1>(a, stream); break;
    case 32: launch_dw_tiled<3, 2>(a, stream); break;
    case 51: launch_dw_tiled<5, 1>(a, stream); break;
    case 52: launch_dw_tiled<5, 2>(a, stream); break;
    case 71: launch_dw_tiled<7, 1>(a, stream); break;
    default: launch_dw_tiled<7, 2>(a, stream); break;
  }
}

template <typename T>
void launch_dwconv_direct(const ConvParams<T>& p, cudaStream_t stream) {
  const DwParams<T> a = make_dw_params(p);
  const bool vec = dw_vec_views(p);
  const int key = p.k * 10 + p.stride;
  switch (key) {
    case 31: launch_dw_vec<T, 3, 1>(a, vec, stream); break;
    case 32: launch_dw_vec<T, 3, 2>(a, vec, stream); break;
    case 51: launch_dw_vec<T, 5, 1>(a, vec, stream); break;
    case 52: launch_dw_vec<T, 5, 2>(a, vec, stream); break;
    case 71: launch_dw_vec<T, 7, 1>(a, vec, stream); break;
    case 72: launch_dw_vec<T, 7, 2>(a, vec, stream); break;
    default: launch_conv2d_direct_naive(p, stream); break;  // not reached: conv.cu checks dwconv_direct_supports
  }
}
template void launch_dwconv_direct<float>(const ConvParams<float>&, cudaStream_t);
template void launch_dwconv_direct<__half>(const ConvParams<__half>&, cudaStream_t);

}  // namespace yolo12::cuda::conv_detail
