// src/backends/cuda/conv_wgmma.cu - conv2d_implicit_gemm_wgmma: the implicit GEMM of conv_implicit_gemm.cu
// (the GEMM of a conv: conv_gemm.cuh) on Hopper's warpgroup MMA, wgmma.mma_async (wgmma.cuh; sm_90a), and
// conv2d_implicit_gemm_wgmma_ws, the same GEMM warp-specialised and persistent (below the first kernel).
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
// Pipeline (wgmma_pipeline, wgmma.cuh), STAGES (3 or 4) shared-memory stages, iteration kt:
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

// The cp.async copies of K tile kt (columns [64 kt, 64 kt + 64)) into one stage (as: 128 x 128 B, bs: BN x
// 128 B, both swizzled), by the thread that copies chunk `chunk` of rows row0 + kStep i: A rows from their
// origins `rows` (gemm_row_origin; kAPasses of them), B rows n0 + row0 + kStep i of wg (the group's (n_g,
// k_pad) weights; kBPasses of them). swz: the chunk's swizzled byte column (the same for all its rows, kStep
// being a multiple of 8). Zero-fill outside the image and past K, as in conv2d_implicit_gemm_f16.
template <int kAPasses, int kBPasses, int kStep, bool kPointwise>
__device__ __forceinline__ void wg_load_stage(const ImplicitGemmParams<__half>& a,
                                              const RowOrigin<__half> (&rows)[kAPasses], const __half* wg,
                                              const int2* ktab, int n0, int kt, int chunk, int row0, int swz,
                                              unsigned char* as, unsigned char* bs) {
  static_assert(kStep % 8 == 0, "rows row0 + kStep i share one swizzle phase");
  const int kk = kt * kWgBK + chunk * kChunk;
  if constexpr (kPointwise) {
    // As conv2d_implicit_gemm_f16's pointer loads: a chunk past K is zero-filled from its row's start, and a
    // missing row reads as row 0 (gemm_row_origin), so every source address stays inside x and w and no
    // fallback pointer is selected per chunk (twenty-eighth session).
    const bool a_in = kk < a.k_real, b_in = kk < a.k_pad;
    const int a_off = a_in ? kk : 0, b_off = b_in ? kk : 0;
#pragma unroll
    for (int i = 0; i < kAPasses; ++i)
      cp_async_16(as + (row0 + i * kStep) * kWgRowBytes + swz, rows[i].base + a_off, rows[i].iy0 == 0 && a_in ? 16 : 0);
#pragma unroll
    for (int i = 0; i < kBPasses; ++i) {
      const int r = row0 + i * kStep;
      const int n = n0 + r;
      const bool ok = n < a.n_g;
      cp_async_16(bs + r * kWgRowBytes + swz, wg + static_cast<long long>(ok ? n : 0) * a.k_pad + b_off,
                  ok && b_in ? 16 : 0);
    }
    return;
  }
  const int2 tap = ktab[kk / kChunk];
  const int tap_dy = tap.y >> 16, tap_dx = tap.y & 0xffff;
#pragma unroll
  for (int i = 0; i < kAPasses; ++i) {
    const bool ok = table_chunk_read(a, rows[i], tap_dy, tap_dx, kk);
    cp_async_16(as + (row0 + i * kStep) * kWgRowBytes + swz, ok ? rows[i].base + tap.x : a.x, ok ? 16 : 0);
  }
#pragma unroll
  for (int i = 0; i < kBPasses; ++i) {
    const int r = row0 + i * kStep;
    const int n = n0 + r;
    const bool ok = n < a.n_g && kk < a.k_pad;
    cp_async_16(bs + r * kWgRowBytes + swz, ok ? wg + static_cast<long long>(n) * a.k_pad + kk : a.w, ok ? 16 : 0);
  }
}

#if defined(YOLO12_HAS_WGMMA)  // the helpers below exist only in sm_90a code
// One K tile's MMAs for this warpgroup, issued and committed as one group: its 64 rows of the A stage at
// shared address a_stage (128-byte rows, swizzled) times the BN rows of the B stage at b_stage, four K
// steps of 16 (32 bytes each inside the swizzle atom).
template <int BN>
__device__ __forceinline__ void wg_mma_stage(float (&acc)[BN / 2], std::uint32_t a_stage, std::uint32_t b_stage) {
  wgmma_fence_accumulators(acc);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < kWgBK / 16; ++ks)
    wgmma_m64k16<BN>(acc, wgmma_desc_sw128(a_stage + ks * 32), wgmma_desc_sw128(b_stage + ks * 32));
  wgmma_commit();
}

