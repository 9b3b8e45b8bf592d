// src/backends/cuda/conv_stem_pair.cu - conv2d_stem_pair_f16 (conv_stem_pair.cuh): the stem (3 -> C1, 3x3/2) and
// the conv after it (C1 -> C2, 3x3/2) in one kernel, NHWC fp16, fp32 accumulation.
//
// Why: at batch 32 on yolo12n the two take 0.187 + 0.144 ms (H100, nineteenth session), 3.1x and 2.7x their floors,
// and the stem's 320x320x16 map (105 MB) is written and read back for nothing else. Fused, the pair reads the input
// (79 MB) and writes the output (52 MB) once; what is left is the stem's 1.4 G fp32 FMAs and 3.8 G MACs on the
// tensor cores. Used under variant f16_stem_pair (on since the twenty-first session). History (H100, test_stem_pair
// "[.bench]", yolo12n's pair at batch 32, against 0.35 ms for the two kernels): the first version (nineteenth
// session) took 0.55 ms; issuing the patch loads in batches took it to 0.41, and the stem by items (below) to 0.33
// (twentieth session), faster than the two kernels at batch 1 and 32 for both pairs. Twenty-first: the patch by
// raw cp.async copies one tile ahead (step 1), kept as fp16.
//
// A block walks output tiles of 8 rows x 16 columns of one image (persistent grid); per tile:
// 1. The input patch the tile needs, 35 rows x 67 pixels x 3 channels from (4*oy0 - 3, 4*ox0 - 3), kept as fp16 in
//    shared memory, zero outside the image (stem_patch.cuh, as conv2d_stem_f16 reads its patch). Where ldx == 3 the
//    tile's rows were copied raw (cp.async, 16-byte granules in global alignment) during the previous tile's steps
//    2 and 3, and a convert pass aligns them; otherwise they are gathered by element. (Before, a thread's 28
//    element loads were issued at the top of the tile, in two batches, with nothing to overlap their two round
//    trips to memory. Prefetched, yolo12n's pair went from 0.329 to 0.285 ms at batch 32, H100.)
// 2. The stem's map over 17 x 33 pixels from (2*oy0 - 1, 2*ox0 - 1) is computed into shared memory as fp16, zero
//    outside the map (the second conv's padding). A thread takes items of 3 consecutive map pixels x 16 channels
//    (187 per 16 channels: one pass for C1 = 16, two for 32): per tap row it reads the item's window of the patch
//    as half2s, and each weight float4 (the same address for the whole warp: a broadcast) feeds 12 FMAs. Per value,
//    27 fmaf in the order tap (ky, kx) then ci from 0, then epilogue_with (bias, SiLU), rounded once: the arithmetic
//    of conv2d_stem_f16 (conv_stem.cu), so the map is the one that kernel would write. The stem's weights are fp32
//    in shared memory, (27, C1).
//    (Before, a thread took 4 channels of one pixel: each weight float4, 4 distinct addresses per warp, fed 4 FMAs.
//    Counting shared-memory wavefronts, that made the stem wait on shared memory for ~4x its FMA time; this is an
//    estimate, not a profile.)
//    Or, under variant f16_stem_pair_mma (kStemMma, twenty-second session, on since the twenty-fourth), the map as
//    a GEMM on mma.sync: warp w takes m16 tiles w, w + 8, ... of the map's 561 pixels (36 tiles), all C1 channels; K is
//    the 27 window values laid out as 3 tap rows x 10 in two k16 steps (stem_pair_layout.hpp: stem_a_offset), so
//    each A register is one 4-byte load from the patch; the B fragments and biases stay in registers. Per 16 map
//    pixels x 16 channels that is 8 loads and 4 MMAs where the FMA stem issues 216 FFMAs (Nsight Compute: the
//    FFMAs were a third of the pair's instructions, twenty-first session). The products are fp16 x fp16 (the
//    weights are fp16 in both stems), summed in fp32 in the MMA's order, so the map is within the fp16 bound of
//    the two kernels' but not bit for bit.
// 3. The second conv runs from that map on mma.sync m16n8k16: warp w takes output row w (16 pixels) and all C2
//    channels; K = 9 taps x C1 channels in k16 steps, tap-major as the GEMM packing orders them. A fragments are
//    32-bit loads from the map (pixel stride C1 + 4 halves: the 8 rows of a fragment fall in distinct banks), B
//    fragments two 32-bit loads per n8 tile from the weights, (C2, 9*C1 + 8) halves in shared memory (padded rows,
//    same reason). The epilogue adds the bias, applies SiLU and stores half2 pairs.
// Shared memory: (16, 32) 62 KB, (32, 64) 109 KB (the fp16 patch and its raw rows take what the fp32 patch took),
// room for 3 and 2 blocks per SM; at 96-128 registers per thread (ptxas, sm_90a, no spills) the registers allow
// 2 blocks of 256 threads in both. Every index is stem_pair_layout.hpp's, which tests/unit/test_stem_pair_layout.cpp
// replays on the CPU.
#include <cstdint>
#include <string>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_stem_pair.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "stem_pair_layout.hpp"
#include "stem_patch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

