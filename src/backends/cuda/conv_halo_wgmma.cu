// src/backends/cuda/conv_halo_wgmma.cu - conv2d_halo_wgmma: the fp16 implicit GEMM (conv_gemm.cuh) of a 3x3 conv
// at stride 1 or 2 on Hopper's wgmma (wgmma.cuh; sm_90a), with its A operand read from an input tile with its halo.
//
// Why: conv2d_implicit_gemm_wgmma (conv_wgmma.cu) gathers every output row's 9 taps into a swizzled A tile, so
// a 128 x 96 tile of yolo12x's 3x3 96->96 at 80x80 moves about 221 KB of A (and 166 KB of B) through L2 for
// 21 MFLOP; at batch 32 those convs ran at a quarter of the tensor cores' peak, and the bytes per FLOP through
// L2 were the limit (docs/kernels-conv.md, twelfth session). Here a tile's A is its input pixels with their
// halo, read once: 18 x 10 pixels for 16 x 8 outputs instead of 9 x 128 rows.
//
// How wgmma reads a halo tile: without swizzle, a K-major operand is built of core matrices of 8 rows x 16
// bytes, the 8 rows 16 bytes apart, and the descriptor gives the distance between core matrices along K (lbo)
// and along M (sbo). The halo stage is stored channel-chunk-major, [2 chunks of 8 channels][halo pixel][16
// bytes], so 8 horizontally adjacent pixels are one core matrix. An m64 wgmma covers a patch of 8 x 8 output
// pixels: its 8 core-matrix rows are the patch's 8 output rows (sbo = one halo row), and tap (ky, kx) only
// moves the start address by (ky * halo width + kx) pixels. No gathering per tap, no K-column table. At stride
// 2 the halo's columns are split by parity into two planes, so that the 8 pixels a tap reads for 8
// neighbouring outputs are adjacent again (sbo = two halo rows).
//
// The block: 256 threads = two warpgroups, both loading and computing (conv2d_implicit_gemm_wgmma's pipeline).
// Its output tile is 16 rows x 8P columns of one image (P = 1 or 2 patches per warpgroup; warpgroup w takes
// output rows [8w, 8w + 8)) x BN output channels (48, 64, 96, 128 or 192; P BN / 2 fp32 accumulators per
// thread). K is walked 16 input channels at a time: a stage holds those channels of the halo tile,
// (16 + 2) x (8P + 2) pixels x 32 bytes at stride 1 (2 x 33 x (8P + 1) at stride 2), and the weights of all 9
// taps for them, [tap][2 chunks][BN][16 bytes] (halo_wgmma_layout.hpp has every offset). A stage's MMAs: 9 taps
// x P wgmmas of m64nBNk16 per warpgroup, one commit group, in conv2d_implicit_gemm_wgmma's pipeline
// (wgmma_pipeline, wgmma.cuh) over 3 or 4 stages (chosen at run time).
// Epilogue: the fp32 tile is staged in shared memory over the pipeline, then written in 8-channel chunks
// through store_staged8 (bias, SiLU, gamma, residual, one rounding, 16-byte stores), as the wgmma kernels do.
// Blocks are issued column tile fastest, so the column tiles of one pixel tile read its halo from L2.
//
// Status (fifteenth session): passes test_conv [halo_wgmma] on the H200 (every plan against the reference, clean
// under memcheck and racecheck); the layout arithmetic is also replayed on the CPU by
// tests/unit/test_halo_wgmma_layout.cpp. Variant f16_halo_wgmma (stride 1) is on, with the rule fitted to tuning
// below; f16_halo_wgmma_s2 (stride 2) is off (slower on every stride-2 shape measured). Kernel tuning times its
// plans only under these variants.
//
// Requirements (halo_wgmma_takes / halo_wgmma_runs): sm_90a (wgmma_available), fp16, groups 1, stride 1 or 2,
// dilation 1, k 3, c_in a multiple of 16 with 16-byte views (vec_a), and an image's elements (h * w * ldx)
// within an int.
#include <climits>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "halo_wgmma_layout.hpp"
#include "launch.cuh"
#include "mma.cuh"
#include "wgmma.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

