// src/backends/cuda/conv_gemm_tma.cu - conv2d_gemm_tma: the 1x1 convs (stride 1, no padding, groups 1), which are
// a plain GEMM, Y (M, N) = X (M, K) W^T (N, K), on wgmma (sm_90a) with both operands brought into shared memory
// by the tensor memory accelerator (TMA), persistent and warp-specialised.
//
// Why (sixteenth session): the 1x1 convs are most of yolo12m..x's time at batch 32 (yolo12x: 14.0 of 30.3 ms,
// 3.4x their floor), and the short-K ones ran at a quarter of the tensor cores' peak on every kernel and tile
// tuning tried: yolo12x's 1x1 384->384 at 160x160, batch 32, took 1.12 ms at best (1.1 TB/s) against a floor of
// 0.30 ms. There, all of conv2d_implicit_gemm_wgmma(_ws)'s threads, or a whole loading warpgroup, issue one
// 16-byte cp.async per row chunk (a K tile of 128 x 128 is 2,048 of them, with their address arithmetic and
// zero-fill tests), and a 128-row tile reads each B row from L2 once per 128 output rows. Here one thread issues
// two bulk tensor copies per K tile, the copy engine swizzles them into the layout wgmma reads and zero-fills
// whatever lies outside X or W (the M and K tails), and tiles of 256 rows halve the B traffic per output.
//
// The block: 288 threads. Warps 0-7 are two computing warpgroups; warp 8 is the loader (one thread of it).
// Block tile BM x BN, K tile 64 (one 128-byte swizzled row per tile row). Persistent: the block walks tiles
// t = blockIdx.x, + gridDim.x, ..., the column tile fastest, so that the blocks running at once share their A
// rows in L2. Two schedules:
//   cooperative (kPing false): both computing warpgroups on every tile, BM / 2 rows each (BM 128 or 256: one or
//     two m64 wgmmas per K step sharing the B operand);
//   ping-pong (kPing true): warpgroup w on the block's tiles j with j % 2 == w, all BM (128) rows, so that one
//     warpgroup's epilogue runs while the other's MMAs do. The stages are split into two rings of STAGES / 2,
//     ring w feeding warpgroup w: the loader fills them tile by tile in the block's order, and each warpgroup
//     walks its own ring in order, so no waiter is ever two fills away from its stage.
// Pipeline: STAGES shared-memory stages of (A: BM x 128 B, B: BN x 128 B), each with two mbarriers:
//   full[s]:  one arrival (the loader's arrive.expect_tx with the stage's bytes) plus the bytes the two tensor
//             copies complete; the computing threads wait on it;
//   empty[s]: one arrival per computing warp that reads the stage (8 cooperative, 4 ping-pong), made once the
//             wgmmas that read it are done; the loader waits on it before refilling the stage.
// The loader runs up to STAGES K tiles ahead, across output tiles, so the next tile's operands arrive while
// the computing warps run their epilogue. The K tile number q of a ring (counted across its output tiles) is
// its stage q % (its stages) (StageRing, wgmma.cuh).
// Epilogue: each computing warp writes its 16 rows of each m64 block through wgmma_warp_epilogue (conv_gemm.cuh),
// as the warp-specialised conv2d_implicit_gemm_wgmma_ws does, but with bias, SiLU and gamma applied in registers
// (kInRegs, after the sixteenth session's measurements: bias and gamma loaded once per column pair; since the
// seventeenth, the SiLU flag tested once per 32 columns, and where a thread holds fewer than 128 accumulators the
// residual read ahead of the arithmetic), then its private shared-memory slice, the residual, one rounding and
// 16-byte stores.
//
// Measured (sixteenth session, docs/kernels-conv.md): correct, and slower than the mma.sync and wgmma kernels on all
// but two of yolo12n's and yolo12x's 1x1 shapes (ping-pong its best schedule); Nsight Compute has it latency-bound on
// the epilogue's instructions with 8 computing warps per SM, the loads costing almost nothing. Variant off.
//
// Requirements (gemm_tma_runs; the launcher falls back to conv2d_implicit_gemm_f16 otherwise): the sm_90a code
// runs (wgmma_available), a 1x1 conv at stride 1 without padding, groups 1, c_in a multiple of 8, x and w
// 16-byte aligned and ldx a multiple of 8 (TMA's 16-byte row strides), and the driver's cuTensorMapEncodeTiled.
#include <cuda.h>          // CUtensorMap and its enums (the driver API, reached through the runtime below)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

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