namespace sp = stem_pair;
namespace sm = stem_mma;

struct StemPairKernelParams {
  PatchSource src;              // the input x (B, H, W, ldx), channels [0, 3) read (stem_patch.cuh)
  int hs = 0, ws = 0;           // the stem's map
  int ho = 0, wo = 0;           // the output
  const __half* w0 = nullptr;   // (C1, k_pad0): the stem's packed weights, [c][tap * cin_pad0 + ci]
  int k_pad0 = 0, cin_pad0 = 0;
  const float* bias0 = nullptr;  // (C1) or nullptr
  const __half* w1 = nullptr;    // (C2, k_pad1): the second conv's packed weights, [c][tap * C1 + ci]
  int k_pad1 = 0;
  const float* bias1 = nullptr;  // (C2) or nullptr
  __half* y = nullptr;           // (B, Ho, Wo, ldy)
  int ldy = 0;
  int tiles_x = 0, tiles_y = 0;
  long long tiles = 0;
};

// kStemMma: step 2 on mma.sync (variant f16_stem_pair_mma) instead of fp32 FMAs.
template <int C1, int C2, bool kSilu0, bool kSilu1, bool kStemMma>
__global__ void __launch_bounds__(sp::kThreads, 2) conv2d_stem_pair_f16(const StemPairKernelParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  using G = sp::Geom<C1, C2>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* w0s = reinterpret_cast<float*>(smem_raw + G::kW0Off);    // (27, C1): [tap * 3 + ci][c]
  float* b0s = reinterpret_cast<float*>(smem_raw + G::kB0Off);    // (C1)
  float* b1s = reinterpret_cast<float*>(smem_raw + G::kB1Off);    // (C2)
  __half* xin = reinterpret_cast<__half*>(smem_raw + G::kXinOff);  // (kIH, kXS): the input patch
  __half* raw = reinterpret_cast<__half*>(smem_raw + G::kRawOff);  // (kIH, kRawRS): raw patch rows (contig only)
  __half* map = reinterpret_cast<__half*>(smem_raw + G::kMapOff);  // (kSP, kC1S): the stem's map
  __half* w1s = reinterpret_cast<__half*>(smem_raw + G::kW1Off);   // (C2, kK1S): [c][tap * C1 + ci]
  const int tid = threadIdx.x;

  // The weights and biases, once per block.
  if constexpr (!kStemMma)  // the FMA stem's weights (the mma stem keeps its B fragments in registers)
    for (int i = tid; i < 27 * C1; i += sp::kThreads) {
      const int j = i / C1, c = i % C1;  // j = tap * 3 + ci
      w0s[i] = __half2float(load_nc(p.w0 + static_cast<long long>(c) * p.k_pad0 + (j / 3) * p.cin_pad0 + j % 3));
    }
  for (int c = tid; c < C1; c += sp::kThreads) b0s[c] = p.bias0 ? load_nc(p.bias0 + c) : 0.f;
  for (int c = tid; c < C2; c += sp::kThreads) b1s[c] = p.bias1 ? load_nc(p.bias1 + c) : 0.f;
  for (int i = tid; i < C2 * (G::kK1 / 2); i += sp::kThreads) {  // half2 pairs: k_pad1 and kK1S are even
    const int n = i / (G::kK1 / 2), k2 = i % (G::kK1 / 2);
    reinterpret_cast<__half2*>(w1s + n * G::kK1S)[k2] =
        load_nc(reinterpret_cast<const __half2*>(p.w1 + static_cast<long long>(n) * p.k_pad1) + k2);
  }

  const int warp = tid / 32, lane = tid % 32;
  // The mma stem's B fragments (all C1 channels, both k16 steps) and this lane's biases, for the whole kernel, and
  // the patch offsets of its A registers (stem_mma_layout.hpp).
  std::uint32_t bs[kStemMma ? C1 / 8 : 1][2][2];
  float bias_r[kStemMma ? C1 / 8 : 1][2];
  int koff[2][2];
  if constexpr (kStemMma) {
    sm::b_fragments<C1 / 8>(
        lane, C1, p.k_pad0, p.cin_pad0,
        [&](long long o) { return static_cast<std::uint32_t>(__half_as_ushort(load_nc(p.w0 + o))); }, bs);
#pragma unroll
    for (int j = 0; j < C1 / 8; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i) bias_r[j][i] = p.bias0 ? load_nc(p.bias0 + 8 * j + 2 * (lane % 4) + i) : 0.f;
    sm::lane_k_offsets(lane, G::kXS, koff);
  }
  const bool contig = p.src.ldx == G::kCin;  // the patch rows are copied raw by cp.async, one tile ahead
  const auto patch_of = [&](long long t) {
    int iy0, ix0;
    const sp::Tile tile = sp::tile_of(t, p.tiles_x, p.tiles_y);
    sp::patch_origin(tile, iy0, ix0);
    return patch_tile<G>(p.src, tile.n, iy0, ix0);
  };
  patch_first_tile<G, sp::kThreads>(p.src, contig, blockIdx.x < p.tiles, patch_of(blockIdx.x), tid, raw);

  for (long long t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const sp::Tile tile = sp::tile_of(t, p.tiles_x, p.tiles_y);

    // 1. The input patch (stem_patch.cuh). Its first barrier: every thread is done with the previous tile (its map,
    //    read by step 3, and its patch, read by step 2), and, where contig, this tile's raw rows have landed. The
    //    next tile's raw rows are then in flight during steps 2 and 3. (Issued at the top of the loop instead, the
    //    pair waited on two round trips to memory per tile with nothing to overlap them, twentieth session.)
    const long long next = t + gridDim.x;
    patch_tile_ready<G, sp::kThreads>(p.src, contig, patch_of(t), next < p.tiles, patch_of(next), tid, raw, xin);

    // 2. The stem's map. On mma.sync: warp w takes m16 tiles w, w + 8, ... of the map's pixels, all C1 channels;
    //    its A fragments are 4-byte loads from the patch (stem_a_offset); bias, SiLU, one rounding, half2 stores.
    if constexpr (kStemMma) {
      for (int mt = warp; mt < G::kStemMTiles; mt += sp::kWarps) {
        int base[2];
#pragma unroll
        for (int h = 0; h < 2; ++h)
          base[h] = sp::stem_pixel_base<C1, C2>(sp::stem_row_pixel<C1, C2>(mt, lane / 4 + 8 * h));
        float acc[C1 / 8][4];
#pragma unroll
        for (int j = 0; j < C1 / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          std::uint32_t a[4];
#pragma unroll
          for (int r = 0; r < 4; ++r)
            a[r] = *reinterpret_cast<const std::uint32_t*>(xin + base[r & 1] + koff[s][r >> 1]);
#pragma unroll
          for (int j = 0; j < C1 / 8; ++j) mma_16816(acc[j], a, bs[j][s][0], bs[j][s][1]);
        }
        // Every value finished first, straight-line; only the stores are conditional (a test around each value
        // put each SiLU in its own branch region; thirty-sixth session, from the SASS).
        __half2 v[2][C1 / 8];
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          int px, c;
          sp::stem_acc_target(mt, lane, 0, e, px, c);
          const int syl = px / G::kSW, sxl = px - syl * G::kSW;
          const int sy = 2 * tile.oy0 - 1 + syl, sx = 2 * tile.ox0 - 1 + sxl;
          const bool inside = sy >= 0 && sy < p.hs && sx >= 0 && sx < p.ws;  // else the next conv's zero padding
#pragma unroll
          for (int j = 0; j < C1 / 8; ++j) {
            const __half2 f = __floats2half2_rn(epilogue_with<kSilu0>(acc[j][e], bias_r[j][0], 1.f),
                                                epilogue_with<kSilu0>(acc[j][e + 1], bias_r[j][1], 1.f));
            v[e / 2][j] = inside ? f : __floats2half2_rn(0.f, 0.f);
          }
        }
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          int px, c;
          sp::stem_acc_target(mt, lane, 0, e, px, c);
          if (px < G::kSP)
#pragma unroll
            for (int j = 0; j < C1 / 8; ++j) *reinterpret_cast<__half2*>(map + px * G::kC1S + c + 8 * j) = v[e / 2][j];
        }
      }
    } else {
      // 2. Or by fp32 FMAs, by items of kPP pixels x kCB channels (stem_pair_layout.hpp). Per value: 27 fmaf in
      //    the order tap (ky, kx) then ci from 0, then epilogue_with, rounded once: conv2d_stem_f16's arithmetic.
      for (int item = tid; item < G::kItems; item += sp::kThreads) {
        int cb, syl, sxl, window0;
        sp::stem_item<C1, C2>(item, cb, syl, sxl, window0);
        const float* wb = w0s + cb * G::kCB;  // (27, C1) from channel cb * kCB
        float acc[G::kPP][G::kCB];
#pragma unroll
        for (int q = 0; q < G::kPP; ++q)
#pragma unroll
          for (int j = 0; j < G::kCB; ++j) acc[q][j] = 0.f;
#pragma unroll 1  // one tap row at a time keeps one row of the window in registers
        for (int ky = 0; ky < 3; ++ky) {
          float xv[G::kWin];
          const __half* xr = xin + window0 + ky * G::kXS;
#pragma unroll
          for (int f = 0; f + 1 < G::kWin; f += 2) {
            const float2 two = __half22float2(*reinterpret_cast<const __half2*>(xr + f));
            xv[f] = two.x;
            xv[f + 1] = two.y;
          }
          if (G::kWin % 2) xv[G::kWin - 1] = __half2float(xr[G::kWin - 1]);
#pragma unroll
          for (int kx = 0; kx < 3; ++kx)
#pragma unroll
            for (int ci = 0; ci < 3; ++ci) {
              const float4* wp = reinterpret_cast<const float4*>(wb + ((ky * 3 + kx) * 3 + ci) * C1);
#pragma unroll
              for (int j4 = 0; j4 < G::kCB / 4; ++j4) {
                const float4 w4 = wp[j4];
#pragma unroll
                for (int q = 0; q < G::kPP; ++q) {
                  const float v = xv[sp::window_tap(q, kx, ci)];
                  acc[q][4 * j4] = fmaf(v, w4.x, acc[q][4 * j4]);
                  acc[q][4 * j4 + 1] = fmaf(v, w4.y, acc[q][4 * j4 + 1]);
                  acc[q][4 * j4 + 2] = fmaf(v, w4.z, acc[q][4 * j4 + 2]);
                  acc[q][4 * j4 + 3] = fmaf(v, w4.w, acc[q][4 * j4 + 3]);
                }
              }
            }
        }
        const int sy = 2 * tile.oy0 - 1 + syl;
        const float* bias = b0s + cb * G::kCB;
#pragma unroll
        for (int q = 0; q < G::kPP; ++q) {
          const int sx = 2 * tile.ox0 - 1 + sxl + q;
          const bool inside = sy >= 0 && sy < p.hs && sx >= 0 && sx < p.ws;  // else the next conv's zero padding
          uint2* dst = reinterpret_cast<uint2*>(map + (syl * G::kSW + sxl + q) * G::kC1S + cb * G::kCB);  // 8-byte
#pragma unroll
          for (int j4 = 0; j4 < G::kCB / 4; ++j4) {
            __half2 lo = __floats2half2_rn(0.f, 0.f), hi = lo;
            if (inside) {
              lo = __floats2half2_rn(epilogue_with<kSilu0>(acc[q][4 * j4], bias[4 * j4], 1.f),
                                     epilogue_with<kSilu0>(acc[q][4 * j4 + 1], bias[4 * j4 + 1], 1.f));
              hi = __floats2half2_rn(epilogue_with<kSilu0>(acc[q][4 * j4 + 2], bias[4 * j4 + 2], 1.f),
                                     epilogue_with<kSilu0>(acc[q][4 * j4 + 3], bias[4 * j4 + 3], 1.f));
            }
            dst[j4] = make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
          }
        }
      }
    }
    __syncthreads();  // the map is complete

    // 3. The next conv: output row oy0 + warp, its 16 columns.
    float acc[C2 / 8][4];