// The ping-pong kernel's K tile: all 128 rows of the A stage for one warpgroup, rows [0, 64) into lo and
// [64, 128) into hi, times the same B stage; eight wgmmas committed as one group.
template <int BN>
__device__ __forceinline__ void wg_mma_stage_128(float (&lo)[BN / 2], float (&hi)[BN / 2], std::uint32_t a_stage,
                                                 std::uint32_t b_stage) {
  wgmma_fence_accumulators(lo);
  wgmma_fence_accumulators(hi);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < kWgBK / 16; ++ks) {
    const std::uint64_t b = wgmma_desc_sw128(b_stage + ks * 32);
    wgmma_m64k16<BN>(lo, wgmma_desc_sw128(a_stage + ks * 32), b);
    wgmma_m64k16<BN>(hi, wgmma_desc_sw128(a_stage + 64 * kWgRowBytes + ks * 32), b);
  }
  wgmma_commit();
}
#endif

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
  const GemmTile tile = gemm_tile<kWgBM, BN, 1>(a.n_tiles);  // conv_gemm.cuh: gemm_grid's block order
  const int m0 = tile.m0, n0 = tile.n0, g = blockIdx.z;
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
    wg_load_stage<kAPasses, kBPasses, 32, kPointwise>(a, rows, wg, ktab, n0, kt, chunk, row0, swz,
                                                      As + stage * kWgAStage, Bs + stage * G::kBStage);
  };

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;

  const int wgi = tid / 128;  // this warpgroup's rows: [64 wgi, 64 wgi + 64) of the tile
  const std::uint32_t a_addr = smem_addr(As) + wgi * 64 * kWgRowBytes, b_addr = smem_addr(Bs);
  wgmma_pipeline(k_tiles, STAGES, load_tile, [&](int, int stage) {
    wg_mma_stage<BN>(acc, a_addr + stage * kWgAStage, b_addr + stage * G::kBStage);
  });
  wgmma_fence_accumulators(acc);  // every MMA and copy is done: the C tile reuses the stages

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
  const auto where = [&](int idx, int& m, int& n, const float*& src) {  // staged chunk idx: its row, channel, floats
    const int r = idx / kChunksN, q = idx % kChunksN;
    m = m0 + r;
    n = n0 + q * 8;
    src = Cs + r * G::kCRow + q * 8;
    return m < a.m && n < a.n_g;
  };
  // The SiLU test per chunk, the residual read ahead (store_staged_tile).
  store_staged_tile<kWgBM * kChunksN / kWgThreads, true>(a, g, tid, kWgThreads, kWgBM * kChunksN, where);
#else
  (void)a;  // not sm_90a code: wgmma_available() is false and the launcher never runs this
#endif
}

// ---- conv2d_implicit_gemm_wgmma_ws: the same GEMM, warp-specialised and persistent ----------------------------
//
// Why: Nsight Compute had conv2d_implicit_gemm_wgmma latency-bound (eighth session: 24-45 % of SM throughput,
// 7.6-11 cycles between a warp's instructions): every thread both gathers and computes, the copies of a
// stage are issued only after the block barrier that frees it, and each block pays its pipeline's fill and
// its epilogue once per output tile, which a short K loop (the 1x1 convs) cannot hide.
//
// The block: 384 threads = three warpgroups, one block per SM, looping over output tiles (tile t = blockIdx.x,
// + gridDim.x, ...; t = (g, row tile, column tile) with the column tile fastest, so that the blocks running
// at once share their A rows in L2). Warpgroup 0 only loads: its 128 threads gather A (128 rows x 8 chunks,
// rows row0 + 16 i) and B (BN rows) of each K tile with the same cp.async copies as above into STAGES stages,
// one after another across the K tiles of all its output tiles (the block's K tile number q counts across
// its tiles: stage q % STAGES). Warpgroups 1 and 2 compute, in one of two schedules:
//   cooperative (kPing false): both on every tile, rows [0, 64) and [64, 128): they wait for a stage, issue
//     its four wgmmas, and give the stage of the K tile before back once those MMAs are done;
//   ping-pong (kPing true, eleventh session): each on every other tile of the block (the block's j-th tile
//     to warpgroup 1 + j % 2), all 128 rows (eight wgmmas per stage, BN fp32 accumulators per thread), so
//     that one warpgroup's epilogue runs while the other's MMAs do: the cooperative schedule leaves the
//     tensor cores idle during every epilogue, which on a short K (1x1 convs of 2-8 K tiles) costs about
//     as long as the MMAs.
// Each stage has two mbarriers (wgmma.cuh):
//   full[s]:  128 arrivals, one per loading thread, each made when that thread's copies have landed
//             (cp.async.mbarrier.arrive); the computing threads wait on it, then fence.proxy.async;
//   empty[s]: one arrival per warp that read the stage (8 cooperative, 4 ping-pong), once its wgmmas are
//             done; the loaders wait on it before refilling the stage.
// Ping-pong adds turn[2] (4 arrivals each): a warpgroup starts waiting for its tile's first stage only after
// all four warps of the other one have passed the full barrier of its tile's last K tile (each warp arrives
// on turn[other] then). The stages' parity waits need that: a waiter on a stage must never be two fills
// ahead of it, and without the turn a warpgroup could wait for its next tile's stages while the other's tile
// has not been loaded yet. One arrival per warp, not per warpgroup: the warps of a warpgroup drift apart in
// the epilogue, and a single arrival from a warp that ran ahead could complete two phases of the other
// warpgroup's turn before a lagging warp waits on the first (compute-sanitizer memcheck's scheduling found
// that: a lagging warp waited on the wrong parity until the trap).
// So the loaders run up to STAGES K tiles ahead, also into the next output tile while the computing warps
// run their epilogue, and no block-wide barrier remains in the loop.
// Epilogue: each computing warp stages its own 16 rows, 32 columns at a time, in a private shared-memory
// slice (no block barrier), then writes 8-channel chunks through store_staged8 (conv_gemm.cuh), as above.
constexpr int kWsThreads = kWgmmaWsWarps * 32;         // 384
constexpr int kWsEpi = 8 * kWgEpiWarp;                   // the eight computing warps' epilogue slices (conv_gemm.cuh)

// The shared memory of a warp-specialised BN x STAGES configuration, from the 1024-byte aligned base:
//   [0, kPipe): STAGES stages of A (128 x 128 B) then STAGES stages of B (BN x 128 B), all swizzled;
//   [kPipe, kPipe + kWsEpi): the computing warps' epilogue slices (16, kWgEpiRow) floats each;
//   [kBars, kBars + 16 STAGES + 16): full[STAGES], empty[STAGES], then turn[2] (ping-pong) mbarriers;
//   the K-column table (k x k convs) at kMain.
template <int BN, int STAGES>
struct WsGeom {
  static constexpr int kBStage = BN * kWgRowBytes;
  static constexpr int kPipe = STAGES * (kWgAStage + kBStage);
  static constexpr int kBars = kPipe + kWsEpi;
  static constexpr int kMain = kBars + 16 * STAGES + 16;
};

