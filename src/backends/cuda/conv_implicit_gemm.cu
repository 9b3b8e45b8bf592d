// src/backends/cuda/conv_implicit_gemm.cu - every non-depthwise conv as an implicit GEMM, NHWC (the GEMM
// of a conv, its parameters and its row origins: conv_gemm.cuh).
// A is never materialised: each K tile of A is gathered from x while it is loaded into shared memory.
// The epilogue (bias, SiLU, gamma, residual) is applied to the fp32 accumulators, which are then
// written straight into the output's channel slice.
//
// conv2d_implicit_gemm_f16: tensor cores through mma.sync m16n8k16 (fp16 in, fp32 accumulate), tiles
//   fed by cp.async (16-byte chunks, zero-filled outside the image) in a multi-stage pipeline,
//   fragments read with ldmatrix. When c_in / groups or ldx is not a multiple of 8 (the stem's 3
//   channels, a slice at an odd offset) the A chunks are gathered with scalar loads instead.
//   Split-K over a thread-block cluster: when the output tiles are too few to fill the GPU (batch 1 at
//   20x20 and 40x40), SPLIT blocks of one cluster share an output tile, each summing its own range of
//   K tiles; the partial fp32 tiles meet in distributed shared memory, where each block of the cluster
//   adds up 1/SPLIT of the rows and runs the epilogue on them. No workspace, no second kernel.
// conv2d_implicit_gemm_f32: the same GEMM on the CUDA cores (FFMA, 4x4 outputs per thread), fp32
//   exact (no tf32), with the next K tile prefetched into registers during the current one.
#include <cstdint>
#include <vector>

#include <cooperative_groups.h>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "mma.cuh"
#include "launch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

// Bias, SiLU, gamma, residual for output (row m, group channel n), written as T.
template <typename T>
__device__ __forceinline__ void store_output(const ImplicitGemmParams<T>& a, int m, int n, float v0, float v1) {
  if (m >= a.m || n >= a.n_g) return;
  const int c = blockIdx.z * a.n_g + n;
  const bool two = n + 1 < a.n_g;
  v0 = epilogue<T>(v0, a.bias, a.gamma, a.silu(), c);
  if (two) v1 = epilogue<T>(v1, a.bias, a.gamma, a.silu(), c + 1);
  T* yp = a.y + static_cast<long long>(m) * a.ldy + c;
  const T* rp = a.residual ? a.residual + static_cast<long long>(m) * a.ldr + c : nullptr;
  if constexpr (sizeof(T) == 2) {
    if (two && a.pair_out) {
      if (rp) {
        const float2 r = __half22float2(*reinterpret_cast<const __half2*>(rp));
        v0 += r.x;
        v1 += r.y;
      }
      *reinterpret_cast<__half2*>(yp) = __floats2half2_rn(v0, v1);
      return;
    }
  }
  if (rp) v0 += to_float(rp[0]);
  yp[0] = from_float<T>(v0);
  if (two) {
    if (rp) v1 += to_float(rp[1]);
    yp[1] = from_float<T>(v1);
  }
}

// ---- fp16: mma.sync m16n8k16 ---------------------------------------------------------------------

// A shared-memory row of a K tile holds BK halves + 8 of padding (80 B at BK = 32, 144 B at BK = 64),
// which makes the 8 rows of each ldmatrix phase hit distinct banks.
constexpr int smem_row_halves(int bk) { return bk + 8; }

