// src/backends/cuda/conv_dw_branch.cu - conv2d_dw_branch_f16 (conv_dw_branch.cuh): the Detect head's class branch
// (depthwise 3x3, 1x1, depthwise 3x3, 1x1, 1x1) in one kernel, the maps between the links on chip.
//
// A block of 8 warps walks 8 x 16-pixel output tiles (a persistent grid); the three 1x1 links' weights stay resident
// in shared memory for all its tiles. Per tile (dw_branch_layout.hpp has the maps and the regions they share):
//   0. the input tile with a halo of 2 by cp.async (copy_image_tile; zero outside the image: link 0's padding);
//   1. link 0, depthwise 3x3, over the 10 x 18 map (a halo of 1) from shared memory, on the tensor cores: per tap and
//      8 channels one m16n8k8 with a diagonal B (dw3x3_mma), fp32 sums of the 9 taps in order; units of two m16
//      tiles x 16 channels sharing the taps' B registers, a last round of few units split into single tiles (dw_link,
//      dw_units; the walk is dw_branch_layout.hpp's dw_walk);
//   2. link 1, 1x1, on mma.sync m16n8k16 (ldmatrix A from the map, B from the resident weights; units of one m16
//      tile x 32 or 16 channels over the warps), zero outside the image (link 2's padding);
//   3. link 2, depthwise 3x3, over the 8 x 16 tile, as step 1;
//   4. link 3, 1x1, each warp its own output row (one m16 tile);
//   5. link 4, 1x1, each warp its own row, staged as halves and stored by the same warp (16-byte stores where the
//      output's view allows them).
// Every link's output is rounded to fp16 once, as it would be stored, and its epilogue is the conv kernels' (bias,
// then SiLU where the link has it: conv_detail's epilogue_with), so each value is what the links compute one by one
// up to the order of the fp32 sums.
#include "conv_dw_branch.cuh"

#include <cstdint>
#include <string>
#include <type_traits>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_narrow.cuh"
#include "dw_branch_layout.hpp"
#include "launch.cuh"
#include "mma.cuh"
#include "yolo12/errors.hpp"