#if defined(YOLO12_HAS_WGMMA)
// A computing warpgroup's MMAs of one output tile: its k_tiles stages from ring's position on, each
// released to the loaders (one arrival per warp on empty) once the MMAs that read it are done. Cooperative
// (kPing false): rows [0, 64) of the stage at a_addr into lo (hi unused). Ping-pong: all 128 rows, into lo
// and hi. turn (non-zero for lane 0 of each warp of a ping-pong warpgroup): the other warpgroup's turn
// barrier, arrived on once this thread has passed the full barrier of the tile's last stage.
template <int BN, int STAGES, bool kPing>
__device__ __forceinline__ void ws_tile_mma(float (&lo)[BN / 2], float (&hi)[BN / 2], StageRing<STAGES>& ring,
                                            int k_tiles, std::uint32_t full0, std::uint32_t empty0,
                                            std::uint32_t a_addr, std::uint32_t b_addr, int lane, std::uint32_t turn) {
  constexpr int kBStage = BN * kWgRowBytes;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) lo[i] = 0.f;
  if constexpr (kPing) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) hi[i] = 0.f;
  }
  int prev = -1;  // the stage of the K tile before
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbar_wait(full0 + 8 * ring.stage, ring.phase);  // every loader's copies of this stage have landed
    if (turn != 0 && kt == k_tiles - 1) mbar_arrive(turn);
    fence_proxy_async();  // ... and are visible to the tensor cores
    if constexpr (kPing) wg_mma_stage_128<BN>(lo, hi, a_addr + ring.stage * kWgAStage, b_addr + ring.stage * kBStage);
    else wg_mma_stage<BN>(lo, a_addr + ring.stage * kWgAStage, b_addr + ring.stage * kBStage);
    wgmma_wait<1>();  // the MMAs of the K tile before are done: its stage goes back to the loaders
    wgmma_fence_accumulators(lo);
    if constexpr (kPing) wgmma_fence_accumulators(hi);
    if (prev >= 0 && lane == 0) mbar_arrive(empty0 + 8 * prev);
    prev = ring.stage;
    ring.next();
  }
  wgmma_wait<0>();
  wgmma_fence_accumulators(lo);
  if constexpr (kPing) wgmma_fence_accumulators(hi);
  if (lane == 0) mbar_arrive(empty0 + 8 * prev);
}
#endif

