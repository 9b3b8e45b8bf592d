// src/backends/cuda/conv_halo.cu - conv2d_halo_f16: the fp16 implicit GEMM (conv_gemm.cuh) of a k x k conv
// at stride 1 with few output channels, from an input tile with its halo in shared memory.
//
// Why: the implicit-GEMM kernels (conv_implicit_gemm.cu, conv_wgmma.cu, conv_narrow.cu) gather every
// output row's k x k taps from memory: a 3x3 conv reads each input pixel 9 times through L1/L2. Where the
// channels are few that traffic, not the MMAs, is the time: at batch 32 yolo12n's 3x3 16->8 and 8->16 at
// 160x160 ran at 8-11x their memory floor, its 3x3 convs of 16-64 channels at 80x80 and 40x40 at 5-14x, and
// yolo12x's 3x3 48->48 at 160x160 at 6-7x (docs/benchmarks-gpu.md, the per-op profiles).
//
// Here a block loads, per tile of 8 x 16 output pixels (128 GEMM rows), the (8 + k - 1) x (16 + k - 1) input
// pixels it reads (about 1.4 reads per input pixel at 3x3) with 16-byte cp.async, zero outside the image,
// and forms the A operand of every tap from that tile: ldmatrix takes one row address per lane, so the row of
// output pixel (y, x) at tap (ky, kx) is simply halo pixel (y + ky, x + kx). A per-block table maps each
// 8-column group of K (tap, channel chunk) to its offset from a pixel's own halo position (or to a zero row
// past K). As in conv2d_narrow_f16 the weights (all of N x K) stay in shared memory, the grid is persistent
// and the tiles stream through a pipeline of 2-3 stages; warp w of 8 computes output row w of the tile (16
// pixels) x all bn channels with mma.sync m16n8k16, fp32 accumulate; the epilogue (bias, SiLU, gamma,
// residual, 16-byte stores) is conv2d_narrow_f16's (conv_narrow.cuh), 8 pixels of one output row at a time.
//
// Requirements (halo_plan): fp16, groups 1, stride 1, dilation 1, k <= 5, 16-byte A chunks (vec_a),
// c_out <= 64, K rounded to 16 at most 576 (3x3 over 64 channels), and at least one tile per SM.
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "conv_narrow.cuh"
#include "launch.cuh"
#include "mma.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

constexpr int kHaloTH = 8, kHaloTW = 16;     // output pixels per tile (rows x columns): 128 GEMM rows
constexpr int kHaloWarps = 8;                // warp w: output row w of the tile
constexpr int kHaloThreads = kHaloWarps * 32;
constexpr int kHaloMaxN = 64;
constexpr int kHaloMaxK = 576;
constexpr int kHaloMaxTaps = 5;

// Byte offsets from the block's dynamic shared memory.
struct HaloLayout {
  int hh = 0, hw = 0;    // halo tile rows and columns: kHaloTH + k - 1, kHaloTW + k - 1
  int h_row = 0;         // halves per halo pixel: cin_pad, + 8 where cin_pad / 8 is even (an odd number of
                         // 16-byte units: the 8 rows of an ldmatrix phase, 8 neighbouring pixels, in distinct banks)
  int b_row = 0;         // halves per weight row: k16 + 8 (as conv2d_narrow_f16)
  int c_row = 0;         // floats per staging row (narrow_layout's)
  int stage_halves = 0;  // one halo tile
  int tab_off = 0, zero_off = 0, h_off = 0, c_off = 0, bytes = 0;
};