namespace yolo12::cuda::conv_detail {

namespace {

namespace db = dw_branch;

struct DwBranchParams {
  const __half* x = nullptr;  // (batch, h, w, ldx) view: link 0's input, c0 channels used
  int ldx = 0;
  __half* y = nullptr;        // (batch, h, w, ldy) view: link 4's output, c3 channels
  int ldy = 0;
  bool vec_y = false;         // 16-byte stores: c3 and ldy multiples of 8, y 16-byte aligned
  const __half* w[kDwBranchLinks] = {};  // packed: links 0, 2 (9, round_up(c, 8)); links 1, 3, 4 (c_out, k_pad)
  int k_pad[kDwBranchLinks] = {};        // the 1x1 links' packed row lengths
  const float* bias[kDwBranchLinks] = {};  // (c_out) each, or nullptr
  bool silu[kDwBranchLinks] = {};
  int batch = 1, h = 0, w_img = 0;
  int tiles = 0;                          // batch * tiles_y * tiles_x
  db::Layout layout;
};

// Rows [0, rows) of a weight matrix (rows_real real ones, the rest zero) of k halves each, from a packed (rows_real,
// k_pad) tensor into shared memory rows `row` halves apart: 16-byte copies, one cp.async group with the caller's.
__device__ void load_matrix(__half* dst, int row, const __half* src, int k_pad, int rows, int rows_real, int k,
                            int tid) {
  const int chunks = k / kChunk;
  for (int i = tid; i < rows * chunks; i += db::kThreads) {
    const int r = i / chunks, c = i - r * chunks;
    const bool real = r < rows_real;
    cp_async_16(dst + r * row + c * kChunk, real ? src + static_cast<long long>(r) * k_pad + c * kChunk : src,
                real ? 16 : 0);
  }
}

// The B registers of a depthwise 3x3's 9 taps for the 16 channels [cc16, cc16 + 16), on m16n8k8 (mma.cuh): per
// tap one register per 8 channels. The diagonal B of a tap (output channel n reads input channel n only) has one
// non-zero per column: in mma_1688's b0 = B[n=g][k=2c..2c+1], lane (g, c) holds w[tap][cc16 + g] (b[tap][0], the
// first 8 channels) or w[tap][cc16 + 8 + g] (b[tap][1]) where g / 2 == c, in the half g % 2, and zero elsewhere.
// A 16-channel m16n8k16 per 8 channels multiplied a K half of zeros; an m16n8k8 over that block's own 8 input
// channels does half the tensor work with one register of B.
struct DwTaps {
  std::uint32_t b[9][2];
};
__device__ __forceinline__ void load_dw_taps(DwTaps& t, const __half* wdw, int c, int cc16, int lane) {
  const int g = lane / 4;
  const bool mine = (g >> 1) == lane % 4;
  const int shift = (g & 1) * 16;
  const unsigned short* w16 = reinterpret_cast<const unsigned short*>(wdw) + cc16 + g;  // (9, c): w[tap][cc16 + g]
#pragma unroll
  for (int tap = 0; tap < 9; ++tap) {
    t.b[tap][0] = mine ? static_cast<std::uint32_t>(w16[tap * c]) << shift : 0u;
    t.b[tap][1] = mine ? static_cast<std::uint32_t>(w16[tap * c + 8]) << shift : 0u;
  }
}

// A depthwise 3x3 over MT m16 tiles (16 pixels each) x the 16 channels of `taps`, the tiles sharing the taps'
// registers. Lane l's A row of tile i starts at arow[i] (its pixel's tap (0, 0), channels cc16 + (l / 16) * 8:
// ldmatrix's row address for row l % 16), taps (ky, kx) at (ky * row_w + kx) * pix halves from it; the x4 fragment's
// a[0], a[1] (channels 0-7) and a[2], a[3] (8-15) feed one m16n8k8 each. One non-zero product per MMA, fp32 sums over
// the taps in order (as with the k16 form); acc zeroed first.
template <int MT>
__device__ __forceinline__ void dw3x3_mma(float (&acc)[MT][2][4], const __half* const (&arow)[MT], int pix,
                                          int row_w, const DwTaps& taps) {
  zero_accumulators(acc);
#pragma unroll
  for (int ky = 0; ky < 3; ++ky)
#pragma unroll
    for (int kx = 0; kx < 3; ++kx) {
      const int tap = ky * 3 + kx;
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        std::uint32_t af[4];
        ldmatrix_x4(af, arow[i] + (ky * row_w + kx) * pix);
        mma_1688(acc[i][0], af[0], af[1], taps.b[tap][0]);
        mma_1688(acc[i][1], af[2], af[3], taps.b[tap][1]);
      }
    }
}

// One warp's depthwise units of a link over `tile_pairs` pairs of m16 tiles x `cchunks` 16-channel chunks, as
// dw_walk (dw_branch_layout.hpp) deals them: unit(std::integral_constant<int, MT>, first m16 tile, first channel)
// for each pair (MT 2) and each single tile of a split last round (MT 1).
template <typename Unit>
__device__ __forceinline__ void dw_units(int tile_pairs, int cchunks, int warp, Unit&& unit) {
  const db::DwWalk walk = db::dw_walk(tile_pairs * cchunks);
  for (int u = warp; u < walk.pair_units; u += db::kWarps) {
    const db::DwUnit d = db::dw_pair(u, cchunks);
    unit(std::integral_constant<int, db::kDwTiles>{}, d.tile, d.chunk * 16);
  }
  if (warp < walk.single_tiles) {
    const db::DwUnit d = db::dw_single(walk, warp, cchunks);
    unit(std::integral_constant<int, 1>{}, d.tile, d.chunk * 16);
  }
}

// One warp's MMAs of a 1x1 link: rows [row0, row0 + 16) of A (a tile of rows a_row halves apart) times channels
// [n0, n0 + 8 * NI) of B (stored [n][k], rows b_row apart) over K columns [0, k). acc zeroed first.
template <int NI>
__device__ __forceinline__ void warp_gemm(float (&acc)[1][NI][4], const __half* a, int a_row, int row0,
                                          const __half* b, int b_row, int n0, int k, int lane) {
  static_assert(NI % 2 == 0, "B fragments are read two n8 blocks at a time");
  zero_accumulators(acc);
#pragma unroll 2
  for (int ks = 0; ks < k; ks += 16) {
    std::uint32_t af[1][4], bf[NI][2];
    load_a_frag(af[0], a, a_row, row0, ks, lane);
#pragma unroll
    for (int j = 0; j < NI; j += 2) load_b_frag_pair(bf[j], bf[j + 1], b, b_row, n0 + j * 8, ks, lane);
    mma_grid(acc, af, bf);
  }
}

// The epilogue of one warp's 16 x (8 * NI) accumulators into a shared tile of rows `row` halves apart: row r (0..15
// within the m16 tile) is kept where keep(r) (else zero) and written where r + row0 < rows; bias from shared memory.
// Every value is finished first, straight-line, and only the stores are conditional (a test around each value had
// the compiler put each SiLU in its own branch region; thirty-sixth session, from the SASS).
template <int NI, bool kSilu, typename Keep>
__device__ __forceinline__ void store_tile(const float (&acc)[NI][4], __half* dst, int row, int row0, int rows,
                                           int n0, const float* bias, int lane, Keep&& keep) {
  __half2 v[2][NI];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool k = keep(row0 + lane / 4 + h * 8);
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int n = n0 + j * 8 + (lane % 4) * 2;
      const __half2 f = __floats2half2_rn(epilogue_with<kSilu>(acc[j][2 * h], bias[n], 1.f),
                                          epilogue_with<kSilu>(acc[j][2 * h + 1], bias[n + 1], 1.f));
      v[h][j] = k ? f : __floats2half2_rn(0.f, 0.f);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = lane / 4 + h * 8;
    if (row0 + r < rows)
#pragma unroll
      for (int j = 0; j < NI; ++j)
        *reinterpret_cast<__half2*>(dst + (row0 + r) * row + n0 + j * 8 + (lane % 4) * 2) = v[h][j];
  }
}

