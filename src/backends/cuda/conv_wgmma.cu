// src/backends/cuda/conv_wgmma.cu - conv2d_implicit_gemm_wgmma: the implicit GEMM of conv_implicit_gemm.cu
// (the GEMM of a conv: conv_gemm.cuh) on Hopper's warpgroup MMA, wgmma.mma_async (wgmma.cuh; sm_90a).
//
// Why: on yolo12m..x at batch 32 the wide, long-K convs are most of the time, and mma.sync ran them at
// 150-290 TFLOP/s, a sixth to a third of the 979 TFLOP/s the H200's tensor cores reach with wgmma (the
// roofline's own loop). mma.sync issues one 16x8x16 MMA per warp instruction from registers that
// ldmatrix filled; one wgmma multiplies 64 x N x 16 straight from shared memory.
//
// The block: 256 threads = two warpgroups; block tile 128 x BN (BN = 64, 96, 128, 192 or 256), K tile 64.
// Warpgroup w computes rows [64 w, 64 w + 64) x all BN columns (BN / 2 fp32 accumulators per thread).
// Every thread also loads: the A tile (128 rows x 8 chunks of 16 bytes) and the B tile (BN rows x 8
// chunks) of each K tile are gathered with cp.async exactly as in conv2d_implicit_gemm_f16 (row origins
// computed once, the K-column table for k x k convs, zero-fill outside the image and past K), but stored
// in the 128-byte swizzle layout that wgmma reads (wgmma.cuh): thread t always copies chunk t % 8 of rows
// t / 8 + 32 i, so its swizzled column is fixed.
//
// Pipeline, STAGES (3 or 4) shared-memory stages, iteration kt:
//   wait for this thread's copies of tile kt; fence.proxy.async (publish them to the tensor cores);
//   wgmma wait_group 1 (this warpgroup's MMAs of tile kt - 2 are done); barrier (tile kt complete, and
//   both warpgroups are done with tile kt - 2's stage); issue the copies of tile kt + STAGES - 2 into that
//   stage; issue tile kt's four wgmmas (K steps of 16) and commit them.
// So the tensor cores always have the previous tile's group queued behind the current one, and
// STAGES - 2 tiles are in flight from memory.
// Epilogue: the fp32 tile is staged in shared memory (over the pipeline's stages), then every thread
// writes 8-channel row chunks: bias, SiLU, gamma (conv_detail.cuh: epilogue), residual, one rounding,
// 16-byte stores (conv_gemm.cuh: store_chunk8), the same operations as conv2d_implicit_gemm_f16's.
// No split-K: the plan rules send a conv here only where its output tiles give at least half the SMs a block.
//
// Requirements (the launcher falls back to conv2d_implicit_gemm_f16 otherwise): 16-byte A chunks
// (vec_a: c_in / groups and ldx multiples of 8, x aligned), a K-column table that fits an int, and the
// sm_90a code of this kernel being what the device runs (wgmma_available()).
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "wgmma.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

constexpr int kWgBM = 128;                      // block tile rows (two warpgroups of 64)
constexpr int kWgBK = 64;                       // K tile: 64 halves, one 128-byte swizzled row
constexpr int kWgThreads = 256;
constexpr int kWgRowBytes = kWgBK * 2;          // 128
constexpr int kWgAStage = kWgBM * kWgRowBytes;  // 16 KiB per stage of A
constexpr int kWgAlign = 1024;                  // swizzle atoms are 1024-byte aligned

// The shared memory of a BN x STAGES configuration, in bytes from the 1024-byte aligned base:
//   [0, kPipe): STAGES stages of A (128 x 128 B) then STAGES stages of B (BN x 128 B), all swizzled;
//   the staged fp32 C tile (128, BN + 8) reuses [0, kCTile) after the K loop;
//   the K-column table (k x k convs) starts at round_up(kMain, 16).
template <int BN, int STAGES>
struct WgmmaGeom {
  static constexpr int kBStage = BN * kWgRowBytes;
  static constexpr int kPipe = STAGES * (kWgAStage + kBStage);
  static constexpr int kCRow = BN + 8;  // floats; the float2 writes of a half-warp (4 rows) hit distinct banks
  static constexpr int kCTile = kWgBM * kCRow * static_cast<int>(sizeof(float));
  static constexpr int kMain = kPipe > kCTile ? kPipe : kCTile;
};