namespace hw = halo_wgmma;  // halo_wgmma_layout.hpp: the tile, the stages, the operands, the accumulators

struct HaloWgmmaParams {
  ImplicitGemmParams<__half> g;
  int stages = 0;                  // pipeline stages, 3 or 4
  int k_stages = 0;                // K stages: cin_g / kCK
  int tiles_x = 0, tiles_y = 0;    // output tiles per row band, bands per image
  int col_tiles = 0;               // ceil(n_g / BN); the grid is batch x tiles_y x tiles_x x col_tiles blocks
};

#if defined(YOLO12_HAS_WGMMA)
// One K stage's MMAs for this warpgroup (wgi), one commit group: for each tap and patch q, the patch's 64 output
// pixels times the tap's BN x 16 weights, operands at the offsets of halo_wgmma_layout.hpp from the stage at s0.
template <int BN, int P, int S>
__device__ __forceinline__ void hw_mma_stage(float (&acc)[P][BN / 2], std::uint32_t s0, int wgi) {
  using T = hw::Tile<P, S>;
  using G = hw::Geom<BN, P, S>;
#pragma unroll
  for (int q = 0; q < P; ++q) wgmma_fence_accumulators(acc[q]);
  wgmma_fence();
#pragma unroll
  for (int tap = 0; tap < hw::kTaps; ++tap) {
    const std::uint64_t b = wgmma_desc_plain(s0 + hw::b_start<BN, P, S>(tap), G::kBLbo, G::kBSbo);
#pragma unroll
    for (int q = 0; q < P; ++q)
      wgmma_m64k16<BN>(acc[q], wgmma_desc_plain(s0 + hw::a_start<P, S>(wgi, q, tap), T::kALbo, T::kASbo), b);
  }
  wgmma_commit();
}
#endif

// Blocks per SM the registers are budgeted for (at most 128 per thread for two): two where two blocks' 3-stage
// pipelines fit an SM's 228 KiB (1 KiB reserved per block), else one. ptxas fits every such tile in 128 registers
// without spilling (the 16 x 16 x 96 tile of the 3x3 96->96 convs, 96 accumulators per thread, in exactly 128).
template <int BN, int P, int S>
constexpr int hw_min_blocks() {
  return 2 * (hw::Geom<BN, P, S>::bytes(hw::kMinStages) + 1024) <= 228 * 1024 ? 2 : 1;
}