constexpr int kTmaBK = 64;         // K tile: 64 halves, one 128-byte swizzled row
constexpr int kTmaRowBytes = 128;  // bytes of one tile row in shared memory
constexpr int kTmaWarps = 9;       // two computing warpgroups, one loading warp
constexpr int kTmaThreads = kTmaWarps * 32;
constexpr int kTmaAlign = 1024;    // swizzle atoms (8 rows x 128 B) are 1024-byte aligned

// The kernel's parameters: the conv's (ImplicitGemmParams: sizes, views, epilogue) and the two tensor maps,
// made on the host for this launch's pointers and batch.
struct GemmTmaParams {
  ImplicitGemmParams<__half> a;
  CUtensorMap ta;  // A = x: (M rows, cin_g columns) at a row stride of ldx halves; box (64 columns, BM rows)
  CUtensorMap tb;  // B = w: (n_g rows, k_pad columns); box (64 columns, BN rows)
};

// The shared memory of a BM x BN x STAGES configuration, in bytes from the 1024-byte aligned base:
//   [0, kPipe): STAGES stages of A (BM x 128 B) then STAGES stages of B (BN x 128 B), in TMA's 128-byte swizzle,
//   which is the layout wgmma_desc_sw128 describes (16-byte chunk c of row r at r * 128 + (c ^ r % 8) * 16);
//   [kPipe, kBars): the eight computing warps' epilogue slices (16, kWgEpiRow) floats each;
//   [kBars, kBars + 16 STAGES): full[STAGES], then empty[STAGES] mbarriers.
// kBytes adds the slack that aligns the base.
template <int BM, int BN, int STAGES, bool kPing>
struct TmaGeom {
  static constexpr int kAStage = BM * kTmaRowBytes;
  static constexpr int kBStage = BN * kTmaRowBytes;
  static constexpr int kPipe = STAGES * (kAStage + kBStage);
  static constexpr int kBars = kPipe + 8 * kWgEpiWarp;
  static constexpr int kBytes = kBars + 16 * STAGES + kTmaAlign;
  static constexpr int kRowsWg = kPing ? BM : BM / 2;  // rows of a computing warpgroup per tile
  static constexpr int kMW = kRowsWg / 64;              // its m64 blocks
  static constexpr int kRing = kPing ? STAGES / 2 : STAGES;  // stages per ring (two rings ping-pong)
  static constexpr int kReaders = kPing ? 4 : 8;             // warps that read (and release) each stage
  static_assert(kAStage % kTmaAlign == 0 && kBStage % kTmaAlign == 0, "stages start on swizzle atoms");
  static_assert((BM == 128 || BM == 256) && kMW * 64 == kRowsWg && kMW <= 2,
                "one or two m64 blocks per computing warpgroup; TMA boxes hold 256 rows at most");
  static_assert(!kPing || (BM == 128 && STAGES % 2 == 0 && kRing * 2 == STAGES && kReaders == 4),
                "ping-pong: 128-row tiles, two rings of equal size, each read by one warpgroup");
};