// store_tile's keep where every row is kept.
struct KeepAll {
  __device__ bool operator()(int) const { return true; }
};

// A depthwise 3x3 link into dst (`rows` A rows of `pix` halves, c channels, the same row length as its input):
// the warps' units as dw_units deals them, each one's taps loaded once for its m16 tiles. tap00(q) is the first half
// of the input pixel under tap (0, 0) of output row q (taps (ky, kx) at (ky * row_w + kx) * pix halves from it).
template <bool kSilu, typename Tap00>
__device__ __forceinline__ void dw_link(int rows, int c, const __half* wdw, int pix, int row_w, __half* dst,
                                        const float* bias, int warp, int lane, Tap00&& tap00) {
  dw_units(rows / db::kDwRows, c / 16, warp, [&](auto mt_c, int mt0, int cc16) {
    constexpr int MT = decltype(mt_c)::value;
    DwTaps taps;
    load_dw_taps(taps, wdw, c, cc16, lane);
    const __half* arow[MT];
#pragma unroll
    for (int i = 0; i < MT; ++i) arow[i] = tap00((mt0 + i) * 16 + lane % 16) + cc16 + (lane / 16) * 8;
    float acc[MT][2][4];
    dw3x3_mma(acc, arow, pix, row_w, taps);
#pragma unroll
    for (int i = 0; i < MT; ++i)
      store_tile<2, kSilu>(acc[i], dst, pix, (mt0 + i) * 16, rows, cc16, bias, lane, KeepAll{});
  });
}

// The units of a 1x1 link over the grid of (m16 tile of A, chunk of n output channels: 32, the last 16 where n is not
// a multiple of 32), unit u = m16 tile u / chunks, chunk u % chunks: one warp's units first, first + step, ... below
// last, each into dst (rows `row` halves apart); keep / rows as store_tile's.
__host__ __device__ constexpr int chunks_of(int n) { return (n + db::kNChunk - 1) / db::kNChunk; }
template <bool kSilu, typename Keep>
__device__ __forceinline__ void link_1x1(const __half* a, int a_row, const __half* b, int b_row, int n, int k,
                                         __half* dst, int row, int rows, const float* bias, int first, int last,
                                         int step, int lane, Keep&& keep) {
  const int chunks = chunks_of(n);
  for (int u = first; u < last; u += step) {
    const int mt = u / chunks, n0 = (u - mt * chunks) * db::kNChunk;
    if (n - n0 >= db::kNChunk) {
      float acc[1][4][4];
      warp_gemm<4>(acc, a, a_row, mt * 16, b, b_row, n0, k, lane);
      store_tile<4, kSilu>(acc[0], dst, row, mt * 16, rows, n0, bias, lane, keep);
    } else {  // 16 channels (n is a multiple of 16)
      float acc[1][2][4];
      warp_gemm<2>(acc, a, a_row, mt * 16, b, b_row, n0, k, lane);
      store_tile<2, kSilu>(acc[0], dst, row, mt * 16, rows, n0, bias, lane, keep);
    }
  }
}