// Block tile BM x BN, warps arranged WARPS_M x WARPS_N, STAGES K tiles in flight.
// BK: K tile (32, or 64 for half the barriers and address work per MMA; packed K is padded to 32 only,
// so at BK = 64 the last tile's upper half is zero-filled).
// kPointwise: 1x1, stride 1, pad 0 (row m reads input pixel m). kVecA: 16-byte A chunks (cp.async).
// SPLIT: blocks per output tile (split-K, BK = 64 only). The grid (conv_gemm.cuh: gemm_grid) has SPLIT
// consecutive x per output tile, launched as clusters of (SPLIT, 1, 1), so the blocks of one cluster are the
// SPLIT ranks of one output tile.
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool kPointwise, bool kVecA, int SPLIT = 1>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32)
    conv2d_implicit_gemm_f16(const ImplicitGemmParams<__half> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  static_assert(SPLIT == 1 || BK == 64, "split-K reduces through the staged epilogue of BK = 64");
  static_assert(BM % SPLIT == 0, "each rank of a split finishes BM / SPLIT rows");
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MI = WM / 16, NI = WN / 8;
  static_assert(NI % 2 == 0, "B fragments are read two n8 blocks at a time");
  constexpr int kRowHalves = smem_row_halves(BK);
  static_assert(BK % kTileK == 0, "BK is a multiple of 32");
  constexpr int kChunksPerRow = kTileK / kChunk;  // 4 threads per row, each BK / 32 chunks of 8
  constexpr int kARows = kThreads / kChunksPerRow;  // rows one pass of the block loads
  constexpr int kAPasses = BM / kARows;
  constexpr int kBPasses = (BN + kARows - 1) / kARows;
  static_assert(BM % kARows == 0, "A tile rows must split evenly over the threads");

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // a.smem_stages <= STAGES stages: a K loop of fewer tiles than STAGES fills only the first ones.
  __half* As = reinterpret_cast<__half*>(smem_raw);           // (smem_stages, BM, kRowHalves)
  __half* Bs = As + a.smem_stages * BM * kRowHalves;           // (smem_stages, BN, kRowHalves)

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const GemmTile tile = gemm_tile<BM, BN, SPLIT>(a.n_tiles);  // conv_gemm.cuh: gemm_grid's block order
  const int m0 = tile.m0, n0 = tile.n0;
  const int rank = tile.rank;  // == the block's rank in its cluster
  const int g = blockIdx.z;
  const int chunk = tid % kChunksPerRow;  // this thread's 8-element column of every K tile
  const int row0 = tid / kChunksPerRow;

  // Per-thread A rows: their input origin, computed once (conv_gemm.cuh: gemm_row_origin).
  constexpr bool kTable = kVecA && !kPointwise;
  RowOrigin<__half> rows[kAPasses];
#pragma unroll
  for (int i = 0; i < kAPasses; ++i) rows[i] = gemm_row_origin<kPointwise, kTable>(a, m0 + row0 + i * kARows, g);
  const __half* wg = a.w + static_cast<long long>(g) * a.n_g * a.k_pad;  // (n_g, k_pad)
  // This rank's K tiles: [kt_begin, kt_begin + num_k_tiles) of all (a rank may get none).
  const int all_k_tiles = (a.k_pad + BK - 1) / BK;
  const int kt_begin = rank * all_k_tiles / SPLIT;
  const int num_k_tiles = (rank + 1) * all_k_tiles / SPLIT - kt_begin;

  // The K-column table of a k x k conv (kTable; conv_gemm.cuh: fill_ktable).
  int2* ktab = reinterpret_cast<int2*>(smem_raw + a.ktab_offset);  // (all_k_tiles * BK / kChunk)
  if constexpr (kTable) {
    fill_ktable(a, ktab, all_k_tiles * (BK / kChunk), tid, kThreads);
    __syncthreads();
  }

  // B rows (every path), and A rows of 1x1 convs with 16-byte chunks (kPointwise && kVecA), load through pointers
  // made once here: each of this thread's rows at its chunk of this rank's first K tile, and whether the row exists.
  // A K tile then costs one offset add and a predicate per chunk; computing each chunk's address and zero-fill size
  // from scratch took about 20 instructions per cp.async, more than the tile's MMAs and fragment loads together
  // (twenty-eighth session, the SASS of the 1x1 128 x 64 tile: 120 of a K tile's 190 instructions).
  constexpr bool kPtrLoads = kPointwise && kVecA;
  const __half* a_ptr[kAPasses];  // row m0 + row0 + i * kARows of x at K column kt_begin * BK + chunk * kChunk
  bool a_row[kAPasses];
  int b_idx[kBPasses];  // element offset in wg of row n0 + row0 + i * kARows at the same K column (every path; 32-bit
                       // where a pointer took two registers more: the 128 x 128 tile reached 130 and lost its second
                       // block per SM)
  bool b_row[kBPasses];
  const int k_first = kt_begin * BK + chunk * kChunk;  // the pointers' K column
  if constexpr (kPtrLoads) {
#pragma unroll
    for (int i = 0; i < kAPasses; ++i) {
      a_row[i] = rows[i].iy0 == 0;  // gemm_row_origin: row 0's base where m >= M
      a_ptr[i] = rows[i].base + k_first;
    }
  }
#pragma unroll
  for (int i = 0; i < kBPasses; ++i) {  // every path loads B so
    const int r = row0 + i * kARows, n = n0 + r;
    b_row[i] = r < BN && n < a.n_g;
    b_idx[i] = (b_row[i] ? n : 0) * a.k_pad + k_first;  // under 2^31: conv_pack_weights refuses more
  }
  // The B rows of one K tile (the weights, (n_g, k_pad) halves per group), into stage row r = row0 + i * kARows;
  // koff: the chunk's K column less k_first. A chunk past k_pad is zero-filled from its row's start.
  const auto load_b = [&](__half* bs, int koff, bool b_in) {
    const int b_off = b_in ? koff : -k_first;
#pragma unroll
    for (int i = 0; i < kBPasses; ++i) {
      const int r = row0 + i * kARows;
      if (BN % kARows == 0 || r < BN) cp_async_16(bs + r * kRowHalves, wg + (b_idx[i] + b_off), b_row[i] && b_in ? 16 : 0);
    }
  };

  auto load_tile = [&](int kt, int stage) {
#pragma unroll
   for (int hk = 0; hk < BK / kTileK; ++hk) {
    const int kcol = hk * kTileK + chunk * kChunk;  // column inside the tile
    const int kk = (kt_begin + kt) * BK + kcol;
    if constexpr (kPtrLoads) {
      // Past K the chunk is zero-filled (src-size 0) from its row's start, and a missing row's pointer is row 0's:
      // every source address stays inside x and w, so no select of a fallback pointer per chunk.
      const int koff = kt * BK + hk * kTileK;  // from the pointers' K column
      const bool a_in = kk < a.k_real;
      const int a_off = a_in ? koff : -k_first;
      __half* as = As + stage * BM * kRowHalves + kcol;
#pragma unroll
      for (int i = 0; i < kAPasses; ++i)
        cp_async_16(as + (row0 + i * kARows) * kRowHalves, a_ptr[i] + a_off, a_row[i] && a_in ? 16 : 0);
      load_b(Bs + stage * BN * kRowHalves + kcol, koff, kk < a.k_pad);
      continue;
    }
    __half* as = As + stage * BM * kRowHalves;
    int2 tap = make_int2(0, 0);
    if constexpr (kTable) tap = ktab[kk / kChunk];
    const int tap_dy = tap.y >> 16, tap_dx = tap.y & 0xffff;
#pragma unroll
    for (int i = 0; i < kAPasses; ++i) {
      const int r = row0 + i * kARows;
      __half* dst = as + r * kRowHalves + kcol;
      if constexpr (kTable) {
        const bool ok = table_chunk_read(a, rows[i], tap_dy, tap_dx, kk);
        cp_async_16(dst, ok ? rows[i].base + tap.x : a.x, ok ? 16 : 0);
        continue;
      }
      long long off;
      if constexpr (kPointwise) off = (rows[i].iy0 == 0 && kk < a.k_real) ? kk : -1;
      else off = a_offset(a, rows[i], kk);
      if constexpr (kVecA) {
        cp_async_16(dst, off >= 0 ? rows[i].base + off : a.x, off >= 0 ? 16 : 0);
      } else {
        const int ci = kk % a.cin_pad;  // channels ci..ci+7 of one tap; those >= cin_g read zero
        __align__(16) __half v[kChunk];
#pragma unroll
        for (int j = 0; j < kChunk; ++j)
          v[j] = (off >= 0 && ci + j < a.cin_g) ? rows[i].base[off + j] : __float2half_rn(0.f);
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
      }
    }
    load_b(Bs + stage * BN * kRowHalves + kcol, kt * BK + hk * kTileK, kk < a.k_pad);
   }
  };

  float acc[MI][NI][4];
  zero_accumulators(acc);

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_k_tiles) load_tile(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < num_k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt has landed for every thread; stage (kt - 1) % STAGES is free again
    const int next = kt + STAGES - 1;
    if (next < num_k_tiles) load_tile(next, next % STAGES);
    cp_async_commit();

    const __half* as = As + (kt % STAGES) * BM * kRowHalves;
    const __half* bs = Bs + (kt % STAGES) * BN * kRowHalves;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      std::uint32_t af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) load_a_frag(af[i], as, kRowHalves, wm * WM + i * 16, ks, lane);