template <int BM, int BN, int STAGES, bool kPing>
__global__ void __launch_bounds__(kTmaThreads, 1) conv2d_gemm_tma(const __grid_constant__ GemmTmaParams p) {
#if defined(YOLO12_HAS_WGMMA)
  using G = TmaGeom<BM, BN, STAGES, kPing>;
  const ImplicitGemmParams<__half>& a = p.a;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((kTmaAlign - (smem_addr(smem_raw) & (kTmaAlign - 1))) & (kTmaAlign - 1));
  const std::uint32_t as0 = smem_addr(base);                      // (STAGES, BM, 128 B) swizzled
  const std::uint32_t bs0 = as0 + STAGES * G::kAStage;            // (STAGES, BN, 128 B) swizzled
  const std::uint32_t full0 = smem_addr(base + G::kBars);         // full[s] at full0 + 8 s
  const std::uint32_t empty0 = full0 + 8 * STAGES;                // empty[s] at empty0 + 8 s
  // Ring r is stages [r kRing, (r + 1) kRing).
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int k_tiles = (a.k_pad + kTmaBK - 1) / kTmaBK;
  const int n_tiles = (a.n_g + BN - 1) / BN;
  const int tiles = (a.m + BM - 1) / BM * n_tiles;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, G::kReaders);
    }
    // The barriers' initialisation is visible to the copy engine before any copy signals them.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  pdl_begin();  // launch.cuh: before any activation is touched

  if (warp == 8) {  // ---- the loader: one thread issues every copy
    if (lane == 0) {
      tma_prefetch_map(&p.ta);
      tma_prefetch_map(&p.tb);
      // One output tile's K tiles into ring r (stages from r kRing), whose position is `ring`.
      const auto load_tile = [&](int mt, int nt, int r, StageRing<G::kRing>& ring) {
        for (int kt = 0; kt < k_tiles; ++kt) {
          const int s = r * G::kRing + ring.stage;
          mbar_wait(empty0 + 8 * s, ring.phase ^ 1);  // the computing warps are done with its last use
          const std::uint32_t full = full0 + 8 * s;
          mbar_arrive_expect_tx(full, G::kAStage + G::kBStage);
          tma_load_2d(as0 + s * G::kAStage, &p.ta, kt * kTmaBK, mt * BM, full);
          tma_load_2d(bs0 + s * G::kBStage, &p.tb, kt * kTmaBK, nt * BN, full);
          ring.next();
        }
      };
      StageRing<G::kRing> ring0, ring1;  // two named rings, not an array: no local memory for a run-time index
      int j = 0;                         // the block's tile number: ring j % 2 when ping-pong
      for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++j) {
        const int mt = t / n_tiles, nt = t - mt * n_tiles;
        if (kPing && (j & 1)) load_tile(mt, nt, 1, ring1);
        else load_tile(mt, nt, 0, ring0);
      }
    }
    return;
  }

  // ---- warpgroups 0 and 1: cooperative, rows [kRowsWg wgi, kRowsWg (wgi + 1)) of each tile; ping-pong, all rows
  // of every other tile. All BN columns.
  const int wgi = warp / 4, wl = warp % 4;
  float* epi = reinterpret_cast<float*>(base + G::kPipe + warp * kWgEpiWarp);  // (16, kWgEpiRow)
  float acc[G::kMW][BN / 2];
  StageRing<G::kRing> ring;
  const int ring0 = kPing ? wgi * G::kRing : 0;  // this warpgroup's ring
  const int step = kPing ? 2 : 1;
  for (int t = blockIdx.x + (kPing ? wgi : 0) * gridDim.x; t < tiles; t += step * gridDim.x) {
    const int mt = t / n_tiles, nt = t - mt * n_tiles;
#pragma unroll
    for (int mb = 0; mb < G::kMW; ++mb)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[mb][i] = 0.f;
    int prev = -1;  // the stage of the K tile before
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = ring0 + ring.stage;
      mbar_wait(full0 + 8 * s, ring.phase);  // both copies of this stage have landed
      const std::uint32_t a_st = as0 + s * G::kAStage + (kPing ? 0 : wgi * G::kRowsWg * kTmaRowBytes);
      const std::uint32_t b_st = bs0 + s * G::kBStage;
#pragma unroll
      for (int mb = 0; mb < G::kMW; ++mb) wgmma_fence_accumulators(acc[mb]);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kTmaBK / 16; ++ks) {
        const std::uint64_t db = wgmma_desc_sw128(b_st + ks * 32);
#pragma unroll
        for (int mb = 0; mb < G::kMW; ++mb)
          wgmma_m64k16<BN>(acc[mb], wgmma_desc_sw128(a_st + mb * 64 * kTmaRowBytes + ks * 32), db);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the MMAs of the K tile before are done: its stage goes back to the loader
#pragma unroll
      for (int mb = 0; mb < G::kMW; ++mb) wgmma_fence_accumulators(acc[mb]);
      if (prev >= 0 && lane == 0) mbar_arrive(empty0 + 8 * prev);
      prev = s;
      ring.next();
    }
    wgmma_wait<0>();
#pragma unroll
    for (int mb = 0; mb < G::kMW; ++mb) wgmma_fence_accumulators(acc[mb]);
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);
    const int row0 = mt * BM + (kPing ? 0 : wgi * G::kRowsWg) + wl * 16;
#pragma unroll
    for (int mb = 0; mb < G::kMW; ++mb)  // the residual read ahead where the accumulators leave registers for it
      wgmma_warp_epilogue<BN, true, (G::kMW * BN / 2 < 128)>(a, acc[mb], epi, row0 + mb * 64, nt * BN, 0, lane);
  }