HaloLayout halo_layout(int bn, int k, int cin_pad, int k16, int stages) {
  HaloLayout l;
  l.hh = kHaloTH + k - 1;
  l.hw = kHaloTW + k - 1;
  l.h_row = (cin_pad / kChunk) % 2 == 1 ? cin_pad : cin_pad + kChunk;
  l.b_row = k16 + 8;
  l.c_row = bn == 8 ? 24 : bn + 8;
  l.stage_halves = l.hh * l.hw * l.h_row;
  l.tab_off = bn * l.b_row * 2;                          // B: (bn, b_row) halves at 0
  l.zero_off = round_up(l.tab_off + (k16 / kChunk) * 4, 16);  // the K table: k16 / 8 ints
  l.h_off = l.zero_off + 16;                              // 16 zero bytes, then the halo stages
  l.c_off = l.h_off + stages * l.stage_halves * 2;
  l.bytes = l.c_off + kHaloWarps * kNarrowStageRows * l.c_row * 4;
  return l;
}

struct HaloParams {
  ImplicitGemmParams<__half> g;
  HaloLayout layout;
  int k16;      // K rounded up to 16: the A / B columns the MMAs read
  int stages;   // halo tiles in the pipeline (2 or 3)
  int tiles_x, tiles_y, tiles;  // tiles per output row band, bands per image, all tiles (batch included)
};

struct HaloTile {
  int n, oy0, ox0;  // image, first output row and column
};
__device__ __forceinline__ HaloTile halo_tile(const HaloParams& p, int t) {
  const int per_image = p.tiles_x * p.tiles_y;
  const int n = t / per_image, r = t - n * per_image;
  return {n, (r / p.tiles_x) * kHaloTH, (r % p.tiles_x) * kHaloTW};
}