#pragma unroll
    for (int j = 0; j < C2 / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll
    for (int ky = 0; ky < 3; ++ky)
#pragma unroll
      for (int kx = 0; kx < 3; ++kx)
#pragma unroll
        for (int cb = 0; cb < C1 / 16; ++cb) {
          std::uint32_t a[4];
#pragma unroll
          for (int r = 0; r < 4; ++r)
            a[r] = *reinterpret_cast<const std::uint32_t*>(map + sp::a_offset<C1, C2>(warp, lane, r, ky, kx, cb));
          const int k0 = sp::k_of<C1, C2>(ky, kx, cb);
#pragma unroll
          for (int j = 0; j < C2 / 8; ++j)
            mma_16816(acc[j], a, *reinterpret_cast<const std::uint32_t*>(w1s + sp::b_offset<C1, C2>(lane, 0, j, k0)),
                      *reinterpret_cast<const std::uint32_t*>(w1s + sp::b_offset<C1, C2>(lane, 1, j, k0)));
        }
#pragma unroll
    for (int j = 0; j < C2 / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        int oy, ox, c;
        sp::acc_target(tile, warp, lane, j, e, oy, ox, c);
        if (oy < p.ho && ox < p.wo)
          *reinterpret_cast<__half2*>(p.y + ((static_cast<long long>(tile.n) * p.ho + oy) * p.wo + ox) * p.ldy + c) =
              __floats2half2_rn(epilogue_with<kSilu1>(acc[j][e], b1s[c], 1.f),
                                epilogue_with<kSilu1>(acc[j][e + 1], b1s[c + 1], 1.f));
      }
  }
  if (contig) cp_async_wait<0>();  // nothing in flight at exit (the last tile's copy group is empty)
}