#else
  (void)p;  // not sm_90a code: wgmma_available() is false and the launcher never runs this
#endif
}

// The instantiated configurations {BM, BN, STAGES, ping-pong}: as many stages as fit beside the epilogue slices
// (227 KB), at most 8. Cooperative: two m64 blocks per warpgroup (BM 256) up to 128 columns, 192 and 256 columns
// on 128 rows; ping-pong: 128 rows up to 128 columns. A thread holds kRowsWg * BN / 128 fp32 accumulators: at
// most 128.
struct TmaTile {
  int bm, bn, stages;
  bool ping = false;
};
constexpr TmaTile kTmaTiles[] = {{128, 64, 8},       {128, 128, 6},      {128, 192, 5},      {128, 256, 4},
                                 {256, 64, 5},       {256, 96, 4},       {256, 128, 4},      {128, 64, 8, true},
                                 {128, 96, 6, true}, {128, 128, 6, true}};

// f(bm, bn, stages, ping) as compile-time constants for the instantiated tile t (an unknown one: the last
// cooperative one).
template <typename F>
decltype(auto) with_tma_tile(const TmaTile& t, F&& f) {
  using std::integral_constant;
  using No = std::false_type;
  using Yes = std::true_type;
  if (t.ping) {
    switch (t.bn) {
      case 64: return f(integral_constant<int, 128>{}, integral_constant<int, 64>{}, integral_constant<int, 8>{}, Yes{});
      case 96: return f(integral_constant<int, 128>{}, integral_constant<int, 96>{}, integral_constant<int, 6>{}, Yes{});
      default: return f(integral_constant<int, 128>{}, integral_constant<int, 128>{}, integral_constant<int, 6>{}, Yes{});
    }
  }
  switch (t.bm * 1000 + t.bn) {
    case 128064: return f(integral_constant<int, 128>{}, integral_constant<int, 64>{}, integral_constant<int, 8>{}, No{});
    case 128128: return f(integral_constant<int, 128>{}, integral_constant<int, 128>{}, integral_constant<int, 6>{}, No{});
    case 128192: return f(integral_constant<int, 128>{}, integral_constant<int, 192>{}, integral_constant<int, 5>{}, No{});
    case 128256: return f(integral_constant<int, 128>{}, integral_constant<int, 256>{}, integral_constant<int, 4>{}, No{});
    case 256064: return f(integral_constant<int, 256>{}, integral_constant<int, 64>{}, integral_constant<int, 5>{}, No{});
    case 256096: return f(integral_constant<int, 256>{}, integral_constant<int, 96>{}, integral_constant<int, 4>{}, No{});
    default: return f(integral_constant<int, 256>{}, integral_constant<int, 128>{}, integral_constant<int, 4>{}, No{});
  }
}

int tma_smem(const TmaTile& t) {
  return with_tma_tile(t, [](auto bm, auto bn, auto stages, auto ping) {
    return TmaGeom<bm(), bn(), stages(), ping()>::kBytes;
  });
}

ConvPlan tma_tile_plan(const TmaTile& t) {
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::gemm_tma;
  plan.bm = t.bm;
  plan.bn = t.bn;
  plan.bk = kTmaBK;
  plan.stages = t.stages;
  plan.warps = kTmaWarps;
  plan.split = 1;
  plan.pingpong = t.ping;
  return plan;
}

// The driver's cuTensorMapEncodeTiled, reached through the runtime (no link against the driver library);
// null where the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      f = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 2-D fp16 tensor map: `outer` rows of `inner` elements, rows `row_bytes` apart, boxes of box_inner x
// box_outer elements in the 128-byte swizzle, zeros outside the tensor. False where the driver refuses it.
bool make_tensor_map(CUtensorMap* map, const void* base, std::uint64_t inner, std::uint64_t outer,
                     std::uint64_t row_bytes, std::uint32_t box_inner, std::uint32_t box_outer) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

}  // namespace

bool gemm_tma_takes(const ConvShape& s) {
  return is_pointwise(s) && s.groups == 1 && s.c_in % kChunk == 0 && wgmma_available() && tensor_map_encoder() != nullptr;
}

bool gemm_tma_runs(const ConvParams<__half>& p) {
  return gemm_tma_takes(p) && p.ldx % kChunk == 0 && aligned16(p.x) && aligned16(p.w) && p.batch * p.ho * p.wo > 0;
}