template <int BN, int STAGES, bool kPointwise, bool kPing>
__global__ void __launch_bounds__(kWsThreads, 1) conv2d_implicit_gemm_wgmma_ws(const ImplicitGemmParams<__half> a) {
#if defined(YOLO12_HAS_WGMMA)
  pdl_begin();
  using G = WsGeom<BN, STAGES>;
  constexpr int kWsLoaders = 128;  // warpgroup 0
  static_assert(BN % kWgEpiCols == 0 && BN % 16 == 0, "whole epilogue slices, B rows split over 16-row passes");
  static_assert(!kPing || BN <= 128, "a ping-pong warpgroup holds BN fp32 accumulators per thread");
  constexpr int kAPasses = kWgBM * 8 / kWsLoaders;  // 8
  constexpr int kBPasses = BN * 8 / kWsLoaders;     // BN / 16
  constexpr int kReleases = kPing ? 4 : 8;          // warps that read (and release) each stage

  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((kWgAlign - (smem_addr(smem_raw) & (kWgAlign - 1))) & (kWgAlign - 1));
  unsigned char* As = base;                                   // (STAGES, 128, 128 B) swizzled
  unsigned char* Bs = base + STAGES * kWgAStage;              // (STAGES, BN, 128 B) swizzled
  const std::uint32_t full0 = smem_addr(base + G::kBars);     // full[s] at full0 + 8 s
  const std::uint32_t empty0 = full0 + 8 * STAGES;            // empty[s] at empty0 + 8 s
  const std::uint32_t turn0 = empty0 + 8 * STAGES;            // turn[w] at turn0 + 8 w (ping-pong)
  int2* ktab = reinterpret_cast<int2*>(base + a.ktab_offset);  // (k_tiles * 8) when k x k

  const int tid = threadIdx.x;
  const int k_tiles = (a.k_pad + kWgBK - 1) / kWgBK;
  const int m_tiles = (a.m + kWgBM - 1) / kWgBM, n_tiles = (a.n_g + BN - 1) / BN;
  const int tiles = m_tiles * n_tiles * a.groups;
  if constexpr (!kPointwise) fill_ktable(a, ktab, k_tiles * (kWgBK / kChunk), tid, kWsThreads);
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, kWsLoaders);
      mbar_init(empty0 + 8 * s, kReleases);
    }
    mbar_init(turn0, 4);
    mbar_init(turn0 + 8, 4);
  }
  __syncthreads();  // the table and the barriers are ready

  if (tid < kWsLoaders) {  // ---- warpgroup 0: the loads
    const int chunk = tid % 8, row0 = tid / 8;   // chunk `chunk` of rows row0 + 16 i
    const int swz = (chunk ^ (row0 & 7)) * 16;  // its swizzled byte column
    StageRing<STAGES> ring;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int nt = t % n_tiles, rest = t / n_tiles, mt = rest % m_tiles, g = rest / m_tiles;
      const int m0 = mt * kWgBM, n0 = nt * BN;
      RowOrigin<__half> rows[kAPasses];
#pragma unroll
      for (int i = 0; i < kAPasses; ++i) rows[i] = gemm_row_origin<kPointwise, !kPointwise>(a, m0 + row0 + i * 16, g);
      const __half* wg = a.w + static_cast<long long>(g) * a.n_g * a.k_pad;  // (n_g, k_pad)
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(empty0 + 8 * ring.stage, ring.phase ^ 1);  // the computing warps are done with its last use
        wg_load_stage<kAPasses, kBPasses, 16, kPointwise>(a, rows, wg, ktab, n0, kt, chunk, row0, swz,
                                                          As + ring.stage * kWgAStage, Bs + ring.stage * G::kBStage);
        mbar_cp_async_arrive(full0 + 8 * ring.stage);
        ring.next();
      }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  // ---- warpgroups 1 and 2: the MMAs and the epilogue
  const int wgi = tid / 128 - 1;  // cooperative: rows [64 wgi, 64 wgi + 64) of each tile; ping-pong: tiles j % 2 == wgi
  const int warp = (tid % 128) / 32, lane = tid % 32;
  float* epi = reinterpret_cast<float*>(base + G::kPipe + (wgi * 4 + warp) * kWgEpiWarp);  // (16, kWgEpiRow)
  const std::uint32_t b_addr = smem_addr(Bs);
  StageRing<STAGES> ring;
  if constexpr (kPing) {
    float lo[BN / 2], hi[BN / 2];  // rows [0, 64) and [64, 128) of the tile
    std::uint32_t turn_phase = 0;
    long long j = wgi;  // the block's tile number
    for (int t = blockIdx.x + wgi * gridDim.x; t < tiles; t += 2 * gridDim.x, j += 2) {
      const int nt = t % n_tiles, rest = t / n_tiles, mt = rest % m_tiles, g = rest / m_tiles;
      const int m0 = mt * kWgBM, n0 = nt * BN;
      if (j > 0) {  // the other warpgroup has passed the last full barrier of tile j - 1
        mbar_wait(turn0 + 8 * wgi, turn_phase);
        turn_phase ^= 1;
      }
      ring.seek(j * k_tiles);
      ws_tile_mma<BN, STAGES, true>(lo, hi, ring, k_tiles, full0, empty0, smem_addr(As), b_addr, lane,
                                    lane == 0 ? turn0 + 8 * (1 - wgi) : 0u);
      wgmma_warp_epilogue<BN>(a, lo, epi, m0 + warp * 16, n0, g, lane);
      wgmma_warp_epilogue<BN>(a, hi, epi, m0 + 64 + warp * 16, n0, g, lane);
    }
  } else {
    float acc[BN / 2];
    const std::uint32_t a_addr = smem_addr(As) + wgi * 64 * kWgRowBytes;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int nt = t % n_tiles, rest = t / n_tiles, mt = rest % m_tiles, g = rest / m_tiles;
      const int m0 = mt * kWgBM, n0 = nt * BN;
      ws_tile_mma<BN, STAGES, false>(acc, acc, ring, k_tiles, full0, empty0, a_addr, b_addr, lane, 0u);
      wgmma_warp_epilogue<BN>(a, acc, epi, m0 + wgi * 64 + warp * 16, n0, g, lane);
    }
  }
#else
  (void)a;  // not sm_90a code: wgmma_available() is false and the launcher never runs this
#endif
}

// Bytes of dynamic shared memory for one launch of a kernel with geometry G (WgmmaGeom, WsGeom): the aligned
// main area, the K-column table of a k x k conv with k_tiles K tiles, and the slack that aligns the base to
// 1024 bytes. ktab_offset: where the table starts (0 without one).
template <typename G>
int wgmma_smem(bool pointwise, int k_tiles, int* ktab_offset) {
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
  const int smem = wgmma_smem<WgmmaGeom<BN, STAGES>>(pointwise, ceil_div(a.k_pad, kWgBK), &a.ktab_offset);
  const dim3 grid = gemm_grid(a, kWgBM, BN, 1, groups, conv_variants().raster_n);
  if (pointwise) launch_with_smem<conv2d_implicit_gemm_wgmma<BN, STAGES, true>>(grid, dim3(kWgThreads), smem, a, stream);
  else launch_with_smem<conv2d_implicit_gemm_wgmma<BN, STAGES, false>>(grid, dim3(kWgThreads), smem, a, stream);
}

// The warp-specialised kernel: one block per SM (at most one per output tile). max_grid > 0 caps the grid
// (the tests use it so that every block walks many tiles).
template <int BN, int STAGES, bool kPing>
void launch_ws_tile(const ImplicitGemmParams<__half>& params, int groups, bool pointwise, cudaStream_t stream,
                    int max_grid) {
  ImplicitGemmParams<__half> a = params;
  const int smem = wgmma_smem<WsGeom<BN, STAGES>>(pointwise, ceil_div(a.k_pad, kWgBK), &a.ktab_offset);
  const long long tiles = static_cast<long long>(ceil_div(a.m, kWgBM)) * ceil_div(a.n_g, BN) * groups;
  long long grid = tiles < device_info().sm_count ? tiles : device_info().sm_count;
  if (max_grid > 0 && grid > max_grid) grid = max_grid;
  const dim3 g(static_cast<unsigned>(grid));
  if (pointwise) launch_with_smem<conv2d_implicit_gemm_wgmma_ws<BN, STAGES, true, kPing>>(g, dim3(kWsThreads), smem, a, stream);
  else launch_with_smem<conv2d_implicit_gemm_wgmma_ws<BN, STAGES, false, kPing>>(g, dim3(kWsThreads), smem, a, stream);
}