template <int C1, int C2, bool kSilu0, bool kSilu1, bool kStemMma>
void launch_pair(const StemPairKernelParams& a, cudaStream_t stream, int max_grid) {
  constexpr auto kKernel = conv2d_stem_pair_f16<C1, C2, kSilu0, kSilu1, kStemMma>;
  constexpr int kSmem = sp::Geom<C1, C2>::kBytes;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), kSmem));
  const int grid = persistent_grid(kKernel, sp::kThreads, kSmem, a.tiles, max_grid);
  launch_kernel(kKernel, dim3(static_cast<unsigned>(grid)), dim3(sp::kThreads), static_cast<std::size_t>(kSmem), stream,
                a);
}

template <int C1, int C2, bool kStemMma>
void launch_pair_silu(const StemPairKernelParams& a, bool silu0, bool silu1, cudaStream_t stream, int max_grid) {
  if (silu0 && silu1) launch_pair<C1, C2, true, true, kStemMma>(a, stream, max_grid);
  else if (silu0) launch_pair<C1, C2, true, false, kStemMma>(a, stream, max_grid);
  else if (silu1) launch_pair<C1, C2, false, true, kStemMma>(a, stream, max_grid);
  else launch_pair<C1, C2, false, false, kStemMma>(a, stream, max_grid);
}
template <int C1, int C2>
void launch_pair_stem(const StemPairKernelParams& a, bool silu0, bool silu1, bool stem_mma, cudaStream_t stream,
                      int max_grid) {
  if (stem_mma) launch_pair_silu<C1, C2, true>(a, silu0, silu1, stream, max_grid);
  else launch_pair_silu<C1, C2, false>(a, silu0, silu1, stream, max_grid);
}