std::vector<ConvPlan> gemm_tma_candidates(const ConvShape& s) {
  std::vector<ConvPlan> out;
  if (!gemm_tma_takes(s)) return out;
  const int n_g = gemm_layout(s).n_g;
  for (const TmaTile& t : kTmaTiles)
    if ((t.bn == 64 || t.bn < 2 * n_g) && static_cast<std::size_t>(tma_smem(t)) <= device_info().smem_per_block_optin)
      out.push_back(tma_tile_plan(t));
  return out;
}

// First rule (sixteenth session, written before the kernel ran; variant f16_gemm_tma, off): the convs where the
// other kernels are furthest from their floor, 1x1 over grids of at least 4 tiles of 128 x 128 per SM; the widest
// of 128, 96 and 64 columns that pads N by at most an eighth, on 256 rows. Measured: it made yolo12n 2.93 -> 3.54 ms
// and yolo12x 29.7 -> 34.4 ms at batch 32; kept as written until the kernel is worth a fitted rule.
ConvPlan gemm_tma_rule(const ConvShape& s, const DeviceInfo& dev) {
  ConvPlan none;
  if (!gemm_tma_takes(s)) return none;
  const GemmLayout l = gemm_layout(s);
  const long long m = 1LL * s.batch * s.ho * s.wo;
  if (l.n_g < 64 || (m + 127) / 128 * ((l.n_g + 127) / 128) < 4LL * dev.sm_count) return none;
  for (const int bn : {128, 96, 64}) {
    const long long cols = (l.n_g + bn - 1) / bn;
    if (bn != 64 && cols * bn * 8 > 9LL * l.n_g) continue;
    for (const TmaTile& t : kTmaTiles)
      if (t.bm == 256 && t.bn == bn && !t.ping && static_cast<std::size_t>(tma_smem(t)) <= dev.smem_per_block_optin)
        return tma_tile_plan(t);
  }
  return none;
}

namespace {
// The kernel's parameters for p and plan: false where it does not run p or the driver refuses a tensor map.
bool gemm_tma_params(const ConvParams<__half>& p, const ConvPlan& plan, GemmTmaParams& params) {
  params.a = make_params(p);
  const ImplicitGemmParams<__half>& a = params.a;
  return gemm_tma_runs(p) &&
         make_tensor_map(&params.ta, a.x, static_cast<std::uint64_t>(a.cin_g), static_cast<std::uint64_t>(a.m),
                         static_cast<std::uint64_t>(a.ldx) * sizeof(__half), kTmaBK, static_cast<std::uint32_t>(plan.bm)) &&
         make_tensor_map(&params.tb, a.w, static_cast<std::uint64_t>(a.k_pad), static_cast<std::uint64_t>(a.n_g),
                         static_cast<std::uint64_t>(a.k_pad) * sizeof(__half), kTmaBK, static_cast<std::uint32_t>(plan.bn));
}
}  // namespace

bool gemm_tma_launches(const ConvParams<__half>& p, const ConvPlan& plan) {
  GemmTmaParams params;
  return gemm_tma_params(p, plan, params);
}

void launch_conv2d_gemm_tma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream, int max_grid) {
  GemmTmaParams params;
  const ImplicitGemmParams<__half>& a = params.a;
  const TmaTile tile{plan.bm, plan.bn, plan.stages, plan.pingpong};
  if (!gemm_tma_params(p, plan, params)) {  // views TMA cannot read
    launch_conv2d_implicit_gemm_f16(p, mma_sync_stand_in(plan.bn), stream);
    return;
  }
  with_tma_tile(tile, [&](auto bm, auto bn, auto stages, auto ping) {
    using G = TmaGeom<bm(), bn(), stages(), ping()>;
    const long long tiles = 1LL * ceil_div(a.m, bm()) * ceil_div(a.n_g, bn());
    long long grid = tiles < device_info().sm_count ? tiles : device_info().sm_count;
    if (max_grid > 0 && grid > max_grid) grid = max_grid;
    launch_with_smem<conv2d_gemm_tma<bm(), bn(), stages(), ping()>>(dim3(static_cast<unsigned>(grid)), dim3(kTmaThreads),
                                                             G::kBytes, params, stream);
  });
}

}  // namespace yolo12::cuda::conv_detail