// The instantiated configurations: (BN, STAGES), and whether warp-specialised (conv2d_implicit_gemm_wgmma_ws;
// its plans have 12 warps). Of the two-warpgroup kernel at most 128 columns two blocks share an SM (registers
// and shared memory allow it); wider tiles take one SM each. The warp-specialised kernel takes one SM with
// as many stages as fit beside its epilogue slices (about 213 KB of the 227); its ping-pong schedule (ping,
// eleventh session) at 64 and 128 columns, where a warpgroup's BN accumulators per thread fit its registers.
struct WgmmaTile {
  int bn, stages;
  bool ws = false;
  bool ping = false;
};
constexpr WgmmaTile kWgmmaTiles[] = {{64, 4},        {96, 3},        {128, 3},       {128, 4},
                                     {192, 4},       {256, 4},       {64, 8, true},  {128, 6, true},
                                     {192, 4, true}, {256, 4, true}, {64, 8, true, true}, {128, 6, true, true}};

// f(bn, stages, ws, ping) with all four as compile-time constants (std::integral_constant) for the
// instantiated tile t (kWgmmaTiles; an unknown one is taken as the last of its kind).
template <typename F>
decltype(auto) with_wgmma_tile(const WgmmaTile& t, F&& f) {
  using std::integral_constant;
  using No = std::false_type;
  using Yes = std::true_type;
  if (t.ws && t.ping) {
    if (t.bn == 64) return f(integral_constant<int, 64>{}, integral_constant<int, 8>{}, Yes{}, Yes{});
    return f(integral_constant<int, 128>{}, integral_constant<int, 6>{}, Yes{}, Yes{});
  }
  if (t.ws) {
    switch (t.bn) {
      case 64: return f(integral_constant<int, 64>{}, integral_constant<int, 8>{}, Yes{}, No{});
      case 128: return f(integral_constant<int, 128>{}, integral_constant<int, 6>{}, Yes{}, No{});
      case 192: return f(integral_constant<int, 192>{}, integral_constant<int, 4>{}, Yes{}, No{});
      default: return f(integral_constant<int, 256>{}, integral_constant<int, 4>{}, Yes{}, No{});
    }
  }
  switch (t.bn * 10 + t.stages) {
    case 644: return f(integral_constant<int, 64>{}, integral_constant<int, 4>{}, No{}, No{});
    case 963: return f(integral_constant<int, 96>{}, integral_constant<int, 3>{}, No{}, No{});
    case 1283: return f(integral_constant<int, 128>{}, integral_constant<int, 3>{}, No{}, No{});
    case 1284: return f(integral_constant<int, 128>{}, integral_constant<int, 4>{}, No{}, No{});
    case 1924: return f(integral_constant<int, 192>{}, integral_constant<int, 4>{}, No{}, No{});
    default: return f(integral_constant<int, 256>{}, integral_constant<int, 4>{}, No{}, No{});
  }
}

int wgmma_smem_of(const WgmmaTile& t, bool pointwise, int k_tiles) {
  return with_wgmma_tile(t, [&](auto bn, auto stages, auto ws, auto) {
    int off = 0;
    if constexpr (ws()) return wgmma_smem<WsGeom<bn(), stages()>>(pointwise, k_tiles, &off);
    else return wgmma_smem<WgmmaGeom<bn(), stages()>>(pointwise, k_tiles, &off);
  });
}

ConvPlan wgmma_tile_plan(const WgmmaTile& t) {
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::implicit_gemm_wgmma;
  plan.bm = kWgBM;
  plan.bn = t.bn;
  plan.bk = kWgBK;
  plan.stages = t.stages;
  plan.warps = t.ws ? kWgmmaWsWarps : kWgThreads / 32;
  plan.split = 1;
  plan.pingpong = t.ping;
  return plan;
}

WgmmaTile plan_tile(const ConvPlan& plan) {
  return WgmmaTile{plan.bn, plan.stages, plan.warps == kWgmmaWsWarps, plan.pingpong};
}

// Whether a tile's launch fits the device's shared memory for this shape (the K-column table grows with K).
bool wgmma_fits(const ConvShape& s, const WgmmaTile& t) {
  const int k_tiles = ceil_div(gemm_layout(s).k_pad, kWgBK);
  return static_cast<std::size_t>(wgmma_smem_of(t, is_pointwise(s), k_tiles)) <= device_info().smem_per_block_optin;
}

// The warp-specialised tile of width bn and schedule ping, if one is instantiated.
bool ws_tile(int bn, WgmmaTile& t, bool ping = false) {
  for (const WgmmaTile& c : kWgmmaTiles)
    if (c.ws && c.ping == ping && c.bn == bn) {
      t = c;
      return true;
    }
  return false;
}

}  // namespace

bool& plan_without_device_as_sm90a() {
  static bool on = false;
  return on;
}