__global__ void __launch_bounds__(db::kThreads, 2) conv2d_dw_branch_f16(const DwBranchParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const db::Layout& L = p.layout;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* W1 = reinterpret_cast<__half*>(smem_raw + L.w1_off);     // (c1, r0): link 1's B
  __half* W2 = reinterpret_cast<__half*>(smem_raw + L.w2_off);     // (c2, r1): link 3's B
  __half* W3 = reinterpret_cast<__half*>(smem_raw + L.w3_off);     // (c3p, r2): link 4's B, zero rows past c3
  __half* DW1 = reinterpret_cast<__half*>(smem_raw + L.dw1_off);   // (9, c0): link 0's taps
  __half* DW2 = reinterpret_cast<__half*>(smem_raw + L.dw2_off);   // (9, c1): link 2's taps
  float* bias = reinterpret_cast<float*>(smem_raw + L.bias_off);   // links 0..4, at db::bias_at
  __half* A = reinterpret_cast<__half*>(smem_raw + L.a_off);       // In (12 x 20, r0) / P1 (180, r1) / P2 (128, r2)
  __half* D = reinterpret_cast<__half*>(smem_raw + L.d_off);       // D1 (192, r0) / D2 (128, r1) / S (128, r3)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // The weights, once per block (one cp.async group with the first tile's input), and the biases.
  load_matrix(W1, L.r0, p.w[1], p.k_pad[1], L.c1, L.c1, L.c0, tid);
  load_matrix(W2, L.r1, p.w[3], p.k_pad[3], L.c2, L.c2, L.c1, tid);
  load_matrix(W3, L.r2, p.w[4], p.k_pad[4], L.c3p, L.c3, L.c2, tid);
  load_matrix(DW1, L.c0, p.w[0], p.k_pad[0], 9, 9, L.c0, tid);
  load_matrix(DW2, L.c1, p.w[2], p.k_pad[2], 9, 9, L.c1, tid);
  {
    const int n_of[kDwBranchLinks] = {L.c0, L.c1, L.c1, L.c2, L.c3p};
    const int real[kDwBranchLinks] = {L.c0, L.c1, L.c1, L.c2, L.c3};
    for (int i = 0; i < kDwBranchLinks; ++i)
      for (int c = tid; c < n_of[i]; c += db::kThreads)
        bias[db::bias_at(L, i) + c] = p.bias[i] && c < real[i] ? p.bias[i][c] : 0.f;
  }

  const int g0 = L.c0 / kChunk;
  const KeepAll all;
  for (int t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const db::Tile at = db::tile_at(p.h, p.w_img, t);
    // Step 0: the input tile (region A is free: the previous tile ended with a barrier after its last read).
    {
      const __half* ximg = p.x + static_cast<long long>(at.n) * p.h * p.w_img * p.ldx;  // (h, w, ldx)
      copy_image_tile(ximg, p.h, p.w_img, p.ldx, at.oy0 - 2, at.ox0 - 2, db::kInH, db::kInW, g0, A, L.r0, tid,
                      db::kThreads, CpAsyncZfill16<false>{p.x});
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
    }
    // Step 1: link 0 over the map's 192 A rows (rows past 180 repeat pixel 179) into D1; map pixel q's tap (0, 0) is
    // In pixel (q / 18, q % 18).
    with_silu(p.silu[0], [&](auto s) {
      dw_link<decltype(s)::value>(db::kMapRows, L.c0, DW1, L.r0, db::kInW, D, bias + db::bias_at(L, 0), warp, lane,
                                  [&](int q) {
                                    const int qq = q < db::kMapPixels ? q : db::kMapPixels - 1;
                                    return A + ((qq / db::kMapW) * db::kInW + qq % db::kMapW) * L.r0;
                                  });
    });
    __syncthreads();  // D1 complete; In read for the last time
    // Step 2: link 1, D1 (192, r0) x W1 -> P1 (180, r1) in region A, zero outside the image.
    {
      const auto inside = [&](int q) {
        const int gy = at.oy0 - 1 + q / db::kMapW, gx = at.ox0 - 1 + q % db::kMapW;
        return gy >= 0 && gy < p.h && gx >= 0 && gx < p.w_img;
      };
      with_silu(p.silu[1], [&](auto s) {
        link_1x1<decltype(s)::value>(D, L.r0, W1, L.r0, L.c1, L.c0, A, L.r1, db::kMapPixels, bias + db::bias_at(L, 1),
                                     warp, db::kMapRows / 16 * chunks_of(L.c1), db::kWarps, lane, inside);
      });
    }
    __syncthreads();  // P1 complete; D1 read for the last time
    // Step 3: link 2 over the 8 x 16 tile from P1 into D2 (region D); output pixel q's tap (0, 0) is P1 pixel
    // (q / 16, q % 16).
    with_silu(p.silu[2], [&](auto s) {
      dw_link<decltype(s)::value>(db::kOutPixels, L.c1, DW2, L.r1, db::kMapW, D, bias + db::bias_at(L, 2), warp, lane,
                                  [&](int q) { return A + ((q / db::kTW) * db::kMapW + q % db::kTW) * L.r1; });
    });
    __syncthreads();  // D2 complete; P1 read for the last time
    // Step 4: link 3, D2 (128, r1) x W2 -> P2 (128, r2) in region A; warp w its own m16 tile (output row w).
    with_silu(p.silu[3], [&](auto s) {
      const int chunks = chunks_of(L.c2);
      link_1x1<decltype(s)::value>(D, L.r1, W2, L.r1, L.c2, L.c1, A, L.r2, db::kOutPixels, bias + db::bias_at(L, 3),
                                   warp * chunks, (warp + 1) * chunks, 1, lane, all);
    });
    __syncthreads();  // P2 complete; D2 read for the last time
    // Step 5: link 4, P2 x W3 -> S (128, r3) in region D, each warp its own row, then that row to memory.
    {
      with_silu(p.silu[4], [&](auto s) {
        const int chunks = chunks_of(L.c3p);
        link_1x1<decltype(s)::value>(A, L.r2, W3, L.r2, L.c3p, L.c2, D, L.r3, db::kOutPixels, bias + db::bias_at(L, 4),
                                     warp * chunks, (warp + 1) * chunks, 1, lane, all);
      });
      __syncwarp();  // the warp's staged row is complete
      const int oy = at.oy0 + warp;
      if (oy < p.h) {
        const int cols = p.w_img - at.ox0 < db::kTW ? p.w_img - at.ox0 : db::kTW;
        __half* yrow = p.y + (static_cast<long long>(at.n) * p.h + oy) * p.w_img * p.ldy +
                       static_cast<long long>(at.ox0) * p.ldy;  // (cols, ldy)
        const __half* srow = D + warp * 16 * L.r3;               // (16, r3)
        if (p.vec_y) {
          const int g3 = L.c3 / kChunk;
          for (int i = lane; i < cols * g3; i += 32) {
            const int x = i / g3, c = (i - x * g3) * kChunk;
            *reinterpret_cast<uint4*>(yrow + static_cast<long long>(x) * p.ldy + c) =
                *reinterpret_cast<const uint4*>(srow + x * L.r3 + c);
          }
        } else {
          for (int i = lane; i < cols * L.c3; i += 32) {
            const int x = i / L.c3, c = i - x * L.c3;
            yrow[static_cast<long long>(x) * p.ldy + c] = srow[x * L.r3 + c];
          }
        }
      }
    }
    __syncthreads();  // every warp done with P2 (region A) and its staged row (region D)
  }
}