template <int BN, int P, int S>
__global__ void __launch_bounds__(hw::kThreads, hw_min_blocks<BN, P, S>()) conv2d_halo_wgmma(const HaloWgmmaParams p) {
#if defined(YOLO12_HAS_WGMMA)
  pdl_begin();  // launch.cuh: before any activation is touched
  using T = hw::Tile<P, S>;
  using G = hw::Geom<BN, P, S>;
  constexpr int kHaloItems = (T::kCopies + hw::kThreads - 1) / hw::kThreads;  // halo copies per thread and stage
  const ImplicitGemmParams<__half>& a = p.g;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* base =
      smem_raw + ((hw::kAlign - (smem_addr(smem_raw) & (hw::kAlign - 1))) & (hw::kAlign - 1));  // (stages, kStage)
  const int tid = threadIdx.x;
  const hw::BlockTile bt = hw::block_tile(static_cast<int>(blockIdx.x), p.tiles_x, p.tiles_y, p.col_tiles, T::kTW, BN);
  const __half* ximg = a.x + static_cast<long long>(bt.img) * a.h * a.w_in * a.ldx;  // (H, W, ldx)

  // This thread's halo copies tid + 256 j (the same in every stage but for the channel offset): source offsets
  // and destination slots.
  int h_src[kHaloItems], h_slot[kHaloItems];
#pragma unroll
  for (int j = 0; j < kHaloItems; ++j)
    h_src[j] = hw::halo_src<P, S>(tid + j * hw::kThreads, bt.oy0, bt.ox0, a.pad, a.h, a.w_in, a.ldx, h_slot[j]);

  // K stage kt (input channels [16 kt, 16 kt + 16)) into stage s.
  auto load_stage = [&](int kt, int s) {
    unsigned char* st = base + s * G::kStage;  // halo (2, kPix, 16 B), then B (9, 2, BN, 16 B)
    const int c0 = kt * hw::kCK;
#pragma unroll
    for (int j = 0; j < kHaloItems; ++j) {
      const int i = tid + j * hw::kThreads;
      if (j + 1 < kHaloItems || i < T::kCopies) {
        const bool ok = h_src[j] >= 0;
        cp_async_16(st + h_slot[j] * 16, ok ? ximg + h_src[j] + c0 : a.x, ok ? 16 : 0);
      }
    }
#pragma unroll 4
    for (int i = tid; i < G::kBCopies; i += hw::kThreads) {
      int n, kcol, slot;
      hw::b_copy<BN>(i, a.cin_pad, n, kcol, slot);
      const bool ok = bt.n0 + n < a.n_g;
      const __half* src = a.w + static_cast<long long>(bt.n0 + n) * a.k_pad + kcol + c0;  // (n_g, k_pad) row
      cp_async_16(st + T::kHaloBytes + slot * 16, ok ? src : a.w, ok ? 16 : 0);
    }
  };

  float acc[P][BN / 2];
#pragma unroll
  for (int q = 0; q < P; ++q)
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[q][i] = 0.f;
#pragma unroll
  for (int q = 0; q < P; ++q) wgmma_fence_accumulators(acc[q]);  // else the zeroing may sink into the K loop,
                                                                   // which serialises the wgmmas (ptxas C7515)

  const int wgi = tid / 128;  // this warpgroup's output rows: [8 wgi, 8 wgi + 8) of the tile
  const std::uint32_t smem0 = smem_addr(base);
  wgmma_pipeline(p.k_stages, p.stages, load_stage,
                 [&](int, int stage) { hw_mma_stage<BN, P, S>(acc, smem0 + stage * G::kStage, wgi); });
#pragma unroll
  for (int q = 0; q < P; ++q) wgmma_fence_accumulators(acc[q]);  // the C tile reuses the stages

  // Staged C row (wgi P + q) 64 + e holds row e of patch q's m64 (hw::staged_pixel says which pixel).
  float* Cs = reinterpret_cast<float*>(base);  // (kCRows, kCRow)
  {
    const int warp = (tid % 128) / 32, lane = tid % 32;
#pragma unroll
    for (int q = 0; q < P; ++q)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        int e, col;  // registers 4j, 4j + 1 at (e, col), (e, col + 1); 4j + 2, 4j + 3 eight rows below
        hw::acc_position(warp, lane, 4 * j, e, col);
        float* c = Cs + ((wgi * P + q) * 64 + e) * G::kCRow + col;
        *reinterpret_cast<float2*>(c) = make_float2(acc[q][4 * j], acc[q][4 * j + 1]);
        *reinterpret_cast<float2*>(c + 8 * G::kCRow) = make_float2(acc[q][4 * j + 2], acc[q][4 * j + 3]);
      }
  }
  __syncthreads();
  constexpr int kChunksN = BN / 8;
  for (int idx = tid; idx < G::kCRows * kChunksN; idx += hw::kThreads) {
    const int r = idx / kChunksN, c = idx - r * kChunksN;
    int dy, dx;
    hw::staged_pixel<P>(r, dy, dx);
    const int oy = bt.oy0 + dy, ox = bt.ox0 + dx, n = bt.n0 + c * 8;
    if (oy >= a.ho || ox >= a.wo || n >= a.n_g) continue;
    store_staged8(a, Cs + r * G::kCRow + c * 8, (bt.img * a.ho + oy) * a.wo + ox, n, 0);
  }
#else
  (void)p;  // not sm_90a code: wgmma_available() is false and nothing launches this
#endif
}