bool wgmma_available() {
  if (plan_without_device_as_sm90a()) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return true;  // no device: planning only (tools/dev/rule_replay.cu)
    }
  }
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
  for (const WgmmaTile& t : kWgmmaTiles)  // both kernels
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
// Ninth session (docs/kernels-conv.md), each under its variant:
//   f16_wgmma_short: 1x1 convs with a K of at most 2 tiles stay on mma.sync unless the tile is 96 wide
//     (yolo12x's 1x1 96->48 at 160x160, batch 32: 0.17 ms on 128x64 wgmma tiles, 0.12 on mma.sync;
//     yolo12n's 96->128 at 80x80: 0.087 against 0.064);
//   f16_wgmma_ws: tiles of at least 192 columns with at least 14 K tiles on a grid of at least 4 blocks per
//     SM go to the warp-specialised kernel (yolo12x at batch 32: 1.03-1.17x on each such conv, e.g. the
//     1x1 1536->384 at 40x40 0.226 -> 0.193 ms; everywhere else it was slower, down to 0.65x on short K).
// Eleventh session, variant f16_wgmma_ping: 1x1 convs with a long K (at least 18 tiles) and channels that
// 128 divides, on a grid of at least 4 such tiles per SM, go to the warp-specialised kernel's ping-pong
// schedule, 128 wide (yolo12x at batch 32, tuning's choice there: the 1x1 1152->768 at 40x40 0.586 ->
// 0.563 ms, 1536->768 at 20x20 0.225 -> 0.202, 1920->768 +res 0.519 -> 0.494). On a short K it was slower
// everywhere (the 1x1 384->384 at 160x160 1.15 -> 1.45 ms), so the epilogue is not what limits those.
// Twelfth session, variant f16_wgmma_waves: grids of at least 4 tiles of 128 x 64 per SM go through
// wgmma_plan_waves above instead (the ping-pong schedule is then a tuning candidate only).
namespace {
// Twelfth session (variant f16_wgmma_waves, on), for grids of at least two waves of 128 x 64 tiles (4 per SM;
// wgmma_plan below sends the others through the earlier rule): the tile that finishes first by a model of waves.
// With the column-tile-fastest block order (raster_n), tuning on yolo12x at batch 32 chose, for most convs, the
// two-warpgroup kernel's 128 x 128 tile (two blocks per SM) over the warp-specialised and ping-pong ones, and
// narrower tiles where the last wave would be nearly empty (3x3 192->192 at 40x40: 400 tiles of 128 x 192 are
// 3.03 waves of one per SM; 1200 of 128 x 64 are 4.5 of two); the earlier rule lost 3 % on the whole network
// there (30.45 against 29.51 ms). The model: a width bn (instantiated, N-padding at most 1/8 of the tile
// columns, 96 for 65..96 channels, 64 always) runs blocks(bn) tiles in waves of per_sm(bn) blocks on every SM
// (2 up to 128 columns, 1 above), each wave taking per_sm * bn / speed(bn) in units of one 1-column tile's
// work, where speed (relative MMA throughput per SM, read off the same tuning) is 0.85 at 64 columns, 0.92 at
// 96, 1 at 128, 0.85 for the two-warpgroup kernel above 128 (one block per SM; 1 from 64 K tiles since the
// thirty-first session), and for the warp-specialised
// kernel (192 and 256 columns, 14+ K tiles, 4+ blocks per SM) 1 with 32+ K tiles, else 0.95. The cheapest
// width wins, the wider one on a tie. Before it: 1x1 convs with at most 4 K tiles stay on mma.sync (yolo12x's
// 96->96 and 192->192 at 160x160: 0.254 -> 0.215 and 0.517 -> 0.490 ms; a first version that kept 40x40 and
// 20x20 ones on wgmma made yolo12s at batch 32 1.6 % slower: its 128->256 at 40x40 0.036 -> 0.046), and so do
// 1x1 convs with at most 6 K tiles and 256+ channels over 4+ row tiles per SM (was 3: at 40x40, 400 row
// tiles, tuning now chose wgmma 128 x 128) or over 3+ where no width of 96+ divides the channels (460 + 4).
// l, m_tiles, k_tiles: s's GEMM layout, 128-row tiles and K tiles of 64, as wgmma_plan has them. few_rows (variant
// f16_wgmma_fewrows, wgmma_plan below): a 1x1 conv with 2-4 K tiles is not kept on mma.sync.
bool wgmma_plan_waves(const ConvShape& s, const GemmLayout& l, long long m_tiles, int k_tiles, long long sms,
                      ConvPlan& plan, bool few_rows, const ConvVariants& v) {
  const bool pointwise = is_pointwise(s);
  // Twenty-eighth session: 65..96 channels with 3-4 K tiles are taken here (on the 96-wide tile the model picks),
  // where mma.sync ran them on three 32-wide column tiles: yolo12m's 1x1 256->80 at 80x80, batch 32, 0.115 -> 0.065 ms
  // (H100, tune log), yolo12l's 0.106 -> 0.071 and yolo12x's 192->96 0.094 -> 0.076 (H200, fifteenth session). With
  // 2 K tiles (yolo12n's 80->80) wgmma won on the H100 (0.056 -> 0.047-0.051) but lost on the H200 (0.052-0.059 ->
  // 0.057-0.067), so those stay.
  // Variant f16_n96_short (thirty-fifth session, off): with 2 K tiles too, over fewer than 16 row tiles per SM
  // (80x80 at batch 32; yolo12x's 96->96 at 160x160 was slower on the 96-wide tile in the H200's log).
  const bool narrow96 = l.n_g > 64 && l.n_g <= 96 &&
                        (k_tiles >= 3 || (v.f16_n96_short && k_tiles == 2 && m_tiles < 16 * sms));
  if (pointwise && k_tiles <= 4 && !few_rows && !narrow96) return false;
  bool divides = false;  // a width of 96+ divides the channels
  for (const int bn : {256, 192, 128, 96}) divides = divides || l.n_g % bn == 0;
  // Twenty-eighth session: with 5-6 K tiles only over 16+ row tiles per SM (160x160 at batch 32; was 4+): yolo12m's
  // 1x1 384->512 at 80x80, batch 32 (12 row tiles per SM), 0.355 on mma.sync 128x128 -> 0.304 ms on wgmma 128x128
  // (H100); yolo12x's 384->384 there 0.291 -> 0.296 (H200, fifteenth session, before the seventeenth's epilogue
  // change). With 4 K tiles the GPUs disagree (yolo12m's 256->256 at 80x80 0.151 -> 0.139 on the H100, yolo12l's
  // 0.160 -> 0.179 on the H200's older log), so those stay from 4 row tiles per SM.
  // Twenty-ninth session: the clause for channels no width of 96+ divides holds from 5 K tiles only (yolo12x's 384->464
  // at 40x40, where mma.sync and wgmma were even on the H200). With 4 (yolo12l's MLP 256->312 at 40x40, batch 32) the
  // 128 x 64 wgmma tile the model picks won on both GPUs: 0.063 -> 0.048 ms on the H100 (twenty-ninth session's tune
  // log), 0.069 -> 0.063 on the H200 (fifteenth session).
  const long long rows_min = (k_tiles <= 4 ? 4 : 16) * sms;
  if (pointwise && k_tiles <= 6 && l.n_g >= 256 &&
      (m_tiles >= rows_min || (!divides && k_tiles >= 5 && m_tiles >= 3 * sms)))
    return false;
  double best = 0;
  bool found = false;
  for (const int bn : {256, 192, 128, 96, 64}) {
    if (pointwise && k_tiles < 16 && bn > 128) continue;
    const long long cols = ceil_div(l.n_g, bn);
    if (bn != 64 && cols * bn * 8 > 9LL * l.n_g && !(bn == 96 && l.n_g > 64 && l.n_g <= 96)) continue;
    const long long blocks = m_tiles * cols * s.groups;
    WgmmaTile t{bn, bn == 64 || bn > 128 ? 4 : 3};
    int per_sm = 2;
    double speed = bn == 64 ? 0.85 : bn == 96 ? 0.92 : 1.0;
    if (bn > 128) {
      per_sm = 1;
      // Thirty-first session: 1.0 from 64 K tiles (was 0.85 everywhere), so the 128 x 256 tile ties 128 x 128 on
      // 1.5 waves and the wider wins: yolo12m / l's 3x3/2 512->512 at 40x40, batch 32 (72 K tiles), 0.146 -> 0.131-0.136
      // ms on the H100 (twenty-ninth session's logs), 0.158 -> 0.155 on the H200 (fifteenth session's l). With 36 K
      // tiles (the 3x3/2 256->256 at 80x80) the GPUs disagree (H100 0.164 -> 0.158, H200 0.177 -> 0.193), so it stays.
      speed = k_tiles >= 64 ? 1.0 : 0.85;
      WgmmaTile w;
      if (k_tiles >= 14 && blocks >= 4 * sms && ws_tile(bn, w)) {
        t = w;
        speed = k_tiles >= 32 ? 1.0 : 0.95;
        // Twenty-eighth session: 256 columns run as the ping-pong schedule of the 128-wide tile (two 128 x 128 tiles
        // in flight per block, the same 256 columns per SM). yolo12m's 3x3/2 256->256 at 160x160 and 512->512 at
        // 80x80, batch 32, on the H100: 0.751 / 0.559 ms on 128x256 ws, 0.552 / 0.526 on 128x128 ping-pong; on the
        // H200 (yolo12l, fifteenth session) 0.571 / 0.512 against 0.556 / 0.528. (The two-warpgroup 128x256 tile,
        // 0.527 / 0.485 on the H100, was 0.611 / 0.533 on the H200.)
        WgmmaTile ping;
        if (bn == 256 && ws_tile(128, ping, true) && wgmma_fits(s, ping)) t = ping;
      }
    }
    if (!wgmma_fits(s, t)) continue;
    const long long waves = (blocks + per_sm * sms - 1) / (per_sm * sms);
    const double cost = static_cast<double>(waves) * per_sm * bn / speed;
    if (!found || cost < best * (1 - 1e-9)) {
      best = cost;
      plan = wgmma_tile_plan(t);
      found = true;
    }
  }
  // Variant f16_wgmma_ws_s2 (thirty-fifth session, off): a 3x3/2 conv the model put on the two-warpgroup 128-wide
  // tile, over 3+ row tiles per SM, on the warp-specialised 128-wide tile. The H100's tuning logs had it faster on
  // every such conv (yolo12s's 128->128 at 160x160, batch 32: 0.194 -> 0.169 ms), the H200's older ones slower.
  WgmmaTile ws;
  if (found && v.f16_wgmma_ws_s2 && s.k > 1 && s.stride == 2 && plan.bn == 128 && plan.warps != kWgmmaWsWarps &&
      m_tiles >= 3 * sms && ws_tile(128, ws) && wgmma_fits(s, ws))
    plan = wgmma_tile_plan(ws);
  return found;
}
}  // namespace

