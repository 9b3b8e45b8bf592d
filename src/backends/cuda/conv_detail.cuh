// src/backends/cuda/conv_detail.cuh - what the conv kernel files share: the packed-weight layout, the fused
// epilogue, and the launchers conv.cu dispatches to. Not part of the executor's interface.
//
// Packed weights (conv_pack_weights), T = float or __half, zero where padded:
//   depthwise (groups == c_in == c_out > 1):  (k*k, c_pad)                     c_pad = round_up(c, 8)
//   every other conv:                          (groups, n_g, k_pad)            n_g = c_out / groups
//     the GEMM's K index is tap * cin_pad + ci, tap = ky * k + kx, cin_pad = round_up(c_in / groups, 8),
//     so an 8-channel chunk never straddles two taps; k_pad = round_up(k*k*cin_pad, 32) (one K tile).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common.cuh"
#include "conv.cuh"

namespace yolo12::cuda::conv_detail {

constexpr int kChunk = 8;   // channels per 16-byte fp16 chunk
constexpr int kTileK = 32;  // K tile of the implicit-GEMM kernels; packed K is padded to it

inline int round_up(int a, int b) { return (a + b - 1) / b * b; }

inline bool is_depthwise(const ConvShape& s) {
  return s.groups > 1 && s.groups == s.c_in && s.groups == s.c_out;
}
// 1x1, stride 1, no padding: output pixel m reads input pixel m (the GEMM's A is x itself).
__host__ __device__ inline bool is_pointwise(const ConvShape& s) { return s.k == 1 && s.stride == 1 && s.pad == 0; }

struct GemmLayout {
  int n_g;      // output channels per group
  int cin_g;    // input channels per group
  int cin_pad;  // cin_g rounded up to kChunk
  int k_real;   // k * k * cin_pad
  int k_pad;    // k_real rounded up to kTileK: the packed row length
};

inline GemmLayout gemm_layout(const ConvShape& s) {
  GemmLayout l;
  l.n_g = s.c_out / s.groups;
  l.cin_g = s.c_in / s.groups;
  l.cin_pad = round_up(l.cin_g, kChunk);
  l.k_real = s.k * s.k * l.cin_pad;
  l.k_pad = round_up(l.k_real, kTileK);
  return l;
}

template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// A read-only load: through the non-coherent cache on the device, a plain load on the host (where the
// tests replay kernel pieces).
template <typename T>
__host__ __device__ __forceinline__ T load_nc(const T* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

__host__ __device__ __forceinline__ float silu_f(float v) {
#ifdef __CUDA_ARCH__
  return v / (1.f + __expf(-v));
#else
  return v / (1.f + std::exp(-v));
#endif
}

// SiLU in the fp16 kernels, through the hardware tanh: v * sigmoid(v) = h + h * tanh(h) with h = v / 2, which is
// one MUFU (tanh.approx.f32, relative error about 2^-11) and two FMA-pipe instructions, where v / (1 + exp(-v)) with
// __expf and __fdividef took two MUFU (EX2, RCP) and four or five others. The short-K convs at batch 32 issue more
// epilogue instructions than MMAs (twenty-eighth session, Nsight Compute of yolo12x's 1x1 192->192 at 160x160:
// 223 M instructions for 14.7 M MMAs), and this one change took yolo12n / m / x at batch 32 3.5 / 3.7 / 2.1 % faster
// on an H100 (docs/benchmarks-gpu.md, "Twenty-eighth session"). Where tanh(h) is near -1 (v below about -8) the
// result keeps an absolute error of about |h| * 2^-11, under a half's resolution at the activations' scale; the
// results stay within the fp16 tests' bounds. The fp32 kernels keep silu_f (parity with the CPU).
__host__ __device__ __forceinline__ float silu_fast(float v) {
#ifdef __CUDA_ARCH__
  const float h = 0.5f * v;
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(h));
  return fmaf(h, t, h);
#else
  return silu_f(v);
#endif
}
// The SiLU of the kernels of element type T: silu_fast for half, silu_f for float.
template <typename T>
__host__ __device__ __forceinline__ float silu_of(float v) {
  if constexpr (sizeof(T) == 2) return silu_fast(v);
  else return silu_f(v);
}

// The fused epilogue for output channel c of a value whose conv sum is acc (the residual is added by
// the caller, when p.residual is set), in a kernel of element type T.
template <typename T>
__host__ __device__ __forceinline__ float epilogue(float acc, const float* bias, const float* gamma, bool silu, int c) {
  float v = acc + (bias ? load_nc(bias + c) : 0.f);
  if (silu) v = silu_of<T>(v);
  if (gamma) v *= load_nc(gamma + c);
  return v;
}
// The bias and gamma of a column pair for epilogue_with, loaded once for all its rows: channels c and c + 1 of the
// tensors (group channels n and n + 1 of channels_g); 0 and 1 where a tensor is absent or n + i >= channels_g.
struct EpiloguePair {
  float bias[2] = {0.f, 0.f};
  float gamma[2] = {1.f, 1.f};
};
__host__ __device__ __forceinline__ EpiloguePair epilogue_pair(const float* bias, const float* gamma, long long c,
                                                               int n, int channels_g) {
  EpiloguePair e;
#pragma unroll
  for (int i = 0; i < 2; ++i) {  // selects, not branches: the callers' epilogues stay straight-line code
    const bool real = n + i < channels_g;
    e.bias[i] = bias && real ? load_nc(bias + c + i) : 0.f;
    e.gamma[i] = gamma && real ? load_nc(gamma + c + i) : 1.f;
  }
  return e;
}

// The fp16 GEMM kernels' epilogue with SiLU fixed at compile time: bias (0 where none) and
// gamma (1 where none) already loaded. It computes what epilogue() does, bit for bit: epilogue() adds 0 where there
// is no bias, and v * 1 is v. A kernel chooses kSilu once for a whole tile (with_silu) instead of testing the
// conv's flag at every value: the test at every value had the compiler branch around each SiLU (two MUFU ops and
// their dependent arithmetic), one value per basic block, so the values' latencies never overlapped (seventeenth
// session, from the kernels' SASS; docs/kernels-conv.md).
template <bool kSilu>
__host__ __device__ __forceinline__ float epilogue_with(float acc, float bias, float gamma) {
  float v = acc + bias;
  if constexpr (kSilu) v = silu_fast(v);
  return v * gamma;
}
// epilogue_with with the SiLU flag tested per value (conv2d_chain_f16, which loads bias and gamma once for several
// rows and keeps one code path).
__host__ __device__ __forceinline__ float epilogue_with(float acc, float bias, float gamma, bool silu) {
  return silu ? epilogue_with<true>(acc, bias, gamma) : epilogue_with<false>(acc, bias, gamma);
}
// f(std::true_type{}) where the conv ends in SiLU, else f(std::false_type{}): one uniform branch around a whole
// epilogue, so that each branch is straight-line code over all its values.
template <typename F>
__host__ __device__ __forceinline__ void with_silu(bool silu, F&& f) {
  if (silu) f(std::true_type{});
  else f(std::false_type{});
}
// stage(fin) with fin(value, bias, gamma) the fp16 epilogue of one value whose bias (0 where none) and gamma (1 where
// none) the kernel loaded: one SiLU test here, so that stage runs epilogue_with in straight-line code.
template <typename Stage>
__host__ __device__ __forceinline__ void with_epilogue(bool silu, Stage&& stage) {
  with_silu(silu, [&](auto s) {
    stage([](float v, float b, float g) { return epilogue_with<decltype(s)::value>(v, b, g); });
  });
}
// epilogue_with over a whole 8-channel chunk: channels [c, c + 8), all of them real (n + 8 <= n_g), each
// channel's bias and gamma loaded here.
template <bool kSilu>
__host__ __device__ __forceinline__ void epilogue8_with(float (&v)[8], const float* bias, const float* gamma,
                                                        long long c) {
  float b[8], gm[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    b[e] = bias ? load_nc(bias + c + e) : 0.f;
    gm[e] = gamma ? load_nc(gamma + c + e) : 1.f;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = epilogue_with<kSilu>(v[e], b[e], gm[e]);
}

// 8 halves (one 16-byte word) as floats, and back (round to nearest even), with integer operations rather
// than through a pointer of another type (which a host compiler may assume does not alias).
__host__ __device__ __forceinline__ void unpack8(const uint4 raw, float (&v)[8]) {
  const std::uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
    v[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
  }
}
__host__ __device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
  std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = static_cast<std::uint32_t>(__half_as_ushort(__float2half_rn(v[2 * i]))) |
           static_cast<std::uint32_t>(__half_as_ushort(__float2half_rn(v[2 * i + 1]))) << 16;
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Kernel variants. f16_bk64 and dw_one_output since 2026-11-30 (measured on the H200: yolo12n fp16
// batch 1 1.74 -> 1.29 ms, batch 32 7.48 -> 6.85 ms; docs/benchmarks-gpu.md); f16_split_k since the third
// session (docs/kernels-conv.md). conv_narrow.cu and dwconv_tiled_f16 were measured on 2026-12-01
// (docs/kernels-conv.md, "Narrow and tiled depthwise"): conv2d_narrow_f16 beats the implicit GEMM only
// where c_out <= 16 and K <= 160 (1.1-1.5x there, 0.35-0.9x elsewhere), and loses to
// conv2d_direct_small_cin on the stem (0.96x), so only f16_narrow is on of the three; dw_tiled_f16 is on
// (0.37 vs 0.50 ms per yolo12n batch 32). The environment variable YOLO12_CONV_VARIANTS (a
// comma-separated list of the names below, or "none") replaces the defaults when set, or edits them
// ("+name,-name": parse_conv_variants); tests set the fields directly. Not thread-safe: set them before any launch.
struct ConvVariants {
  bool f16_bk64 = true;           // fp16 implicit GEMM: 64-wide K tiles (3 stages), epilogue staged through
                                  // shared memory for 16-byte stores (off: 32-wide K tiles)
  bool dw_one_output = true;      // dwconv_direct: one output per thread when the grid would not fill the GPU
  bool f16_split_k = true;        // fp16 implicit GEMM at BK 64: split-K over a cluster when the output tiles
                                  // are too few for the GPU (batch 1 at low resolution)
  bool f16_narrow = true;         // conv2d_narrow_f16 (weights resident in shared memory, a persistent grid
                                  // streaming 128-pixel tiles) for the convs it wins on: c_out <= 16 and
                                  // k*k*c_in <= 160 (kNarrowPickMaxN, kNarrowPickMaxK) over many pixels
  bool f16_narrow_wide = false;   // ... and for the rest of what it takes (c_out <= 128, K <= 320)
  bool f16_narrow_stem = false;   // ... and for the small-c_in convs (the stem), instead of
                                  // conv2d_direct_small_cin
  bool dw_tiled_f16 = true;       // fp16 depthwise over large grids: dwconv_tiled_f16 (input tile in shared memory)
  bool f16_fit_smem = true;       // fp16 implicit GEMM: dynamic shared memory for the pipeline stages a block's
                                  // K loop can fill (short K: fewer stages, more blocks per SM), not all 3-4
  bool f16_tiles2 = true;         // fp16 implicit GEMM at BK 64: the sixth session's tile rules (8-warp tiles on
                                  // large grids, 64x32 tiles for short K on small ones; implicit_gemm_plan)
  bool dw_tiled_small = true;     // dwconv_tiled_f16 also where the grid does not fill the GPU (batch 1)
  bool f16_stem = true;           // fp16 convs with c_in <= 4 (the stem): conv2d_stem_f16 where it takes them
  bool f16_narrow8w = true;       // conv2d_narrow_f16 on 8 warps (16 rows each) instead of 4 (seventh session:
                                  // yolo12n batch 32 3.75 -> 3.61 ms on the H200)
  bool f16_tiles3 = true;         // with f16_tiles2: the seventh session's changes to its tile rules
                                  // (implicit_gemm_plan2: 128x32 for 3x3; for at most 64 channels "large grid"
                                  // from half the SMs and no split-K where the tiles fill half the SMs)
  bool f16_wide_tiles = false;    // with f16_tiles2: 128x256 and 256x128 tiles (8 warps of 64x64) for layers
                                  // of over 128 channels with a long K (yolo12m..x); off: slower on yolo12x
                                  // at batch 32 (docs/kernels-conv.md)
  bool f16_wgmma = true;          // fp16 convs of at least 48 channels with a K of at least 2 tiles of 64, over
                                  // grids it fills: conv2d_implicit_gemm_wgmma (Hopper's wgmma, sm_90a) where
                                  // the device runs its code (wgmma_plan, conv_wgmma.cu; eighth session:
                                  // yolo12x at batch 32 41.5 -> 35.0 ms on the H200)
  bool f16_wgmma_ws = true;       // with f16_wgmma: its tiles of 192+ columns with 14+ K tiles on grids of 4+
                                  // blocks per SM on conv2d_implicit_gemm_wgmma_ws (warp-specialised, persistent;
                                  // ninth session: 1.03-1.17x on those convs of yolo12x at batch 32)
  bool f16_wgmma_short = true;    // with f16_wgmma: 1x1 convs with a K of at most 2 tiles stay on mma.sync unless
                                  // 96 wide (ninth session: yolo12x's 1x1 96->48 at batch 32 0.17 -> 0.12 ms)
  bool f16_halo = true;           // fp16 k x k convs at stride 1 with c_out <= 64 and K <= 432 over grids of a tile
                                  // per SM (4 for over 32 channels): conv2d_halo_f16 (input tiles with their halo
                                  // in shared memory, each pixel read about 1.4 times instead of k*k; eleventh
                                  // session: yolo12n at batch 32 3.31 -> 3.15 ms)
  bool f16_wgmma_ping = true;     // with f16_wgmma: 1x1 convs with 18+ K tiles and channels 128 divides on grids
                                  // of 4+ tiles per SM on the warp-specialised kernel's ping-pong schedule (each
                                  // computing warpgroup on its own tiles; eleventh session: 4-10 % on those)
  bool dw_rows_f16 = true;        // fp16 depthwise at stride 1, every grid: dwconv_rows_f16 (each thread 5 adjacent
                                  // outputs x 8 channels from one pass over its input rows; eleventh session,
                                  // bit-identical to dwconv_direct; not yet measured on the GPU). Off:
                                  // dwconv_tiled_f16 / dwconv_direct as before. Only where its 8-channel warps are
                                  // 4+ per SM (call 3: slower at batch 1), unless:
  bool dw_rows_small = false;     // with dw_rows_f16: also on smaller grids
  bool dw_rows_c16 = true;        // with dw_rows_f16: blocks of 16 channels before 32 (nineteenth session, from the
                                  // tuning logs of four runs on two GPUs: the batch-32 sums 0.2-0.4 % lower; the
                                  // outputs are the same bits either way; dwconv_rows_f16_plan)
  bool pad_channels = true;       // the graph the backend packs and runs widens conv-to-conv values to a multiple
                                  // of 8 channels with zero weights (graph/pad_channels.hpp: the A2C2f MLPs'
                                  // int(c * 1.2) of yolo12l/x), so that their convs take 16-byte loads and wgmma;
                                  // read when the weights are packed (network_graph, executor.cuh), and the
                                  // executors of those weights follow them (DeviceWeights::padded_channels)
  bool f16_tiles4 = true;         // with f16_tiles2: 1x1-like short K (<= 4 tiles) over channels 128 divides on 4+ waves
                                  // of 128x128: that tile on 8 warps instead of 128x64 (twelfth session, raster_n)
  bool f16_halo_wgmma = true;     // fp16 3x3 convs at stride 1 with short K (c_in <= 96) and 48 or 96 output channels
                                  // on maps of 80x80+: conv2d_halo_wgmma (wgmma from input tiles with their halo,
                                  // sm_90a; thirteenth session, its rule fitted to tuning in the fifteenth;
                                  // halo_wgmma_rule, conv_halo_wgmma.cu), asked before conv2d_halo_f16; also its plans
                                  // among the tuning candidates
  bool f16_halo_wgmma_s2 = false; // the same at stride 2 (the halo split by column parity; thirteenth session; off:
                                  // slower than the implicit GEMMs on every stride-2 shape measured, fifteenth)
  bool f16_stem_mma = true;       // the fp16 stem (3x3/2 from 3 channels) on mma.sync: conv2d_stem_mma (thirteenth
                                  // session; second version twenty-second), and among the tuning candidates. conv_select
                                  // takes it for stems of <= 64 channels only (stem_mma_preferred): on an H100,
                                  // yolo12m (3->64) 11.384 -> 11.157 ms at batch 32 and 1.034 -> 1.023 at batch 1
                                  // (twenty-eighth session); at 96 (yolo12x) conv2d_stem_f16 is faster, 0.829 against
                                  // 0.889 ms at batch 32 (twenty-fourth). On since the twenty-ninth session
  bool f16_stem_mma_wide = true;  // with f16_stem_mma: conv_select takes it for stems of up to 128 channels too
                                  // (yolo12x's 96; thirty-first session: from 96 channels its B fragments stay in
                                  // shared memory, so two blocks fit per SM where one did). On: yolo12x 26.48-26.57
                                  // -> 26.10 ms at batch 32, 2.03-2.05 -> 2.01 at batch 1 (H100, two rounds)
  bool f16_wgmma_waves = true;    // with f16_wgmma: on grids of 4+ tiles of 128 x 64 per SM, the wgmma tile by a model of
                                  // waves (wgmma_plan_waves, conv_wgmma.cu; twelfth session, fitted to tuning with raster_n)
  bool f16_gemm_tma = false;      // fp16 1x1 convs (groups 1) over grids of 4+ tiles of 128 x 128 per SM: conv2d_gemm_tma
                                  // (wgmma with TMA loads, persistent, warp-specialised; sixteenth session,
                                  // gemm_tma_rule, conv_gemm_tma.cu), asked first; also its plans among the tuning
                                  // candidates. Off: slower than the other kernels on all but two shapes (yolo12x at
                                  // batch 32 29.7 -> 34.4 ms under its rule; latency-bound on its epilogue)
  bool f16_tall_1x1 = true;       // with f16_tiles2, on grids it calls large: 1x1 convs of <= 64 channels with a K of
                                  // <= 2 tiles on 256-row mma.sync tiles (eighteenth session, fitted to tuning)
  bool f16_wgmma_fewrows = true;  // with f16_wgmma: 1x1 convs with K of 2-4 tiles over <= 4 row tiles per SM on the
                                  // wgmma kernel instead of mma.sync (eighteenth session, from the H100's tune log).
                                  // Both on since the nineteenth: together at batch 32 yolo12n 2.883 -> 2.798 ms,
                                  // s 5.455 -> 5.322, x 27.542 -> 27.460 (H100, one call); batch 1 unchanged
  bool f16_stem_pair = true;      // fp16 executors fuse the stem and the conv after it (graph::fuse_stride2_pairs) and
                                  // run the pair on conv2d_stem_pair_f16, the stem's map on chip (conv_stem_pair.cuh;
                                  // nineteenth session; twentieth: faster than the two kernels, yolo12n 0.4-0.8 %
                                  // faster; on since the twenty-first, after its sanitizer and whole-model runs)
  bool f16_stem_pair_mma = true;  // with f16_stem_pair: the pair's stem on mma.sync (fp16 products, fp32 sums in the
                                  // MMA's order) instead of conv2d_stem_f16's fp32 FMAs, so its map is no longer the
                                  // two kernels' bit for bit (within the fp16 bound). Written in the twenty-second
                                  // session, on since the twenty-fourth (H100: yolo12n's pair 0.279 -> 0.186 ms at
                                  // batch 32, the network 2.724 -> 2.651 ms; sanitizers clean)
  bool f16_halo_pair = true;      // fp16 executors fuse a bottleneck's two 3x3 convs at stride 1 of 8-32 channels
                                  // (graph::fuse_stride1_pairs) and run the pair on conv2d_halo_pair_f16, cv1's map on chip
                                  // (conv_halo_pair.cuh; twenty-fourth session, H100: faster than the two convs on
                                  // all of yolo12n's pairs, its network 2.724 -> 2.696 ms at batch 32; sanitizers
                                  // clean)
  bool f16_dw_branch = true;      // fp16 executors fuse the Detect head's class branch (dw 3x3, 1x1, dw 3x3, 1x1, 1x1;
                                  // graph::fuse_dw_branches) where conv2d_dw_branch_f16 takes its channels (16-128, the
                                  // classes up to 128: yolo12n's P3 / P4 and yolo12s's P3) and run it there, its four
                                  // maps on chip, at the batches dw_branch_preferred picks (else the five convs;
                                  // conv_dw_branch.cuh). Thirtieth session, H100: yolo12n's P3 branch 0.257 -> 0.162 ms
                                  // at batch 32, the network 2.503 -> 2.465 ms; sanitizers clean
  bool conv_chain = false;        // fp16 executors fuse chains of convs (graph::fuse_conv_chains with chain_limits(),
                                  // conv_chain.cuh) and run each on conv2d_chain_f16, its maps on chip (fourteenth
                                  // session; off: slower than its links one by one on most chains, fifteenth)
  bool raster_n = true;           // the non-persistent fp16 GEMM kernels (mma.sync and wgmma) issue their blocks
                                  // column tile fastest (conv_gemm.cuh: gemm_grid), so that all column tiles of a
                                  // row tile run at once and read its A rows from DRAM once; off: row tile
                                  // fastest, one pass over A per column tile (twelfth session)
  bool f16_halo_k576 = true;      // with f16_halo: conv2d_halo_f16 also for a K of 433-576 (3x3 over 49-64 channels)
                                  // where c_out <= 32 (halo_rule). Tuning timed yolo12s's 3x3 64->32 at 80x80, batch
                                  // 32, at 0.082 ms on the implicit GEMM and 0.060 ms on conv2d_halo_f16 (twelfth
                                  // session, H200), 0.082 against 0.054 (thirty-fifth, H100); the 64->64 of yolo12n,
                                  // whose weights are twice as large, was slower there (eleventh session). In the
                                  // network (thirty-fifth session, H100, three rounds): yolo12s at batch 32 4.736 ->
                                  // 4.705 ms, batch 1 unchanged; no other scale has such a conv
  // Thirty-fifth session: four rule changes that every H100 tuning log favours and the H200's (fifteenth session,
  // older kernels) does not, off until an H200 times them (docs/kernels-conv.md, "The thirty-fifth session"):
  bool f16_wgmma_ws_s2 = false;   // 3x3/2 convs that wgmma_plan_waves puts on the two-warpgroup 128-wide tile, over
                                  // 3+ row tiles per SM, on the warp-specialised 128-wide tile (6 stages) instead:
                                  // -0.4 to -9.5 % in five H100 logs, +5.5 / +14 % in the H200's l and x
  bool dw_tiled_80 = false;       // 3x3 depthwise convs over maps of 80x80 and more on dwconv_tiled_f16 wherever
                                  // dwconv_rows_f16 would take them (batch 32): -8 to -12 % (H100), +6 / +7 % (H200)
  bool f16_n96_short = false;     // 1x1 convs of 65-96 channels with a K of 2 tiles over fewer than 16 row tiles per
                                  // SM on the 96-wide wgmma tile where wgmma_plan_waves decides (yolo12s's 128->80 at
                                  // 80x80, batch 32: -32 % on the H100; yolo12n's 80->80 there -9 % on the H100, -6 to
                                  // +6 % on the H200)
  bool f16_nosplit_small = false; // 3x3 convs of at most 64 channels and 12 K tiles on small grids: 64 x 32 tiles
                                  // without split-K where those give a third of the SMs a block (yolo12s's nine
                                  // 64->64 at 40x40, batch 1: -9 % on the H100; +3.6 % on the H200's l)
};
// Where conv2d_narrow_f16 is faster than the implicit GEMM (H200, yolo12n fp16 at batch 1 and 32,
// 2026-12-01): an N tile up to 16 and k16 up to 160. Beyond, only variant f16_narrow_wide sends convs there.
constexpr int kNarrowPickMaxN = 16;
constexpr int kNarrowPickMaxK = 160;
ConvVariants& conv_variants();
// Parses a YOLO12_CONV_VARIANTS value: comma-separated names (exact, unknown ones are ignored), "none"
// or "" for all off. Where the first entry starts with '+' or '-', the list edits the defaults instead:
// "+name" turns a switch on, "-name" off ("+f16_halo_wgmma,-raster_n"); a later entry wins.
ConvVariants parse_conv_variants(const char* list);

// The fp16 GEMM plan of a (non-depthwise) conv under the current variants, on the current device
// (device_info()): a narrow_f16 plan where conv2d_narrow_f16 takes the shape and its variant is on, else
// the implicit_gemm_f16 plan (fields: ConvPlan, conv.cuh). conv_select (conv.cu) calls it; the launchers
// run the plan they are given.
// wgmma_views: whether the views allow conv2d_implicit_gemm_wgmma (wgmma_runs; conv_select passes it).
ConvPlan f16_plan(const ConvShape& s, bool wgmma_views = true);
// Every implicit_gemm_f16 plan the kernel is instantiated for that suits s (its block tiles, K tiles
// and split-K ranks, without tiles that would be mostly padding): the candidates conv_tune times.
std::vector<ConvPlan> implicit_gemm_candidates(const ConvShape& s);
// The narrow_f16 plan for s on a device with these facts, on `warps` (4 or 8) warps per block, or a plan
// of another algorithm where conv2d_narrow_f16 does not take it (the variants are not consulted: f16_plan
// does that).
ConvPlan narrow_plan(const ConvShape& s, const DeviceInfo& dev, int warps);

// conv2d_implicit_gemm_wgmma (conv_wgmma.cu). wgmma_available: the device is compute capability 9.0 and
// runs this library's sm_90a code. wgmma_takes: available, and s is a non-depthwise conv with c_in / groups
// a multiple of 8 (16-byte A chunks; the launcher still falls back to conv2d_implicit_gemm_f16 for views
// that are not 16-byte aligned). wgmma_runs: wgmma_takes, and p's views allow 16-byte A chunks and a
// K-column table of int offsets (where not, launch_conv2d_implicit_gemm_wgmma runs the mma.sync kernel).
// wgmma_plan: the default rule (variant f16_wgmma), false where the mma.sync kernel's plan stays; v's
// f16_wgmma_ws and f16_wgmma_short switch its ninth-session refinements, f16_wgmma_ping the eleventh's.
// wgmma_candidates: every tile of both wgmma kernels that suits s, for kernel tuning.
// An implicit_gemm_wgmma plan with this many warps runs the warp-specialised kernel (a loading warpgroup and
// two computing ones; with ConvPlan::pingpong each computing warpgroup on its own output tiles); the
// two-warpgroup kernel's plans have 8.
constexpr int kWgmmaWsWarps = 12;
bool wgmma_available();
// For planning on a machine without a GPU (yolo12-rule-replay, tools/dev/rule_replay.cu, and test_conv's [host] cases):
// with this set, wgmma_available() is true where no device answers, so conv_select plans as on an H200
// (device_info()'s defaults there). Never set by the library; a device that answers is asked as always.
bool& plan_without_device_as_sm90a();
bool wgmma_takes(const ConvShape& s);
bool wgmma_runs(const ConvParams<__half>& p);
bool wgmma_plan(const ConvShape& s, const DeviceInfo& dev, ConvPlan& plan, const ConvVariants& v);
std::vector<ConvPlan> wgmma_candidates(const ConvShape& s);

// Launchers (each defined in the file of its algorithm). All assume conv_can_implement(p), and run what
// conv_select chose for p.
template <typename T> void launch_conv2d_direct_naive(const ConvParams<T>& p, cudaStream_t stream);
bool dwconv_direct_supports(const ConvShape& s);  // k in {3, 5, 7}, stride in {1, 2}, dilation 1
template <typename T> void launch_dwconv_direct(const ConvParams<T>& p, cudaStream_t stream);
// Whether conv_select takes dwconv_tiled_f16 for p: variant on, depthwise, k 3/5/7, stride 1/2,
// c % 8 == 0, 16-byte aligned views, a grid that fills the GPU (or variant dw_tiled_small), and not
// dwconv_rows_f16_takes(p) (with dw_rows_f16 on, only stride 2).
bool dwconv_tiled_f16_takes(const ConvParams<__half>& p);
// Whether launch_dwconv_tiled_f16 can run p at all: depthwise, dwconv_direct_supports, c % 8 == 0 and
// 16-byte aligned views (what conv_tune may time it on).
bool dwconv_tiled_f16_supports(const ConvParams<__half>& p);
// dwconv_tiled_f16 itself (also called directly by the tests): any depthwise shape dwconv_direct_supports
// with c % 8 == 0 and 16-byte aligned views.
void launch_dwconv_tiled_f16(const ConvParams<__half>& p, cudaStream_t stream);
// conv2d_halo_f16 (conv_halo.cu). halo_takes: groups 1, stride 1, dilation 1, k 2..5, c_in a multiple of 8,
// c_out <= 64, K rounded up to 16 at most 576. halo_plan: its plan, where it takes s and (unless any_grid) the
// 8 x 16-pixel tiles are at least one per SM; else a plan of another algorithm (not taken). halo_runs:
// halo_takes and p's input view allows 16-byte chunks. max_grid > 0 caps the persistent grid (the tests).
// halo_rule: halo_plan where conv_select takes it (variant f16_halo): K up to 432 (576 for up to 32 channels under
// f16_halo_k576, on by default), and over 32 channels only on 4+ tiles per SM.
bool halo_takes(const ConvShape& s);
ConvPlan halo_plan(const ConvShape& s, const DeviceInfo& dev, bool any_grid = false);
ConvPlan halo_rule(const ConvShape& s, const DeviceInfo& dev);
bool halo_runs(const ConvParams<__half>& p);
void launch_conv2d_halo_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream, int max_grid = 0);
// conv2d_halo_wgmma (conv_halo_wgmma.cu). takes: wgmma_available, groups 1, stride 1 or 2, dilation 1, k 3, c_in
// a multiple of 16. runs: takes, 16-byte input chunks (vec_a) and an image's elements within an int. candidates:
// its plans for s (every instantiated tile whose column tiles pad N by at most a quarter, 3 and 4 stages where
// they fit), for kernel tuning. rule: the plan conv_select takes (variant f16_halo_wgmma), or a plan of
// another algorithm where it does not take s.
bool halo_wgmma_takes(const ConvShape& s);
bool halo_wgmma_enabled(const ConvShape& s, const ConvVariants& v);  // the variant of s's stride is on
bool halo_wgmma_runs(const ConvParams<__half>& p);
std::vector<ConvPlan> halo_wgmma_candidates(const ConvShape& s);
ConvPlan halo_wgmma_rule(const ConvShape& s, const DeviceInfo& dev);
void launch_conv2d_halo_wgmma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream);
// conv2d_gemm_tma (conv_gemm_tma.cu). takes: a 1x1 conv at stride 1 without padding, groups 1, c_in a multiple of 8,
// wgmma_available and the driver's tensor-map encoder. runs: takes, and x, w 16-byte aligned with ldx a multiple of 8.
// candidates: its tiles for s (every instantiated one whose column tiles suit c_out and that fits), for tuning.
// rule: the plan conv_select takes (variant f16_gemm_tma), or a plan of another algorithm where it does not take s.
// launch: runs p with the plan's tile (where TMA cannot read p's views, a mma.sync plan instead); max_grid > 0 caps
// the persistent grid (the tests).
bool gemm_tma_takes(const ConvShape& s);
bool gemm_tma_runs(const ConvParams<__half>& p);
std::vector<ConvPlan> gemm_tma_candidates(const ConvShape& s);
ConvPlan gemm_tma_rule(const ConvShape& s, const DeviceInfo& dev);
void launch_conv2d_gemm_tma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream, int max_grid = 0);
// Whether launch_conv2d_gemm_tma runs p with conv2d_gemm_tma itself (runs, and the driver encodes both tensor maps),
// not the fallback.
bool gemm_tma_launches(const ConvParams<__half>& p, const ConvPlan& plan);
// dwconv_rows_f16 (conv_depthwise.cu). supports: depthwise, k 3/5/7, stride 1, dilation 1, c % 8 == 0 and
// 16-byte aligned views (what conv_tune may time it on). takes: supports and variant dw_rows_f16 (conv_select
// then takes it for every grid size). plan: its plan for s on a device with these facts (channels per block:
// 32, or 16 / 8 where the grid of 32-channel blocks would leave SMs without a block). launch: runs p with
// the plan's channels per block (bn 8, 16 or 32; also called directly by the tests).
bool dwconv_rows_f16_supports(const ConvParams<__half>& p);
bool dwconv_rows_f16_takes(const ConvParams<__half>& p);
ConvPlan dwconv_rows_f16_plan(const ConvShape& s, const DeviceInfo& dev);
void launch_dwconv_rows_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream);
bool conv2d_direct_small_cin_supports(const ConvShape& s);  // groups 1, c_in <= 4, c_out <= 64, k <= 7
template <typename T> void launch_conv2d_direct_small_cin(const ConvParams<T>& p, cudaStream_t stream);
// plan: an implicit_gemm_f16 plan for p (f16_plan).
void launch_conv2d_implicit_gemm_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream);
// The mma.sync plan the wgmma launchers (conv2d_implicit_gemm_wgmma, conv2d_gemm_tma) run instead where p's views do
// not suit their kernel: the same 128-row tile height, 128 x 64 or 128 x 128 on 8 warps (both instantiated for
// launch_conv2d_implicit_gemm_f16), for a plan bn columns wide.
inline ConvPlan mma_sync_stand_in(int bn) {
  ConvPlan f;
  f.algorithm = ConvAlgorithm::implicit_gemm_f16;
  f.bm = 128;
  f.bn = bn <= 64 ? 64 : 128;
  f.bk = 64;
  f.warps = 8;
  return f;
}
// plan: an implicit_gemm_wgmma plan for p (bn, stages, warps used: 12 warps = the warp-specialised kernel).
// max_grid > 0 caps the warp-specialised kernel's persistent grid (the tests).
void launch_conv2d_implicit_gemm_wgmma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream,
                                       int max_grid = 0);
// plan: a narrow_f16 plan for p (its bn, bk and stages are used). max_grid > 0 caps the persistent grid (the
// tests use it so that every block walks many tiles).
void launch_conv2d_narrow_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream, int max_grid = 0);
void launch_conv2d_implicit_gemm_f32(const ConvParams<float>& p, cudaStream_t stream);

}  // namespace yolo12::cuda::conv_detail