bool k3_s2_p1(const ConvShape& s) {
  return s.k == 3 && s.stride == 2 && s.pad == 1 && s.dilation == 1 && s.groups == 1;
}

}  // namespace

bool stem_pair_channels(int c_in, int c1, int c2) {
  return c_in == 3 && ((c1 == 16 && c2 == 32) || (c1 == 32 && c2 == 64));
}

bool stem_pair_supports(const ConvShape& stem, const ConvShape& next) {
  if (!k3_s2_p1(stem) || !k3_s2_p1(next) || next.c_in != stem.c_out) return false;
  if (!stem_pair_channels(stem.c_in, stem.c_out, next.c_out)) return false;
  if (next.batch != stem.batch || next.h != stem.ho || next.w_in != stem.wo) return false;
  return conv_can_implement(stem) && conv_can_implement(next);
}

bool stem_pair_views_ok(const ConvParams<__half>& stem, const ConvParams<__half>& next) {
  const auto aligned4 = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 4 == 0; };
  return stem.x && stem.w && next.w && next.y && !stem.residual && !stem.gamma && !next.residual && !next.gamma &&
         stem.ldx >= stem.c_in && next.ldy >= next.c_out && next.ldy % 2 == 0 && aligned4(next.y) &&
         aligned4(next.w);
}