bool depthwise3x3(const ConvShape& s) {
  return is_depthwise(s) && s.k == 3 && s.stride == 1 && s.pad == 1 && s.dilation == 1;
}
bool pointwise1x1(const ConvShape& s) {
  return s.k == 1 && s.stride == 1 && s.pad == 0 && s.dilation == 1 && s.groups == 1;
}

}  // namespace

bool dw_branch_channels(int c0, int c1, int c2, int c3) {
  if (!db::channels_ok(c0, c1, c2, c3)) return false;
  return static_cast<std::size_t>(db::layout(c0, c1, c2, c3).bytes) <= device_info().smem_per_block_optin;
}

bool dw_branch_supports(const ConvShape (&l)[kDwBranchLinks]) {
  if (!depthwise3x3(l[0]) || !pointwise1x1(l[1]) || !depthwise3x3(l[2]) || !pointwise1x1(l[3]) ||
      !pointwise1x1(l[4]))
    return false;
  for (int i = 0; i < kDwBranchLinks; ++i) {
    if (!conv_can_implement(l[i])) return false;
    if (i > 0 && (l[i].batch != l[0].batch || l[i].h != l[0].h || l[i].w_in != l[0].w_in ||
                  l[i].c_in != l[i - 1].c_out))
      return false;
  }
  return dw_branch_channels(l[0].c_in, l[1].c_out, l[3].c_out, l[4].c_out);
}