template <int BN, int STAGES, bool kPointwise>
__global__ void __launch_bounds__(kWgThreads, BN <= 128 ? 2 : 1)
    conv2d_implicit_gemm_wgmma(const ImplicitGemmParams<__half> a) {
#if defined(YOLO12_HAS_WGMMA)
  pdl_begin();  // launch.cuh: before any activation is touched
  using G = WgmmaGeom<BN, STAGES>;
  static_assert(BN % 32 == 0, "B rows split evenly over the 32 rows one pass copies");
  static_assert(STAGES >= 3, "one stage computing, one queued, at least one loading");
  constexpr int kAPasses = kWgBM * 8 / kWgThreads;  // 4
  constexpr int kBPasses = BN * 8 / kWgThreads;     // BN / 32
  constexpr bool kTable = !kPointwise;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((kWgAlign - (smem_addr(smem_raw) & (kWgAlign - 1))) & (kWgAlign - 1));
  unsigned char* As = base;                                   // (STAGES, 128, 128 B) swizzled
  unsigned char* Bs = base + STAGES * kWgAStage;              // (STAGES, BN, 128 B) swizzled
  int2* ktab = reinterpret_cast<int2*>(base + a.ktab_offset);  // (k_tiles * 8) when kTable

  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kWgBM, n0 = blockIdx.y * BN, g = blockIdx.z;
  const int chunk = tid % 8, row0 = tid / 8;    // chunk `chunk` of rows row0 + 32 i
  const int swz = (chunk ^ (row0 & 7)) * 16;   // its swizzled byte column (rows row0 + 32 i share row0 % 8)

  RowOrigin<__half> rows[kAPasses];  // conv_gemm.cuh: gemm_row_origin, as in conv2d_implicit_gemm_f16
#pragma unroll
  for (int i = 0; i < kAPasses; ++i) rows[i] = gemm_row_origin<kPointwise, kTable>(a, m0 + row0 + i * 32, g);
  const __half* wg = a.w + static_cast<long long>(g) * a.n_g * a.k_pad;  // (n_g, k_pad)
  const int k_tiles = (a.k_pad + kWgBK - 1) / kWgBK;

  // The K-column table of a k x k conv (conv_gemm.cuh: fill_ktable), as in conv2d_implicit_gemm_f16.
  if constexpr (kTable) {
    fill_ktable(a, ktab, k_tiles * (kWgBK / kChunk), tid, kWgThreads);
    __syncthreads();
  }

  auto load_tile = [&](int kt, int stage) {
    const int kk = kt * kWgBK + chunk * kChunk;
    unsigned char* as = As + stage * kWgAStage;
    int2 tap = make_int2(0, 0);
    if constexpr (kTable) tap = ktab[kk / kChunk];
    const int tap_dy = tap.y >> 16, tap_dx = tap.y & 0xffff;
#pragma unroll
    for (int i = 0; i < kAPasses; ++i) {
      unsigned char* dst = as + (row0 + i * 32) * kWgRowBytes + swz;
      bool ok;
      const __half* src;
      if constexpr (kPointwise) {
        ok = rows[i].iy0 == 0 && kk < a.k_real;
        src = rows[i].base + kk;
      } else {
        ok = table_chunk_read(a, rows[i], tap_dy, tap_dx, kk);
        src = rows[i].base + tap.x;
      }
      cp_async_16(dst, ok ? src : a.x, ok ? 16 : 0);
    }
    unsigned char* bs = Bs + stage * G::kBStage;
#pragma unroll
    for (int i = 0; i < kBPasses; ++i) {
      const int r = row0 + i * 32;
      const int n = n0 + r;
      const bool ok = n < a.n_g && kk < a.k_pad;
      cp_async_16(bs + r * kWgRowBytes + swz, ok ? wg + static_cast<long long>(n) * a.k_pad + kk : a.w, ok ? 16 : 0);
    }
  };

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < k_tiles) load_tile(s, s);
    cp_async_commit();
  }
  const int wgi = tid / 128;  // this warpgroup's rows: [64 wgi, 64 wgi + 64) of the tile
  const std::uint32_t a_addr = smem_addr(As) + wgi * 64 * kWgRowBytes, b_addr = smem_addr(Bs);
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 3>();  // this thread's copies of tile kt have landed
    fence_proxy_async();          // ... and are visible to the tensor cores
    wgmma_wait<1>();              // this warpgroup's MMAs of tile kt - 2 are done
    __syncthreads();              // tile kt complete; tile kt - 2's stage free in both warpgroups
    const int next = kt + STAGES - 2;
    if (next < k_tiles) load_tile(next, next % STAGES);
    cp_async_commit();
    const int stage = kt % STAGES;
    wgmma_fence_accumulators(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kWgBK / 16; ++ks)
      wgmma_m64k16<BN>(acc, wgmma_desc_sw128(a_addr + stage * kWgAStage + ks * 32),
                       wgmma_desc_sw128(b_addr + stage * G::kBStage + ks * 32));
    wgmma_commit();
  }
  wgmma_wait<0>();
  wgmma_fence_accumulators(acc);
  cp_async_wait<0>();
  __syncthreads();  // every MMA and copy is done: the C tile reuses the stages

  float* Cs = reinterpret_cast<float*>(base);  // (128, kCRow)
  {
    const int warp = (tid % 128) / 32, lane = tid % 32;
    const int r = wgi * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = j * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(Cs + r * G::kCRow + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(Cs + (r + 8) * G::kCRow + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
  __syncthreads();
  constexpr int kChunksN = BN / 8;
  for (int idx = tid; idx < kWgBM * kChunksN; idx += kWgThreads) {
    const int r = idx / kChunksN, q = idx % kChunksN;
    const int m = m0 + r, n = n0 + q * 8;
    if (m >= a.m || n >= a.n_g) continue;
    const long long c = static_cast<long long>(g) * a.n_g + n;
    const float4 lo = *reinterpret_cast<const float4*>(Cs + r * G::kCRow + q * 8);
    const float4 hi = *reinterpret_cast<const float4*>(Cs + r * G::kCRow + q * 8 + 4);
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (n + e < a.n_g) v[e] = epilogue<__half>(v[e], a.bias, a.gamma, a.silu(), static_cast<int>(c) + e);
    store_chunk8(a, m, c, n, v);
  }
#else
  (void)a;  // not sm_90a code: wgmma_available() is false and the launcher never runs this
#endif
}

// Bytes of dynamic shared memory for one launch: the aligned main area, the K-column table of a k x k
// conv with k_tiles K tiles, and the slack that aligns the base to 1024 bytes. ktab_offset: where the
// table starts (0 without one).
template <int BN, int STAGES>
int wgmma_smem(bool pointwise, int k_tiles, int* ktab_offset) {
  using G = WgmmaGeom<BN, STAGES>;
  int bytes = G::kMain;
  *ktab_offset = 0;
  if (!pointwise) {
    *ktab_offset = round_up(bytes, 16);
    bytes = *ktab_offset + k_tiles * (kWgBK / kChunk) * static_cast<int>(sizeof(int2));
  }
  return bytes + kWgAlign;
}

template <int BN, int STAGES>
void launch_wgmma_tile(const ImplicitGemmParams<__half>& params, int groups, bool pointwise, cudaStream_t stream) {
  ImplicitGemmParams<__half> a = params;
  const int smem = wgmma_smem<BN, STAGES>(pointwise, ceil_div(a.k_pad, kWgBK), &a.ktab_offset);
  const dim3 grid(ceil_div(a.m, kWgBM), ceil_div(a.n_g, BN), groups);
  if (pointwise) launch_with_smem<conv2d_implicit_gemm_wgmma<BN, STAGES, true>>(grid, dim3(kWgThreads), smem, a, stream);
  else launch_with_smem<conv2d_implicit_gemm_wgmma<BN, STAGES, false>>(grid, dim3(kWgThreads), smem, a, stream);
}

// The instantiated configurations: (BN, STAGES). At most 128 columns two blocks share an SM (registers
// and shared memory allow it); wider tiles take one SM each.
struct WgmmaTile {
  int bn, stages;
};
constexpr WgmmaTile kWgmmaTiles[] = {{64, 4}, {96, 3}, {128, 3}, {128, 4}, {192, 4}, {256, 4}};

// f(bn, stages) with both as compile-time constants (std::integral_constant) for the instantiated tile t
// (kWgmmaTiles; an unknown one is taken as the last).
template <typename F>
decltype(auto) with_wgmma_tile(const WgmmaTile& t, F&& f) {
  using std::integral_constant;
  switch (t.bn * 10 + t.stages) {
    case 644: return f(integral_constant<int, 64>{}, integral_constant<int, 4>{});
    case 963: return f(integral_constant<int, 96>{}, integral_constant<int, 3>{});
    case 1283: return f(integral_constant<int, 128>{}, integral_constant<int, 3>{});
    case 1284: return f(integral_constant<int, 128>{}, integral_constant<int, 4>{});
    case 1924: return f(integral_constant<int, 192>{}, integral_constant<int, 4>{});
    default: return f(integral_constant<int, 256>{}, integral_constant<int, 4>{});
  }
}

int wgmma_smem_of(const WgmmaTile& t, bool pointwise, int k_tiles) {
  return with_wgmma_tile(t, [&](auto bn, auto stages) {
    int off = 0;
    return wgmma_smem<bn(), stages()>(pointwise, k_tiles, &off);
  });
}

ConvPlan wgmma_tile_plan(const WgmmaTile& t) {
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::implicit_gemm_wgmma;
  plan.bm = kWgBM;
  plan.bn = t.bn;
  plan.bk = kWgBK;
  plan.stages = t.stages;
  plan.warps = kWgThreads / 32;
  plan.split = 1;
  return plan;
}

// Whether a tile's launch fits the device's shared memory for this shape (the K-column table grows with K).
bool wgmma_fits(const ConvShape& s, const WgmmaTile& t) {
  const int k_tiles = ceil_div(gemm_layout(s).k_pad, kWgBK);
  return static_cast<std::size_t>(wgmma_smem_of(t, is_pointwise(s), k_tiles)) <= device_info().smem_per_block_optin;
}

}  // namespace

bool wgmma_available() {
  const DeviceInfo& dev = device_info();
  if (dev.cc_major != 9 || dev.cc_minor != 0) return false;
  // The sm_90a cubin is what runs (not the portable PTX compiled for another chip by the driver).
  static const bool sm90a = [] {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, conv2d_implicit_gemm_wgmma<64, 4, true>) == cudaSuccess && attr.binaryVersion == 90;
  }();
  return sm90a;
}