void launch_conv2d_stem_pair_f16(const ConvParams<__half>& stem, const ConvParams<__half>& next, cudaStream_t stream,
                                 int max_grid) {
  if (!stem_pair_supports(stem, next) || !stem_pair_views_ok(stem, next))
    throw Error("conv2d_stem_pair_f16: the pair " + std::to_string(stem.c_in) + "->" + std::to_string(stem.c_out) +
                "->" + std::to_string(next.c_out) + " (or its views) is not one the kernel takes");
  StemPairKernelParams a;
  a.src = PatchSource{stem.x, stem.ldx, stem.batch, stem.h, stem.w_in};
  a.hs = stem.ho;
  a.ws = stem.wo;
  a.ho = next.ho;
  a.wo = next.wo;
  const GemmLayout l0 = gemm_layout(stem), l1 = gemm_layout(next);
  a.w0 = stem.w;
  a.k_pad0 = l0.k_pad;
  a.cin_pad0 = l0.cin_pad;
  a.bias0 = stem.bias;
  a.w1 = next.w;
  a.k_pad1 = l1.k_pad;  // cin_pad is C1 itself (a multiple of 16)
  a.bias1 = next.bias;
  a.y = next.y;
  a.ldy = next.ldy;
  a.tiles_x = ceil_div(next.wo, sp::kTW);
  a.tiles_y = ceil_div(next.ho, sp::kTH);
  a.tiles = 1LL * a.tiles_x * a.tiles_y * next.batch;
  if (a.tiles <= 0) return;
  const bool silu0 = stem.silu(), silu1 = next.silu(), stem_mma = conv_variants().f16_stem_pair_mma;
  if (stem.c_out == 16) launch_pair_stem<16, 32>(a, silu0, silu1, stem_mma, stream, max_grid);
  else launch_pair_stem<32, 64>(a, silu0, silu1, stem_mma, stream, max_grid);
}

}  // namespace yolo12::cuda::conv_detail