template <int BN>
__global__ void __launch_bounds__(kHaloThreads) conv2d_halo_f16(const HaloParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  static_assert(BN == 8 || BN % 16 == 0, "B fragments are read one n8 block (bn 8) or two at a time");
  constexpr int NI = BN / 8;
  const ImplicitGemmParams<__half>& a = p.g;
  const HaloLayout& L = p.layout;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* Bs = reinterpret_cast<__half*>(smem_raw);                   // (BN, b_row)
  int* tab = reinterpret_cast<int*>(smem_raw + L.tab_off);            // (k16 / 8)
  const __half* zero = reinterpret_cast<const __half*>(smem_raw + L.zero_off);  // (8) zeros
  __half* Hs = reinterpret_cast<__half*>(smem_raw + L.h_off);         // (stages, hh, hw, h_row)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  float* Cs = reinterpret_cast<float*>(smem_raw + L.c_off) + warp * kNarrowStageRows * L.c_row;  // (8, c_row)
  const CpAsyncZfill16<false> copy{a.x};  // the halo is read once per tile: no need to keep it in L1

  // The K table: 8-column group j of K is channels [ci, ci + 8) of tap (ky, kx); its A row for the output
  // pixel at halo position q is halo pixel q + ky * hw + kx.
  for (int j = tid; j < p.k16 / kChunk; j += kHaloThreads) {
    const int k = j * kChunk;
    int off = -1;
    if (k < a.k_real) {
      const int tap = k / a.cin_pad, ci = k - tap * a.cin_pad;
      off = ((tap / a.k) * L.hw + tap % a.k) * L.h_row + ci;
    }
    tab[j] = off;
  }
  if (tid == 0) *reinterpret_cast<uint4*>(smem_raw + L.zero_off) = make_uint4(0, 0, 0, 0);

  auto load_halo = [&](int t, int stage) {
    const HaloTile at = halo_tile(p, t);
    const __half* ximg = a.x + static_cast<long long>(at.n) * a.h * a.w_in * a.ldx;  // (H, W, ldx)
    copy_image_tile(ximg, a.h, a.w_in, a.ldx, at.oy0 - a.pad, at.ox0 - a.pad, L.hh, L.hw,
                    a.cin_pad / kChunk /* == cin_g / 8 (vec_a) */, Hs + stage * L.stage_halves, L.h_row, tid,
                    kHaloThreads, copy);
  };

  float2 bias_r[NI], gamma_r[NI];  // this lane's 2 * NI channels
  narrow_lane_bias_gamma<NI>(a, lane, bias_r, gamma_r);

  // The weights travel in the first tile's cp.async group. Prologue: stages - 1 tiles in flight.
  narrow_load_weights(a, BN, p.k16, L.b_row, Bs, tid, kHaloThreads, copy);
  const int S = p.stages;
  for (int s = 0; s < S - 1; ++s) {
    const int t = blockIdx.x + s * gridDim.x;
    if (t < p.tiles) load_halo(t, s);
    cp_async_commit();
  }

  for (int it = 0, t = blockIdx.x; t < p.tiles; ++it, t += gridDim.x) {
    const int ahead = t + (S - 1) * gridDim.x;  // into the stage tile it - 1 used (freed at the barrier below)
    if (ahead < p.tiles) load_halo(ahead, (it + S - 1) % S);
    cp_async_commit();
    cp_async_wait_dyn(S - 1);  // this tile (and the weights) have landed for this thread
    __syncthreads();           // ... for every thread; the table and the zero row are written

    // This lane's A row: output pixel (warp, lane % 16) of the tile, at halo position (warp, lane % 16).
    const __half* arow = Hs + (it % S) * L.stage_halves + (warp * L.hw + lane % 16) * L.h_row;
    float acc[1][NI][4];
    mma_rows_by_table<NI>(acc, arow, tab, zero, Bs, L.b_row, p.k16, lane);

    // Epilogue: the warp's 16 pixels of output row oy, 8 at a time (accumulator elements 0-1 hold pixels
    // lane / 4, elements 2-3 pixels lane / 4 + 8), staged and stored by conv2d_narrow_f16's pieces.
    const HaloTile at = halo_tile(p, t);
    const int oy = at.oy0 + warp;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ox = at.ox0 + h * 8, count = a.wo - ox < 8 ? a.wo - ox : 8;
      if (oy >= a.ho || count <= 0) continue;  // uniform over the warp
      float v[NI][2];
      with_epilogue(a.silu(), [&](auto fin) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          v[j][0] = fin(acc[0][j][2 * h], bias_r[j].x, gamma_r[j].x);
          v[j][1] = fin(acc[0][j][2 * h + 1], bias_r[j].y, gamma_r[j].y);
        }
      });
      narrow_stage<NI>(Cs, L.c_row, lane, v);
      __syncwarp();
      const int m0 = (at.n * a.ho + oy) * a.wo + ox;
      narrow_store_staged<BN>(a, Cs, L.c_row, m0, lane, m0 + count);
      __syncwarp();  // the staging rows are rewritten by the next pass
    }
    __syncthreads();  // every warp is done reading stage it % S before it is refilled
  }
  cp_async_wait<0>();
}

template <int BN>
void launch_halo(const HaloParams& p, int smem, int max_grid, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_halo_f16<BN>;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel),
                                       static_cast<int>(device_info().smem_per_block_optin)));
  const int grid = persistent_grid(kKernel, kHaloThreads, smem, p.tiles, max_grid);
  launch_kernel(kKernel, static_cast<unsigned>(grid), kHaloThreads, static_cast<std::size_t>(smem), stream, p);
}

long long halo_tiles(const ConvShape& s) {
  return 1LL * s.batch * ceil_div(s.ho, kHaloTH) * ceil_div(s.wo, kHaloTW);
}

}  // namespace

bool halo_takes(const ConvShape& s) {
  if (s.groups != 1 || s.stride != 1 || s.dilation != 1 || s.k < 2 || s.k > kHaloMaxTaps) return false;
  const GemmLayout l = gemm_layout(s);
  return l.cin_g % kChunk == 0 && l.n_g <= kHaloMaxN && round_up(l.k_real, 16) <= kHaloMaxK;
}