bool wgmma_takes(const ConvShape& s) {
  return wgmma_available() && !is_depthwise(s) && gemm_layout(s).cin_g % kChunk == 0;
}

std::vector<ConvPlan> wgmma_candidates(const ConvShape& s) {
  std::vector<ConvPlan> out;
  if (!wgmma_takes(s)) return out;
  const GemmLayout l = gemm_layout(s);
  for (const WgmmaTile& t : kWgmmaTiles)
    if ((t.bn == 64 || t.bn < 2 * l.n_g) && wgmma_fits(s, t)) out.push_back(wgmma_tile_plan(t));
  return out;
}

// The default rule (variant f16_wgmma), fitted to what kernel tuning chose on the H200 for yolo12n and
// yolo12x at batch 1 and 32 (docs/kernels-conv.md, "The eighth session"). A conv qualifies with at least
// 48 channels per group and 2 K tiles of 64. Its N tiles, widest first: the instantiated widths that divide
// the channels (at most 128 for a 1x1 conv with under 16 K tiles; 96 for 65..96 channels), then 64 (the
// last tile padded). Long K (>= 32 tiles): the widest tile that gives half the SMs a block (fewer, wider
// tiles beat more, narrower ones there: yolo12x's 3x3/2 384->384 at 160x160, batch 1, 0.052 ms on 100
// blocks of 128x192 against 0.064 on 150 of 128x128). Else on a large grid (1.5 blocks per SM) the widest
// such tile, except that 1x1 convs of at least 256 channels with a short K (<= 6 tiles) over many pixels
// (3 row tiles per SM) stay on mma.sync (yolo12x's 1x1 384->384 at 160x160, batch 32: 1.16 ms there
// against 1.64 on 128x192 wgmma tiles); on a small grid 128x64 if that gives half the SMs a block, else
// mma.sync (its split-K). Stages: 4, but 3 (two blocks per SM) for 96 and for 128 on a large grid.
bool wgmma_plan(const ConvShape& s, const DeviceInfo& dev, ConvPlan& plan) {
  if (!wgmma_takes(s)) return false;
  const GemmLayout l = gemm_layout(s);
  const long long m_tiles = ceil_div(s.batch * s.ho * s.wo, kWgBM), sms = dev.sm_count;
  const int k_tiles = ceil_div(l.k_pad, kWgBK);
  const bool pointwise = is_pointwise(s);
  if (l.n_g < 48 || k_tiles < 2) return false;
  std::vector<int> widths;  // widest first, 64 last in any case (padding the last N tile)
  for (const int bn : {256, 192, 128, 96})
    if (l.n_g % bn == 0 && !(pointwise && k_tiles < 16 && bn > 128)) widths.push_back(bn);
  if (widths.empty() && l.n_g > 64 && l.n_g <= 96) widths.push_back(96);
  widths.push_back(64);
  const auto blocks = [&](int bn) { return m_tiles * ceil_div(l.n_g, bn) * s.groups; };
  const auto large = [&](int bn) { return 2 * blocks(bn) >= 3 * sms; };  // 1.5 blocks per SM
  const auto pick = [&](int bn, int stages) {
    const WgmmaTile t{bn, stages};
    if (!wgmma_fits(s, t)) return false;
    plan = wgmma_tile_plan(t);
    return true;
  };
  if (k_tiles >= 32) {  // long K: the widest tile that gives half the SMs a block
    for (const int bn : widths)
      if (2 * blocks(bn) >= sms) return pick(bn, bn == 96 || (bn == 128 && large(bn)) ? 3 : 4);
    return false;
  }
  for (const int bn : widths)
    if (large(bn)) {
      if (pointwise && k_tiles <= 6 && l.n_g >= 256 && m_tiles >= 3 * sms) return false;
      return pick(bn, bn == 96 || bn == 128 ? 3 : 4);
    }
  if (2 * blocks(64) >= sms) return pick(64, 4);
  return false;
}