// The instantiated tiles (BN, P), each at stride 1 and 2: every width for one patch per warpgroup, and two
// patches up to 128 columns (192 x 2 would need 192 accumulators per thread).
struct HwTileCfg {
  int bn, p;
};
constexpr HwTileCfg kHwTiles[] = {{48, 1}, {48, 2}, {64, 1}, {64, 2}, {96, 1}, {96, 2}, {128, 1}, {128, 2}, {192, 1}};

// f(bn, p, stride) as compile-time constants for an instantiated tile (an unknown one is taken as 64 x 1).
template <typename F>
decltype(auto) with_hw_tile(int bn, int p, int stride, F&& f) {
  using std::integral_constant;
  const auto at = [&](auto s) -> decltype(auto) {
    switch (bn * 10 + p) {
      case 481: return f(integral_constant<int, 48>{}, integral_constant<int, 1>{}, s);
      case 482: return f(integral_constant<int, 48>{}, integral_constant<int, 2>{}, s);
      case 642: return f(integral_constant<int, 64>{}, integral_constant<int, 2>{}, s);
      case 961: return f(integral_constant<int, 96>{}, integral_constant<int, 1>{}, s);
      case 962: return f(integral_constant<int, 96>{}, integral_constant<int, 2>{}, s);
      case 1281: return f(integral_constant<int, 128>{}, integral_constant<int, 1>{}, s);
      case 1282: return f(integral_constant<int, 128>{}, integral_constant<int, 2>{}, s);
      case 1921: return f(integral_constant<int, 192>{}, integral_constant<int, 1>{}, s);
      default: return f(integral_constant<int, 64>{}, integral_constant<int, 1>{}, s);
    }
  };
  if (stride == 2) return at(integral_constant<int, 2>{});
  return at(integral_constant<int, 1>{});
}

int hw_smem(int bn, int p, int stride, int stages) {
  return with_hw_tile(bn, p, stride, [&](auto b, auto q, auto st) { return hw::Geom<b(), q(), st()>::bytes(stages); });
}

int hw_patches(const ConvPlan& plan) { return plan.bm / (hw::kTH * 8); }

ConvPlan hw_plan(int bn, int p, int stride, int stages) {
  ConvPlan plan;
  plan.algorithm = ConvAlgorithm::halo_wgmma;
  plan.bm = hw::kTH * 8 * p;  // 128 or 256 output pixels
  plan.bn = bn;
  plan.bk = hw::kCK;
  plan.split = 1;
  plan.stages = stages;
  plan.warps = hw::kThreads / 32;
  plan.smem_bytes = hw_smem(bn, p, stride, stages);
  return plan;
}

// Whether column tiles of width bn cover n_g output channels with at most n_g / den columns of padding (den 4: a
// tuning candidate; den 8: the rule's choice).
bool hw_pads_at_most(int bn, int n_g, int den) { return 1LL * den * ceil_div(n_g, bn) * bn <= (den + 1LL) * n_g; }

long long hw_blocks(const ConvShape& s, int bn, int p) {
  return 1LL * s.batch * ceil_div(s.ho, hw::kTH) * ceil_div(s.wo, 8 * p) * ceil_div(s.c_out, bn);
}

}  // namespace

bool halo_wgmma_takes(const ConvShape& s) {
  if (s.groups != 1 || (s.stride != 1 && s.stride != 2) || s.dilation != 1 || s.k != hw::kK || s.c_in % hw::kCK != 0 ||
      s.c_out < 8)
    return false;
  return wgmma_available();
}

bool halo_wgmma_enabled(const ConvShape& s, const ConvVariants& v) {
  return s.stride == 2 ? v.f16_halo_wgmma_s2 : v.f16_halo_wgmma;
}

bool halo_wgmma_runs(const ConvParams<__half>& p) {
  return halo_wgmma_takes(p) && make_params(p).vec_a && 1LL * p.h * p.w_in * p.ldx <= INT_MAX;
}