#pragma unroll
      for (int j = 0; j < NI; j += 2) load_b_frag_pair(bf[j], bf[j + 1], bs, kRowHalves, wn * WN + j * 8, ks, lane);
      mma_grid(acc, af, bf);
    }
  }
  cp_async_wait<0>();

  if constexpr (BK == 64) {
    // Lab variant: bias and gamma of this thread's 2 * NI channels loaded once; the finished fp32 values
    // go through shared memory so that each thread then writes 16-byte row chunks (8 channels) with
    // the residual read the same way, instead of 4-byte pairs 8 rows apart.
    constexpr int kCRow = BN + 8;  // floats; float2 writes of a half-warp (4 rows) hit distinct banks
    static_assert(BM * kCRow * 4 <= STAGES * (BM + BN) * kRowHalves * 2, "C tile fits in the pipeline's smem");
    float2 bias_r[NI], gamma_r[NI];
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int n = n0 + wn * WN + j * 8 + (lane % 4) * 2;
      const int c = g * a.n_g + n;
      const bool ok0 = n < a.n_g, ok1 = n + 1 < a.n_g;
      bias_r[j] = make_float2(a.bias && ok0 ? __ldg(a.bias + c) : 0.f, a.bias && ok1 ? __ldg(a.bias + c + 1) : 0.f);
      gamma_r[j] = make_float2(a.gamma && ok0 ? __ldg(a.gamma + c) : 1.f, a.gamma && ok1 ? __ldg(a.gamma + c + 1) : 1.f);
    }
    __syncthreads();  // every warp is done reading As / Bs: the C tile reuses them
    float* Cs = reinterpret_cast<float*>(smem_raw);  // (BM, kCRow)
    // Stages the tile, each value through fin(value, bias, gamma). With split-K the staged values are raw
    // partial sums: the epilogue runs after the reduction.
    const auto stage = [&](auto fin) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int r = wm * WM + i * 16 + lane / 4;
          const int cl = wn * WN + j * 8 + (lane % 4) * 2;
          *reinterpret_cast<float2*>(Cs + r * kCRow + cl) =
              make_float2(fin(acc[i][j][0], bias_r[j].x, gamma_r[j].x), fin(acc[i][j][1], bias_r[j].y, gamma_r[j].y));
          *reinterpret_cast<float2*>(Cs + (r + 8) * kCRow + cl) =
              make_float2(fin(acc[i][j][2], bias_r[j].x, gamma_r[j].x), fin(acc[i][j][3], bias_r[j].y, gamma_r[j].y));
        }
    };
    if constexpr (SPLIT == 1) with_epilogue(a.silu(), stage);
    else stage([](float v, float, float) { return v; });
    namespace cg = cooperative_groups;
    if constexpr (SPLIT > 1) cg::this_cluster().sync();  // every rank's partial tile is staged
    else __syncthreads();
    constexpr int kChunksN = BN / 8;
    constexpr int kRows = BM / SPLIT;  // rows this block finishes: [rank * kRows, (rank + 1) * kRows)
    for (int idx = tid; idx < kRows * kChunksN; idx += kThreads) {
      const int r = rank * kRows + idx / kChunksN, q = idx % kChunksN;
      const int m = m0 + r, n = n0 + q * 8;
      if (m >= a.m || n >= a.n_g) continue;
      float v[8];
      const long long c = static_cast<long long>(g) * a.n_g + n;
      if constexpr (SPLIT == 1) {
        load_staged8(Cs + r * kCRow + q * 8, v);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = 0.f;
#pragma unroll
        for (int src = 0; src < SPLIT; ++src) {  // the same rows of every rank's tile, rank order
          const float* cs = cg::this_cluster().map_shared_rank(Cs, src) + r * kCRow + q * 8;
          const float4 lo = *reinterpret_cast<const float4*>(cs);
          const float4 hi = *reinterpret_cast<const float4*>(cs + 4);
          v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w, v[4] += hi.x, v[5] += hi.y, v[6] += hi.z, v[7] += hi.w;
        }
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (n + e < a.n_g) v[e] = epilogue<__half>(v[e], a.bias, a.gamma, a.silu(), static_cast<int>(c) + e);
      }
      store_chunk8(a, m, c, n, v);
    }
    if constexpr (SPLIT > 1) cg::this_cluster().sync();  // no block leaves while others read its tile
  } else {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int m = m0 + wm * WM + i * 16 + lane / 4;
        const int n = n0 + wn * WN + j * 8 + (lane % 4) * 2;
        store_output(a, m, n, acc[i][j][0], acc[i][j][1]);
        store_output(a, m + 8, n, acc[i][j][2], acc[i][j][3]);
      }
  }
}