ConvPlan halo_plan(const ConvShape& s, const DeviceInfo& dev, bool any_grid) {
  ConvPlan plan;  // not halo_f16: not taken
  if (!halo_takes(s) || (!any_grid && halo_tiles(s) < dev.sm_count)) return plan;
  const GemmLayout l = gemm_layout(s);
  const int k16 = round_up(l.k_real, 16), bn = narrow_bn(l.n_g);
  // The deepest pipeline (3, 2 tiles) that keeps two blocks on an SM, else the deepest that fits one.
  const long long sm = static_cast<long long>(dev.smem_per_sm), reserved = static_cast<long long>(dev.smem_reserved_per_block);
  const long long optin = static_cast<long long>(dev.smem_per_block_optin);
  const long long one_per_sm = optin < sm - reserved ? optin : sm - reserved;
  for (const long long budget : {sm / 2 - reserved, one_per_sm})
    for (const int stages : {3, 2}) {
      const int bytes = halo_layout(bn, s.k, l.cin_pad, k16, stages).bytes;
      if (bytes <= budget) {
        plan.algorithm = ConvAlgorithm::halo_f16;
        plan.bm = kHaloTH * kHaloTW;
        plan.bn = bn;
        plan.bk = k16;
        plan.split = 1;
        plan.stages = stages;
        plan.warps = kHaloWarps;
        plan.smem_bytes = bytes;
        return plan;
      }
    }
  return plan;
}

// The rule, fitted to call 2 of the eleventh session (H200, per-op profiles at batch 1 and 32): faster than the
// kernels before on every 3x3 conv of yolo12n with a K up to 288 (16->8 at 160x160, batch 32, 0.108 -> 0.063 ms;
// 32->32 at 40x40 0.024 -> 0.019) and on yolo12x's 48->48 at 160x160 at batch 32 (K 432: 0.28 -> 0.22 ms), slower on
// yolo12n's 64->64 (K 576, one block per SM: 0.082 -> 0.112 ms at 80x80) and on yolo12x's 48->48 at batch 1
// (200 tiles: 0.015 -> 0.017 ms). So: K up to 432, and over 32 channels only on 4+ tiles per SM. Under
// f16_halo_k576, K up to 576 for up to 32 channels (half the weights of the 64->64 that lost; conv_detail.cuh).
ConvPlan halo_rule(const ConvShape& s, const DeviceInfo& dev) {
  const ConvPlan plan = halo_plan(s, dev);
  if (plan.algorithm != ConvAlgorithm::halo_f16) return plan;
  const bool wide = gemm_layout(s).n_g > 32;
  const int max_k = !wide && conv_variants().f16_halo_k576 ? kHaloMaxK : 432;
  if (plan.bk > max_k || (wide && halo_tiles(s) < 4LL * dev.sm_count)) return ConvPlan{};
  return plan;
}

bool halo_runs(const ConvParams<__half>& p) { return halo_takes(p) && make_params(p).vec_a; }

void launch_conv2d_halo_f16(const ConvParams<__half>& cp, const ConvPlan& plan, cudaStream_t stream, int max_grid) {
  HaloParams p;
  p.g = make_params(cp);
  p.k16 = plan.bk;
  p.stages = plan.stages;
  p.layout = halo_layout(plan.bn, cp.k, p.g.cin_pad, plan.bk, plan.stages);
  p.tiles_x = ceil_div(cp.wo, kHaloTW);
  p.tiles_y = ceil_div(cp.ho, kHaloTH);
  p.tiles = cp.batch * p.tiles_x * p.tiles_y;
  const int smem = p.layout.bytes;
  switch (plan.bn) {
    case 8: launch_halo<8>(p, smem, max_grid, stream); break;
    case 16: launch_halo<16>(p, smem, max_grid, stream); break;
    case 32: launch_halo<32>(p, smem, max_grid, stream); break;
    case 48: launch_halo<48>(p, smem, max_grid, stream); break;
    default: launch_halo<64>(p, smem, max_grid, stream); break;
  }
}

}  // namespace yolo12::cuda::conv_detail