std::vector<ConvPlan> halo_wgmma_candidates(const ConvShape& s) {
  std::vector<ConvPlan> out;
  if (!halo_wgmma_takes(s)) return out;
  for (const HwTileCfg& t : kHwTiles) {
    if (!hw_pads_at_most(t.bn, s.c_out, 4)) continue;
    for (int stages = hw::kMinStages; stages <= hw::kMaxStages; ++stages)
      if (static_cast<std::size_t>(hw_smem(t.bn, t.p, s.stride, stages)) <= device_info().smem_per_block_optin)
        out.push_back(hw_plan(t.bn, t.p, s.stride, stages));
  }
  return out;
}

// The rule (variant f16_halo_wgmma for stride 1, f16_halo_wgmma_s2 for stride 2).
//  - Stride 1: fitted to the kernel-tuning logs of yolo12x and yolo12l at batch 1 and 32 (fifteenth session,
//    docs/kernels-conv.md). The kernel won only where K is short and the map large: c_in <= 96, 48 or 96 output
//    channels (the 48- and 96-wide tiles; 64 channels tied or lost), maps of 80x80 and more: yolo12x's 3x3 48->48
//    at 160x160 (0.202 vs 0.223 ms at batch 32) and 96->96 at 80x80 (0.135 vs 0.145 ms). From 128 input channels
//    up the per-tap weights dominate and the implicit GEMMs won by 20-50 %. On grids of 4+ blocks of 256 pixels per
//    SM: the whole width, two patches per warpgroup; else (batch 1) 48-wide tiles of one patch (more blocks).
//    Three stages throughout.
//  - Stride 2: the first rule, written before the kernel was measured (its variant stays off: it lost on every
//    stride-2 shape measured): 48+ output channels, the widest instantiated tile up to 128 that pads N by at most
//    an eighth (192 for 192 channels), grids of at least two blocks per SM.
ConvPlan halo_wgmma_rule(const ConvShape& s, const DeviceInfo& dev) {
  if (!halo_wgmma_takes(s) || s.c_out < 48) return ConvPlan{};
  if (s.stride == 1) {
    if (s.c_in > 96 || (s.c_out != 48 && s.c_out != 96) || 1LL * s.ho * s.wo < 80 * 80) return ConvPlan{};
    if (hw_blocks(s, s.c_out, 2) >= 4LL * dev.sm_count) return hw_plan(s.c_out, 2, 1, 3);
    return hw_plan(48, 1, 1, 3);
  }
  int bn = 0;
  for (const int w : {48, 64, 96, 128})
    if (hw_pads_at_most(w, s.c_out, 8)) bn = w;
  if (s.c_out == 192) bn = 192;
  if (bn == 0) return ConvPlan{};
  const int p = bn <= 128 && hw_blocks(s, bn, 2) >= 4LL * dev.sm_count ? 2 : 1;
  if (hw_blocks(s, bn, p) < 2LL * dev.sm_count) return ConvPlan{};
  return hw_plan(bn, p, s.stride, hw::kMinStages);
}

void launch_conv2d_halo_wgmma(const ConvParams<__half>& cp, const ConvPlan& plan, cudaStream_t stream) {
  HaloWgmmaParams p;
  p.g = make_params(cp);
  p.stages = plan.stages < hw::kMinStages ? hw::kMinStages
                                          : (plan.stages > hw::kMaxStages ? hw::kMaxStages : plan.stages);
  p.k_stages = p.g.cin_g / hw::kCK;
  const int patches = hw_patches(plan);
  p.tiles_x = ceil_div(cp.wo, 8 * patches);
  p.tiles_y = ceil_div(cp.ho, hw::kTH);
  p.col_tiles = ceil_div(p.g.n_g, plan.bn);
  const long long blocks = 1LL * cp.batch * p.tiles_x * p.tiles_y * p.col_tiles;
  with_hw_tile(plan.bn, patches, cp.stride, [&](auto b, auto q, auto st) {
    launch_with_smem<conv2d_halo_wgmma<b(), q(), st()>>(dim3(static_cast<unsigned>(blocks)), dim3(hw::kThreads),
                                                         hw::Geom<b(), q(), st()>::bytes(p.stages), p, stream);
  });
}

}  // namespace yolo12::cuda::conv_detail