bool dw_branch_preferred(const ConvShape (&l)[kDwBranchLinks]) {
  return db::tile_count(l[0].batch, l[0].h, l[0].w_in) >= 4LL * device_info().sm_count;
}

bool dw_branch_views_ok(const ConvParams<__half> (&l)[kDwBranchLinks]) {
  const auto aligned16 = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  for (int i = 0; i < kDwBranchLinks; ++i)
    if (!l[i].w || !aligned16(l[i].w) || l[i].residual || l[i].gamma) return false;
  return l[0].x && aligned16(l[0].x) && l[0].ldx >= l[0].c_in && l[0].ldx % kChunk == 0 && l[4].y &&
         l[4].ldy >= l[4].c_out;
}

void launch_conv2d_dw_branch_f16(const ConvParams<__half> (&l)[kDwBranchLinks], cudaStream_t stream, int max_grid) {
  ConvShape s[kDwBranchLinks];
  for (int i = 0; i < kDwBranchLinks; ++i) s[i] = l[i];
  if (!dw_branch_supports(s) || !dw_branch_views_ok(l))
    throw Error("conv2d_dw_branch_f16: the branch " + std::to_string(l[0].c_in) + "->" + std::to_string(l[1].c_out) +
                "->" + std::to_string(l[3].c_out) + "->" + std::to_string(l[4].c_out) +
                " (or its views) is not one the kernel takes");
  DwBranchParams p;
  p.x = l[0].x;
  p.ldx = l[0].ldx;
  p.y = l[4].y;
  p.ldy = l[4].ldy;
  p.vec_y = l[4].c_out % kChunk == 0 && l[4].ldy % kChunk == 0 && reinterpret_cast<std::uintptr_t>(l[4].y) % 16 == 0;
  for (int i = 0; i < kDwBranchLinks; ++i) {
    p.w[i] = l[i].w;
    p.k_pad[i] = is_depthwise(s[i]) ? round_up(s[i].c_out, kChunk) : gemm_layout(s[i]).k_pad;
    p.bias[i] = l[i].bias;
    p.silu[i] = l[i].silu();
  }
  p.batch = l[0].batch;
  p.h = l[0].h;
  p.w_img = l[0].w_in;
  p.layout = db::layout(l[0].c_in, l[1].c_out, l[3].c_out, l[4].c_out);
  const long long tiles = db::tile_count(p.batch, p.h, p.w_img);
  if (tiles <= 0) return;
  if (tiles > 0x7fffffffLL) throw Error("conv2d_dw_branch_f16: too many tiles");
  p.tiles = static_cast<int>(tiles);
  constexpr auto kKernel = conv2d_dw_branch_f16;
  const int smem = p.layout.bytes;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), smem));
  const int grid = persistent_grid(kKernel, db::kThreads, smem, p.tiles, max_grid);
  launch_kernel(kKernel, static_cast<unsigned>(grid), db::kThreads, static_cast<std::size_t>(smem), stream, p);
}

}  // namespace yolo12::cuda::conv_detail