namespace {
// wgmma_runs for params a = make_params(a's shape and views).
bool wgmma_runs(const ImplicitGemmParams<__half>& a) {
  return wgmma_takes(a) && a.vec_a && (is_pointwise(a) || ktable_fits(a));
}
}  // namespace

bool wgmma_runs(const ConvParams<__half>& p) { return wgmma_runs(make_params(p)); }

void launch_conv2d_implicit_gemm_wgmma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream) {
  const ImplicitGemmParams<__half> a = make_params(p);
  if (!wgmma_runs(a)) {
    // The same tile height on mma.sync (128 x 64 or 128 x 128 on 8 warps, both instantiated there).
    ConvPlan f = plan;
    f.algorithm = ConvAlgorithm::implicit_gemm_f16;
    f.bm = 128;
    f.bn = plan.bn <= 64 ? 64 : 128;
    f.bk = 64;
    f.warps = 8;
    f.split = 1;
    f.stages = 0;
    launch_conv2d_implicit_gemm_f16(p, f, stream);
    return;
  }
  with_wgmma_tile(WgmmaTile{plan.bn, plan.stages},
                  [&](auto bn, auto stages) { launch_wgmma_tile<bn(), stages()>(a, p.groups, is_pointwise(p), stream); });
}

}  // namespace yolo12::cuda::conv_detail