bool wgmma_plan(const ConvShape& s, const DeviceInfo& dev, ConvPlan& plan, const ConvVariants& v) {
  if (!wgmma_takes(s)) return false;
  const GemmLayout l = gemm_layout(s);
  const long long m_tiles = ceil_div(s.batch * s.ho * s.wo, kWgBM), sms = dev.sm_count;
  const int k_tiles = ceil_div(l.k_pad, kWgBK);
  const bool pointwise = is_pointwise(s);
  if (l.n_g < 48 || k_tiles < 2) return false;
  // Eighteenth session, variant f16_wgmma_fewrows: 1x1 convs with a K of 2-4 tiles over at most 4 row tiles per SM
  // (yolo12's 40x40 and 20x20 maps at batch 32) take the wgmma kernel too: after the seventeenth session's epilogue
  // change it beat mma.sync there by 15-40 % on the H100's tune log (yolo12n's 128->64 at 40x40 0.0137 -> 0.0112
  // ms; 128->384 at 20x20 0.0144 -> 0.0124), and lost on larger maps (96->128 at 80x80).
  const bool few_rows = v.f16_wgmma_fewrows && pointwise && k_tiles >= 2 && k_tiles <= 4 && m_tiles <= 4 * sms;
  if (v.f16_wgmma_waves && m_tiles * ceil_div(l.n_g, 64) * s.groups >= 4 * sms)
    return wgmma_plan_waves(s, l, m_tiles, k_tiles, sms, plan, few_rows, v);
  std::vector<int> widths;  // widest first, 64 last in any case (padding the last N tile)
  for (const int bn : {256, 192, 128, 96})
    if (l.n_g % bn == 0 && !(pointwise && k_tiles < 16 && bn > 128)) widths.push_back(bn);
  if (widths.empty() && l.n_g > 64 && l.n_g <= 96) widths.push_back(96);
  widths.push_back(64);
  const auto blocks = [&](int bn) { return m_tiles * ceil_div(l.n_g, bn) * s.groups; };
  const auto large = [&](int bn) { return 2 * blocks(bn) >= 3 * sms; };  // 1.5 blocks per SM
  // Twenty-eighth session: with 8+ K tiles, 128 x 64 tiles that give a third of the SMs a block (batch 1 at 40x40 and
  // 80x80) beat mma.sync's split-K, which the small grid left them on: yolo12m's 1x1 512->256 at 40x40 (52 tiles)
  // 0.0104 -> 0.0068 ms, 1024->256 0.0132 -> 0.0092, 3x3 256->64 at 80x80 0.0244 -> 0.0169, 3x3 64->64 there
  // 0.0099 -> 0.0088 (H100); yolo12l's 512->256 0.0101 -> 0.0089 and 3x3 256->64 0.0242 -> 0.0191 (H200). Under 8 K
  // tiles the H200's log lost (1x1 256->256 at 40x40: 0.0068 -> 0.0074); on 32 tiles (20x20) it lost too (1x1
  // 1024->512: 0.0108 -> 0.0110; 3x3/2 512->512 0.0264 -> 0.0282 on the H100).
  const auto a_third = [&](int bn) { return k_tiles >= 8 && 3 * blocks(bn) >= sms; };
  if (v.f16_wgmma_ping && pointwise && k_tiles >= 18 && l.n_g % 128 == 0 && blocks(128) >= 4 * sms) {
    WgmmaTile t;
    if (ws_tile(128, t, true) && wgmma_fits(s, t)) {
      plan = wgmma_tile_plan(t);
      return true;
    }
  }
  const auto pick = [&](int bn, int stages) {
    if (v.f16_wgmma_short && pointwise && k_tiles <= 2 && bn != 96 && !few_rows) return false;
    WgmmaTile t{bn, stages};
    WgmmaTile w;
    if (v.f16_wgmma_ws && bn >= 192 && k_tiles >= 14 && blocks(bn) >= 4 * sms && ws_tile(bn, w) && wgmma_fits(s, w))
      t = w;
    else if (!wgmma_fits(s, t))
      return false;
    plan = wgmma_tile_plan(t);
    return true;
  };
  if (k_tiles >= 32) {  // long K: the widest tile that gives half the SMs a block
    for (const int bn : widths)
      if (2 * blocks(bn) >= sms) return pick(bn, bn == 96 || (bn == 128 && large(bn)) ? 3 : 4);
    return a_third(64) && pick(64, 4);
  }
  // Thirty-fifth session: a k x k conv whose channels 128 divides, where 128-wide tiles give between half the SMs and
  // all of them one block, takes those on 4 stages rather than twice as many 64-wide ones: yolo12s / m / l's 3x3
  // 128->128 at 20x20, batch 32 (100 tiles), 15 % faster in every H100 tune log (s 0.0722 -> 0.0614 ms over four
  // convs, thirty-fifth session; m 0.0746 -> 0.0633 and l 0.1481 -> 0.1254, twenty-ninth), even on the H200 (l's
  // eight, fifteenth session: 0.1648 -> 0.1643). The A rows are read once instead of once per column tile.
  if (!pointwise && l.n_g % 128 == 0 && 2 * blocks(128) >= sms && blocks(128) <= sms) return pick(128, 4);
  for (const int bn : widths)
    if (large(bn)) {
      if (pointwise && k_tiles <= 6 && l.n_g >= 256 && m_tiles >= 3 * sms) return false;
      return pick(bn, bn == 96 || bn == 128 ? 3 : 4);
    }
  if (2 * blocks(64) >= sms) return pick(64, 4);
  return a_third(64) && pick(64, 4);
}

namespace {
// wgmma_runs for params a = make_params(a's shape and views).
bool wgmma_runs(const ImplicitGemmParams<__half>& a) {
  return wgmma_takes(a) && a.vec_a && (is_pointwise(a) || ktable_fits(a));
}
}  // namespace

bool wgmma_runs(const ConvParams<__half>& p) { return wgmma_runs(make_params(p)); }

void launch_conv2d_implicit_gemm_wgmma(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream,
                                       int max_grid) {
  const ImplicitGemmParams<__half> a = make_params(p);
  if (!wgmma_runs(a)) {
    launch_conv2d_implicit_gemm_f16(p, mma_sync_stand_in(plan.bn), stream);
    return;
  }
  with_wgmma_tile(plan_tile(plan), [&](auto bn, auto stages, auto ws, auto ping) {
    if constexpr (ws()) launch_ws_tile<bn(), stages(), ping()>(a, p.groups, is_pointwise(p), stream, max_grid);
    else launch_wgmma_tile<bn(), stages()>(a, p.groups, is_pointwise(p), stream);
  });
}

}  // namespace yolo12::cuda::conv_detail