// The pipeline stages of one instantiation for a K loop of at most `k_tiles` tiles per block: the stages
// that loop can fill (a stage index is tile % STAGES, so fewer tiles than STAGES touch only the first
// k_tiles stages); all STAGES with fit_smem off. Its dynamic shared memory: those stages of A and B, and
// at BK = 64 at least the staged fp32 C tile. 1x1 convs with K <= 64 (one tile) then take 37 instead of
// 83 KiB at 128x64, so twice the blocks fit on an SM (registers allow four of 128 threads).
template <int STAGES>
int f16_tile_stages(int k_tiles, bool fit_smem) {
  return fit_smem && k_tiles < STAGES ? (k_tiles > 1 ? k_tiles : 1) : STAGES;
}
template <int BM, int BN, int BK>
int f16_tile_smem(int stages) {
  constexpr int stage = (BM + BN) * smem_row_halves(BK) * static_cast<int>(sizeof(__half));
  const int c_tile = BK == 64 ? BM * (BN + 8) * static_cast<int>(sizeof(float)) : 0;
  return stages * stage > c_tile ? stages * stage : c_tile;
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK = kTileK, int SPLIT = 1>
void launch_f16_tile(const ImplicitGemmParams<__half>& params, int groups, bool pointwise, bool vec_a, cudaStream_t stream) {
  ImplicitGemmParams<__half> a = params;
  a.smem_stages = f16_tile_stages<STAGES>(ceil_div(ceil_div(a.k_pad, BK), SPLIT), conv_variants().f16_fit_smem);
  int smem = f16_tile_smem<BM, BN, BK>(a.smem_stages);
  if (!pointwise && vec_a) {  // the K-column table after the pipeline (and the C tile that reuses it)
    a.ktab_offset = round_up(smem, 16);
    smem = a.ktab_offset + ceil_div(a.k_pad, BK) * (BK / kChunk) * static_cast<int>(sizeof(int2));
  }
  const dim3 grid = gemm_grid(a, BM, BN, SPLIT, groups, conv_variants().raster_n);
  const dim3 block(WARPS_M * WARPS_N * 32);
  if (pointwise && vec_a)
    launch_with_smem<conv2d_implicit_gemm_f16<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, true, SPLIT>>(grid, block, smem, a, stream, SPLIT);
  else if (pointwise)
    launch_with_smem<conv2d_implicit_gemm_f16<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, false, SPLIT>>(grid, block, smem, a, stream, SPLIT);
  else if (vec_a)
    launch_with_smem<conv2d_implicit_gemm_f16<BM, BN, BK, WARPS_M, WARPS_N, STAGES, false, true, SPLIT>>(grid, block, smem, a, stream, SPLIT);
  else
    launch_with_smem<conv2d_implicit_gemm_f16<BM, BN, BK, WARPS_M, WARPS_N, STAGES, false, false, SPLIT>>(grid, block, smem, a, stream, SPLIT);
}

// A BK = 64 tile configuration at split-K 1, 2, 4 or 8.
template <int BM, int BN, int WARPS_M, int WARPS_N>
void launch_f16_bk64_split(const ImplicitGemmParams<__half>& a, int groups, bool pointwise, bool vec_a, int split,
                           cudaStream_t stream) {
  switch (split) {
    case 8: launch_f16_tile<BM, BN, WARPS_M, WARPS_N, 3, 64, 8>(a, groups, pointwise, vec_a, stream); break;
    case 4: launch_f16_tile<BM, BN, WARPS_M, WARPS_N, 3, 64, 4>(a, groups, pointwise, vec_a, stream); break;
    case 2: launch_f16_tile<BM, BN, WARPS_M, WARPS_N, 3, 64, 2>(a, groups, pointwise, vec_a, stream); break;
    default: launch_f16_tile<BM, BN, WARPS_M, WARPS_N, 3, 64, 1>(a, groups, pointwise, vec_a, stream); break;
  }
}

// ---- fp32: CUDA-core SIMT ------------------------------------------------------------------------

constexpr int kF32TileM = 64, kF32TileN = 64, kF32TileK = 16, kF32Threads = 256;

template <bool kPointwise>
__global__ void __launch_bounds__(kF32Threads) conv2d_implicit_gemm_f32(const ImplicitGemmParams<float> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  __shared__ __align__(16) float As[kF32TileK][kF32TileM];  // transposed: k rows, m contiguous
  __shared__ __align__(16) float Bs[kF32TileK][kF32TileN];
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kF32TileM, n0 = blockIdx.y * kF32TileN, g = blockIdx.z;
  // Loads: thread -> (row, 4 consecutive k). Compute: thread -> 4x4 outputs.
  const int lrow = tid / 4, lk = (tid % 4) * 4;
  const int tm = (tid / 16) * 4, tn = (tid % 16) * 4;
  RowOrigin<float> row;
  const int m = m0 + lrow;
  if constexpr (kPointwise) {
    row.base = a.x + static_cast<long long>(m < a.m ? m : 0) * a.ldx + g * a.cin_g;
    row.iy0 = m < a.m ? 0 : -1;
  } else {
    row = row_origin(a, m, g);
  }
  const int n_load = n0 + lrow;
  const float* wrow = a.w + (static_cast<long long>(g) * a.n_g + (n_load < a.n_g ? n_load : 0)) * a.k_pad;  // (k_pad)

  float ra[4], rb[4];
  auto fetch = [&](int kt) {
    const int kk = kt * kF32TileK + lk;
    long long off;
    if constexpr (kPointwise) off = (row.iy0 == 0 && kk < a.k_real) ? kk : -1;
    else off = a_offset(a, row, kk);
    const int ci = kk % a.cin_pad;
#pragma unroll
    for (int j = 0; j < 4; ++j) ra[j] = (off >= 0 && ci + j < a.cin_g) ? __ldg(row.base + off + j) : 0.f;
    const float4 b = n_load < a.n_g ? __ldg(reinterpret_cast<const float4*>(wrow + kk)) : make_float4(0.f, 0.f, 0.f, 0.f);
    rb[0] = b.x;
    rb[1] = b.y;
    rb[2] = b.z;
    rb[3] = b.w;
  };

  float acc[4][4] = {};
  const int num_k_tiles = a.k_pad / kF32TileK;
  fetch(0);
  for (int kt = 0; kt < num_k_tiles; ++kt) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      As[lk + j][lrow] = ra[j];
      Bs[lk + j][lrow] = rb[j];
    }
    __syncthreads();
    if (kt + 1 < num_k_tiles) fetch(kt + 1);  // in flight while this tile is multiplied
#pragma unroll
    for (int k = 0; k < kF32TileK; ++k) {
      const float4 av = *reinterpret_cast<const float4*>(&As[k][tm]);
      const float4 bv = *reinterpret_cast<const float4*>(&Bs[k][tn]);
      const float am[4] = {av.x, av.y, av.z, av.w}, bn[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(am[i], bn[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    store_output(a, m0 + tm + i, n0 + tn, acc[i][0], acc[i][1]);
    store_output(a, m0 + tm + i, n0 + tn + 2, acc[i][2], acc[i][3]);
  }
}

}  // namespace

namespace {

// The sixth session's rules (variant f16_tiles2), fitted to what kernel tuning chose for yolo12n and
// yolo12s at batch 1 and 32 on the H200 (docs/kernels-conv.md, "Kernel tuning"). Large grid (128x64 tiles
// fill the SMs at least once): 8-warp tiles, 128 x (32, 64 or 128) by the channels, 64x32 for 3x3 convs of
// at most 32 channels; over 64 channels with a long K (over 4 tiles: yolo12m..x's wide layers) 128x128 as
// before, since narrower tiles there made yolo12x at batch 32 11 % slower (70.6 against 63.2 ms). Small grid (batch 1, and 20x20 at batch 32) with a short K (at most 6 tiles of 64):
// 64x32 tiles, the most blocks without split-K. Small grid, long K: the earlier tiles with split-K over
// at least 2 ranks, and more (4, 8) while the grid has under 1.5 blocks per SM. Returns false where it
// leaves the choice to the old rules (BK 32).
// tiles3 (variant f16_tiles3, the seventh session, after the K-column table made k x k gathers cheap; fitted
// to what tuning chose for yolo12n at batch 1 and 32): for at most 64 channels a grid of half the SMs in
// 128x64 tiles counts as large (batch 32 at 20x20: 128x64 on 8 warps without split-K); 3x3 convs of at
// most 32 channels take 128x32 like the 1x1 ones; on small grids, no split-K for at most 64 channels and a
// K of at most 12 tiles where the tiles alone give half the SMs a block (batch 1 at 80x80); the split grows
// only while the grid it makes stays within 1.5 blocks per SM. A first version applied the half-SM
// threshold and the no-split rule to every width and K: yolo12m..x at batch 1 (40x40 layers of 384
// channels, K up to 24 tiles, left with 39 blocks of 128x128) went from 1.17 / 1.90 / 2.81 to
// 1.21 / 1.94 / 3.21 ms. The narrower version here was not measured on the GPU (no device time left).
// tiles4 (variant f16_tiles4, the twelfth session, with the column-tile-fastest block order raster_n; fitted to
// tuning on yolo12s, l and x at batch 32): a short K (at most 4 tiles) over channels 128 divides takes 128x128 on
// 8 warps instead of 128x64 where that is at least 4 waves of two blocks per SM (yolo12l's 1x1 256->256 at
// 160x160: 0.768 -> 0.593 ms, at 80x80 0.202 -> 0.161; yolo12s's 192->256 at 80x80 0.172 -> 0.142); on fewer
// waves 128x64 stayed faster (yolo12s's 128->256 at 40x40, 800 tiles of 128x128).
// wide (variant f16_wide_tiles, off): over 128 channels with a long K, 128x256 where 256 divides the
// channels and 256x128 where 128 does, if the grid still fills the SMs. Measured slower on yolo12x at
// batch 32 (per-op sum 46.4 against 43.8 ms), so off by default; tuning still times these tiles.
bool implicit_gemm_plan2(const ConvShape& s, const GemmLayout& l, long long m, const DeviceInfo& dev,
                         const ConvVariants& v, ConvPlan& plan) {
  if (plan.bk != 64) return false;
  const bool tiles3 = v.f16_tiles3, wide = v.f16_wide_tiles, tiles4 = v.f16_tiles4;
  const long long sms = dev.sm_count;
  const int k_tiles = ceil_div(l.k_pad, 64);
  const auto blocks = [&](int bm, int bn) { return 1LL * ceil_div(m, bm) * ceil_div(l.n_g, bn) * s.groups; };
  plan.split = 1;
  plan.warps = 4;
  if (tiles3 && l.n_g <= 64 ? 2 * blocks(128, 64) >= sms : blocks(128, 64) >= sms) {
    plan.bm = 128;
    if (l.n_g <= 32) {
      plan.bn = 32;
      if (s.k > 1 && !tiles3) plan.bm = 64;
    } else if (l.n_g <= 64) {
      plan.bn = 64, plan.warps = 8;
    } else if (k_tiles > 4) {
      plan.bn = 128, plan.warps = 8;  // long K, wide N: arithmetic-bound, the largest tile (as before)
      if (wide && l.n_g % 256 == 0 && blocks(128, 256) >= sms) plan.bn = 256;
      else if (wide && l.n_g % 128 == 0 && blocks(256, 128) >= sms) plan.bm = 256;
    } else if (tiles4 && l.n_g % 128 == 0 && blocks(128, 128) >= 8 * sms) {
      plan.bn = 128, plan.warps = 8;  // short K, 128+ channels, 4+ waves of 128x128 (twelfth session)
    } else if (l.n_g < 128 && l.n_g % 64 != 0 && l.n_g % 64 <= 32) {
      plan.bn = 32;  // 80 or 96 channels: three 32-wide tiles waste less than two 64-wide ones
    } else if (l.n_g % 128 == 0 && l.n_g >= 256 && blocks(128, 128) <= 2 * sms) {
      plan.bn = 128, plan.warps = 8;
    } else {
      plan.bn = 64, plan.warps = 8;
    }
    // tall (variant f16_tall_1x1, eighteenth session): 1x1 convs of at most 64 channels with a K of at most two
    // tiles take 256-row tiles on 8 warps.
    if (v.f16_tall_1x1 && is_pointwise(s) && l.n_g <= 64 && k_tiles <= 2) {
      plan.bm = 256, plan.warps = 8;
      plan.bn = l.n_g <= 32 ? 32 : 64;
    }
    return true;
  }
  if (k_tiles <= 6) {
    // 1x1: 128 x 32 where 128-row tiles give a quarter of the SMs a row (thirty-first session, from the H100 and H200
    // logs: yolo12m / l's 1x1 128->64 at 80x80, batch 1, 0.5-1 us faster each; at 40x40 and 20x20 64 x 32 stays
    // faster, or the logs disagree), else 64 x 32.
    plan.bm = is_pointwise(s) && 4 * ceil_div(m, 128) >= sms ? 128 : 64;
    plan.bn = 32;
    return true;
  }
  if (l.n_g <= 32) plan.bm = 128, plan.bn = 32;
  else plan.bm = 64, plan.bn = 64;
  const long long base = blocks(plan.bm, plan.bn);
  if (tiles3) {  // no split where the tiles fill half the SMs; else 2, then 4 and 8 while the grid stays small
    if (2 * base >= sms && k_tiles <= 12 && l.n_g <= 64) return true;
    // Variant f16_nosplit_small (thirty-fifth session, off): a k x k conv of at most 64 channels and 12 K tiles takes
    // 64 x 32 tiles without split-K where those give a third of the SMs a block.
    if (v.f16_nosplit_small && s.k > 1 && k_tiles <= 12 && l.n_g <= 64 && 3 * blocks(64, 32) >= sms) {
      plan.bm = 64, plan.bn = 32;
      return true;
    }
    plan.split = 2;
    // 4 ranks within 1.5 blocks per SM, or 2 with a long K (32+ tiles); 8 ranks within 1.5 and only with a long K
    // (thirty-first session, from the H100 and H200 logs: yolo12m / l's 3x3/2 512->512 at 40x40 wants 4 ranks, the
    // 3x3 128->128 at 20x20, 18 K tiles, not 8).
    const bool long_k = k_tiles >= 32;
    if (k_tiles >= 8 && 2 * base * 4 <= (long_k ? 4 : 3) * sms) plan.split = 4;
    if (long_k && 2 * base * 8 <= 3 * sms) plan.split = 8;
    return true;
  }
  // At least 2 ranks (k_tiles >= 7 here), more while the grid stays under 1.5 blocks per SM.
  plan.split = 2;
  for (const int split : {4, 8})
    if (2 * base * plan.split < 3 * sms && k_tiles >= 2 * split) plan.split = split;
  return true;
}

// conv2d_implicit_gemm_f16's tile, K tile and split for s.
ConvPlan implicit_gemm_plan(const ConvShape& s, const DeviceInfo& dev, const ConvVariants& v) {
  const GemmLayout l = gemm_layout(s);
  const int m = s.batch * s.ho * s.wo;
  const long long two_per_sm = 2LL * dev.sm_count;  // 264 on the H200
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::implicit_gemm_f16;
  plan.bk = v.f16_bk64 ? 64 : kTileK;
  if (v.f16_tiles2 && v.f16_split_k && implicit_gemm_plan2(s, l, m, dev, v, plan))
    return plan;
  // Tile choice: the widest N tile that the group's channels fill, then the tallest M tile that still
  // gives about two blocks per SM.
  const long long blocks_128 = 1LL * ceil_div(m, 128) * ceil_div(l.n_g, l.n_g <= 64 ? 64 : 128) * s.groups;
  if (l.n_g <= 32) plan.bm = 128, plan.bn = 32;
  else if (blocks_128 < two_per_sm) plan.bm = 64, plan.bn = 64;
  else if (l.n_g <= 64) plan.bm = 128, plan.bn = 64;
  else plan.bm = 128, plan.bn = 128;
  plan.warps = plan.bn == 128 ? 8 : 4;
  plan.bk = v.f16_bk64 ? 64 : kTileK;
  plan.split = 1;
  // Split-K when the output tiles cannot fill the GPU: the most ranks (8, 4, 2) that keep the grid
  // within two blocks per SM and give every rank at least two K tiles.
  if (plan.bk == 64 && v.f16_split_k && plan.bn <= 64) {
    const long long blocks = 1LL * ceil_div(m, plan.bm) * ceil_div(l.n_g, plan.bn) * s.groups;
    const int k_tiles = ceil_div(l.k_pad, 64);
    for (const int split : {8, 4, 2})
      if (blocks * split <= two_per_sm && k_tiles >= 2 * split) {
        plan.split = split;
        break;
      }
  }
  return plan;
}

// The block tiles of conv2d_implicit_gemm_f16 (bm x bn on `warps` warps; launch_conv2d_implicit_gemm_f16
// dispatches exactly these). bk32: also instantiated with 32-wide K tiles; split: with split-K 2, 4, 8.
// The first four are what implicit_gemm_plan picks from; the others (sessions 6 and 7) are tuning
// candidates, and 128x256 / 256x128 (8 warps of 64x64: half the fragment loads per MMA of 64x32 warps;
// one block per SM) also what implicit_gemm_plan2 picks for wide layers with a long K (f16_wide_tiles).
struct F16Tile {
  int bm, bn, warps;
  bool bk32, split;
};
constexpr F16Tile kF16Tiles[] = {
    {128, 32, 4, true, true}, {64, 64, 4, true, true},    {128, 64, 4, true, false}, {128, 128, 8, true, false},
    {64, 32, 4, false, false}, {64, 128, 4, false, false}, {128, 64, 8, false, false}, {256, 64, 8, false, false},
    {256, 32, 8, false, false}, {128, 256, 8, false, false}, {256, 128, 8, false, false},
};

}  // namespace

std::vector<ConvPlan> implicit_gemm_candidates(const ConvShape& s) {
  const GemmLayout l = gemm_layout(s);
  const long long m = 1LL * s.batch * s.ho * s.wo;
  const int k_tiles = ceil_div(l.k_pad, 64);
  const long long two_per_sm = 2LL * device_info().sm_count;
  std::vector<ConvPlan> out;
  for (const F16Tile& t : kF16Tiles) {
    // An N tile over twice the group's channels (and wider than 32) is mostly padding; an M tile taller
    // than the rows is all padding.
    if (t.bn > 32 && t.bn >= 2 * l.n_g) continue;
    if (t.bm > 64 && t.bm > m) continue;
    ConvPlan plan;
    plan.algorithm = ConvAlgorithm::implicit_gemm_f16;
    plan.bm = t.bm;
    plan.bn = t.bn;
    plan.warps = t.warps;
    plan.bk = 64;
    plan.split = 1;
    out.push_back(plan);
    if (t.split) {
      const long long blocks = 1LL * ceil_div(m, t.bm) * ceil_div(l.n_g, t.bn) * s.groups;
      for (const int split : {2, 4, 8})
        if (blocks < two_per_sm && k_tiles >= 2 * split) {
          plan.split = split;
          out.push_back(plan);
        }
      plan.split = 1;
    }
    if (t.bk32) {
      plan.bk = kTileK;
      out.push_back(plan);
    }
  }
  return out;
}

ConvPlan f16_plan(const ConvShape& s, bool wgmma_views) {
  const DeviceInfo& dev = device_info();
  const ConvVariants& v = conv_variants();
  // conv2d_narrow_f16 where it takes the shape and its variant is on (the small-c_in convs, which would
  // otherwise go to conv2d_direct_small_cin, under their own switch).
  if (conv2d_direct_small_cin_supports(s) ? v.f16_narrow_stem : (v.f16_narrow || v.f16_narrow_wide)) {
    const ConvPlan narrow = narrow_plan(s, dev, v.f16_narrow8w ? 8 : 4);
    const bool wins = narrow.bn <= kNarrowPickMaxN && narrow.bk <= kNarrowPickMaxK;  // where it was measured faster
    if (narrow.algorithm == ConvAlgorithm::narrow_f16 && (wins || v.f16_narrow_wide || conv2d_direct_small_cin_supports(s)))
      return narrow;
  }
  ConvPlan wgmma;
  if (v.f16_wgmma && wgmma_views && wgmma_plan(s, dev, wgmma, v)) return wgmma;
  return implicit_gemm_plan(s, dev, v);
}

void launch_conv2d_implicit_gemm_f16(const ConvParams<__half>& p, const ConvPlan& plan, cudaStream_t stream) {
  const ImplicitGemmParams<__half> a = make_params(p);
  const bool pointwise = is_pointwise(p);
  // A k x k conv with 16-byte A chunks reads them through its K-column table: a view too large for that
  // takes the scalar gather instead.
  const bool vec_a = a.vec_a && (pointwise || ktable_fits(a));
  const int groups = p.groups;
  const int bm = plan.bm, bn = plan.bn, w = plan.warps;
  if (plan.bk == 64) {  // 64-wide K, 3 stages (shared memory: 128x128 takes 108 KiB); the tiles of kF16Tiles
    if (bm == 128 && bn == 32 && w == 4) launch_f16_bk64_split<128, 32, 4, 1>(a, groups, pointwise, vec_a, plan.split, stream);
    else if (bm == 64 && bn == 64 && w == 4) launch_f16_bk64_split<64, 64, 2, 2>(a, groups, pointwise, vec_a, plan.split, stream);
    else if (bm == 128 && bn == 64 && w == 4) launch_f16_tile<128, 64, 2, 2, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 64 && bn == 32 && w == 4) launch_f16_tile<64, 32, 2, 2, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 64 && bn == 128 && w == 4) launch_f16_tile<64, 128, 1, 4, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 128 && bn == 64 && w == 8) launch_f16_tile<128, 64, 4, 2, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 256 && bn == 64 && w == 8) launch_f16_tile<256, 64, 4, 2, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 256 && bn == 32 && w == 8) launch_f16_tile<256, 32, 8, 1, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 128 && bn == 256 && w == 8) launch_f16_tile<128, 256, 2, 4, 3, 64>(a, groups, pointwise, vec_a, stream);
    else if (bm == 256 && bn == 128 && w == 8) launch_f16_tile<256, 128, 4, 2, 3, 64>(a, groups, pointwise, vec_a, stream);
    else launch_f16_tile<128, 128, 2, 4, 3, 64>(a, groups, pointwise, vec_a, stream);
    return;
  }
  if (bn == 32) launch_f16_tile<128, 32, 4, 1, 4>(a, groups, pointwise, vec_a, stream);
  else if (bm == 64) launch_f16_tile<64, 64, 2, 2, 4>(a, groups, pointwise, vec_a, stream);
  else if (bn == 64) launch_f16_tile<128, 64, 2, 2, 4>(a, groups, pointwise, vec_a, stream);
  else launch_f16_tile<128, 128, 2, 4, 4>(a, groups, pointwise, vec_a, stream);
}

void launch_conv2d_implicit_gemm_f32(const ConvParams<float>& p, cudaStream_t stream) {
  const ImplicitGemmParams<float> a = make_params(p);
  const bool pointwise = is_pointwise(p);
  const dim3 grid(ceil_div(a.m, kF32TileM), ceil_div(a.n_g, kF32TileN), p.groups);
  if (pointwise) launch_kernel(conv2d_implicit_gemm_f32<true>, grid, kF32Threads, 0, stream, a);
  else launch_kernel(conv2d_implicit_gemm_f32<false>, grid, kF32Threads, 0, stream, a);
}

}  // namespace yolo12::cuda::conv_detail
