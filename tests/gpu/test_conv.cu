// tests/gpu/test_conv.cu - the conv kernels themselves, against the shared conv reference in double
// (tests/ops: conv_reference, on this file's NHWC buffers): the kernel variants switched off, the
// naive oracle kernel, split-K over a cluster, conv2d_narrow_f16, dwconv_tiled_f16 and dwconv_rows_f16
// launched directly and replayed on the CPU (dwconv_rows_f16 bit for bit against dwconv_direct and
// dwconv_tiled_f16), the plans the dispatcher picks, CUDA-graph capture. Shapes: the
// suite's fixed conv shapes (every kernel path and its edges) and its random ones, plus each kernel's
// own: odd H/W, stride 2, dilation, groups, depthwise 3/5/7, channel counts that are not multiples of
// 8, c_in = 3, residual/gamma/SiLU on and off, and channel-slice reads and writes (ldx > c_in, ldy >
// c_out, pointers offset into the buffer) with guard values around the slice. conv2d_forward at the
// default variants, through the executor's bind, is the shared op suite's (tests/ops, test_ops_gpu).
//
// Bounds: fp32 rel L2 < 1e-5 against double. fp16: rel L2 against double (computed on the same
// half-rounded inputs) at most twice that of a naive fp16 implementation (the reference's output
// rounded to half). Every output element is poisoned with NaN first and must be written; every
// element outside the slice must keep its guard value bit for bit.
//
// [.bench] (not run by default): the yolo12n-at-640 conv shapes at batch 1 and 32, fp16 and fp32,
// timed with CUDA events over graph replays (median), in TFLOP/s and GB/s against the H200 ceilings.
#include "catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_depthwise.cuh"
#include "backends/cuda/conv_detail.cuh"
#include "backends/cuda/conv_gemm.cuh"
#include "backends/cuda/conv_stem.cuh"
#include "backends/cuda/conv_narrow.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/wgmma.cuh"
#include "core/tune_cache.hpp"
#include "ops/op_suite.hpp"
#include "support.hpp"

using yolo12::cuda::ConvParams;
using yolo12::cuda::ConvShape;
using yolo12::test::ops::round_half;
namespace ops = yolo12::test::ops;

namespace {

// Where no device answers (test_conv_host: the [host] cases on a machine without a GPU), the selection rules plan
// as on an H200 (sm_90a, device_info()'s defaults there); with a device this changes nothing.
const bool kPlanWithoutDevice = (yolo12::cuda::conv_detail::plan_without_device_as_sm90a() = true);

#define TEST_CUDA(call)                                                                  \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) FAIL(#call << " failed: " << cudaGetErrorString(e_));         \
  } while (0)

// A conv case: the shape plus how the views sit inside their buffers and what is fused (the shared
// suite's ConvOptions: x view = channels [x_c0, x_c0 + c_in) of a buffer of x_c0 + c_in + x_extra).
struct Case : ops::ConvOptions {
  ConvShape s;
};

std::string describe(const Case& c) {
  const ConvShape& s = c.s;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "B%d %dx%dx%d -> %dx%dx%d k%d s%d p%d g%d d%d | ldx=%d+%d+%d ldy=%d+%d+%d ldr=%d+%d+%d | "
                "bias%d gamma%d res%d silu%d",
                s.batch, s.h, s.w_in, s.c_in, s.ho, s.wo, s.c_out, s.k, s.stride, s.pad, s.groups, s.dilation,
                c.x_c0, s.c_in, c.x_extra, c.y_c0, s.c_out, c.y_extra, c.r_c0, s.c_out, c.r_extra, c.bias,
                c.gamma, c.residual, c.silu);
  return buf;
}

void finish_shape(ConvShape& s) {
  const int span = s.dilation * (s.k - 1) + 1;
  s.ho = (s.h + 2 * s.pad - span) / s.stride + 1;
  s.wo = (s.w_in + 2 * s.pad - span) / s.stride + 1;
}

Case make_case(int b, int h, int w, int ci, int co, int k, int stride, int groups, int dil = 1) {
  Case c;
  c.s.batch = b;
  c.s.h = h;
  c.s.w_in = w;
  c.s.c_in = ci;
  c.s.c_out = co;
  c.s.k = k;
  c.s.stride = stride;
  c.s.pad = dil * (k / 2);
  c.s.groups = groups;
  c.s.dilation = dil;
  finish_shape(c.s);
  return c;
}

// Host data of one case: inputs (already rounded to the precision under test), weights in PyTorch
// layout, and the double reference.
struct HostCase {
  std::vector<float> x;     // (B, H, W, ldx) whole buffer
  std::vector<float> w;     // (c_out, c_in / groups, k, k)
  std::vector<float> bias, gamma;
  std::vector<float> res;   // (B, Ho, Wo, ldr) whole buffer
  int ldx, ldy, ldr;
};

// The shared conv reference on the case's buffers: out[n, oy, ox, c] over the slice only, (B, Ho, Wo,
// c_out) dense; inputs taken as given (the caller rounds them).
std::vector<double> reference(const Case& c, const HostCase& h) {
  const ConvShape& s = c.s;
  std::vector<double> out(static_cast<std::size_t>(s.batch) * s.ho * s.wo * s.c_out);
  yolo12::graph::ConvAttrs a = s;
  a.act = c.silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  const ops::HostView x{h.x.data(), h.ldx, c.x_c0, s.c_in, s.h, s.w_in, true};
  const ops::HostView r = c.residual ? ops::HostView{h.res.data(), h.ldr, c.r_c0, s.c_out, s.ho, s.wo, true} : ops::HostView{};
  ops::conv_reference(a, x, h.w.data(), c.bias ? h.bias.data() : nullptr, c.gamma ? h.gamma.data() : nullptr, r,
                      s.batch, ops::RefOut{out.data(), s.c_out, 0, s.c_out, s.ho, s.wo, true});
  return out;
}

using yolo12::test::rel_l2;

template <typename T> T to_t(float v);
template <> float to_t<float>(float v) { return v; }
template <> __half to_t<__half>(float v) { return __float2half_rn(v); }
float from_t(float v) { return v; }
float from_t(__half v) { return __half2float(v); }
std::uint32_t bits_of(float v) { std::uint32_t b; std::memcpy(&b, &v, 4); return b; }
std::uint32_t bits_of(__half v) { std::uint16_t b; std::memcpy(&b, &v, 2); return b; }

constexpr int kGuard = 64;        // guard elements before and after every device buffer
constexpr float kGuardValue = 7.25f;

template <typename T>
struct DeviceBuf {
  T* base = nullptr;
  std::size_t n = 0;  // usable elements (between the guards)
  explicit DeviceBuf(std::size_t elems) : n(elems) {
    if (cudaMalloc(&base, (elems + 2 * kGuard) * sizeof(T)) != cudaSuccess) base = nullptr;
  }
  ~DeviceBuf() { cudaFree(base); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  T* data() { return base + kGuard; }
};

// Forward: conv2d_forward (the dispatch). Naive: the oracle kernel. Narrow: conv2d_narrow_f16 launched
// directly with the plan and grid cap of narrow_run (fp16 only), so that small shapes reach it too.
// NarrowHost: the same kernel replayed on the CPU (emulate_narrow below; no GPU needed).
// DwTiled: dwconv_tiled_f16 launched directly (fp16, aligned depthwise shapes of any size); DwTiledHost:
// the same replayed on the CPU (emulate_dw_tiled).
// Candidate: conv2d_forward with plan candidate_run.index of conv_candidates(p) (the kernel tuning's
// choices), recording how many candidates p has and the plan's name.
// Plan: conv2d_forward with the plan plan_run (any plan, e.g. a wgmma tile the rules would not pick).
// DwRows: dwconv_rows_f16 launched directly with plan_run's channels per block (fp16, aligned stride-1
// depthwise shapes of any size); DwRowsHost: the same replayed on the CPU (emulate_dw_rows).
// DwDirect: dwconv_direct launched directly (the oracle dwconv_rows_f16 must match bit for bit).
enum class Kernel { Forward, Naive, Narrow, NarrowHost, DwTiled, DwTiledHost, Candidate, Plan, DwRows, DwRowsHost, DwDirect };

struct CandidateRun {
  std::size_t index = 0;  // in: which candidate
  std::size_t count = 0;  // out: how many the params have
  std::string name;       // out: conv_plan_detail of the one run
};
CandidateRun candidate_run;
yolo12::cuda::ConvPlan plan_run;  // what Kernel::Plan runs
// A plan with these fields (the rest ConvPlan's defaults), for Kernel::Plan.
yolo12::cuda::ConvPlan make_plan(yolo12::cuda::ConvAlgorithm algorithm, int bm, int bn, int bk, int warps, int split,
                                 int stages, bool pingpong = false) {
  yolo12::cuda::ConvPlan p;
  p.algorithm = algorithm;
  p.bm = bm;
  p.bn = bn;
  p.bk = bk;
  p.warps = warps;
  p.split = split;
  p.stages = stages;
  p.pingpong = pingpong;
  return p;
}
int plan_max_grid = 0;            // > 0: Kernel::Plan launches the wgmma / halo kernels directly with this grid cap
bool plan_tma_itself = false;     // out: a gemm_tma plan ran on conv2d_gemm_tma itself, not the launcher's fallback

struct NarrowRun {
  yolo12::cuda::ConvPlan plan;
  int max_grid = 0;  // NarrowHost: the grid it replays (0: 3 blocks)
};
NarrowRun narrow_run;  // what Kernel::Narrow / NarrowHost run with (set by the [narrow] cases)

// ---- conv2d_narrow_f16 replayed on the CPU ------------------------------------------------------------
// Block by block, thread by thread and lane by lane, through the pieces the kernel itself calls
// (conv_narrow.cuh: layout, weight and A-tile loads, staging and stores; mma.cuh: every lane's ldmatrix
// address), with ldmatrix and mma.sync modelled from their PTX fragment layouts (the table in mma.cuh).
// The kernel's own loop over K steps, warps and staging passes is mirrored here (the one part that is
// not shared), tiles walked in the persistent grid's order. Shared memory starts as NaN, so an element
// the MMAs read but no load wrote reaches the output.
namespace host_mma {

std::uint32_t pack2(__half lo, __half hi) {
  return static_cast<std::uint32_t>(__half_as_ushort(lo)) | static_cast<std::uint32_t>(__half_as_ushort(hi)) << 16;
}
float lo_of(std::uint32_t w) { return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffff))); }
float hi_of(std::uint32_t w) { return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16))); }

// ldmatrix .x4 (tiles = 4) or .x2 (2): tile j's row r is at the address of lane 8 j + r (in halves from
// base); lane t receives, of each tile j, the halves 2 (t % 4) and 2 (t % 4) + 1 of row t / 4.
template <int Tiles>
void ldmatrix(std::uint32_t (&out)[32][Tiles], const __half* base, const int (&offset)[32]) {
  for (int t = 0; t < 32; ++t)
    for (int j = 0; j < Tiles; ++j) {
      const __half* row = base + offset[8 * j + t / 4];
      out[t][j] = pack2(row[2 * (t % 4)], row[2 * (t % 4) + 1]);
    }
}

// mma.sync m16n8k16 .row.col f32.f16.f16.f32, d += A * B, from the lanes' fragments.
void mma(float (&d)[32][4], const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2]) {
  float A[16][16], B[16][8];  // A[m][k], B[k][n]
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * c, 2 * c, 2 * c + 8, 2 * c + 8};
    for (int r = 0; r < 4; ++r) {
      A[rows[r]][cols[r]] = lo_of(a[t][r]);
      A[rows[r]][cols[r] + 1] = hi_of(a[t][r]);
    }
    B[2 * c][g] = lo_of(b[t][0]);
    B[2 * c + 1][g] = hi_of(b[t][0]);
    B[2 * c + 8][g] = lo_of(b[t][1]);
    B[2 * c + 9][g] = hi_of(b[t][1]);
  }
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    for (int e = 0; e < 4; ++e) {
      const int m = e < 2 ? g : g + 8, n = 2 * c + e % 2;
      float sum = 0.f;
      for (int k = 0; k < 16; ++k) sum += A[m][k] * B[k][n];
      d[t][e] += sum;
    }
  }
}

}  // namespace host_mma

// What cp.async does: 16 bytes, or 16 zero bytes for a null source.
struct HostCopy {
  __host__ __device__ void operator()(__half* dst, const __half* src) const {
    if (src) std::memcpy(dst, src, 16);
    else std::memset(dst, 0, 16);
  }
};

template <int BN>
void emulate_narrow_bn(const ConvParams<__half>& p, const yolo12::cuda::ConvPlan& plan, int grid) {
  namespace cd = yolo12::cuda::conv_detail;
  constexpr int NI = BN / 8;
  const cd::ImplicitGemmParams<__half> a = cd::make_params(p);
  const int warps = plan.warps, threads = cd::narrow_threads(warps);
  const int warp_rows = cd::kNarrowRows / warps, mi = warp_rows / 16;  // 32 rows (mi 2) or 16 (mi 1)
  const cd::NarrowLayout L = cd::narrow_layout(plan.bn, plan.bk, plan.stages, warps);
  const int tiles = (a.m + cd::kNarrowRows - 1) / cd::kNarrowRows;
  std::vector<uint4> smem_words(static_cast<std::size_t>(L.bytes + 15) / 16);
  auto* smem = reinterpret_cast<unsigned char*>(smem_words.data());
  const HostCopy copy;
  for (int block = 0; block < grid; ++block) {
    std::memset(smem, 0xff, L.bytes);  // NaN halves and floats
    auto* Bs = reinterpret_cast<__half*>(smem);
    auto* As = reinterpret_cast<__half*>(smem + L.a_off);
    for (int tid = 0; tid < threads; ++tid) cd::narrow_load_weights(a, BN, plan.bk, L.b_row, Bs, tid, threads, copy);
    for (int it = 0, t = block; t < tiles; ++it, t += grid) {
      __half* as = As + (it % plan.stages) * cd::kNarrowRows * L.a_row;
      for (int tid = 0; tid < threads; ++tid) {
        if (a.vec_a) cd::narrow_gather_vec(a, t, L.a_row, plan.bk, as, tid, threads, copy);
        else cd::narrow_gather_scalar(a, t, L.a_row, plan.bk, as, tid, threads);
      }
      for (int warp = 0; warp < warps; ++warp) {
        float acc[2][NI][32][4] = {};
        for (int ks = 0; ks < plan.bk; ks += 16) {
          std::uint32_t af[2][32][4], bf[NI][32][2];
          int off[32];
          for (int i = 0; i < mi; ++i) {
            for (int l = 0; l < 32; ++l) off[l] = cd::a_frag_lane_offset(L.a_row, warp * warp_rows + i * 16, ks, l);
            host_mma::ldmatrix<4>(af[i], as, off);
          }
          if constexpr (NI == 1) {
            std::uint32_t r[32][2];
            for (int l = 0; l < 32; ++l) off[l] = cd::b_single_lane_offset(L.b_row, 0, ks, l);
            host_mma::ldmatrix<2>(r, Bs, off);
            std::memcpy(bf[0], r, sizeof r);
          } else {
            for (int j = 0; j < NI; j += 2) {
              std::uint32_t r[32][4];
              for (int l = 0; l < 32; ++l) off[l] = cd::b_pair_lane_offset(L.b_row, j * 8, ks, l);
              host_mma::ldmatrix<4>(r, Bs, off);
              for (int l = 0; l < 32; ++l) {
                bf[j][l][0] = r[l][0];
                bf[j][l][1] = r[l][1];
                bf[j + 1][l][0] = r[l][2];
                bf[j + 1][l][1] = r[l][3];
              }
            }
          }
          for (int i = 0; i < mi; ++i)
            for (int j = 0; j < NI; ++j) host_mma::mma(acc[i][j], af[i], bf[j]);
        }
        float* cs = reinterpret_cast<float*>(smem + L.c_off) + warp * cd::kNarrowStageRows * L.c_row;
        for (int i = 0; i < mi; ++i)
          for (int h = 0; h < 2; ++h) {
            for (int lane = 0; lane < 32; ++lane) {
              float v[NI][2];
              for (int j = 0; j < NI; ++j)
                for (int e = 0; e < 2; ++e) {
                  const int n = j * 8 + (lane % 4) * 2 + e;
                  float x = acc[i][j][lane][2 * h + e] + (a.bias && n < a.n_g ? a.bias[n] : 0.f);
                  if (a.silu()) x = cd::silu_fast(x);
                  v[j][e] = x * (a.gamma && n < a.n_g ? a.gamma[n] : 1.f);
                }
              cd::narrow_stage<NI>(cs, L.c_row, lane, v);
            }
            for (int lane = 0; lane < 32; ++lane)
              cd::narrow_store_staged<BN>(a, cs, L.c_row, t * cd::kNarrowRows + warp * warp_rows + i * 16 + h * 8, lane);
          }
      }
    }
  }
}

// A depthwise kernel's block replayed on the CPU: its shared memory (xs: XHalves halves, ws: WElems of type W)
// poisoned with NaN, then load(xs, ws, bx, by, bz) (every thread's loads), then compute(xs, ws, bx, by, bz)
// (every thread's outputs); for every block of a gx x gy x gz grid.
template <int XHalves, typename W, int WElems, typename Load, typename Compute>
void emulate_dw_blocks(int gx, int gy, int gz, const Load& load, const Compute& compute) {
  static_assert(XHalves % 8 == 0 && WElems * sizeof(W) % 16 == 0, "whole 16-byte words");
  std::vector<uint4> xs_words(XHalves / 8), ws_words(WElems * sizeof(W) / 16);
  auto* xs = reinterpret_cast<__half*>(xs_words.data());
  auto* ws = reinterpret_cast<W*>(ws_words.data());
  for (int bz = 0; bz < gz; ++bz)
    for (int by = 0; by < gy; ++by)
      for (int bx = 0; bx < gx; ++bx) {
        std::memset(xs, 0xff, XHalves * 2);
        std::memset(ws, 0xff, WElems * sizeof(W));
        load(xs, ws, bx, by, bz);
        compute(xs, ws, bx, by, bz);
      }
}

// dwconv_tiled_f16 replayed on the CPU: every block of its grid, the loads of all threads (shared memory
// starting as NaN), then every thread's pixel, through the kernel's own pieces (conv_depthwise.cuh).
template <int K, int S>
void emulate_dw_tiled_ks(const ConvParams<__half>& p) {
  namespace cd = yolo12::cuda::conv_detail;
  using Tile = cd::DwTile<K, S>;
  const cd::DwParams<__half> a = cd::make_dw_params(p);
  const int gx = cd::dw_channel_pairs(a.c_out) * ((a.wo + cd::kDwTileW - 1) / cd::kDwTileW);
  const int gy = (a.ho + cd::kDwTileH - 1) / cd::kDwTileH;
  emulate_dw_blocks<Tile::kXHalves, __half, Tile::kWHalves>(
      gx, gy, a.batch,
      [&](__half* xs, __half* ws, int bx, int by, int bz) {
        const cd::DwTileCoords at = cd::dw_tile_coords(a, bx, by, bz);
        for (int t = 0; t < cd::kDwTiledThreads; ++t) cd::dw_tiled_load<K, S>(a, at, t, xs, ws, HostCopy());
      },
      [&](const __half* xs, const __half* ws, int bx, int by, int bz) {
        const cd::DwTileCoords at = cd::dw_tile_coords(a, bx, by, bz);
        for (int t = 0; t < cd::kDwTiledThreads; ++t) cd::dw_tiled_pixel<K, S>(a, at, t, xs, ws);
      });
}

// dwconv_rows_f16 replayed on the CPU in the same way: every block's copies and fp32 weights, then every
// thread's 5 outputs (conv_depthwise.cuh), CH warps per block (plan.bn / 8).
template <int K, int CH>
void emulate_dw_rows_kc(const ConvParams<__half>& p) {
  namespace cd = yolo12::cuda::conv_detail;
  using Tile = cd::DwRowsTile<K, CH>;
  const cd::DwParams<__half> a = cd::make_dw_params(p);
  const int gx = cd::dw_rows_groups(a.c_out, CH) * ((a.wo + cd::kDwRowsTileW - 1) / cd::kDwRowsTileW);
  const int gy = (a.ho + cd::kDwRowsTileH - 1) / cd::kDwRowsTileH;
  emulate_dw_blocks<Tile::kXHalves, float, Tile::kWFloats>(
      gx, gy, a.batch,
      [&](__half* xs, float* ws, int bx, int by, int bz) {
        const cd::DwTileCoords at = cd::dw_rows_coords(a, CH, bx, by, bz);
        for (int t = 0; t < Tile::kThreads; ++t) cd::dw_rows_load<K, CH>(a, at, t, xs, ws, HostCopy());
      },
      [&](const __half* xs, const float* ws, int bx, int by, int bz) {
        const cd::DwTileCoords at = cd::dw_rows_coords(a, CH, bx, by, bz);
        for (int t = 0; t < Tile::kThreads; ++t) cd::dw_rows_outputs<K, CH>(a, at, t, xs, ws);
      });
}

template <int CH>
void emulate_dw_rows_c(const ConvParams<__half>& p) {
  switch (p.k) {
    case 3: emulate_dw_rows_kc<3, CH>(p); break;
    case 5: emulate_dw_rows_kc<5, CH>(p); break;
    default: emulate_dw_rows_kc<7, CH>(p); break;
  }
}

void emulate_dw_rows(const ConvParams<__half>& p, const yolo12::cuda::ConvPlan& plan) {
  switch (plan.bn) {
    case 8: emulate_dw_rows_c<1>(p); break;
    case 16: emulate_dw_rows_c<2>(p); break;
    default: emulate_dw_rows_c<4>(p); break;
  }
}

void emulate_dw_tiled(const ConvParams<__half>& p) {
  switch (p.k * 10 + p.stride) {
    case 31: emulate_dw_tiled_ks<3, 1>(p); break;
    case 32: emulate_dw_tiled_ks<3, 2>(p); break;
    case 51: emulate_dw_tiled_ks<5, 1>(p); break;
    case 52: emulate_dw_tiled_ks<5, 2>(p); break;
    case 71: emulate_dw_tiled_ks<7, 1>(p); break;
    default: emulate_dw_tiled_ks<7, 2>(p); break;
  }
}

void emulate_narrow(const ConvParams<__half>& p, const yolo12::cuda::ConvPlan& plan, int grid) {
  switch (plan.bn) {
    case 8: emulate_narrow_bn<8>(p, plan, grid); break;
    case 16: emulate_narrow_bn<16>(p, plan, grid); break;
    case 32: emulate_narrow_bn<32>(p, plan, grid); break;
    case 48: emulate_narrow_bn<48>(p, plan, grid); break;
    case 64: emulate_narrow_bn<64>(p, plan, grid); break;
    case 80: emulate_narrow_bn<80>(p, plan, grid); break;
    case 96: emulate_narrow_bn<96>(p, plan, grid); break;
    default: emulate_narrow_bn<128>(p, plan, grid); break;
  }
}

struct Result {
  double err = 0;          // rel L2 of the GPU against double
  double err_naive = 0;    // fp16 only: rel L2 of the naive fp16 CPU implementation against double
  std::size_t unwritten = 0, guard_changed = 0, nonfinite_ref = 0;
  double ref_norm = 0;
  std::vector<std::uint32_t> bits;  // every element of the output buffer, guards included
};

template <typename T>
Result evaluate(const Case& c, const HostCase& h, const std::vector<T>& yt, Result r, bool with_reference);

// The case's data from `seed` through `kernel`. with_reference: also the errors against the double
// reference (else only bits, unwritten and guard_changed).
template <typename T>
Result run_case(const Case& c, std::uint64_t seed, Kernel kernel, bool with_reference = true) {
  constexpr bool kHalf = std::is_same<T, __half>::value;
  const ConvShape& s = c.s;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  auto q = [&](float v) { return kHalf ? round_half(v) : v; };

  HostCase h;
  h.ldx = c.x_c0 + s.c_in + c.x_extra;
  h.ldy = c.y_c0 + s.c_out + c.y_extra;
  h.ldr = c.r_c0 + s.c_out + c.r_extra;
  const std::size_t nx = static_cast<std::size_t>(s.batch) * s.h * s.w_in * h.ldx;
  const std::size_t npix_out = static_cast<std::size_t>(s.batch) * s.ho * s.wo;
  const std::size_t ny = npix_out * h.ldy, nr = npix_out * h.ldr;
  const int cin_g = s.c_in / s.groups;
  const float wscale = 1.7f / std::sqrt(static_cast<float>(cin_g * s.k * s.k));
  h.x.resize(nx);
  for (auto& v : h.x) v = q(uni(rng));
  h.w.resize(static_cast<std::size_t>(s.c_out) * cin_g * s.k * s.k);
  for (auto& v : h.w) v = q(uni(rng) * wscale);
  h.bias.resize(s.c_out);
  for (auto& v : h.bias) v = 0.5f * uni(rng);
  h.gamma.resize(s.c_out);
  for (auto& v : h.gamma) v = uni(rng) < 0 ? -0.5f + 0.3f * uni(rng) : 1.0f + 0.3f * uni(rng);
  h.res.resize(nr);
  for (auto& v : h.res) v = q(uni(rng));

  std::vector<T> xt(nx), rt(nr), packed(yolo12::cuda::conv_packed_weight_elems(s));
  for (std::size_t i = 0; i < nx; ++i) xt[i] = to_t<T>(h.x[i]);
  for (std::size_t i = 0; i < nr; ++i) rt[i] = to_t<T>(h.res[i]);
  yolo12::cuda::conv_pack_weights<T>(s, h.w.data(), packed.data());
  // Output buffer: guard value everywhere, NaN inside the slice.
  std::vector<T> yt(ny + 2 * kGuard, to_t<T>(kGuardValue));
  for (std::size_t p = 0; p < npix_out; ++p)
    for (int co = 0; co < s.c_out; ++co) yt[kGuard + p * h.ldy + c.y_c0 + co] = to_t<T>(NAN);

  Result r;
  // The parameters of the case, given where its buffers are (x, w, residual, y at their first element).
  auto params = [&](const T* x, const T* w, const float* bias, const float* gamma, const T* res, T* y) {
    ConvParams<T> p;
    static_cast<ConvShape&>(p) = s;
    p.x = x + c.x_c0;
    p.ldx = h.ldx;
    p.w = w;
    p.bias = c.bias ? bias : nullptr;
    p.gamma = c.gamma ? gamma : nullptr;
    p.residual = c.residual ? res + c.r_c0 : nullptr;
    p.ldr = h.ldr;
    p.y = y + c.y_c0;
    p.ldy = h.ldy;
    p.act = c.silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
    return p;
  };
  if constexpr (kHalf) {
    if (kernel == Kernel::NarrowHost || kernel == Kernel::DwTiledHost || kernel == Kernel::DwRowsHost) {
      // CPU replays on the host copies
      const ConvParams<T> hp =
          params(xt.data(), packed.data(), h.bias.data(), h.gamma.data(), rt.data(), yt.data() + kGuard);
      if (kernel == Kernel::NarrowHost) emulate_narrow(hp, narrow_run.plan, narrow_run.max_grid > 0 ? narrow_run.max_grid : 3);
      else if (kernel == Kernel::DwRowsHost) emulate_dw_rows(hp, plan_run);
      else emulate_dw_tiled(hp);
      return evaluate(c, h, yt, r, with_reference);
    }
  }
  DeviceBuf<T> dx(nx), dw(packed.size()), dr(nr), dy(ny);
  DeviceBuf<float> db(s.c_out), dg(s.c_out);
  if (!dx.base || !dw.base || !dr.base || !dy.base || !db.base || !dg.base) {
    r.unwritten = ~std::size_t(0);
    return r;
  }
  cudaMemcpy(dx.data(), xt.data(), nx * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dw.data(), packed.data(), packed.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dr.data(), rt.data(), nr * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dy.base, yt.data(), yt.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(db.data(), h.bias.data(), s.c_out * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dg.data(), h.gamma.data(), s.c_out * sizeof(float), cudaMemcpyHostToDevice);

  const ConvParams<T> p = params(dx.data(), dw.data(), db.data(), dg.data(), dr.data(), dy.data());
  if (kernel == Kernel::Forward) {
    yolo12::cuda::conv2d_forward<T>(p, nullptr);
  } else if (kernel == Kernel::Naive) {
    yolo12::cuda::conv2d_forward_naive<T>(p, nullptr);
  } else if (kernel == Kernel::Candidate) {
    const std::vector<yolo12::cuda::ConvPlan> plans = yolo12::cuda::conv_candidates(p);
    candidate_run.count = plans.size();
    const yolo12::cuda::ConvPlan& plan = plans[std::min(candidate_run.index, plans.size() - 1)];
    candidate_run.name = yolo12::cuda::conv_plan_detail(plan);
    yolo12::cuda::conv2d_forward<T>(p, plan, nullptr);
  } else if (kernel == Kernel::Plan) {
    if constexpr (kHalf) {
      plan_tma_itself = plan_run.algorithm == yolo12::cuda::ConvAlgorithm::gemm_tma &&
                        yolo12::cuda::conv_detail::gemm_tma_launches(p, plan_run);
      if (plan_max_grid > 0 && plan_run.algorithm == yolo12::cuda::ConvAlgorithm::gemm_tma)
        yolo12::cuda::conv_detail::launch_conv2d_gemm_tma(p, plan_run, nullptr, plan_max_grid);
      else if (plan_max_grid > 0 && plan_run.algorithm == yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma)
        yolo12::cuda::conv_detail::launch_conv2d_implicit_gemm_wgmma(p, plan_run, nullptr, plan_max_grid);
      else if (plan_max_grid > 0 && plan_run.algorithm == yolo12::cuda::ConvAlgorithm::halo_f16)
        yolo12::cuda::conv_detail::launch_conv2d_halo_f16(p, plan_run, nullptr, plan_max_grid);
      else if (plan_max_grid > 0 && plan_run.algorithm == yolo12::cuda::ConvAlgorithm::stem_mma)
        yolo12::cuda::conv_detail::launch_conv2d_stem_mma(p, nullptr, plan_max_grid);
      else yolo12::cuda::conv2d_forward<T>(p, plan_run, nullptr);
    } else {
      yolo12::cuda::conv2d_forward<T>(p, plan_run, nullptr);
    }
  } else if (kernel == Kernel::DwDirect) {
    yolo12::cuda::conv_detail::launch_dwconv_direct<T>(p, nullptr);
  } else if constexpr (kHalf) {
    if (kernel == Kernel::DwTiled) yolo12::cuda::conv_detail::launch_dwconv_tiled_f16(p, nullptr);
    else if (kernel == Kernel::DwRows) yolo12::cuda::conv_detail::launch_dwconv_rows_f16(p, plan_run, nullptr);
    else yolo12::cuda::conv_detail::launch_conv2d_narrow_f16(p, narrow_run.plan, nullptr, narrow_run.max_grid);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    r.unwritten = ~std::size_t(0);
    return r;
  }
  cudaMemcpy(yt.data(), dy.base, yt.size() * sizeof(T), cudaMemcpyDeviceToHost);
  return evaluate(c, h, yt, r, with_reference);
}

// The output (with its guards) against the double reference: unwritten elements, changed guards, errors.
template <typename T>
Result evaluate(const Case& c, const HostCase& h, const std::vector<T>& yt, Result r, bool with_reference) {
  constexpr bool kHalf = std::is_same<T, __half>::value;
  const ConvShape& s = c.s;
  const std::size_t npix_out = static_cast<std::size_t>(s.batch) * s.ho * s.wo;
  const std::size_t ny = npix_out * h.ldy;
  std::vector<double> got(npix_out * s.c_out);
  std::vector<char> in_slice(ny, 0);
  for (std::size_t p2 = 0; p2 < npix_out; ++p2)
    for (int co = 0; co < s.c_out; ++co) {
      const std::size_t i = p2 * h.ldy + c.y_c0 + co;
      in_slice[i] = 1;
      const float v = from_t(yt[kGuard + i]);
      if (!std::isfinite(v)) ++r.unwritten;
      got[p2 * s.c_out + co] = v;
    }
  const std::uint32_t guard_bits = bits_of(to_t<T>(kGuardValue));
  r.bits.resize(yt.size());
  for (std::size_t i = 0; i < yt.size(); ++i) {
    r.bits[i] = bits_of(yt[i]);
    const bool outside = i < kGuard || i >= kGuard + ny || !in_slice[i - kGuard];
    if (outside && r.bits[i] != guard_bits) ++r.guard_changed;
  }
  if (!with_reference) return r;
  const std::vector<double> ref = reference(c, h);
  for (double v : ref) {
    if (!std::isfinite(v)) ++r.nonfinite_ref;
    r.ref_norm += v * v;
  }
  r.ref_norm = std::sqrt(r.ref_norm);
  r.err = rel_l2(got, ref);
  if (kHalf) {
    std::vector<double> naive(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) naive[i] = round_half(static_cast<float>(ref[i]));
    r.err_naive = rel_l2(naive, ref);
  }
  return r;
}

const char* kernel_name(Kernel kernel) {
  static const char* const kNames[] = {"conv2d_forward ", "conv2d_forward_naive ", "conv2d_narrow_f16 ",
                                       "conv2d_narrow_f16 replayed on the CPU ", "dwconv_tiled_f16 ",
                                       "dwconv_tiled_f16 replayed on the CPU ", "conv_candidates ",
                                       "conv2d_forward with a given plan ", "dwconv_rows_f16 ",
                                       "dwconv_rows_f16 replayed on the CPU ", "dwconv_direct "};
  return kNames[static_cast<int>(kernel)];
}

// The case through `kernel` against the double reference (the bounds above); returns the result (its bits).
template <typename T>
Result check_case(const Case& c, std::uint64_t seed, Kernel kernel) {
  constexpr bool kHalf = std::is_same<T, __half>::value;
  INFO((kHalf ? "fp16 " : "fp32 ") << kernel_name(kernel) << describe(c) << " seed " << seed);
  REQUIRE(yolo12::cuda::conv_can_implement(c.s));
  const Result r = run_case<T>(c, seed, kernel);
  INFO("err " << r.err << " naive fp16 err " << r.err_naive << " |ref| " << r.ref_norm);
  REQUIRE(r.unwritten == 0);
  REQUIRE(r.guard_changed == 0);
  REQUIRE(r.nonfinite_ref == 0);
  REQUIRE(r.ref_norm > 0.1);
  if (kHalf) {
    REQUIRE(r.err_naive > 0);  // the naive fp16 result really was rounded
    REQUIRE(r.err <= 2.0 * r.err_naive);
  } else {
    REQUIRE(r.err < 1e-5);
  }
  return r;
}

// The case (fp16) through `kernel`, checked against the reference, and through `oracle` on the same data: the
// two output buffers (every element of the slice, and the guards) must be equal bit for bit.
void check_bit_identical(const Case& c, std::uint64_t seed, Kernel kernel, Kernel oracle) {
  const Result got = check_case<__half>(c, seed, kernel);
  const Result want = run_case<__half>(c, seed, oracle, false);
  INFO(kernel_name(kernel) << "against " << kernel_name(oracle) << describe(c) << " seed " << seed);
  REQUIRE(want.unwritten == 0);
  REQUIRE(got.bits.size() == want.bits.size());
  std::size_t differ = 0, first = 0;
  for (std::size_t i = 0; i < got.bits.size(); ++i)
    if (got.bits[i] != want.bits[i] && differ++ == 0) first = i;
  INFO(differ << " elements differ, the first at " << first);
  REQUIRE(differ == 0);
}

// A case with its fusions and slice placement set (ops::conv_options' arguments).
template <typename... Options>
Case with_options(Case c, Options... options) {
  static_cast<ops::ConvOptions&>(c) = ops::conv_options(options...);
  return c;
}

// A shared conv spec (tests/ops) as a case of this file.
Case from_spec(const ops::ConvSpec& sp) {
  Case c;
  static_cast<ops::ConvOptions&>(c) = sp;
  static_cast<yolo12::graph::ConvAttrs&>(c.s) = sp.attrs();
  c.s.batch = sp.batch;
  c.s.h = sp.h;
  c.s.w_in = sp.w;
  finish_shape(c.s);
  return c;
}

// The suite's fixed cases (every kernel path and its edges) and random cases.
std::vector<Case> fixed_cases() {
  std::vector<Case> v;
  for (const ops::ConvSpec& sp : ops::conv_fixed_specs()) v.push_back(from_spec(sp));
  return v;
}
std::vector<Case> random_cases(int count, std::uint64_t seed) {
  std::vector<Case> v;
  for (const ops::ConvSpec& sp : ops::conv_random_specs(count, seed)) v.push_back(from_spec(sp));
  return v;
}

}  // namespace

TEST_CASE("conv_can_implement accepts valid shapes and rejects inconsistent ones", "[conv]") {
  Case ok = make_case(1, 16, 16, 32, 64, 3, 2, 1);
  REQUIRE(yolo12::cuda::conv_can_implement(ok.s));
  ConvShape bad = ok.s;
  bad.ho += 1;
  REQUIRE_FALSE(yolo12::cuda::conv_can_implement(bad));
  bad = ok.s;
  bad.groups = 3;  // 32 % 3 != 0
  REQUIRE_FALSE(yolo12::cuda::conv_can_implement(bad));
  bad = ok.s;
  bad.k = 0;
  REQUIRE_FALSE(yolo12::cuda::conv_can_implement(bad));
  bad = ok.s;
  bad.batch = 0;
  REQUIRE_FALSE(yolo12::cuda::conv_can_implement(bad));
}

namespace {
// conv_pack_weights of a conv graph::pad_channels widened (attrs wide, the tensor as stored) against the
// packing of the conv as stored: every stored weight at its place, zeros everywhere else.
template <typename T>
void check_widened_packing(const ConvShape& stored, const ConvShape& wide) {
  namespace cd = yolo12::cuda::conv_detail;
  const int kk = stored.k * stored.k, cin_g = stored.c_in / stored.groups;
  std::vector<float> w(static_cast<std::size_t>(stored.c_out) * cin_g * kk);
  std::mt19937 rng(static_cast<unsigned>(stored.c_in * 1000 + stored.c_out));
  std::uniform_real_distribution<float> u(0.25f, 2.f);  // never zero: a zero here means "not placed"
  for (float& x : w) x = u(rng);
  std::vector<T> ref(yolo12::cuda::conv_packed_weight_elems(stored)), got(yolo12::cuda::conv_packed_weight_elems(wide));
  yolo12::cuda::conv_pack_weights<T>(stored, w.data(), ref.data());
  for (T& x : got) x = T(-1.f);  // the packing must write every element
  yolo12::cuda::conv_pack_weights<T>(wide, w.data(), got.data(), stored.c_out, stored.c_in);
  const cd::GemmLayout ls = cd::gemm_layout(stored), lw = cd::gemm_layout(wide);
  std::vector<bool> placed(got.size(), false);
  for (int co = 0; co < stored.c_out; ++co)
    for (int ci = 0; ci < cin_g; ++ci)
      for (int t = 0; t < kk; ++t) {
        const std::size_t at_ref = static_cast<std::size_t>(co) * ls.k_pad + t * ls.cin_pad + ci;
        const std::size_t at_got = static_cast<std::size_t>(co) * lw.k_pad + t * lw.cin_pad + ci;
        INFO("co " << co << " ci " << ci << " tap " << t);
        REQUIRE(static_cast<float>(got[at_got]) == static_cast<float>(ref[at_ref]));
        REQUIRE(static_cast<float>(got[at_got]) == static_cast<float>(T(w[(static_cast<std::size_t>(co) * cin_g + ci) * kk + t])));
        placed[at_got] = true;
      }
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!placed[i]) nonzero += static_cast<float>(got[i]) != 0.f ? 1 : 0;
  CHECK(nonzero == 0);
  // Widened to the next multiple of 8 (what pad_channels does), the rows are the same length, so the
  // stored conv's packing is the widened one's first rows, bit for bit.
  if (ls.k_pad == lw.k_pad) {
    for (std::size_t i = 0; i < ref.size(); ++i)
      REQUIRE(static_cast<float>(got[i]) == static_cast<float>(ref[i]));
  }
}
}  // namespace

// Host only (no kernel runs); in this file because conv.cu is built with the CUDA backend only.
TEST_CASE("conv_pack_weights of a widened conv puts each stored weight where the stored conv's packing does, zeros "
          "elsewhere", "[conv][host][pad]") {
  struct Widen {
    int c_in, c_out, k, c_in_wide, c_out_wide;
  };
  for (const Widen& x : {Widen{384, 460, 1, 384, 464},   // yolo12x's MLP, producer side
                         Widen{460, 384, 1, 464, 384},   // and reader side
                         Widen{64, 76, 1, 64, 80}, Widen{76, 64, 1, 80, 64},  // yolo12l_narrow
                         Widen{13, 21, 3, 16, 24},       // both sides, 3x3
                         Widen{5, 9, 3, 24, 32}}) {      // wider than the next multiple of 8: other row length
    INFO("stored " << x.c_in << "->" << x.c_out << " k" << x.k << ", widened " << x.c_in_wide << "->" << x.c_out_wide);
    const ConvShape stored = make_case(1, 8, 8, x.c_in, x.c_out, x.k, 1, 1).s;
    ConvShape wide = stored;
    wide.c_in = x.c_in_wide;
    wide.c_out = x.c_out_wide;
    check_widened_packing<float>(stored, wide);
    check_widened_packing<__half>(stored, wide);
  }
  // Tensor channels as the shape's (or 0) are the plain packing.
  const ConvShape s = make_case(1, 8, 8, 13, 21, 3, 1, 1).s;
  std::vector<float> w(21 * 13 * 9, 0.5f), a(yolo12::cuda::conv_packed_weight_elems(s)), b(a.size());
  yolo12::cuda::conv_pack_weights<float>(s, w.data(), a.data());
  yolo12::cuda::conv_pack_weights<float>(s, w.data(), b.data(), 21, 13);
  CHECK(a == b);
  // A tensor wider than the conv, or a widened grouped conv: refused.
  CHECK_THROWS_AS(yolo12::cuda::conv_pack_weights<float>(s, w.data(), a.data(), 22, 13), yolo12::Error);
  ConvShape grouped = make_case(1, 8, 8, 16, 24, 3, 1, 2).s;
  std::vector<float> g(yolo12::cuda::conv_packed_weight_elems(grouped));
  CHECK_THROWS_AS(yolo12::cuda::conv_pack_weights<float>(grouped, w.data(), g.data(), 20, 16), yolo12::Error);
  // 2^31 or more weights per group (65536 x 36864 here; the GEMM kernels' B offsets are 32-bit): refused before any
  // weight is read or written.
  const ConvShape huge = make_case(1, 8, 8, 4096, 65536, 3, 1, 1).s;
  CHECK_THROWS_AS(yolo12::cuda::conv_pack_weights<__half>(huge, nullptr, nullptr), yolo12::Error);
  const ConvShape huge_grouped = make_case(1, 8, 8, 4096 * 2, 65536 * 2, 3, 1, 2).s;
  CHECK_THROWS_AS(yolo12::cuda::conv_pack_weights<__half>(huge_grouped, nullptr, nullptr), yolo12::Error);
}

TEST_CASE("fp16 split-K over a cluster: the plan splits small-M long-K convs, and they match the reference",
          "[conv][gpu][splitk]") {
  using yolo12::cuda::conv_detail::f16_plan;
  struct SplitCase {
    Case c;
    int split, bm;  // what f16_plan must choose (so that these cases keep reaching every split)
  };
  auto with = [](const Case& c, bool gamma, bool res, auto... slices) {
    return with_options(c, gamma, res, true, slices...);
  };
  const SplitCase cases[] = {
      {with(make_case(1, 20, 20, 256, 64, 3, 1, 1), true, true, 0, 0, 64, 0), 8, 64},   // K 36 tiles: 4-5 per rank
      {with(make_case(1, 20, 20, 64, 64, 3, 1, 1), false, true), 4, 64},                // 9 tiles: 2, 2, 2, 3
      {with(make_case(1, 20, 20, 256, 128, 1, 1, 1), false, false, 0, 0, 0, 16), 1, 64}, // 1x1, K 4 tiles: 64x32, no split
      {with(make_case(1, 13, 11, 128, 20, 3, 1, 1), true, false), 4, 128},              // 128x32 tile, 20 channels, K 18
                                                                                          // tiles: 8 ranks from 32 only
      {with(make_case(1, 40, 40, 32, 32, 3, 1, 1), false, true), 1, 64},                // yolo12n's 32->32 @40: 64x32
      {with(make_case(1, 56, 64, 64, 64, 3, 1, 1), false, true), 2, 64},                // 56 tiles: 4 ranks would pass 1.5 per SM
      {with(make_case(1, 40, 40, 512, 512, 3, 2, 1), false, false), 4, 64},             // yolo12m's 3x3/2 512 @40, K 72
                                                                                          // tiles: 4 ranks to 2 per SM
      {with(make_case(1, 80, 80, 128, 64, 1, 1, 1), false, true), 1, 128},              // 1x1 at 80x80, K 2 tiles: 128x32
      {with(make_case(1, 10, 10, 512, 128, 3, 1, 2), false, false), 8, 64},             // grouped, K 36 tiles
      {with(make_case(1, 9, 7, 61, 72, 3, 1, 1), true, true, 3, 0, 8, 0), 4, 64},       // scalar A gathers, odd slice
      {with(make_case(2, 7, 9, 96, 40, 3, 2, 1), false, false), 4, 64},                 // stride 2, batch 2: one tile, 14 K tiles
  };
  int i = 0;
  for (const SplitCase& sc : cases) {
    INFO(describe(sc.c));
    const auto plan = f16_plan(sc.c.s);
    CHECK(plan.split == sc.split);
    CHECK(plan.bm == sc.bm);
    check_case<__half>(sc.c, 4000 + i++, Kernel::Forward);
  }
  // The same shapes with split-K off (one block per output tile) also match: the two paths agree.
  yolo12::cuda::conv_detail::conv_variants().f16_split_k = false;
  for (const SplitCase& sc : cases) {
    CHECK(f16_plan(sc.c.s).split == 1);
    check_case<__half>(sc.c, 4100 + i++, Kernel::Forward);
  }
  yolo12::cuda::conv_detail::conv_variants().f16_split_k = true;
}

// ---- conv2d_narrow_f16 ---------------------------------------------------------------------------------

namespace {

namespace cd = yolo12::cuda::conv_detail;

// The H200's shared memory but a single SM, so that narrow_plan takes shapes of only a few pixel tiles.
yolo12::cuda::DeviceInfo one_sm() {
  yolo12::cuda::DeviceInfo f;
  f.sm_count = 1;
  return f;
}

// Params of a shape with dense, 16-byte aligned views (as the executor's buffers are), for conv_select and
// conv_candidates, which read the pointers' alignment, never the memory.
template <typename T>
ConvParams<T> dense_params(const ConvShape& s) {
  alignas(256) static T storage[8];
  ConvParams<T> p;
  static_cast<ConvShape&>(p) = s;
  p.x = storage;
  p.w = storage;
  p.y = storage;
  p.ldx = s.c_in;
  p.ldy = s.c_out;
  return p;
}
// conv_select for dense views: what the dispatch runs and the profile's label names.
template <typename T>
yolo12::cuda::ConvPlan select_dense(const ConvShape& s) {
  return yolo12::cuda::conv_select(dense_params<T>(s));
}
// How many of the tuning candidates for dense views of s are plans of algorithm `a`.
int dense_candidates_of(const ConvShape& s, yolo12::cuda::ConvAlgorithm a) {
  int n = 0;
  for (const yolo12::cuda::ConvPlan& plan : yolo12::cuda::conv_candidates(dense_params<__half>(s)))
    n += plan.algorithm == a;
  return n;
}
yolo12::cuda::ConvPlan plan_of(const ConvShape& s, bool fp16) {
  return fp16 ? select_dense<__half>(s) : select_dense<float>(s);
}
std::string label_of(const ConvShape& s, bool fp16) { return yolo12::cuda::conv_plan_name(plan_of(s, fp16)); }
using yolo12::cuda::ConvAlgorithm;

// Small random shapes that conv2d_narrow_f16 takes when planned for one SM: every N tile (c_out cycles
// through 1..128), 16-byte and scalar A gathers (c_in multiple of 8 at aligned offsets, or not), k 1/3/5,
// stride 1/2, dilation 2, odd sizes, batch 1-3, slices of x, y and the residual, every fusion.
std::vector<Case> narrow_cases(int count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int couts[] = {1, 8, 5, 16, 12, 32, 19, 48, 40, 64, 55, 80, 72, 96, 90, 128, 100};
  std::vector<Case> v;
  while (static_cast<int>(v.size()) < count) {
    const int kinds[] = {1, 1, 3, 3, 3, 5};
    const int k = kinds[pick(0, 5)];
    const int stride = pick(0, 2) == 0 ? 2 : 1;
    const int dil = k == 3 && pick(0, 4) == 0 ? 2 : 1;
    const bool vec = pick(0, 1) == 1;
    // k*k*round_up(c_in, 8) <= 320: k = 3 up to 32 channels, k = 5 up to 8.
    const int ci = vec ? 8 * pick(1, k == 1 ? 10 : (k == 3 ? 4 : 1)) : pick(1, k == 1 ? 60 : (k == 3 ? 31 : 7));
    const int co = couts[v.size() % (sizeof couts / sizeof couts[0])];
    Case c = make_case(pick(1, 3), pick(5, 41), pick(5, 41), ci, co, k, stride, 1, dil);
    if (!yolo12::cuda::conv_can_implement(c.s) || cd::narrow_plan(c.s, one_sm(), 8).algorithm != ConvAlgorithm::narrow_f16) continue;
    ops::conv_random_options(c, pick, vec ? ops::kConvAlignedOffsets : ops::kConvSliceOffsets);
    v.push_back(c);
  }
  return v;
}

// narrow_run for case i: its one-SM plan on 4 or 8 warps ((i / 3) % 2) with 2, 3 or 4 stages (i % 3) where
// they fit, and the grid cap.
void set_narrow_run(const Case& c, std::size_t i, int max_grid) {
  const int warps = (i / 3) % 2 == 0 ? 8 : 4;
  narrow_run.plan = cd::narrow_plan(c.s, one_sm(), warps);
  REQUIRE(narrow_run.plan.algorithm == ConvAlgorithm::narrow_f16);
  REQUIRE(narrow_run.plan.warps == warps);
  const int stages = 2 + static_cast<int>(i % 3);
  if (cd::narrow_layout(narrow_run.plan.bn, narrow_run.plan.bk, stages, warps).bytes <=
      static_cast<int>(yolo12::cuda::DeviceInfo().smem_per_block_optin))
    narrow_run.plan.stages = stages;
  narrow_run.max_grid = max_grid;
}

bool vec_gather(const Case& c) {  // conv2d_narrow_f16 reads A with cp.async (else scalar loads)
  return c.s.c_in % 8 == 0 && c.x_c0 % 8 == 0 && (c.x_c0 + c.s.c_in + c.x_extra) % 8 == 0;
}

// The yolo12n-at-640 conv shapes at a batch size.
ConvShape yolo_shape(int batch, int h, int ci, int co, int k, int stride, int groups = 1) {
  return make_case(batch, h, h, ci, co, k, stride, groups).s;
}

}  // namespace

TEST_CASE("f16_plan takes conv2d_narrow_f16 where it is measured faster, and what it can take under the variants",
          "[conv][host][narrow]") {
  // The defaults (whatever YOLO12_CONV_VARIANTS says) but f16_halo, which conv_select asks first for the k x k
  // convs at stride 1 (the [halo] case checks that), and f16_stem_mma, which takes the stems of <= 128 channels
  // before conv2d_stem_f16 (the [stem_mma] case checks that).
  const auto defaults = [] {
    cd::ConvVariants v;
    v.f16_halo = false;
    v.f16_stem_mma = false;
    return v;
  };
  cd::conv_variants() = defaults();
  struct Expect {
    ConvShape s;
    bool picked;  // f16_plan under the defaults (f16_narrow: c_out <= 16, K <= 160)
    bool takes;   // narrow_plan takes it (f16_plan picks it with all three narrow variants on)
    int bn, bk;
  };
  const Expect expect[] = {
      {yolo_shape(32, 640, 3, 16, 3, 2), false, true, 16, 80},     // the stem (f16_narrow_stem, off)
      {yolo_shape(32, 320, 16, 32, 3, 2), false, true, 32, 144},   // c_out 32 (f16_narrow_wide, off)
      {yolo_shape(32, 160, 32, 32, 1, 1), false, true, 32, 32},
      {yolo_shape(32, 160, 16, 8, 3, 1), true, true, 8, 144},
      {yolo_shape(32, 160, 8, 16, 3, 1), true, true, 16, 80},
      {yolo_shape(32, 80, 32, 16, 1, 1), true, true, 16, 32},
      {yolo_shape(32, 80, 16, 16, 3, 1), true, true, 16, 144},
      {yolo_shape(1, 160, 16, 8, 3, 1), true, true, 8, 144},       // batch 1: 200 tiles
      {yolo_shape(32, 160, 48, 64, 1, 1), false, true, 64, 48},
      {yolo_shape(32, 80, 64, 64, 1, 1), false, true, 64, 64},
      {yolo_shape(32, 80, 32, 16, 3, 1), false, true, 16, 288},    // K 288 > 160
      {yolo_shape(32, 80, 96, 128, 1, 1), false, true, 128, 96},
      {yolo_shape(32, 80, 64, 80, 1, 1), false, true, 80, 64},
      {yolo_shape(32, 80, 256, 32, 1, 1), false, true, 32, 256},
      {yolo_shape(32, 160, 64, 64, 3, 2), false, false, 0, 0},    // K 576: the implicit GEMM
      {yolo_shape(32, 80, 64, 64, 3, 1), false, false, 0, 0},
      {yolo_shape(32, 40, 384, 64, 1, 1), false, false, 0, 0},    // K 384
      {yolo_shape(32, 40, 64, 192, 1, 1), false, false, 0, 0},    // c_out 192
      {yolo_shape(32, 16, 64, 128, 3, 2, 2), false, false, 0, 0}, // grouped
      {yolo_shape(1, 80, 16, 16, 3, 1), false, false, 0, 0},      // batch 1 at 80x80: 50 tiles, fewer than the SMs
      {yolo_shape(1, 640, 3, 16, 3, 2), false, true, 16, 80},     // the stem at batch 1: 800 tiles
      {yolo_shape(32, 80, 320, 128, 1, 1), false, false, 0, 0},   // K 320 but c_out 128: two stages need 269 KB
      {yolo_shape(32, 80, 320, 64, 1, 1), false, true, 64, 320},  // the largest K, one block per SM
  };
  auto all_on = [&] {
    cd::conv_variants() = defaults();
    cd::conv_variants().f16_narrow_wide = cd::conv_variants().f16_narrow_stem = true;
  };
  for (const Expect& e : expect) {
    INFO("B" << e.s.batch << " " << e.s.h << "x" << e.s.w_in << "x" << e.s.c_in << " -> " << e.s.c_out << " k" << e.s.k
             << " s" << e.s.stride << " g" << e.s.groups);
    REQUIRE(yolo12::cuda::conv_can_implement(e.s));
    cd::conv_variants() = defaults();
    CHECK((cd::f16_plan(e.s).algorithm == ConvAlgorithm::narrow_f16) == e.picked);
    CHECK((plan_of(e.s, true).algorithm == ConvAlgorithm::narrow_f16) == e.picked);
    for (const int warps : {4, 8})
      CHECK((cd::narrow_plan(e.s, yolo12::cuda::device_info(), warps).algorithm == ConvAlgorithm::narrow_f16) == e.takes);
    all_on();
    const yolo12::cuda::ConvPlan plan = cd::f16_plan(e.s);
    CHECK((plan.algorithm == ConvAlgorithm::narrow_f16) == e.takes);
    CHECK((plan_of(e.s, true).algorithm == ConvAlgorithm::narrow_f16) == e.takes);
    CHECK(plan_of(e.s, false).algorithm != ConvAlgorithm::narrow_f16);  // fp32 never takes it
    if (!e.takes) continue;
    CHECK(plan.bn == e.bn);
    CHECK(plan.bk == e.bk);
    CHECK(plan.bm == 128);
    CHECK((plan.stages >= 2 && plan.stages <= 4));
    CHECK(plan.warps == 8);  // f16_narrow8w
    CHECK(plan.smem_bytes == cd::narrow_layout(plan.bn, plan.bk, plan.stages, plan.warps).bytes);
    CHECK(static_cast<std::size_t>(plan.smem_bytes) <= yolo12::cuda::device_info().smem_per_block_optin);
  }
  // The three switches, one at a time: f16_narrow for the measured-faster convs, f16_narrow_wide for
  // the rest of what the kernel takes, f16_narrow_stem for the small-c_in convs (else conv2d_stem_f16,
  // or with f16_stem off conv2d_direct_small_cin).
  cd::conv_variants() = defaults();
  CHECK(std::string(label_of(expect[0].s, true)) == "stem_f16");
  cd::conv_variants().f16_stem = false;
  CHECK(std::string(label_of(expect[0].s, true)) == "direct_small_cin");
  CHECK(std::string(label_of(expect[3].s, true)) == "narrow_f16 n8");
  CHECK(std::string(label_of(expect[2].s, true)).rfind("implicit_gemm_f16", 0) == 0);
  cd::conv_variants().f16_narrow = false;
  CHECK(plan_of(expect[3].s, true).algorithm == ConvAlgorithm::implicit_gemm_f16);
  cd::conv_variants().f16_narrow_wide = true;  // the wider ones, and (wide includes them) the narrow ones
  CHECK(plan_of(expect[2].s, true).algorithm == ConvAlgorithm::narrow_f16);
  CHECK(plan_of(expect[3].s, true).algorithm == ConvAlgorithm::narrow_f16);
  CHECK(plan_of(expect[0].s, true).algorithm == ConvAlgorithm::direct_small_cin);
  cd::conv_variants().f16_narrow_stem = true;
  CHECK(plan_of(expect[0].s, true).algorithm == ConvAlgorithm::narrow_f16);
  CHECK(std::string(label_of(expect[0].s, true)) == "narrow_f16 n16");
  cd::conv_variants() = cd::ConvVariants();  // with f16_halo the narrow 3x3 convs go to conv2d_halo_f16
  CHECK(std::string(label_of(expect[3].s, true)) == "halo_f16 n8");
  // The names YOLO12_CONV_VARIANTS takes: exact, so "f16_narrow_stem" alone leaves f16_narrow off.
  const cd::ConvVariants only_stem = cd::parse_conv_variants("f16_narrow_stem");
  CHECK(only_stem.f16_narrow_stem);
  CHECK_FALSE(only_stem.f16_narrow);
  CHECK_FALSE(only_stem.f16_narrow_wide);
  CHECK_FALSE(only_stem.f16_bk64);
  const cd::ConvVariants all =
      cd::parse_conv_variants("f16_bk64,dw_one_output,f16_split_k,f16_narrow,f16_narrow_wide,f16_narrow_stem,dw_tiled_f16");
  CHECK((all.f16_bk64 && all.dw_one_output && all.f16_split_k && all.f16_narrow && all.f16_narrow_wide &&
         all.f16_narrow_stem && all.dw_tiled_f16));
  // "+name" / "-name" first: the defaults edited, a later entry winning.
  const cd::ConvVariants edited =
      cd::parse_conv_variants("+f16_halo_wgmma,-raster_n,f16_halo_wgmma_s2,-f16_halo_wgmma_s2");
  cd::ConvVariants expected;
  expected.f16_halo_wgmma = true;
  expected.raster_n = false;
  CHECK(std::memcmp(&edited, &expected, sizeof expected) == 0);
  CHECK(cd::parse_conv_variants("-f16_bk64").f16_split_k);
  CHECK_FALSE(cd::parse_conv_variants("-f16_bk64").f16_bk64);
  CHECK_FALSE(cd::parse_conv_variants("f16_bk64,-f16_bk64,f16_split_k").f16_bk64);  // not first: an explicit list
  CHECK_FALSE(cd::parse_conv_variants("f16_split_k").f16_bk64);
  const cd::ConvVariants none = cd::parse_conv_variants("none");
  CHECK_FALSE((none.f16_bk64 || none.dw_one_output || none.f16_split_k || none.f16_narrow || none.f16_narrow_wide ||
               none.f16_narrow_stem || none.dw_tiled_f16));
}

TEST_CASE("conv2d_narrow_f16 replayed on the CPU matches the reference (layout, loads, fragments, epilogue)",
          "[conv][host][narrow]") {
  // Shapes of each gather, N tile and pipeline depth, 1-3 blocks walking their tiles.
  const auto cases = narrow_cases(96, 99);
  std::set<int> bns;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    set_narrow_run(cases[i], i, 1 + static_cast<int>(i % 3));
    bns.insert(narrow_run.plan.bn);
    check_case<__half>(cases[i], 7000 + i, Kernel::NarrowHost);
  }
  CHECK(bns.size() == 8);
}

TEST_CASE("conv2d_narrow_f16 matches the reference on small shapes: every N tile, both gathers, 2-4 stages, small grids",
          "[conv][gpu][narrow]") {
  const auto cases = narrow_cases(96, 4242);
  std::set<int> bns;
  int vec = 0, scalar = 0;
  const int grids[] = {1, 2, 3, 0};  // 0: as many blocks as fit (one tile each for these sizes)
  for (std::size_t i = 0; i < cases.size(); ++i) {
    set_narrow_run(cases[i], i, grids[i % 4]);
    bns.insert(narrow_run.plan.bn);
    (vec_gather(cases[i]) ? vec : scalar) += 1;
    check_case<__half>(cases[i], 5000 + i, Kernel::Narrow);
  }
  CHECK(bns.size() == 8);
  CHECK(vec >= 20);
  CHECK(scalar >= 20);
}

TEST_CASE("conv2d_forward runs conv2d_narrow_f16 on large narrow convs (the stem too), as the implicit GEMM does",
          "[conv][gpu][narrow]") {
  // At least one 128-pixel tile per SM (132 on the H200), so that the dispatch takes them.
  auto with = [](Case c, bool gamma, bool res, int x_c0 = 0, int x_extra = 0, int y_c0 = 0, int y_extra = 0) {
    return with_options(c, gamma, res, true, x_c0, x_extra, y_c0, y_extra);
  };
  const Case cases[] = {
      with(make_case(1, 300, 262, 3, 16, 3, 2, 1), false, false),              // the stem, scalar gather
      with(make_case(1, 281, 300, 3, 32, 3, 2, 1), true, false, 0, 1, 8, 8),   // stem 3 -> 32 into a slice
      with(make_case(1, 150, 120, 16, 8, 3, 1, 1), false, false),              // c_out 8
      with(make_case(1, 130, 140, 48, 64, 1, 1, 1), false, true),              // 1x1 with residual
      with(make_case(1, 130, 131, 32, 32, 3, 1, 1), true, true),
      with(make_case(1, 135, 130, 96, 128, 1, 1, 1), false, false, 0, 0, 0, 24),
      with(make_case(1, 130, 135, 256, 32, 1, 1, 1), false, false, 16, 8),    // x a slice of a wider buffer
      with(make_case(1, 270, 262, 16, 32, 3, 2, 1), false, false),              // 3x3 stride 2
      with(make_case(1, 140, 130, 64, 80, 1, 1, 1), true, false, 0, 0, 3, 0),  // c_out 80, odd slice offset
      with(make_case(2, 100, 97, 21, 40, 3, 1, 1), false, true, 3, 0),         // odd c_in: scalar gather
  };
  int i = 0;
  cd::conv_variants().f16_narrow_wide = cd::conv_variants().f16_narrow_stem = true;  // all it takes
  cd::conv_variants().f16_halo = false;  // (which conv_select asks first for the 3x3 convs)
  for (const Case& c : cases) {
    INFO(describe(c));
    CHECK(plan_of(c.s, true).algorithm == ConvAlgorithm::narrow_f16);
    check_case<__half>(c, 6000 + i++, Kernel::Forward);
  }
  // The same convs with the narrow variants off (implicit GEMM, direct small-c_in kernel) also match.
  cd::conv_variants().f16_narrow = cd::conv_variants().f16_narrow_wide = cd::conv_variants().f16_narrow_stem = false;
  for (const Case& c : cases) {
    CHECK(plan_of(c.s, true).algorithm != ConvAlgorithm::narrow_f16);
    check_case<__half>(c, 6100 + i++, Kernel::Forward);
  }
  cd::conv_variants() = cd::ConvVariants();
}

// ---- dwconv_tiled_f16 ----------------------------------------------------------------------------------

TEST_CASE("dwconv_tiled_f16 takes the depthwise convs of yolo12n without dw_rows_f16; without dw_tiled_small only large grids",
          "[conv][host][dwtiled]") {
  // The defaults but dw_rows_f16 (the tenth session's): every aligned depthwise conv of yolo12n, batch 1 and 32
  // (dw_tiled_small).
  cd::conv_variants() = cd::ConvVariants();
  cd::conv_variants().dw_rows_f16 = false;
  for (const int b : {1, 32})
    for (const auto& s : {yolo_shape(b, 80, 80, 80, 3, 1, 80), yolo_shape(b, 40, 64, 64, 7, 1, 64),
                          yolo_shape(b, 20, 128, 128, 7, 1, 128), yolo_shape(b, 20, 256, 256, 3, 1, 256)})
      CHECK(plan_of(s, true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  // The fifth session's rule: only grids that fill the GPU.
  cd::conv_variants().dw_tiled_small = false;
  for (const auto& s : {yolo_shape(32, 80, 80, 80, 3, 1, 80), yolo_shape(32, 80, 64, 64, 3, 1, 64),
                        yolo_shape(32, 40, 128, 128, 3, 1, 128), yolo_shape(32, 40, 64, 64, 7, 1, 64)}) {
    CHECK(plan_of(s, true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
    CHECK(plan_of(s, false).algorithm == ConvAlgorithm::dwconv_direct);  // fp32 keeps dwconv_direct
  }
  // Grids that do not fill the GPU keep dwconv_direct (one output per thread): 7x7 128 at 20x20, batch 1 and 32.
  CHECK(plan_of(yolo_shape(1, 20, 128, 128, 7, 1, 128), true).algorithm == ConvAlgorithm::dwconv_direct);
  CHECK(plan_of(yolo_shape(32, 20, 128, 128, 7, 1, 128), true).algorithm == ConvAlgorithm::dwconv_direct);
  CHECK(plan_of(yolo_shape(32, 80, 36, 36, 3, 1, 36), true).algorithm == ConvAlgorithm::dwconv_direct);  // c % 8
  CHECK(std::string(label_of(yolo_shape(32, 80, 80, 80, 3, 1, 80), true)) ==
        "depthwise tiled_f16");
  // The plan is that of the params: views that are not 16-byte vectors (an odd slice) keep dwconv_direct.
  {
    alignas(256) static __half storage[16];
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = yolo_shape(32, 80, 80, 80, 3, 1, 80);
    p.x = storage + 1;
    p.w = storage;
    p.y = storage;
    p.ldx = 81;
    p.ldy = 80;
    CHECK(yolo12::cuda::conv_select(p).algorithm == ConvAlgorithm::dwconv_direct);
    p.x = storage;
    p.ldx = 88;
    CHECK(yolo12::cuda::conv_select(p).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  }
  cd::conv_variants().dw_tiled_f16 = false;
  CHECK(plan_of(yolo_shape(32, 80, 80, 80, 3, 1, 80), true).algorithm == ConvAlgorithm::dwconv_direct);
  cd::conv_variants() = cd::ConvVariants();
}

namespace {
// Random fusions (bias, gamma, residual, SiLU) and channel slices of x, y and the residual at 16-byte
// aligned offsets inside wider buffers (what the 16-byte depthwise kernels take).
void dw_aligned_options(Case& cs, const std::function<int(int, int)>& pick) {
  ops::conv_random_options(cs, pick, ops::kConvAlignedOffsets);
  cs.x_extra = 8 * pick(0, 2);
  cs.y_c0 = 8 * pick(0, 2);
  cs.y_extra = 8 * pick(0, 1);
  cs.r_c0 = 8 * pick(0, 1);
  cs.r_extra = 8 * pick(0, 2);
}

// Depthwise shapes for dwconv_tiled_f16 called directly: k 3/5/7 x stride 1/2, `per` of each, odd sizes
// (partial tiles), c = 8..136 (odd chunk counts leave the block's second chunk empty), 16-byte aligned
// slices, every fusion.
std::vector<Case> dw_tiled_cases(int per, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Case> v;
  for (const int k : {3, 5, 7})
    for (const int stride : {1, 2})
      for (int rep = 0; rep < per; ++rep) {
        const int c = 8 * pick(1, 17);
        Case cs = make_case(pick(1, 3), pick(k, 45), pick(k, 45), c, c, k, stride, c);
        dw_aligned_options(cs, pick);
        v.push_back(cs);
      }
  return v;
}
}  // namespace

TEST_CASE("dwconv_tiled_f16 matches the reference: k 3/5/7, stride 1/2, odd sizes, partial tiles and channel pairs",
          "[conv][gpu][dwtiled]") {
  const auto cases = dw_tiled_cases(8, 31337);
  for (std::size_t i = 0; i < cases.size(); ++i) check_case<__half>(cases[i], 8000 + i, Kernel::DwTiled);
}

TEST_CASE("dwconv_tiled_f16 replayed on the CPU matches the reference (tile loads, taps, epilogue)",
          "[conv][host][dwtiled]") {
  const auto cases = dw_tiled_cases(4, 4711);
  for (std::size_t i = 0; i < cases.size(); ++i) check_case<__half>(cases[i], 8200 + i, Kernel::DwTiledHost);
}

TEST_CASE("conv2d_forward runs dwconv_rows_f16 (stride 1) and dwconv_tiled_f16 on large depthwise convs, as dwconv_direct does",
          "[conv][gpu][dwtiled][dwrows]") {
  const Case cases[] = {
      with_options(make_case(1, 200, 190, 64, 64, 3, 1, 64), false, true, true),
      with_options(make_case(4, 100, 100, 80, 80, 3, 1, 80), true, false, true, 0, 16, 8, 0),
      with_options(make_case(24, 41, 39, 64, 64, 7, 1, 64), false, true, false),
      with_options(make_case(5, 161, 159, 40, 40, 3, 2, 40), false, false, true),
  };
  // The defaults (stride 1 on dwconv_rows_f16), then dw_rows_f16 off (the tiled kernel), then both off.
  struct Setting {
    bool rows, tiled;
    ConvAlgorithm stride1, stride2;
  };
  const Setting settings[] = {{true, true, ConvAlgorithm::dwconv_rows_f16, ConvAlgorithm::dwconv_tiled_f16},
                              {false, true, ConvAlgorithm::dwconv_tiled_f16, ConvAlgorithm::dwconv_tiled_f16},
                              {false, false, ConvAlgorithm::dwconv_direct, ConvAlgorithm::dwconv_direct}};
  int i = 0;
  for (const Setting& set : settings) {
    cd::conv_variants() = cd::ConvVariants();
    cd::conv_variants().dw_rows_f16 = set.rows;
    cd::conv_variants().dw_rows_small = true;  // every grid (the default rule: below)
    cd::conv_variants().dw_tiled_f16 = set.tiled;
    for (const Case& c : cases) {
      INFO(describe(c) << " dw_rows_f16 " << set.rows << " dw_tiled_f16 " << set.tiled);
      CHECK(plan_of(c.s, true).algorithm == (c.s.stride == 1 ? set.stride1 : set.stride2));
      check_case<__half>(c, 8500 + i++, Kernel::Forward);
    }
  }
  cd::conv_variants() = cd::ConvVariants();
}

// ---- dwconv_rows_f16 ----------------------------------------------------------------------------------

TEST_CASE("dwconv_rows_f16 takes every aligned stride-1 fp16 depthwise conv; its channels per block; the switch",
          "[conv][host][dwrows]") {
  namespace yc = yolo12::cuda;
  // The defaults take it on grids of 4+ warps per SM only: batch 32 here, batch 1 the tiled kernel.
  cd::conv_variants() = cd::ConvVariants();
  CHECK(plan_of(yolo_shape(32, 20, 128, 128, 7, 1, 128), true).algorithm == ConvAlgorithm::dwconv_rows_f16);
  CHECK(plan_of(yolo_shape(32, 40, 64, 64, 7, 1, 64), true).algorithm == ConvAlgorithm::dwconv_rows_f16);
  CHECK(plan_of(yolo_shape(1, 40, 64, 64, 7, 1, 64), true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  CHECK(plan_of(yolo_shape(1, 20, 384, 384, 7, 1, 384), true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  // 3x3 from 16 warps per SM (thirty-first session): yolo12m's 256 at 80x80, batch 1 (1,280 warps) on the tiled kernel,
  // yolo12n's 64 at 80x80, batch 32 (10,240) on this one; yolo12n's 80 at 20x20, batch 32 (960) on the tiled kernel.
  CHECK(plan_of(yolo_shape(1, 80, 256, 256, 3, 1, 256), true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  CHECK(plan_of(yolo_shape(32, 80, 64, 64, 3, 1, 64), true).algorithm == ConvAlgorithm::dwconv_rows_f16);
  CHECK(plan_of(yolo_shape(32, 20, 80, 80, 3, 1, 80), true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  cd::conv_variants().dw_rows_small = true;  // below: every grid
  struct Expect {
    ConvShape s;
    int bn;  // channels per block the plan takes (the H200's 132 SMs)
  };
  // The table: the eleventh session's order, 32 channels per block before 16 (dw_rows_c16 off); its case follows.
  cd::conv_variants().dw_rows_c16 = false;
  const Expect expect[] = {
      {yolo_shape(32, 40, 384, 384, 7, 1, 384), 32},  // yolo12x's pe conv at P4, batch 32: 3840 blocks
      {yolo_shape(32, 20, 384, 384, 7, 1, 384), 32},
      {yolo_shape(32, 40, 64, 64, 7, 1, 64), 32},     // yolo12n's
      {yolo_shape(32, 20, 128, 128, 7, 1, 128), 32},
      {yolo_shape(32, 80, 80, 80, 3, 1, 80), 16},     // 10 chunks: two per block
      {yolo_shape(32, 80, 64, 64, 3, 1, 64), 32},
      {yolo_shape(1, 80, 80, 80, 3, 1, 80), 16},      // 40 tiles x 5 pairs
      {yolo_shape(1, 40, 384, 384, 7, 1, 384), 16},   // 10 tiles x 12 groups of 4 < 132
      {yolo_shape(1, 40, 64, 64, 7, 1, 64), 8},       // 10 tiles x 8 chunks
      {yolo_shape(1, 20, 128, 128, 7, 1, 128), 8},    // 3 tiles x 16 chunks
      {yolo_shape(1, 20, 256, 256, 3, 1, 256), 8},
      {yolo_shape(3, 33, 136, 136, 5, 1, 136), 8},    // 17 chunks
  };
  for (const Expect& e : expect) {
    INFO("B" << e.s.batch << " " << e.s.h << "x" << e.s.w_in << "x" << e.s.c_in << " k" << e.s.k);
    REQUIRE(yc::conv_can_implement(e.s));
    const yc::ConvPlan plan = plan_of(e.s, true);
    CHECK(plan.algorithm == ConvAlgorithm::dwconv_rows_f16);
    CHECK(plan == cd::dwconv_rows_f16_plan(e.s, yc::device_info()));
    CHECK(cd::dwconv_rows_f16_plan(e.s, yc::DeviceInfo()).bn == e.bn);
    CHECK(yc::conv_plan_detail(plan) == "depthwise rows_f16 c" + std::to_string(plan.bn));
    CHECK(plan_of(e.s, false).algorithm == ConvAlgorithm::dwconv_direct);  // fp32 keeps dwconv_direct
  }
  CHECK(label_of(expect[0].s, true) == "depthwise rows_f16");
  CHECK(cd::dwconv_rows_f16_plan(expect[0].s, one_sm()).bn == 32);
  CHECK(cd::dwconv_rows_f16_plan(expect[9].s, one_sm()).bn == 32);  // 12 blocks of 32 channels fill one SM
  // dw_rows_c16 (the default since the nineteenth session): 16 channels per block wherever the table had 32.
  cd::conv_variants().dw_rows_c16 = true;
  for (const Expect& e : expect) {
    INFO("B" << e.s.batch << " " << e.s.h << "x" << e.s.w_in << "x" << e.s.c_in << " k" << e.s.k);
    CHECK(cd::dwconv_rows_f16_plan(e.s, yc::DeviceInfo()).bn == std::min(e.bn, 16));
  }
  CHECK(cd::dwconv_rows_f16_plan(expect[0].s, one_sm()).bn == 16);
  cd::conv_variants().dw_rows_c16 = false;
  // Not taken: stride 2 (the tiled kernel), channels not a multiple of 8 or a view that is not 16-byte
  // vectors (dwconv_direct), and with the switch off (the tenth session's kernels).
  CHECK(plan_of(yolo_shape(32, 80, 64, 64, 3, 2, 64), true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  CHECK(plan_of(yolo_shape(32, 80, 36, 36, 3, 1, 36), true).algorithm == ConvAlgorithm::dwconv_direct);
  {
    alignas(256) static __half storage[16];
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = expect[2].s;
    p.x = storage;
    p.w = storage;
    p.y = storage;
    p.ldx = 72;
    p.ldy = 64;
    CHECK(yc::conv_select(p).algorithm == ConvAlgorithm::dwconv_rows_f16);
    p.ldy = 68;  // 8-byte rows
    CHECK(yc::conv_select(p).algorithm == ConvAlgorithm::dwconv_direct);
    CHECK_FALSE(cd::dwconv_rows_f16_supports(p));
  }
  cd::conv_variants().dw_rows_f16 = false;
  CHECK(plan_of(expect[0].s, true).algorithm == ConvAlgorithm::dwconv_tiled_f16);
  CHECK(plan_of(expect[9].s, true).algorithm == ConvAlgorithm::dwconv_tiled_f16);  // dw_tiled_small
  cd::conv_variants() = cd::ConvVariants();
  // YOLO12_CONV_VARIANTS spells it dw_rows_f16.
  CHECK(cd::parse_conv_variants("dw_rows_f16").dw_rows_f16);
  CHECK_FALSE(cd::parse_conv_variants("dw_rows_f16").dw_tiled_f16);
  CHECK_FALSE(cd::parse_conv_variants("dw_tiled_f16").dw_rows_f16);
  CHECK_FALSE(cd::parse_conv_variants("none").dw_rows_f16);
}

TEST_CASE("kernel tuning offers dwconv_rows_f16 at 8, 16 and 32 channels per block; its plans in the tune cache's text",
          "[conv][host][dwrows][tune]") {
  namespace yc = yolo12::cuda;
  cd::conv_variants() = cd::ConvVariants();
  alignas(256) static __half storage[16];
  ConvParams<__half> p;
  static_cast<ConvShape&>(p) = yolo_shape(32, 40, 64, 64, 7, 1, 64);
  p.x = storage;
  p.w = storage;
  p.y = storage;
  p.ldx = 64;
  p.ldy = 64;
  std::vector<std::string> names;
  for (const yc::ConvPlan& plan : yc::conv_candidates(p)) {
    names.push_back(yc::conv_plan_detail(plan));
    yc::ConvPlan q;
    REQUIRE(yc::conv_plan_decode(yc::conv_plan_encode(plan), q));
    CHECK(q == plan);
  }
  const std::vector<std::string> expect = {"depthwise rows_f16 c16", "depthwise", "depthwise tiled_f16",
                                           "depthwise rows_f16 c32", "depthwise rows_f16 c8"};
  CHECK(names == expect);  // conv_select's plan first
  // Stride 2 and fp32: no rows plan.
  static_cast<ConvShape&>(p) = yolo_shape(32, 80, 64, 64, 3, 2, 64);
  for (const yc::ConvPlan& plan : yc::conv_candidates(p)) CHECK(plan.algorithm != ConvAlgorithm::dwconv_rows_f16);
  // The algorithm's number follows every older one (tune caches keep their meaning). (halo_f16, the same
  // session's, is the one before it; halo_wgmma and stem_mma, the thirteenth session's, come after it.)
  CHECK(static_cast<int>(ConvAlgorithm::halo_f16) == static_cast<int>(ConvAlgorithm::implicit_gemm_f32) + 1);
  CHECK(static_cast<int>(ConvAlgorithm::dwconv_rows_f16) == static_cast<int>(ConvAlgorithm::halo_f16) + 1);
  CHECK(static_cast<int>(ConvAlgorithm::halo_wgmma) == static_cast<int>(ConvAlgorithm::dwconv_rows_f16) + 1);
  CHECK(static_cast<int>(ConvAlgorithm::stem_mma) == static_cast<int>(ConvAlgorithm::halo_wgmma) + 1);
  CHECK(static_cast<int>(ConvAlgorithm::gemm_tma) == static_cast<int>(ConvAlgorithm::stem_mma) + 1);
  CHECK(yc::kLastConvAlgorithm == ConvAlgorithm::gemm_tma);
  yc::ConvPlan q;
  CHECK(yc::conv_plan_decode("11 256 96 16 1 3 8", q));
  CHECK(q.algorithm == ConvAlgorithm::halo_wgmma);
  CHECK(q.bm == 256);
  CHECK(yc::conv_plan_decode("12 0 0 0 1 0 0", q));
  CHECK(q.algorithm == ConvAlgorithm::stem_mma);
  CHECK(yc::conv_plan_decode("13 256 128 64 1 4 9", q));
  CHECK(q.algorithm == ConvAlgorithm::gemm_tma);
  CHECK(yc::conv_plan_detail(q) == "gemm_tma 256x128 s4");
  CHECK_FALSE(yc::conv_plan_decode("14 0 0 0 1 0 0", q));
  CHECK(yc::conv_plan_decode("10 0 32 0 1 0 0", q));
  CHECK(q.algorithm == ConvAlgorithm::dwconv_rows_f16);
  CHECK(q.bn == 32);
}

namespace {
// Depthwise stride-1 shapes for dwconv_rows_f16 called directly: k 3/5/7 x H x W over {1, 2, 7, 20, 33, 40,
// 81} (partial tiles in both directions, maps narrower than the halo), c cycling through 8, 24, 64, 136, 384
// (a block's last chunks empty where c / 8 is not a multiple of the chunks per block), batch 1 and 3, random
// fusions and 16-byte aligned slices; every `step`-th of the 147, from `first`.
std::vector<Case> dw_rows_cases(int step, int first, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int sizes[] = {1, 2, 7, 20, 33, 40, 81};
  const int channels[] = {8, 24, 64, 136, 384};
  std::vector<Case> v;
  int i = 0;
  for (const int k : {3, 5, 7})
    for (const int h : sizes)
      for (const int w : sizes) {
        const int c = channels[i % 5], batch = (i / 5) % 2 == 0 ? 1 : 3;
        Case cs = make_case(batch, h, w, c, c, k, 1, c);
        dw_aligned_options(cs, pick);  // drawn for every case, so that the cases do not depend on step
        if (i++ % step == first % step) v.push_back(cs);
      }
  return v;
}
// plan_run for case i: dwconv_rows_f16 with 32, 16 or 8 channels per block.
void set_rows_run(std::size_t i) {
  plan_run = yolo12::cuda::ConvPlan{};
  plan_run.algorithm = ConvAlgorithm::dwconv_rows_f16;
  plan_run.bn = 8 << (i % 3);
}
}  // namespace

TEST_CASE("dwconv_rows_f16 replayed on the CPU is bit-identical to dwconv_tiled_f16's replay and matches the reference",
          "[conv][host][dwrows]") {
  const auto cases = dw_rows_cases(4, 1, 2718);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    set_rows_run(i);
    INFO("channels per block " << plan_run.bn);
    check_bit_identical(cases[i], 8700 + i, Kernel::DwRowsHost, Kernel::DwTiledHost);
  }
}

TEST_CASE("dwconv_rows_f16 is bit-identical to dwconv_direct: k 3/5/7, odd and small maps, slices, every fusion",
          "[conv][gpu][dwrows]") {
  const auto cases = dw_rows_cases(1, 0, 1618);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    set_rows_run(i);
    INFO("channels per block " << plan_run.bn);
    check_bit_identical(cases[i], 8800 + i, Kernel::DwRows, Kernel::DwDirect);
    if (i % 7 == 0) check_bit_identical(cases[i], 8800 + i, Kernel::DwRows, Kernel::DwTiled);
  }
}

namespace {
// Sets the kernel variants (conv_detail::ConvVariants) for one scope, back to the defaults after. The
// other test cases run the defaults (variants on); this one keeps the plain kernels tested.
struct VariantsSet {
  explicit VariantsSet(bool on) {
    yolo12::cuda::conv_detail::conv_variants().f16_bk64 = on;
    yolo12::cuda::conv_detail::conv_variants().dw_one_output = on;
    yolo12::cuda::conv_detail::conv_variants().f16_split_k = on;
    yolo12::cuda::conv_detail::conv_variants().f16_narrow = on;
    yolo12::cuda::conv_detail::conv_variants().f16_narrow_stem = on;
    yolo12::cuda::conv_detail::conv_variants().dw_tiled_f16 = on;
    yolo12::cuda::conv_detail::conv_variants().dw_rows_f16 = on;
    yolo12::cuda::conv_detail::conv_variants().f16_wgmma = on;
  }
  ~VariantsSet() { yolo12::cuda::conv_detail::conv_variants() = yolo12::cuda::conv_detail::ConvVariants(); }
};
}  // namespace

// The tile rules of f16_tiles2 and f16_tiles3 (implicit_gemm_plan2) on yolo12n's shapes, as tuning chose them on
// the H200.
TEST_CASE("f16_plan's tiles: 8-warp tiles on large grids, 64x32 on small grids with short K", "[conv][host][tune]") {
  const auto mma_sync_only = [] {  // the mma.sync kernel's rules: without the wgmma kernel's ([wgmma]), and
    cd::ConvVariants v;              // without f16_tall_1x1 (on since the nineteenth session; its cases below)
    v.f16_wgmma = false;
    v.f16_tall_1x1 = false;
    return v;
  };
  cd::conv_variants() = mma_sync_only();
  struct Expect {
    ConvShape s;
    const char* plan;
  };
  const Expect expect[] = {
      {yolo_shape(32, 80, 64, 64, 3, 1, 1), "implicit_gemm_f16 128x64x64 w8"},
      {yolo_shape(32, 160, 48, 64, 1, 1, 1), "implicit_gemm_f16 128x64x64 w8"},
      {yolo_shape(32, 80, 16, 32, 3, 1, 1), "implicit_gemm_f16 128x32x64 w4"},
      {yolo_shape(32, 80, 64, 80, 1, 1, 1), "implicit_gemm_f16 128x32x64 w4"},
      {yolo_shape(32, 20, 384, 256, 1, 1, 1), "implicit_gemm_f16 128x128x64 w8"},
      {yolo_shape(32, 20, 128, 384, 1, 1, 1), "implicit_gemm_f16 128x64x64 w8"},
      {yolo_shape(32, 20, 64, 64, 3, 1, 1), "implicit_gemm_f16 128x64x64 w8"},
      {yolo_shape(1, 20, 128, 64, 1, 1, 1), "implicit_gemm_f16 64x32x64 w4"},
      {yolo_shape(1, 40, 32, 32, 3, 1, 1), "implicit_gemm_f16 64x32x64 w4"},
      {yolo_shape(1, 20, 64, 64, 3, 1, 1), "implicit_gemm_f16 64x64x64 w4 split-K 4"},
      {yolo_shape(1, 20, 256, 64, 3, 1, 1), "implicit_gemm_f16 64x64x64 w4 split-K 8"},
      {yolo_shape(1, 80, 64, 64, 3, 1, 1), "implicit_gemm_f16 64x64x64 w4"},
      {yolo_shape(1, 40, 128, 64, 3, 1, 1), "implicit_gemm_f16 64x64x64 w4 split-K 4"},
      {yolo_shape(32, 40, 256, 512, 3, 1, 1), "implicit_gemm_f16 128x128x64 w8"},  // f16_wide_tiles off
      {yolo_shape(32, 40, 384, 384, 1, 1, 1), "implicit_gemm_f16 128x128x64 w8"},
      {yolo_shape(1, 40, 384, 384, 1, 1, 1), "implicit_gemm_f16 64x32x64 w4"},     // 384 channels: not "large"
      {yolo_shape(1, 40, 1536, 384, 1, 1, 1), "implicit_gemm_f16 64x64x64 w4 split-K 2"},
  };
  for (const Expect& e : expect) {
    INFO(e.s.batch << " " << e.s.ho << "x" << e.s.wo << " " << e.s.c_in << "->" << e.s.c_out << " k" << e.s.k);
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(e.s)) == e.plan);
  }
  // f16_tiles4 (the default): a short K over channels 128 divides on 4+ waves of 128x128 takes that tile.
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 160, 256, 256, 1, 1, 1))) ==
        "implicit_gemm_f16 128x128x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 80, 192, 256, 1, 1, 1))) ==
        "implicit_gemm_f16 128x128x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 40, 128, 256, 1, 1, 1))) ==
        "implicit_gemm_f16 128x64x64 w8");  // 800 tiles of 128x128: under 4 waves
  cd::conv_variants().f16_tiles4 = false;
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 160, 256, 256, 1, 1, 1))) ==
        "implicit_gemm_f16 128x64x64 w8");
  cd::conv_variants().f16_tiles4 = true;
  // f16_tall_1x1 (eighteenth session): 1x1 convs of at most 64 channels with a K of at most 2 tiles, on grids the
  // rules call large, take 256-row tiles; longer K, k x k convs and small grids keep theirs.
  cd::conv_variants().f16_tall_1x1 = true;
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[1].s)) == "implicit_gemm_f16 256x64x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 160, 32, 32, 1, 1, 1))) ==
        "implicit_gemm_f16 256x32x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 40, 128, 64, 1, 1, 1))) ==
        "implicit_gemm_f16 256x64x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 40, 192, 64, 1, 1, 1))) ==
        "implicit_gemm_f16 128x64x64 w8");  // K of 3 tiles
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[0].s)) == expect[0].plan);  // 3x3
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[7].s)) == expect[7].plan);  // batch 1: a small grid
  cd::conv_variants().f16_tall_1x1 = false;
  // f16_tiles3 off: the sixth session's rules.
  cd::conv_variants().f16_tiles3 = false;
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[2].s)) == "implicit_gemm_f16 64x32x64 w4");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[6].s)) == "implicit_gemm_f16 64x64x64 w4 split-K 2");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[11].s)) == "implicit_gemm_f16 64x64x64 w4 split-K 2");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[12].s)) == "implicit_gemm_f16 64x64x64 w4 split-K 8");
  cd::conv_variants().f16_wide_tiles = true;
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[13].s)) == "implicit_gemm_f16 128x256x64 w8");
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[14].s)) == "implicit_gemm_f16 256x128x64 w8");
  // Off: the fifth session's rules (128x64 on 4 warps at batch 32).
  cd::conv_variants().f16_tiles2 = false;
  CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[0].s)) == "implicit_gemm_f16 128x64x64 w4");
  cd::conv_variants() = cd::ConvVariants();
  // With f16_wgmma (the default) on a device that runs the wgmma kernel, the wide long-K layers go there.
  if (cd::wgmma_available()) {
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[13].s)) == "implicit_gemm_wgmma 128x128x64 s6 ws pingpong");
    // (f16_wgmma_waves: 400 row tiles are under 4 per SM, so this 1x1 384->384 at 40x40 is no longer kept on mma.sync)
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[14].s)) == "implicit_gemm_wgmma 128x128x64 s3");
    // f16_tall_1x1 (a default): 6400 row tiles are many, so this 1x1 48->64 takes 256-row mma.sync tiles.
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(expect[1].s)) == "implicit_gemm_f16 256x64x64 w8");
    // f16_wgmma_fewrows (eighteenth session, a default since the nineteenth): 1x1 convs with a K of 2-4 tiles over
    // at most 4 row tiles per SM go to the wgmma kernel; over more rows (80x80 at batch 32) they stay on mma.sync.
    const ConvShape fewrows[] = {yolo_shape(32, 40, 128, 64, 1, 1, 1), yolo_shape(32, 20, 128, 384, 1, 1, 1),
                                 yolo_shape(32, 40, 192, 128, 1, 1, 1), yolo_shape(32, 80, 96, 128, 1, 1, 1)};
    cd::conv_variants().f16_wgmma_fewrows = false;
    std::vector<std::string> before;
    for (const ConvShape& f : fewrows) before.push_back(yolo12::cuda::conv_plan_detail(cd::f16_plan(f)));
    for (const std::string& b : before) CHECK(b.rfind("implicit_gemm_f16 ", 0) == 0);
    cd::conv_variants().f16_wgmma_fewrows = true;
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(fewrows[0])) == "implicit_gemm_wgmma 128x64x64 s4");
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(fewrows[1])) == "implicit_gemm_wgmma 128x96x64 s3");
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(fewrows[2])) == "implicit_gemm_wgmma 128x128x64 s3");
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(fewrows[3])) == before[3]);
    cd::conv_variants() = cd::ConvVariants();
    // Thirty-fifth session: a k x k conv whose channels 128 divides takes 128-wide tiles where those give between half
    // the SMs and all of them a block (yolo12s / m / l's 3x3 128->128 at 20x20, batch 32: 100 tiles; it was two
    // 64-wide column tiles per row tile). 64 channels, or a grid of more such tiles than SMs, keep the rule before.
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 20, 128, 128, 3, 1, 1))) ==
          "implicit_gemm_wgmma 128x128x64 s4");
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 20, 128, 64, 3, 1, 1))) ==
          "implicit_gemm_wgmma 128x64x64 s4");
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 40, 128, 128, 3, 2, 1))) ==
          "implicit_gemm_wgmma 128x128x64 s4");  // yolo12n's 3x3/2 at 40x40 -> 20x20: the same 100 tiles
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 20, 192, 256, 3, 1, 1))) ==
          "implicit_gemm_wgmma 128x128x64 s3");  // 200 tiles of 128 x 128: the large-grid rule, as before
    CHECK(yolo12::cuda::conv_plan_detail(cd::f16_plan(yolo_shape(32, 20, 128, 128, 1, 1, 1))) ==
          "implicit_gemm_wgmma 128x64x64 s4");  // 1x1: its own rules
  }
}

// The thirty-fifth session's four variants (off; conv_detail.cuh): each moves the shape it was written for and leaves
// its neighbour as it was.
TEST_CASE("the thirty-fifth session's rule variants move their shapes only", "[conv][host][variants]") {
  if (!cd::wgmma_available()) {
    WARN("SKIPPED: the device does not run sm_90a code");
    return;
  }
  struct Flip {
    const char* variant;
    ConvShape moved, kept;
    const char *before, *after;
  };
  const Flip flips[] = {
      {"f16_wgmma_ws_s2", yolo_shape(32, 160, 128, 128, 3, 2), yolo_shape(32, 40, 256, 512, 3, 2),
       "implicit_gemm_wgmma 128x128x64 s3", "implicit_gemm_wgmma 128x128x64 s6 ws"},
      {"dw_tiled_80", yolo_shape(32, 80, 128, 128, 3, 1, 128), yolo_shape(32, 40, 128, 128, 3, 1, 128),
       "depthwise rows_f16 c16", "depthwise tiled_f16"},
      {"f16_n96_short", yolo_shape(32, 80, 128, 80, 1, 1), yolo_shape(32, 80, 64, 80, 1, 1),
       "implicit_gemm_f16 128x32x64 w4", "implicit_gemm_wgmma 128x96x64 s3"},
      {"f16_nosplit_small", yolo_shape(1, 40, 64, 64, 3, 1), yolo_shape(1, 20, 64, 64, 3, 1),
       "implicit_gemm_f16 64x64x64 w4 split-K 4", "implicit_gemm_f16 64x32x64 w4"},
  };
  const cd::ConvVariants saved = cd::conv_variants();
  for (const Flip& f : flips) {
    INFO(f.variant);
    cd::conv_variants() = cd::ConvVariants{};
    const std::string kept_before = yolo12::cuda::conv_plan_detail(select_dense<__half>(f.kept));
    CHECK(yolo12::cuda::conv_plan_detail(select_dense<__half>(f.moved)) == f.before);
    cd::conv_variants() = cd::parse_conv_variants((std::string("+") + f.variant).c_str());
    CHECK(yolo12::cuda::conv_plan_detail(select_dense<__half>(f.moved)) == f.after);
    CHECK(yolo12::cuda::conv_plan_detail(select_dense<__half>(f.kept)) == kept_before);
  }
  cd::conv_variants() = saved;
}

// Kernel tuning may pick any of conv_candidates: every one of them must compute the conv.
TEST_CASE("every plan kernel tuning can choose matches the reference: all tiles, splits and kernels", "[conv][gpu][tune]") {
  std::vector<Case> cases;
  for (const Case& c : fixed_cases()) {
    const ConvShape& s = c.s;
    const double macs = 1.0 * s.batch * s.ho * s.wo * s.c_out * (s.c_in / s.groups) * s.k * s.k;
    if (macs <= 4e7) cases.push_back(c);  // the double reference runs once per candidate
  }
  // yolo12-like shapes, large enough for every tile (M >= 256) and for split-K at small M.
  cases.push_back(with_options(make_case(2, 40, 40, 64, 64, 3, 1, 1), true, true, true));
  cases.push_back(with_options(make_case(2, 40, 40, 48, 64, 1, 1, 1), false, false, true));
  cases.push_back(with_options(make_case(2, 20, 20, 128, 256, 1, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 20, 20, 256, 64, 3, 1, 1), true, false, true));
  cases.push_back(with_options(make_case(2, 40, 40, 32, 16, 3, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 64, 64, 3, 16, 3, 2, 1), false, false, true));     // the stem
  cases.push_back(with_options(make_case(2, 20, 20, 64, 64, 7, 1, 64), false, true, false));   // depthwise
  cases.push_back(with_options(make_case(1, 130, 132, 16, 16, 3, 1, 1), false, true, true));   // narrow: 134 tiles
  std::set<std::string> names;
  std::uint64_t seed = 9000;
  for (const Case& c : cases) {
    candidate_run.index = 0;
    do {
      check_case<__half>(c, seed++, Kernel::Candidate);
      names.insert(candidate_run.name);
    } while (++candidate_run.index < candidate_run.count);
    // Shapes of at least 256 rows have several (tiny ones may have only the plan conv_select gives).
    if (!yolo12::cuda::conv_detail::is_depthwise(c.s) && c.s.batch * c.s.ho * c.s.wo >= 256) CHECK(candidate_run.count > 1);
  }
  // Every block tile and split, and the other kernels, were among them.
  for (const char* name : {"implicit_gemm_f16 128x32x64 w4", "implicit_gemm_f16 128x32x32 w4",
                           "implicit_gemm_f16 64x64x64 w4", "implicit_gemm_f16 64x64x32 w4",
                           "implicit_gemm_f16 128x64x64 w4", "implicit_gemm_f16 128x64x32 w4",
                           "implicit_gemm_f16 128x128x64 w8", "implicit_gemm_f16 128x128x32 w8",
                           "implicit_gemm_f16 64x32x64 w4", "implicit_gemm_f16 64x128x64 w4",
                           "implicit_gemm_f16 128x64x64 w8", "implicit_gemm_f16 256x64x64 w8",
                           "implicit_gemm_f16 256x32x64 w8", "implicit_gemm_f16 128x256x64 w8",
                           "implicit_gemm_f16 256x128x64 w8", "implicit_gemm_f16 64x64x64 w4 split-K 2",
                           "implicit_gemm_f16 64x64x64 w4 split-K 4", "implicit_gemm_f16 64x64x64 w4 split-K 8",
                           "implicit_gemm_f16 128x32x64 w4 split-K 2", "direct_small_cin", "stem_f16", "depthwise",
                           "depthwise tiled_f16", "halo_f16 n16 k144 s3 w8", "depthwise rows_f16 c32",
                           "depthwise rows_f16 c16", "depthwise rows_f16 c8"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  bool narrow4 = false, narrow8 = false;  // conv2d_narrow_f16 on 4 and on 8 warps
  for (const std::string& n : names) {
    const bool is_narrow = n.rfind("narrow_f16", 0) == 0;
    narrow4 = narrow4 || (is_narrow && n.size() > 3 && n.compare(n.size() - 3, 3, " w4") == 0);
    narrow8 = narrow8 || (is_narrow && n.size() > 3 && n.compare(n.size() - 3, 3, " w8") == 0);
  }
  CHECK(narrow4);
  CHECK(narrow8);
  if (yolo12::cuda::conv_detail::wgmma_available())  // the wgmma tiles where the device runs them
    for (const char* name : {"implicit_gemm_wgmma 128x64x64 s4", "implicit_gemm_wgmma 128x96x64 s3",
                             "implicit_gemm_wgmma 128x128x64 s3", "implicit_gemm_wgmma 128x128x64 s4",
                             "implicit_gemm_wgmma 128x192x64 s4", "implicit_gemm_wgmma 128x256x64 s4",
                             "implicit_gemm_wgmma 128x64x64 s8 ws", "implicit_gemm_wgmma 128x128x64 s6 ws",
                             "implicit_gemm_wgmma 128x192x64 s4 ws", "implicit_gemm_wgmma 128x256x64 s4 ws",
                             "implicit_gemm_wgmma 128x64x64 s8 ws pingpong",
                             "implicit_gemm_wgmma 128x128x64 s6 ws pingpong"}) {
      INFO(name);
      CHECK(names.count(name) == 1);
    }
  // fp32 has the one kernel.
  ConvParams<float> f32;
  static_cast<ConvShape&>(f32) = cases.front().s;
  CHECK(yolo12::cuda::conv_candidates(f32).size() == 1);
}

// One dense conv on the device for the cases that time or tune it rather than check its values: random
// weights (scaled by the fan-in), bias and input in their own buffers, and the params over them (dense
// NHWC views, no residual). FAILs the test case if an allocation or copy fails.
template <typename T>
struct DenseConv {
  DeviceBuf<T> dx, dw, dy;
  DeviceBuf<float> db;
  ConvParams<T> p;
  DenseConv(const ConvShape& s, unsigned seed)
      : dx(1ull * s.batch * s.h * s.w_in * s.c_in), dw(yolo12::cuda::conv_packed_weight_elems(s)),
        dy(1ull * s.batch * s.ho * s.wo * s.c_out), db(s.c_out) {
    std::vector<float> w(1ull * s.c_out * (s.c_in / s.groups) * s.k * s.k), bias(s.c_out);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    for (auto& v : w) v = uni(rng) / std::sqrt(static_cast<float>(s.c_in / s.groups * s.k * s.k));
    for (auto& v : bias) v = 0.1f * uni(rng);
    std::vector<T> packed(dw.n), xh(dx.n);
    yolo12::cuda::conv_pack_weights<T>(s, w.data(), packed.data());
    for (auto& v : xh) v = to_t<T>(uni(rng));
    REQUIRE((dx.base && dw.base && dy.base && db.base));
    TEST_CUDA(cudaMemcpy(dx.data(), xh.data(), dx.n * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(dw.data(), packed.data(), dw.n * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(db.data(), bias.data(), s.c_out * sizeof(float), cudaMemcpyHostToDevice));
    static_cast<ConvShape&>(p) = s;
    p.x = dx.data();
    p.ldx = s.c_in;
    p.w = dw.data();
    p.bias = db.data();
    p.y = dy.data();
    p.ldy = s.c_out;
  }
};

// The tune cache (core/tune_cache.hpp) through conv_tune_cached: a stored plan that is one of the
// candidates comes back as it is, untimed; anything else is tuned and replaced.
TEST_CASE("conv_tune_cached takes a cached candidate untimed, re-tunes and replaces anything else", "[conv][gpu][tune][cache]") {
  namespace yc = yolo12::cuda;
  const ConvShape s = make_case(2, 40, 40, 64, 64, 3, 1, 1).s;
  DenseConv<__half> conv(s, 11);
  const ConvParams<__half>& p = conv.p;
  const std::vector<yc::ConvPlan> plans = yc::conv_candidates(p);
  REQUIRE(plans.size() > 2);
  // The text form of every candidate reads back as the same plan; other text is not a plan.
  for (const yc::ConvPlan& plan : plans) {
    yc::ConvPlan q;
    REQUIRE(yc::conv_plan_decode(yc::conv_plan_encode(plan), q));
    CHECK(q == plan);
  }
  for (const char* bad : {"", "6", "6 128 64 64 1 0", "6 128 64 64 1 0 4 9", "7 128 64 64 1 8 12 1 1", "99 128 64 64 1 0 4", "-1 128 64 64 1 0 4",
                          "6 128 x 64 1 0 4", "6 128 64 64 1 0 4 w4"}) {
    INFO("'" << bad << "'");
    yc::ConvPlan q;
    CHECK_FALSE(yc::conv_plan_decode(bad, q));
  }
  {  // the optional eighth field: the ping-pong schedule
    yc::ConvPlan q;
    REQUIRE(yc::conv_plan_decode("7 128 128 64 1 6 12 1", q));
    CHECK(q.pingpong);
    REQUIRE(yc::conv_plan_decode("7 128 128 64 1 6 12 0", q));
    CHECK_FALSE(q.pingpong);
  }
  // The key separates what the candidates and their speed depend on.
  const std::string key = yc::conv_tune_key(p);
  ConvParams<__half> q = p;
  q.batch = 1;
  CHECK(yc::conv_tune_key(q) != key);
  q = p;
  q.ldy = 2 * s.c_out;
  CHECK(yc::conv_tune_key(q) != key);
  q = p;
  q.y = conv.dy.data() + 4;  // 8-byte aligned only
  CHECK(yc::conv_tune_key(q) != key);
  q = p;
  q.residual = conv.dx.data();
  q.ldr = s.c_in;
  CHECK(yc::conv_tune_key(q) != key);
  ConvParams<float> f32;
  static_cast<ConvShape&>(f32) = s;
  f32.ldx = s.c_in;
  f32.ldy = s.c_out;
  CHECK(yc::conv_tune_key(f32) != key);

  const std::string path = yolo12::test::scratch_path("conv_tune_cache.txt");
  std::remove(path.c_str());
  yolo12::TuneCache cache(path, "test gpu");
  cudaStream_t stream;
  TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Every candidate, stored, is the answer (timing could not pick them all), with its own smem_bytes.
  for (const yc::ConvPlan& plan : plans) {
    INFO(yc::conv_plan_detail(plan));
    cache.put(key, yc::conv_plan_encode(plan));
    bool from_cache = false;
    const yc::ConvPlan got = yc::conv_tune_cached(p, stream, cache, &from_cache);
    CHECK(from_cache);
    CHECK(got == plan);
    CHECK(got.smem_bytes == plan.smem_bytes);
  }
  // Not a plan, or a plan this build has no kernel for (a 96x96 mma.sync tile): tuned, and replaced by
  // the choice, which is a candidate.
  yc::ConvPlan no_such_tile;
  no_such_tile.algorithm = yc::ConvAlgorithm::implicit_gemm_f16;
  no_such_tile.bm = no_such_tile.bn = 96;
  no_such_tile.bk = 64;
  no_such_tile.warps = 4;
  yc::ConvPlan tuned;
  for (const std::string& stale : {std::string("garbage"), yc::conv_plan_encode(no_such_tile)}) {
    INFO("'" << stale << "'");
    cache.put(key, stale);
    bool from_cache = true;
    tuned = yc::conv_tune_cached(p, stream, cache, &from_cache);
    CHECK_FALSE(from_cache);
    CHECK(std::find(plans.begin(), plans.end(), tuned) != plans.end());
    REQUIRE(cache.find(key));
    CHECK(*cache.find(key) == yc::conv_plan_encode(tuned));
  }
  // Saved, and read by another cache (another start-up): the same plan, untimed.
  REQUIRE(cache.save());
  yolo12::TuneCache again(path, "test gpu");
  bool from_cache = false;
  const yc::ConvPlan got = yc::conv_tune_cached(p, stream, again, &from_cache);
  CHECK(from_cache);
  CHECK(got == tuned);
  CHECK_FALSE(again.dirty());
  TEST_CUDA(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
}

TEST_CASE("copy_image_tile (the halo kernels' input tiles) copies every pixel and chunk once, zero outside the image",
          "[conv][host][halo]") {
  // Replays every thread of the copy on the CPU and records where each 16-byte copy lands and what it reads, against
  // the direct index arithmetic: the tile's (pixel, chunk) items each exactly once, each from its own image pixel or
  // null outside the image. Shapes: the halo pair's 20-wide tiles (1, 2, 4 chunks), the halo kernel's, a tile larger
  // than the image, thread counts that are not multiples of the chunks or of the tile width, tiles at every border.
  namespace cd = yolo12::cuda::conv_detail;
  struct Case {
    int h, w, ldx, rows, cols, chunks, threads, iy0, ix0;
  };
  const std::vector<Case> cases = {
      {40, 40, 32, 12, 20, 4, 256, -2, -2},  {40, 40, 32, 20, 20, 4, 256, 30, 22},  {160, 160, 16, 20, 20, 2, 256, 70, 142},
      {80, 80, 8, 12, 20, 1, 256, -2, 62},   {7, 5, 24, 12, 20, 3, 256, -2, -2},    {9, 11, 40, 10, 18, 5, 96, 3, -1},
      {20, 20, 64, 6, 34, 8, 128, 17, 1},    {3, 3, 8, 4, 4, 1, 7, -1, -1},          {33, 17, 16, 11, 13, 2, 100, 25, 10},
      {12, 30, 48, 9, 19, 6, 64, -4, 20}};
  for (const Case& c : cases) {
    INFO("h " << c.h << " w " << c.w << " ldx " << c.ldx << " tile " << c.rows << "x" << c.cols << " chunks " << c.chunks
              << " threads " << c.threads << " origin (" << c.iy0 << ", " << c.ix0 << ")");
    const int pix_halves = c.chunks * 8 + 8;  // padded pixels, as the kernels lay them out
    const std::vector<__half> img(static_cast<std::size_t>(c.h) * c.w * c.ldx);
    std::vector<__half> tile(static_cast<std::size_t>(c.rows) * c.cols * pix_halves);
    std::map<std::ptrdiff_t, const __half*> seen;  // destination offset -> source (null: zero fill)
    int duplicates = 0;
    const auto record = [&](__half* dst, const __half* src) {
      duplicates += seen.count(dst - tile.data()) > 0;
      seen[dst - tile.data()] = src;
    };
    for (int tid = 0; tid < c.threads; ++tid)
      cd::copy_image_tile(img.data(), c.h, c.w, c.ldx, c.iy0, c.ix0, c.rows, c.cols, c.chunks, tile.data(), pix_halves,
                          tid, c.threads, record);
    CHECK(duplicates == 0);
    REQUIRE(seen.size() == static_cast<std::size_t>(c.rows) * c.cols * c.chunks);
    int wrong = 0, outside = 0;
    for (int ty = 0; ty < c.rows; ++ty)
      for (int tx = 0; tx < c.cols; ++tx)
        for (int ch = 0; ch < c.chunks; ++ch) {
          const auto it = seen.find((static_cast<std::ptrdiff_t>(ty) * c.cols + tx) * pix_halves + ch * 8);
          if (it == seen.end()) {
            ++wrong;
            continue;
          }
          const int iy = c.iy0 + ty, ix = c.ix0 + tx;
          const bool inside = iy >= 0 && iy < c.h && ix >= 0 && ix < c.w;
          outside += !inside;
          const __half* want = inside ? img.data() + (static_cast<std::ptrdiff_t>(iy) * c.w + ix) * c.ldx + ch * 8 : nullptr;
          wrong += it->second != want;
        }
    CHECK(wrong == 0);
    const bool crosses = c.iy0 < 0 || c.ix0 < 0 || c.iy0 + c.rows > c.h || c.ix0 + c.cols > c.w;
    CHECK((outside > 0) == crosses);  // the border cases do reach outside the image
  }
}

// conv2d_halo_f16 (conv_halo.cu) launched with its plan on shapes of any size (halo_plan's any_grid), with
// the persistent grid uncapped and capped at 1 and 3 blocks (one block walks every tile and the stages wrap).
TEST_CASE("conv2d_halo_f16 matches the reference: k x k at stride 1, tile edges, channel counts, slices",
          "[conv][gpu][halo]") {
  namespace cd = yolo12::cuda::conv_detail;
  std::vector<Case> cases;
  // 3x3: sizes under one tile, one pixel, odd sizes crossing the 8 x 16 tile edges, batch 3.
  cases.push_back(with_options(make_case(1, 7, 9, 16, 8, 3, 1, 1), false, false, true));
  cases.push_back(with_options(make_case(1, 1, 1, 8, 16, 3, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(3, 17, 33, 16, 16, 3, 1, 1), true, true, true));
  cases.push_back(with_options(make_case(2, 20, 20, 32, 32, 3, 1, 1), false, true, false));
  cases.push_back(with_options(make_case(1, 40, 41, 64, 64, 3, 1, 1), true, false, true));   // K = 576, the largest
  cases.push_back(with_options(make_case(2, 19, 35, 64, 32, 3, 1, 1), true, true, false));   // K = 576, n 32 (k576)
  cases.push_back(with_options(make_case(1, 9, 18, 48, 48, 3, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 16, 16, 24, 40, 3, 1, 1), false, false, true));  // cin_pad 24: no row pad
  cases.push_back(with_options(make_case(1, 12, 13, 8, 24, 3, 1, 1), false, true, true));    // K = 72 -> 80: a zero half
  cases.push_back(with_options(make_case(1, 10, 10, 16, 60, 3, 1, 1), false, true, true));   // c_out 60: no 16-byte stores
  // 5x5 and 2x2 (pad 1: an output smaller than the input), pad 0.
  cases.push_back(with_options(make_case(1, 19, 21, 16, 32, 5, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 11, 17, 8, 8, 2, 1, 1), false, false, true));
  {
    Case c = with_options(make_case(1, 15, 23, 32, 16, 3, 1, 1), false, true, true);
    c.s.pad = 0;
    finish_shape(c.s);
    cases.push_back(c);
  }
  // Channel slices: x, y and the residual inside wider buffers at 16-byte aligned offsets.
  cases.push_back(with_options(make_case(2, 14, 22, 32, 16, 3, 1, 1), true, true, true, 8, 16, 8, 8, 16, 8));
  const yolo12::cuda::DeviceInfo& dev = yolo12::cuda::device_info();
  std::uint64_t seed = 15000;
  for (const Case& c : cases) {
    plan_run = cd::halo_plan(c.s, dev, true);
    INFO("halo " << describe(c));
    REQUIRE(plan_run.algorithm == yolo12::cuda::ConvAlgorithm::halo_f16);
    for (const int max_grid : {0, 1, 3}) {
      plan_max_grid = max_grid;
      INFO("halo plan " << yolo12::cuda::conv_plan_detail(plan_run) << " grid cap " << max_grid);
      check_case<__half>(c, seed++, Kernel::Plan);
    }
  }
  plan_max_grid = 0;
  // What it does not take, and the rule: stride 2, groups, c_in not a multiple of 8, over 64 channels, a
  // K over 576; a grid under one tile per SM.
  for (const Case& c : {make_case(1, 16, 16, 16, 16, 3, 2, 1), make_case(1, 16, 16, 32, 32, 3, 1, 2),
                        make_case(1, 16, 16, 12, 16, 3, 1, 1), make_case(1, 16, 16, 16, 72, 3, 1, 1),
                        make_case(1, 16, 16, 72, 16, 3, 1, 1), make_case(1, 16, 16, 16, 16, 1, 1, 1)}) {
    INFO(describe(c));
    CHECK_FALSE(cd::halo_takes(c.s));
  }
  CHECK(cd::halo_plan(make_case(1, 40, 40, 32, 32, 3, 1, 1).s, dev).algorithm != yolo12::cuda::ConvAlgorithm::halo_f16);
  CHECK(cd::halo_plan(make_case(32, 80, 80, 16, 16, 3, 1, 1).s, dev).algorithm == yolo12::cuda::ConvAlgorithm::halo_f16);
  // The rule (conv_select, f16_halo): K up to 432, and over 32 channels only on 4+ tiles per SM (call 2 of the
  // eleventh session: 64->64 at K 576 and yolo12x's 48->48 at batch 1 were faster on wgmma).
  struct Pick {
    ConvShape s;
    bool picked;
  };
  for (const Pick& r : {Pick{yolo_shape(32, 160, 16, 8, 3, 1), true}, Pick{yolo_shape(1, 160, 16, 8, 3, 1), true},
                        Pick{yolo_shape(32, 40, 32, 32, 3, 1), true}, Pick{yolo_shape(32, 160, 48, 48, 3, 1), true},
                        Pick{yolo_shape(1, 160, 48, 48, 3, 1), false}, Pick{yolo_shape(32, 80, 64, 64, 3, 1), false}}) {
    INFO(r.s.batch << " " << r.s.h << " " << r.s.c_in << "->" << r.s.c_out);
    CHECK((cd::halo_rule(r.s, dev).algorithm == yolo12::cuda::ConvAlgorithm::halo_f16) == r.picked);
    CHECK(cd::halo_plan(r.s, dev).algorithm == yolo12::cuda::ConvAlgorithm::halo_f16);  // a tuning candidate anyway
  }
  // f16_halo_k576 (on by default since the thirty-fifth session): K up to 576 where c_out <= 32 (yolo12s's 3x3
  // 64->32 at 80x80), not over.
  {
    const ConvShape narrow = yolo_shape(32, 80, 64, 32, 3, 1), wide = yolo_shape(32, 80, 64, 64, 3, 1);
    CHECK(cd::ConvVariants{}.f16_halo_k576);
    const cd::ConvVariants saved = cd::conv_variants();
    cd::conv_variants().f16_halo_k576 = false;
    CHECK(cd::halo_rule(narrow, dev).algorithm != yolo12::cuda::ConvAlgorithm::halo_f16);
    cd::conv_variants().f16_halo_k576 = true;
    CHECK(cd::halo_rule(narrow, dev).algorithm == yolo12::cuda::ConvAlgorithm::halo_f16);
    CHECK(cd::halo_rule(wide, dev).algorithm != yolo12::cuda::ConvAlgorithm::halo_f16);
    cd::conv_variants() = saved;
  }
}

namespace {
// One wgmma m64nNk16 from K-major operands without swizzle (the layout conv2d_halo_wgmma reads), D = A B^T with A
// (64 x 16) and B (N x 16) placed in shared memory as core matrices of 8 rows x 16 bytes: element (r, k) at byte
// (r / 8) mn_step + (k / 8) k_step + (r % 8) 16 + (k % 8) 2. The descriptors get lbo and sbo as given, so that a
// test can tell which of the two steps the hardware takes lbo for. d: (64, N) fp32. One warpgroup.
template <int N>
__global__ void wgmma_plain_probe(const __half* a, const __half* b, float* d, int k_step, int mn_step, int lbo,
                                  int sbo) {
#if defined(YOLO12_HAS_WGMMA)
  __shared__ __align__(128) __half sa[8 * 1024], sb[8 * 1024];  // up to 16 KB each
  const int tid = threadIdx.x;
  for (int i = tid; i < 64 * 16; i += 128) {
    const int r = i / 16, k = i % 16;
    sa[((r / 8) * mn_step + (k / 8) * k_step + (r % 8) * 16 + (k % 8) * 2) / 2] = a[i];
  }
  for (int i = tid; i < N * 16; i += 128) {
    const int r = i / 16, k = i % 16;
    sb[((r / 8) * mn_step + (k / 8) * k_step + (r % 8) * 16 + (k % 8) * 2) / 2] = b[i];
  }
  yolo12::cuda::fence_proxy_async();
  __syncthreads();
  float acc[N / 2];
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
  yolo12::cuda::wgmma_fence_accumulators(acc);
  yolo12::cuda::wgmma_fence();
  yolo12::cuda::wgmma_m64k16<N>(acc,
                                yolo12::cuda::wgmma_desc_plain(yolo12::cuda::conv_detail::smem_addr(sa), lbo, sbo),
                                yolo12::cuda::wgmma_desc_plain(yolo12::cuda::conv_detail::smem_addr(sb), lbo, sbo));
  yolo12::cuda::wgmma_commit();
  yolo12::cuda::wgmma_wait<0>();
  yolo12::cuda::wgmma_fence_accumulators(acc);
  const int warp = tid / 32, lane = tid % 32;
  for (int i = 0; i < N / 2; ++i) {
    const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    d[row * N + col] = acc[i];
  }
#else
  (void)a, (void)b, (void)d, (void)k_step, (void)mn_step, (void)lbo, (void)sbo;
#endif
}

// Whether the probe computes A B^T exactly with these steps and descriptor fields (small integers: exact sums).
template <int N>
bool plain_probe_matches(int k_step, int mn_step, int lbo, int sbo) {
  std::vector<__half> a(64 * 16), b(N * 16);
  std::vector<float> af(a.size()), bf(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) af[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 9) - 4);
  for (std::size_t i = 0; i < b.size(); ++i) bf[i] = static_cast<float>(static_cast<int>((i * 5 + 1) % 7) - 3);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = __float2half(af[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = __float2half(bf[i]);
  __half *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  if (cudaMalloc(&da, a.size() * 2) != cudaSuccess || cudaMalloc(&db, b.size() * 2) != cudaSuccess ||
      cudaMalloc(&dd, 64 * N * 4) != cudaSuccess)
    return false;
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(dd, 0xff, 64 * N * 4);  // NaN
  wgmma_plain_probe<N><<<1, 128>>>(da, db, dd, k_step, mn_step, lbo, sbo);
  const bool ran = cudaDeviceSynchronize() == cudaSuccess;
  std::vector<float> d(64 * N);
  cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  if (!ran) return false;
  for (int r = 0; r < 64; ++r)
    for (int n = 0; n < N; ++n) {
      float want = 0.f;
      for (int k = 0; k < 16; ++k) want += af[r * 16 + k] * bf[n * 16 + k];
      if (!(d[r * N + n] == want)) return false;
    }
  return true;
}
}  // namespace

// What conv2d_halo_wgmma takes lbo and sbo to mean (wgmma_desc_plain, wgmma.cuh): for a K-major operand without
// swizzle, lbo the step between the two core matrices along K and sbo the step between core matrices along M or
// N. Checked directly on one wgmma, with steps that differ (and the other way round, so that a failure says
// which reading the hardware has), at N 64 and at the new N 48.
TEST_CASE("wgmma without swizzle: lbo steps along K, sbo along M and N (conv2d_halo_wgmma's operands)",
          "[conv][gpu][halo_wgmma][wgmma_plain]") {
  if (!yolo12::cuda::conv_detail::wgmma_available()) {
    WARN("SKIPPED: the device does not run sm_90a code");
    return;
  }
  // K-adjacent core matrices 1024 bytes apart, M/N-adjacent ones 128 apart; then 128 and 256.
  for (const auto& steps : {std::pair<int, int>{1024, 128}, std::pair<int, int>{128, 256}}) {
    const int k_step = steps.first, mn_step = steps.second;
    INFO("k_step " << k_step << ", mn_step " << mn_step << "; with lbo and sbo the other way round the result "
                   << (plain_probe_matches<64>(k_step, mn_step, mn_step, k_step) ? "matches" : "does not match"));
    CHECK(plain_probe_matches<64>(k_step, mn_step, k_step, mn_step));
    CHECK(plain_probe_matches<48>(k_step, mn_step, k_step, mn_step));
  }
}

// conv2d_halo_wgmma (conv_halo_wgmma.cu): every plan it has for a shape (each instantiated tile whose column
// tiles suit c_out, 3 and 4 stages where they fit) against the double reference, at stride 1 and 2, on shapes
// that cross the 16 x 8 and 16 x 16 tile edges, partial column tiles, one to twelve K stages, pad 0, every
// fusion and channel slices. (tests/unit/test_halo_wgmma_layout.cpp checks the same layout on the CPU.)
TEST_CASE("conv2d_halo_wgmma matches the reference: every tile and stage count, both strides, tile edges, slices",
          "[conv][gpu][halo_wgmma]") {
  namespace cd = yolo12::cuda::conv_detail;
  if (!cd::wgmma_available()) {
    WARN("SKIPPED: the device does not run sm_90a code: conv2d_halo_wgmma is not used here");
    return;
  }
  std::vector<Case> cases;
  cases.push_back(with_options(make_case(1, 7, 9, 16, 48, 3, 1, 1), false, false, true));      // one tile, 1 K stage
  cases.push_back(with_options(make_case(1, 1, 1, 32, 64, 3, 1, 1), false, true, true));       // one pixel
  cases.push_back(with_options(make_case(3, 17, 33, 32, 96, 3, 1, 1), true, true, true));      // odd sizes, batch 3
  cases.push_back(with_options(make_case(2, 20, 20, 96, 96, 3, 1, 1), false, true, false));    // 6 K stages
  cases.push_back(with_options(make_case(1, 24, 41, 192, 192, 3, 1, 1), true, false, true));   // 12 K stages
  cases.push_back(with_options(make_case(1, 9, 18, 48, 48, 3, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 16, 16, 64, 128, 3, 1, 1), false, false, true));
  cases.push_back(with_options(make_case(1, 10, 12, 16, 60, 3, 1, 1), false, true, true));     // c_out 60: pairs
  cases.push_back(with_options(make_case(1, 13, 11, 32, 200, 3, 1, 1), false, true, true));    // partial column tiles
  {
    Case c = with_options(make_case(1, 15, 23, 32, 64, 3, 1, 1), false, true, true);
    c.s.pad = 0;  // 13 x 21 outputs: the halo starts at the image's corner
    finish_shape(c.s);
    cases.push_back(c);
  }
  // Channel slices: x, y and the residual inside wider buffers at 16-byte aligned offsets.
  cases.push_back(with_options(make_case(2, 14, 22, 32, 48, 3, 1, 1), true, true, true, 8, 16, 8, 8, 16, 8));
  // Stride 2: odd and even input sizes, outputs across the tile edges, 192 channels, pad 0, a slice.
  cases.push_back(with_options(make_case(1, 7, 9, 16, 48, 3, 2, 1), false, false, true));
  cases.push_back(with_options(make_case(2, 34, 37, 32, 64, 3, 2, 1), true, true, true));
  cases.push_back(with_options(make_case(1, 40, 33, 96, 96, 3, 2, 1), false, false, true));
  cases.push_back(with_options(make_case(1, 24, 30, 64, 192, 3, 2, 1), false, true, true));
  {
    Case c = with_options(make_case(1, 21, 50, 32, 128, 3, 2, 1), false, true, true);
    c.s.pad = 0;
    finish_shape(c.s);
    cases.push_back(c);
  }
  cases.push_back(with_options(make_case(1, 18, 35, 16, 56, 3, 2, 1), true, true, true, 8, 16, 8, 8, 16, 8));
  std::uint64_t seed = 16000;
  std::set<std::string> seen;
  for (const Case& c : cases) {
    const std::vector<yolo12::cuda::ConvPlan> plans = cd::halo_wgmma_candidates(c.s);
    INFO("halo_wgmma " << describe(c));
    REQUIRE(!plans.empty());
    for (const yolo12::cuda::ConvPlan& plan : plans) {
      REQUIRE(plan.algorithm == ConvAlgorithm::halo_wgmma);
      plan_run = plan;
      INFO("plan " << yolo12::cuda::conv_plan_detail(plan));
      seen.insert(yolo12::cuda::conv_plan_detail(plan));
      check_case<__half>(c, seed++, Kernel::Plan);
    }
  }
  // Every instantiated tile and both stage counts ran somewhere.
  for (const char* name :
       {"halo_wgmma 128x48 s3", "halo_wgmma 256x48 s4", "halo_wgmma 128x64 s3", "halo_wgmma 256x64 s4",
        "halo_wgmma 128x96 s4", "halo_wgmma 256x96 s3", "halo_wgmma 128x128 s3", "halo_wgmma 256x128 s4",
        "halo_wgmma 128x192 s3"}) {
    INFO(name);
    CHECK(seen.count(name) == 1);
  }
  // What it does not take: stride 3, groups, dilation, 1x1 and 5x5, c_in not a multiple of 16.
  for (const Case& c : {make_case(1, 16, 16, 32, 64, 3, 3, 1), make_case(1, 16, 16, 64, 64, 3, 1, 2),
                        make_case(1, 16, 16, 32, 64, 3, 1, 1, 2), make_case(1, 16, 16, 64, 64, 1, 1, 1),
                        make_case(1, 16, 16, 32, 64, 5, 1, 1), make_case(1, 16, 16, 24, 64, 3, 1, 1)}) {
    INFO(describe(c));
    CHECK_FALSE(cd::halo_wgmma_takes(c.s));
    CHECK(cd::halo_wgmma_candidates(c.s).empty());
  }
  // The rule, fitted to tuning (fifteenth session): at stride 1 yolo12x's 3x3 48->48 at 160x160 and 96->96 at
  // 80x80, the whole width on two patches at batch 32 and 48-wide tiles of one patch at batch 1; not from 128
  // input channels up (192->192 at 40x40 lost by 30 %), not for 64 output channels, not on maps under 80x80, not
  // under 48 channels. At stride 2 the first rule (its variant is off).
  const yolo12::cuda::DeviceInfo& dev = yolo12::cuda::device_info();
  const auto rule = [&](int batch, int hw, int c_in, int c_out, int stride) {
    return cd::halo_wgmma_rule(yolo_shape(batch, hw, c_in, c_out, 3, stride), dev);
  };
  for (const auto& [batch, hw, c, name] :
       {std::tuple{32, 80, 96, "halo_wgmma 256x96 s3"}, std::tuple{32, 160, 48, "halo_wgmma 256x48 s3"},
        std::tuple{1, 80, 96, "halo_wgmma 128x48 s3"}, std::tuple{1, 160, 48, "halo_wgmma 128x48 s3"}}) {
    INFO(batch << " x " << c << " channels at " << hw << "x" << hw);
    CHECK(yolo12::cuda::conv_plan_detail(rule(batch, hw, c, c, 1)) == name);
  }
  CHECK(rule(32, 160, 192, 384, 2).algorithm == ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 40, 192, 192, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 40, 128, 128, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 80, 384, 96, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 80, 64, 64, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 40, 96, 96, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(1, 40, 192, 192, 1).algorithm != ConvAlgorithm::halo_wgmma);
  CHECK(rule(32, 80, 32, 32, 1).algorithm != ConvAlgorithm::halo_wgmma);
  // conv_select takes it, and kernel tuning times its plans, only under its variant: f16_halo_wgmma is on by
  // default (fifteenth session), f16_halo_wgmma_s2 off.
  const cd::ConvVariants saved = cd::conv_variants();
  CHECK(cd::ConvVariants().f16_halo_wgmma);
  for (const int stride : {1, 2})
    for (const bool on : {false, true}) {
      const ConvShape s = yolo_shape(32, stride == 1 ? 80 : 160, 96, 96, 3, stride);
      cd::conv_variants() = cd::ConvVariants();
      (stride == 1 ? cd::conv_variants().f16_halo_wgmma : cd::conv_variants().f16_halo_wgmma_s2) = on;
      INFO("stride " << stride << ", its variant " << on);
      CHECK((plan_of(s, true).algorithm == ConvAlgorithm::halo_wgmma) == on);
      const int plans = dense_candidates_of(s, ConvAlgorithm::halo_wgmma);
      CHECK(plans == (on ? static_cast<int>(cd::halo_wgmma_candidates(s).size()) : 0));
      CHECK(plans <= 18);
    }
  CHECK_FALSE(cd::ConvVariants().f16_halo_wgmma_s2);
  CHECK(cd::parse_conv_variants("f16_halo_wgmma").f16_halo_wgmma);
  CHECK(cd::parse_conv_variants("f16_halo_wgmma_s2").f16_halo_wgmma_s2);
  CHECK_FALSE(cd::parse_conv_variants("f16_halo_wgmma_s2").f16_halo_wgmma);
  cd::conv_variants() = saved;
}

// conv2d_gemm_tma (conv_gemm_tma.cu): every tile it has, on 1x1 convs against the double reference: M not a
// multiple of the tile (TMA zero-fills the rows past M), one K tile and K past the stages (16 tiles), K = 96 (the
// second K tile half outside both operands), N tiles that pad, n_g 70 (no 16-byte stores), every fusion, channel
// slices of x, y and the residual, and the persistent grid uncapped and capped at 1, 3 and 7 blocks (a block walks
// many tiles: the stage ring wraps across output tiles; ping-pong: the two warpgroups alternate over an odd and an
// even number of tiles).
TEST_CASE("conv2d_gemm_tma matches the reference: every tile, M, N and K edges, slices, grid caps", "[conv][gpu][gemm_tma]") {
  namespace cd = yolo12::cuda::conv_detail;
  if (!cd::wgmma_available()) {
    WARN("SKIPPED: the device does not run sm_90a code: conv2d_gemm_tma is not used here");
    return;
  }
  std::vector<Case> cases;
  cases.push_back(with_options(make_case(1, 15, 20, 64, 64, 1, 1, 1), false, false, true));    // 300 rows, 1 K tile
  cases.push_back(with_options(make_case(2, 10, 13, 96, 256, 1, 1, 1), true, true, true));     // K = 96
  cases.push_back(with_options(make_case(1, 8, 9, 1024, 128, 1, 1, 1), false, true, true));    // 16 K tiles
  cases.push_back(with_options(make_case(1, 16, 16, 64, 72, 1, 1, 1), false, true, true));     // padded N tile
  cases.push_back(with_options(make_case(1, 15, 20, 64, 72, 1, 1, 1), false, true, true));     // residual, M and N edges
  cases.push_back(with_options(make_case(1, 16, 17, 40, 70, 1, 1, 1), true, false, true));     // n_g 70, c_in 40
  cases.push_back(with_options(make_case(2, 40, 64, 128, 384, 1, 1, 1), true, true, true));    // 40 x 3 tiles of 128
  // Channel slices: x, y and the residual inside wider buffers at 16-byte aligned offsets.
  cases.push_back(with_options(make_case(1, 20, 20, 256, 192, 1, 1, 1), true, true, false, 8, 16, 8, 8, 16, 8));
  std::uint64_t seed = 17000;
  std::set<std::string> seen;
  for (const Case& c : cases) {
    const std::vector<yolo12::cuda::ConvPlan> plans = cd::gemm_tma_candidates(c.s);
    INFO("gemm_tma " << describe(c));
    REQUIRE(!plans.empty());
    for (const yolo12::cuda::ConvPlan& plan : plans)
      for (const int max_grid : {0, 1, 3, 7}) {
        REQUIRE(plan.algorithm == ConvAlgorithm::gemm_tma);
        plan_run = plan;
        plan_max_grid = max_grid;
        INFO("plan " << yolo12::cuda::conv_plan_detail(plan) << " grid cap " << max_grid);
        seen.insert(yolo12::cuda::conv_plan_detail(plan));
        check_case<__half>(c, seed++, Kernel::Plan);
        CHECK(plan_tma_itself);  // the kernel itself ran, not the fallback
      }
  }
  plan_max_grid = 0;
  for (const char* name : {"gemm_tma 128x64 s8", "gemm_tma 128x128 s6", "gemm_tma 128x192 s5", "gemm_tma 128x256 s4",
                           "gemm_tma 256x64 s5", "gemm_tma 256x96 s4", "gemm_tma 256x128 s4",
                           "gemm_tma 128x64 s8 pingpong", "gemm_tma 128x96 s6 pingpong",
                           "gemm_tma 128x128 s6 pingpong"}) {
    INFO(name);
    CHECK(seen.count(name) == 1);
  }
  // An x view TMA cannot read (8 bytes off 16-byte alignment): the launcher runs the mma.sync kernel instead.
  {
    const Case c = with_options(make_case(1, 16, 16, 64, 64, 1, 1, 1), false, false, true, 4, 4);
    plan_run = cd::gemm_tma_candidates(c.s).front();
    check_case<__half>(c, seed++, Kernel::Plan);
    CHECK_FALSE(plan_tma_itself);
  }
  // What it does not take: 3x3, stride 2, padding, groups, c_in not a multiple of 8.
  for (const Case& c : {make_case(1, 16, 16, 64, 64, 3, 1, 1), make_case(1, 16, 16, 64, 64, 1, 2, 1),
                        make_case(1, 16, 16, 64, 128, 1, 1, 2), make_case(1, 16, 16, 12, 64, 1, 1, 1)}) {
    INFO(describe(c));
    CHECK_FALSE(cd::gemm_tma_takes(c.s));
    CHECK(cd::gemm_tma_candidates(c.s).empty());
  }
  {
    ConvShape s = make_case(1, 16, 16, 64, 64, 1, 1, 1).s;
    s.pad = 1;
    finish_shape(s);
    CHECK_FALSE(cd::gemm_tma_takes(s));
  }
  // The first rule: 1x1 convs of 64+ channels over 4+ tiles of 128 x 128 per SM, on 256-row tiles.
  const yolo12::cuda::DeviceInfo& dev = yolo12::cuda::device_info();
  const auto rule = [&](int batch, int hw, int c_in, int c_out) {
    return yolo12::cuda::conv_plan_detail(cd::gemm_tma_rule(yolo_shape(batch, hw, c_in, c_out, 1, 1), dev));
  };
  CHECK(rule(32, 160, 384, 384) == "gemm_tma 256x128 s4");
  CHECK(rule(32, 80, 192, 96) == "gemm_tma 256x96 s4");
  CHECK(rule(32, 80, 128, 64) == "gemm_tma 256x64 s5");
  CHECK(rule(1, 80, 384, 384).rfind("gemm_tma", 0) != 0);
  CHECK(rule(32, 80, 64, 32).rfind("gemm_tma", 0) != 0);
  // conv_select takes it, and tuning times its plans, only under its variant (off by default).
  const cd::ConvVariants saved = cd::conv_variants();
  CHECK_FALSE(cd::ConvVariants().f16_gemm_tma);
  for (const bool on : {false, true}) {
    const ConvShape s = yolo_shape(32, 160, 384, 384, 1, 1);
    cd::conv_variants() = cd::ConvVariants();
    cd::conv_variants().f16_gemm_tma = on;
    INFO("its variant " << on);
    CHECK((plan_of(s, true).algorithm == ConvAlgorithm::gemm_tma) == on);
    CHECK(dense_candidates_of(s, ConvAlgorithm::gemm_tma) == (on ? static_cast<int>(cd::gemm_tma_candidates(s).size()) : 0));
  }
  CHECK(cd::parse_conv_variants("+f16_gemm_tma").f16_gemm_tma);
  cd::conv_variants() = saved;
}

// conv2d_stem_mma (conv_stem_mma.cu) on stem shapes against the double reference: sizes under and across the 8 x 32
// tiles, odd sizes, pad 0, every N block count it is instantiated for (c_out 8 to 128, and not multiples of 8: the
// direct stores; multiples of 8: the staged 16-byte stores), x rows wider than 3 channels (the patch gathered by
// element), every fusion, the persistent grid uncapped and capped at 1 and 3 blocks (each block walks many tiles,
// the next tile's patch in flight).
// (tests/unit/test_stem_mma_layout.cpp checks the same layout on the CPU.)
TEST_CASE("conv2d_stem_mma matches the reference: tile edges, channel counts, views, grid caps",
          "[conv][gpu][stem_mma]") {
  namespace cd = yolo12::cuda::conv_detail;
  std::vector<Case> cases;
  cases.push_back(with_options(make_case(1, 20, 30, 3, 16, 3, 2, 1), false, false, true));   // under one tile
  cases.push_back(with_options(make_case(2, 40, 150, 3, 16, 3, 2, 1), false, false, true));  // across tiles, batch 2
  cases.push_back(with_options(make_case(1, 33, 129, 3, 96, 3, 2, 1), true, true, true));    // yolo12x's 96, fusions
  cases.push_back(with_options(make_case(1, 17, 40, 3, 128, 3, 2, 1), false, true, false));  // 128: 16 n8 blocks
  cases.push_back(with_options(make_case(1, 23, 45, 3, 32, 3, 2, 1), false, false, true));
  cases.push_back(with_options(make_case(2, 70, 90, 3, 48, 3, 2, 1), false, false, true));   // 48 channels: 6 n8 blocks
  cases.push_back(with_options(make_case(1, 18, 21, 3, 60, 3, 2, 1), false, true, true));    // 60: 8 n8 blocks, partial
  cases.push_back(with_options(make_case(1, 1, 1, 3, 8, 3, 2, 1), false, false, true));      // one pixel
  cases.push_back(with_options(make_case(1, 16, 16, 3, 20, 3, 2, 1), false, false, true, 0, 5));  // x rows of 8 halves
  {
    Case c = with_options(make_case(1, 24, 70, 3, 64, 3, 2, 1), false, false, true);
    c.s.pad = 0;
    finish_shape(c.s);
    cases.push_back(c);
  }
  std::uint64_t seed = 17000;
  plan_run = yolo12::cuda::ConvPlan();
  plan_run.algorithm = ConvAlgorithm::stem_mma;
  for (const Case& c : cases) {
    INFO("stem_mma " << describe(c));
    REQUIRE(cd::stem_mma_supports(c.s));
    for (const int max_grid : {0, 1, 3}) {
      plan_max_grid = max_grid;
      INFO("grid cap " << max_grid);
      check_case<__half>(c, seed++, Kernel::Plan);
    }
  }
  plan_max_grid = 0;
  // What it does not take: 4 channels, stride 1, 5x5, groups, dilation, over 128 channels.
  for (const Case& c : {make_case(1, 16, 16, 4, 16, 3, 2, 1), make_case(1, 16, 16, 3, 16, 3, 1, 1),
                        make_case(1, 16, 16, 3, 16, 5, 2, 1), make_case(1, 16, 16, 3, 144, 3, 2, 1),
                        make_case(1, 16, 16, 3, 16, 3, 2, 1, 2)}) {
    INFO(describe(c));
    CHECK_FALSE(cd::stem_mma_supports(c.s));
  }
  // conv_select takes it under variant f16_stem_mma (on by default) for stems of <= 64 channels, and up to 128 under
  // f16_stem_mma_wide (on by default since the thirty-first session: yolo12x's 96), conv2d_stem_f16 otherwise;
  // tuning times it on every stem it supports, only under f16_stem_mma.
  const cd::ConvVariants saved = cd::conv_variants();
  CHECK(cd::ConvVariants().f16_stem_mma);
  CHECK(cd::ConvVariants().f16_stem_mma_wide);
  for (const int c_out : {16, 64, 96, 128})
    for (const bool wide : {false, true}) {
      const ConvShape stem = yolo_shape(32, 640, 3, c_out, 3, 2);
      const bool preferred = c_out <= 64 || wide;
      cd::conv_variants() = cd::ConvVariants();
      cd::conv_variants().f16_stem_mma_wide = wide;
      CHECK(cd::stem_mma_preferred(stem) == preferred);
      for (const bool on : {false, true}) {
        cd::conv_variants().f16_stem_mma = on;
        INFO("c_out " << c_out << ", f16_stem_mma " << on << ", f16_stem_mma_wide " << wide);
        CHECK((plan_of(stem, true).algorithm == ConvAlgorithm::stem_mma) == (on && preferred));
        if (!(on && preferred)) CHECK(plan_of(stem, true).algorithm == ConvAlgorithm::stem_f16);
        CHECK(dense_candidates_of(stem, ConvAlgorithm::stem_mma) == (on ? 1 : 0));
      }
    }
  cd::conv_variants() = cd::ConvVariants();
  CHECK_FALSE(cd::stem_mma_preferred(make_case(1, 16, 16, 3, 16, 3, 1, 1).s));  // stride 1: not a stem it takes
  CHECK(cd::parse_conv_variants("+f16_stem_mma").f16_stem_mma);
  CHECK(cd::parse_conv_variants("+f16_stem_mma_wide").f16_stem_mma_wide);
  cd::conv_variants() = saved;
}

TEST_CASE("conv2d_implicit_gemm_wgmma matches the reference: every tile and stage count, 1x1 and k x k, edges, fallbacks",
          "[conv][gpu][wgmma]") {
  namespace cd = yolo12::cuda::conv_detail;
  if (!cd::wgmma_available()) {
    WARN("SKIPPED: the device does not run sm_90a code: conv2d_implicit_gemm_wgmma is not used here");
    return;
  }
  std::vector<Case> cases;
  // 1x1: one K tile (fewer tiles than the pipeline's prologue), M not a multiple of 128.
  cases.push_back(with_options(make_case(1, 15, 20, 64, 64, 1, 1, 1), false, false, true));
  // 1x1, K = 96: the second K tile half past k_pad (zero-filled); 256 channels; residual and gamma.
  cases.push_back(with_options(make_case(2, 10, 13, 96, 256, 1, 1, 1), true, true, true));
  // 1x1 over channel slices (x, y and residual inside wider buffers, 16-byte aligned offsets).
  cases.push_back(with_options(make_case(1, 20, 20, 256, 192, 1, 1, 1), true, true, false, 8, 16, 8, 8, 16, 8));
  // 3x3 stride 1 and 2 (odd sizes), 5x5, dilation 2, a long K (27 tiles at 3x3 x 192).
  cases.push_back(with_options(make_case(2, 20, 20, 64, 128, 3, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 17, 19, 32, 96, 3, 2, 1), true, false, true));
  cases.push_back(with_options(make_case(1, 9, 11, 16, 64, 5, 1, 1), false, false, false));
  cases.push_back(with_options(make_case(1, 12, 12, 32, 64, 3, 1, 1, 2), false, true, true));
  cases.push_back(with_options(make_case(1, 8, 8, 192, 64, 3, 1, 1), false, false, true));
  // Groups: two of 32 -> 64 channels (blockIdx.z), and channels that no N tile divides (n_g = 72, and 70:
  // no 16-byte stores).
  cases.push_back(with_options(make_case(1, 16, 16, 64, 128, 3, 1, 2), false, false, true));
  cases.push_back(with_options(make_case(1, 16, 16, 64, 72, 1, 1, 1), false, true, true));
  cases.push_back(with_options(make_case(1, 16, 16, 64, 70, 3, 1, 1), true, false, true));
  // What the kernel does not take: c_in not a multiple of 8, an x view 8 bytes off 16-byte alignment
  // (the launcher runs conv2d_implicit_gemm_f16 instead).
  cases.push_back(with_options(make_case(1, 16, 16, 12, 64, 3, 1, 1), false, false, true));
  cases.push_back(with_options(make_case(1, 16, 16, 64, 64, 1, 1, 1), false, false, true, 4, 4));
  // {bn, stages, warps, ping-pong}: the two-warpgroup kernel (8 warps) and the warp-specialised one (12) in
  // both schedules, the latter also with its persistent grid capped at 1 and 3 blocks (one block walks every
  // tile: the pipeline runs across output tiles and wraps its stages many times; ping-pong: the two computing
  // warpgroups alternate over them, with an odd and an even number of tiles per block).
  const int tiles[][4] = {{64, 4, 8, 0},   {96, 3, 8, 0},   {128, 3, 8, 0},  {128, 4, 8, 0},
                          {192, 4, 8, 0},  {256, 4, 8, 0},  {64, 8, 12, 0},  {128, 6, 12, 0},
                          {192, 4, 12, 0}, {256, 4, 12, 0}, {64, 8, 12, 1},  {128, 6, 12, 1}};
  std::uint64_t seed = 12000;
  for (const Case& c : cases)
    for (const auto& t : tiles)
      for (const int max_grid : {0, 1, 3}) {
        if (t[2] == 8 && max_grid > 0) continue;
        plan_run = make_plan(yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma, 128, t[0], 64, t[2], 1, t[1], t[3] == 1);
        plan_max_grid = max_grid;
        INFO("wgmma tile 128x" << t[0] << " stages " << t[1] << " warps " << t[2] << (t[3] ? " ping-pong" : "")
                               << " grid cap " << max_grid);
        check_case<__half>(c, seed++, Kernel::Plan);
      }
  plan_max_grid = 0;
  // The warp-specialised kernel on a larger conv (40 row tiles x 3 column tiles of 128 over 132 blocks at most:
  // 120 tiles, and with the cap of 7 blocks several tiles each in a stride that crosses row tiles).
  {
    const Case big = with_options(make_case(2, 40, 64, 128, 384, 1, 1, 1), true, true, true);
    const Case big3 = with_options(make_case(1, 24, 30, 64, 256, 3, 1, 1), false, true, true);
    for (const bool ping : {false, true})
      for (const int max_grid : {0, 7, 8})
        for (const Case* c : {&big, &big3}) {
          plan_run = make_plan(yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma, 128, 128, 64,
                               yolo12::cuda::conv_detail::kWgmmaWsWarps, 1, 6, ping);
          plan_max_grid = max_grid;
          INFO("warp-specialised 128x128 s6" << (ping ? " ping-pong" : "") << " on a larger conv, grid cap " << max_grid);
          check_case<__half>(*c, seed++, Kernel::Plan);
        }
    plan_max_grid = 0;
  }
  // The rule (wgmma_plan), on yolo12n / yolo12x shapes at batch 1 and 32 where tuning chose these tiles.
  auto shape = [](int b, int hw, int ci, int co, int k, int stride) {
    Case c = make_case(b, hw, hw, ci, co, k, stride, 1);
    return c.s;
  };
  const yolo12::cuda::DeviceInfo& dev = yolo12::cuda::device_info();
  struct Rule {
    ConvShape s;
    int bn, stages;   // 0: stays on mma.sync
    int warps = 8;    // 12: the warp-specialised kernel (f16_wgmma_ws)
    int old_bn = -1;  // the eighth session's rule (f16_wgmma_ws and f16_wgmma_short off) where it differs
  };
  const Rule rules[] = {
      {shape(32, 40, 1152, 768, 1, 1), 256, 4, 12},  // large grid: the widest tile that divides the channels;
      {shape(32, 80, 384, 384, 3, 2), 192, 4, 12},   // 192+ columns, 14+ K tiles, 4+ blocks per SM: warp-specialised
      {shape(32, 80, 96, 96, 3, 1), 96, 3},
      {shape(32, 80, 768, 768, 1, 1), 128, 3},   // 1x1 under 16 K tiles: at most 128 wide
      {shape(32, 40, 128, 80, 1, 1), 96, 3},     // 80 channels: one 96-wide tile (also with 2 K tiles)
      {shape(32, 160, 48, 48, 3, 1), 64, 4},     // 48 channels: one 64-wide tile
      {shape(32, 20, 384, 256, 1, 1), 128, 3},   // 200 blocks: 1.5 per SM
      {shape(32, 20, 256, 128, 1, 1), 64, 4},
      {shape(32, 20, 256, 64, 3, 1), 64, 4},     // small grid, long K (36 tiles)
      {shape(1, 80, 768, 768, 3, 2), 128, 4},    // small grid, long K: the widest tile for half the SMs
      {shape(1, 160, 384, 384, 3, 2), 192, 4},   // (too few blocks for the warp-specialised kernel)
      {shape(1, 80, 1536, 192, 1, 1), 64, 4},    // small grid, medium K: 128x64
      {shape(1, 80, 384, 384, 3, 2), 64, 4},
      {shape(32, 160, 384, 384, 1, 1), 0, 0},    // wide 1x1, short K, many pixels: mma.sync
      {shape(32, 160, 32, 32, 3, 1), 0, 0},      // 32 channels
      {shape(32, 80, 64, 64, 1, 1), 0, 0},       // one K tile
      {shape(1, 40, 768, 768, 3, 2), 64, 4},     // 48 blocks of 128x64, a third of the SMs, 8+ K tiles (twenty-eighth
      {shape(1, 80, 64, 64, 3, 1), 64, 4},       // session; split-K on mma.sync before)
      {shape(32, 160, 96, 48, 1, 1), 0, 0, 8, 64},   // 1x1 with 2 K tiles, not 96 wide: mma.sync (f16_wgmma_short)
      {shape(32, 80, 96, 128, 1, 1), 0, 0, 8, 128},
  };
  cd::ConvVariants ninth;  // the ninth session's rule: the table above
  ninth.f16_wgmma_ping = false;
  ninth.f16_wgmma_waves = false;
  cd::ConvVariants eighth = ninth;  // the eighth session's rule
  eighth.f16_wgmma_ws = false;
  eighth.f16_wgmma_short = false;
  for (const Rule& r : rules) {
    INFO(r.s.batch << " " << r.s.h << "x" << r.s.w_in << " " << r.s.c_in << "->" << r.s.c_out << " k" << r.s.k << " s"
                   << r.s.stride);
    yolo12::cuda::ConvPlan plan;
    const bool takes = cd::wgmma_plan(r.s, dev, plan, ninth);
    CHECK(takes == (r.bn > 0));
    if (takes && r.bn > 0) {
      CHECK(plan.algorithm == yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma);
      CHECK(plan.bn == r.bn);
      CHECK(plan.stages == r.stages);
      CHECK(plan.warps == r.warps);
    }
    yolo12::cuda::ConvPlan old;
    const int old_bn = r.old_bn >= 0 ? r.old_bn : r.bn;
    CHECK(cd::wgmma_plan(r.s, dev, old, eighth) == (old_bn > 0));
    if (old_bn > 0) {
      CHECK(old.bn == old_bn);
      CHECK(old.warps == 8);
    }
  }
  // With f16_wgmma_ping (the default): 1x1 convs with 18+ K tiles and channels 128 divides, over at least 4
  // tiles of 128 x 128 per SM, on the ping-pong schedule; everything else as above.
  struct Ping {
    ConvShape s;
    int bn;  // 0: the rule above
  };
  const Ping pings[] = {
      {shape(32, 40, 1152, 768, 1, 1), 128},  // (was 128x256 warp-specialised)
      {shape(32, 40, 1536, 384, 1, 1), 128},  {shape(32, 20, 1536, 768, 1, 1), 128},  // 600 tiles
      {shape(32, 160, 384, 384, 1, 1), 0},    // 6 K tiles
      {shape(32, 80, 768, 768, 1, 1), 0},     // 12
      {shape(32, 80, 1536, 192, 1, 1), 0},    // 192 channels
      {shape(32, 40, 1152, 768, 3, 1), 0},    // not 1x1
      {shape(32, 20, 1536, 384, 1, 1), 0},    // 300 tiles: under 4 per SM
      {shape(1, 80, 1536, 192, 1, 1), 0},
  };
  cd::ConvVariants eleventh;  // the eleventh session's rule: the ninth's with the ping-pong schedule
  eleventh.f16_wgmma_waves = false;
  for (const Ping& r : pings) {
    INFO("ping-pong rule: " << r.s.batch << " " << r.s.h << "x" << r.s.w_in << " " << r.s.c_in << "->" << r.s.c_out
                            << " k" << r.s.k);
    yolo12::cuda::ConvPlan plan, without;
    const bool takes = cd::wgmma_plan(r.s, dev, plan, eleventh);
    const bool takes_without = cd::wgmma_plan(r.s, dev, without, ninth);
    if (r.bn > 0) {
      REQUIRE(takes);
      CHECK(plan.pingpong);
      CHECK(plan.bn == r.bn);
      CHECK(plan.warps == cd::kWgmmaWsWarps);
    } else {
      CHECK(takes == takes_without);
      CHECK((takes && plan == without) == takes_without);
    }
  }
  // The twelfth session's rule (f16_wgmma_waves, the default) on grids of 4+ tiles of 128 x 64 per SM: the width
  // with the fewest waves times the tile's work over its speed (wgmma_plan_waves); below that, the rule above.
  // The table is written with f16_wgmma_fewrows (a default since the nineteenth session) off; its rows of 1x1 convs
  // with 2-4 K tiles over few rows are checked with it on after the loop.
  cd::ConvVariants twelfth;
  twelfth.f16_wgmma_fewrows = false;
  struct Waves {
    ConvShape s;
    int bn, stages;  // 0: mma.sync
    int warps = 8;   // 12: the warp-specialised kernel
  };
  const Waves waves[] = {
      {shape(32, 40, 1152, 768, 1, 1), 128, 3},  // 18 K tiles: two blocks of 128 x 128 (was ping-pong)
      {shape(32, 40, 1920, 768, 1, 1), 128, 3},
      {shape(32, 40, 192, 192, 3, 1), 64, 4},     // 1200 blocks: 4.5 waves of 2 per SM (128 x 192: 3.03 of 1)
      {shape(32, 80, 384, 384, 3, 2), 128, 3},    // 54 K tiles, 1200 blocks of 128 (ws 192: 800 of 1 per SM)
      {shape(32, 160, 384, 384, 3, 2), 192, 4, 12},  // warp-specialised where it fills the waves
      {shape(32, 80, 768, 768, 3, 2), 192, 4, 12},
      {shape(32, 320, 96, 192, 3, 2), 192, 4, 12},
      {shape(32, 80, 1536, 192, 1, 1), 192, 4, 12},
      {shape(32, 40, 768, 768, 3, 2), 64, 4},      // 100 row tiles: 1200 blocks of 64 (5 waves) vs 600 of 128 (3)
      {shape(32, 40, 512, 512, 3, 2), 256, 4},     // 72 K tiles: 128 x 256 at full speed ties 128 x 128 on 1.5 waves
                                                   // (thirty-first session)
      {shape(32, 40, 384, 384, 1, 1), 128, 3},    // 6 K tiles, 400 row tiles: wgmma (under 4 row tiles per SM)
      {shape(32, 20, 384, 384, 1, 1), 96, 3},
      {shape(32, 20, 1920, 768, 1, 1), 64, 4},
      {shape(32, 20, 384, 464, 1, 1), 96, 3},     // 464 channels: 5 tiles of 96 (3 % padding)
      {shape(32, 80, 384, 80, 1, 1), 96, 3},      // 80 channels: one 96-wide tile
      {shape(32, 80, 96, 96, 3, 1), 96, 3},
      {shape(1, 80, 768, 768, 1, 1), 96, 3},      // batch 1, but 600 tiles of 128 x 64
      {shape(32, 160, 96, 96, 1, 1), 0, 0},       // 1x1, 2 or 3 K tiles, 4+ row tiles per SM: mma.sync
      {shape(32, 160, 192, 192, 1, 1), 0, 0},
      {shape(32, 80, 80, 80, 1, 1), 0, 0},
      {shape(32, 40, 128, 256, 1, 1), 0, 0},      // 2 and 4 K tiles at 40x40, too (yolo12s)
      {shape(32, 40, 256, 256, 1, 1), 0, 0},
      {shape(32, 80, 384, 384, 1, 1), 128, 3},    // 6 K tiles, 1600 row tiles: under 16 per SM (twenty-eighth session)
      {shape(32, 160, 384, 384, 1, 1), 0, 0},     // 6 K tiles, 256+ channels, 6400 row tiles: mma.sync
      {shape(32, 40, 384, 464, 1, 1), 0, 0},      // no width of 96+ divides 464, 400 row tiles
  };
  for (const Waves& r : waves) {
    INFO("waves rule: " << r.s.batch << " " << r.s.h << "x" << r.s.w_in << " " << r.s.c_in << "->" << r.s.c_out << " k"
                        << r.s.k << " s" << r.s.stride);
    yolo12::cuda::ConvPlan plan;
    const bool takes = cd::wgmma_plan(r.s, dev, plan, twelfth);
    CHECK(takes == (r.bn > 0));
    if (takes && r.bn > 0) {
      CHECK(plan.bn == r.bn);
      CHECK(plan.stages == r.stages);
      CHECK(plan.warps == r.warps);
      CHECK_FALSE(plan.pingpong);
    }
  }
  // f16_wgmma_fewrows moves yolo12s's 40x40 1x1 convs of 2 and 4 K tiles (400 row tiles) to wgmma; 80x80's 1600 row
  // tiles, more than 4 per SM, stay on mma.sync.
  for (const ConvShape& s : {shape(32, 40, 128, 256, 1, 1), shape(32, 40, 256, 256, 1, 1)}) {
    yolo12::cuda::ConvPlan plan;
    CHECK(cd::wgmma_plan(s, dev, plan, cd::ConvVariants{}));
  }
  {
    yolo12::cuda::ConvPlan plan;
    CHECK_FALSE(cd::wgmma_plan(shape(32, 80, 96, 96, 1, 1), dev, plan, cd::ConvVariants{}));
  }
  // Twenty-ninth session: with 4 K tiles, channels no width of 96+ divides (yolo12l's MLP 256->312 at 40x40) take the
  // 128 x 64 wgmma tile; with 6 (yolo12x's 384->464 there) they stay on mma.sync.
  {
    yolo12::cuda::ConvPlan plan;
    REQUIRE(cd::wgmma_plan(shape(32, 40, 256, 312, 1, 1), dev, plan, cd::ConvVariants{}));
    CHECK(plan.bn == 64);
    CHECK(plan.stages == 4);
    CHECK_FALSE(plan.pingpong);
    CHECK_FALSE(cd::wgmma_plan(shape(32, 40, 384, 464, 1, 1), dev, plan, cd::ConvVariants{}));
  }
  // Below 4 tiles of 128 x 64 per SM the rule is the eleventh session's (batch 1's long-K 3x3/2 at 160x160).
  {
    yolo12::cuda::ConvPlan a, b;
    const ConvShape small = shape(1, 160, 384, 384, 3, 2);
    REQUIRE(cd::wgmma_plan(small, dev, a, cd::ConvVariants{}));
    REQUIRE(cd::wgmma_plan(small, dev, b, eleventh));
    CHECK(a == b);
    CHECK(a.bn == 192);
  }
  // Tuning times the wgmma tiles where the kernel runs the views, and only there.
  ConvParams<__half> p;
  static_cast<ConvShape&>(p) = shape(2, 20, 128, 256, 3, 1);
  p.ldx = 128;
  p.ldy = 256;
  alignas(16) static __half dummy[8];
  p.x = dummy;
  p.y = dummy;
  p.w = dummy;
  int wg = 0;
  for (const auto& c : yolo12::cuda::conv_candidates(p)) wg += c.algorithm == yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma;
  CHECK(wg == 12);  // 6 tiles of the two-warpgroup kernel, 4 warp-specialised, 2 ping-pong
  p.x = dummy + 4;  // 8 bytes off: no 16-byte A chunks
  wg = 0;
  for (const auto& c : yolo12::cuda::conv_candidates(p)) wg += c.algorithm == yolo12::cuda::ConvAlgorithm::implicit_gemm_wgmma;
  CHECK(wg == 0);
}

namespace {
// Runs case c on plan_run with the variant switch `on` set (checked against the reference) and cleared, and requires
// the two output buffers (guards included) to be equal bit for bit; the switch then has its value from before.
void require_same_bits_on_off(const Case& c, std::uint64_t seed, bool& on) {
  const bool before = on;
  on = true;
  const Result with = check_case<__half>(c, seed, Kernel::Plan);
  on = false;
  const Result without = run_case<__half>(c, seed, Kernel::Plan, false);
  on = before;
  REQUIRE(without.unwritten == 0);
  REQUIRE(with.bits.size() == without.bits.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < with.bits.size(); ++i) differ += with.bits[i] != without.bits[i];
  REQUIRE(differ == 0);
}
}  // namespace

// The block order of the non-persistent GEMM kernels (variant raster_n, conv_gemm.cuh: gemm_grid): column tile
// fastest by default, row tile fastest with the variant off. Each block computes the same tile either way, so
// the two outputs must be equal bit for bit, and the default must match the reference: on convs of several
// column tiles (1, 3, 5, 9), several row tiles, groups (z), split-K clusters (consecutive x per output tile)
// and partial last tiles in both directions.
TEST_CASE("the GEMM kernels' block order (column tile fastest, or row tile fastest) gives the same output bit for bit",
          "[conv][gpu][raster]") {
  namespace cd = yolo12::cuda::conv_detail;
  using yolo12::cuda::ConvAlgorithm;
  using yolo12::cuda::ConvPlan;
  std::vector<Case> cases;
  cases.push_back(with_options(make_case(2, 20, 20, 64, 192, 1, 1, 1), true, true, true));    // 1x1, 3 column tiles of 64
  cases.push_back(with_options(make_case(1, 17, 23, 96, 320, 1, 1, 1), false, true, false));  // partial row and column tiles
  cases.push_back(with_options(make_case(2, 13, 11, 64, 128, 3, 1, 1), false, false, true));  // 3x3, odd sizes
  cases.push_back(with_options(make_case(1, 16, 16, 64, 256, 3, 2, 2), false, true, true));   // 2 groups of 128
  cases.push_back(with_options(make_case(1, 9, 9, 256, 576, 1, 1, 1), true, false, true));    // 9 column tiles, long K
  std::vector<ConvPlan> plans = {make_plan(ConvAlgorithm::implicit_gemm_f16, 128, 64, 64, 4, 1, 3),
                                 make_plan(ConvAlgorithm::implicit_gemm_f16, 64, 64, 32, 4, 1, 4),
                                 make_plan(ConvAlgorithm::implicit_gemm_f16, 128, 128, 64, 8, 1, 3),
                                 make_plan(ConvAlgorithm::implicit_gemm_f16, 64, 64, 64, 4, 2, 3),
                                 make_plan(ConvAlgorithm::implicit_gemm_f16, 64, 64, 64, 4, 4, 3)};
  if (cd::wgmma_available()) {
    plans.push_back(make_plan(ConvAlgorithm::implicit_gemm_wgmma, 128, 64, 64, 8, 1, 4));
    plans.push_back(make_plan(ConvAlgorithm::implicit_gemm_wgmma, 128, 128, 64, 8, 1, 3));
  } else {
    WARN("the device does not run sm_90a code: only the mma.sync kernel's block order is checked");
  }
  std::uint64_t seed = 31000;
  for (const Case& c : cases)
    for (const ConvPlan& pl : plans) {
      // Only the candidates conv2d_forward can run for the case (the tile, the split) are compared.
      ConvParams<__half> probe;
      static_cast<ConvShape&>(probe) = c.s;
      bool offered = false;
      for (const ConvPlan& cand : yolo12::cuda::conv_candidates(probe)) offered = offered || cand == pl;
      if (!offered && pl.algorithm == ConvAlgorithm::implicit_gemm_f16) continue;
      if (pl.algorithm == ConvAlgorithm::implicit_gemm_wgmma && !cd::wgmma_takes(c.s)) continue;
      plan_run = pl;
      INFO(yolo12::cuda::conv_plan_detail(pl));
      require_same_bits_on_off(c, seed++, cd::conv_variants().raster_n);
    }
  // The grid itself: every block one tile, the column tile fastest (with the split's ranks innermost).
  cd::ImplicitGemmParams<__half> a;
  a.m = 1000;
  a.n_g = 200;
  const dim3 g = cd::gemm_grid(a, 128, 64, 2, 3, true);
  CHECK(a.n_tiles == 4);
  CHECK((g.x == 8u * 4u * 2u && g.y == 1u && g.z == 3u));
  const dim3 old = cd::gemm_grid(a, 128, 64, 2, 3, false);
  CHECK(a.n_tiles == 0);
  CHECK((old.x == 16u && old.y == 4u && old.z == 3u));
}

// The fp16 GEMM kernels' epilogue tests the SiLU flag once per tile or chunk (conv_detail.cuh: epilogue_with,
// with_silu; the mma.sync kernel at BK 64, the wgmma kernels' staged epilogue, conv2d_halo_f16; seventeenth session,
// variant f16_epi_hoist, whose per-value off position the eighteenth session deleted). Every plan tuning offers for
// each case on those kernels (mma.sync, wgmma, the warp-specialised and ping-pong tiles, conv2d_halo_wgmma,
// conv2d_halo_f16) runs against the double reference, with SiLU on and off, with and without gamma and a residual
// (which the two-warpgroup wgmma kernel reads ahead: store_staged_tile), on full and partial 8-channel chunks (n_g
// 70, element by element) and partial row tiles.
TEST_CASE("the fp16 GEMM kernels' epilogue with the SiLU test hoisted matches the reference on every plan",
          "[conv][gpu][epi_hoist]") {
  namespace cd = yolo12::cuda::conv_detail;
  using yolo12::cuda::ConvAlgorithm;
  std::vector<Case> cases;
  cases.push_back(with_options(make_case(2, 20, 20, 64, 192, 1, 1, 1), true, true, true));     // 1x1, gamma, residual
  cases.push_back(with_options(make_case(1, 17, 23, 96, 320, 1, 1, 1), false, false, true));   // partial tiles
  cases.push_back(with_options(make_case(1, 16, 17, 40, 70, 1, 1, 1), true, true, false));     // n_g 70, no SiLU
  cases.push_back(with_options(make_case(2, 13, 11, 64, 128, 3, 1, 1), false, true, true));    // 3x3
  cases.push_back(with_options(make_case(1, 24, 24, 96, 96, 3, 1, 1), true, true, false));     // 3x3 96 (halo_wgmma)
  cases.push_back(with_options(make_case(1, 9, 9, 256, 576, 1, 1, 1), false, false, true));    // long K, 9 col tiles
  cases.push_back(with_options(make_case(1, 16, 16, 64, 256, 3, 2, 2), false, true, true));    // 2 groups, stride 2
  // Grids of a tile per SM or more, so that tuning offers conv2d_halo_f16.
  cases.push_back(with_options(make_case(5, 64, 64, 16, 16, 3, 1, 1), true, true, true));      // halo
  cases.push_back(with_options(make_case(4, 65, 70, 16, 24, 3, 1, 1), false, true, false));    // halo, partial tiles
  std::uint64_t seed = 41000;
  int compared = 0;
  std::map<int, int> by_algorithm;  // plans compared per ConvAlgorithm
  for (const Case& c : cases) {
    ConvParams<__half> probe;  // aligned dense views: every plan the shape allows
    static_cast<ConvShape&>(probe) = c.s;
    probe.ldx = c.s.c_in;
    probe.ldy = c.s.c_out;
    alignas(16) static __half dummy[8];
    probe.x = dummy;
    probe.y = dummy;
    probe.w = dummy;
    for (const yolo12::cuda::ConvPlan& pl : yolo12::cuda::conv_candidates(probe)) {
      if (pl.algorithm != ConvAlgorithm::implicit_gemm_f16 && pl.algorithm != ConvAlgorithm::implicit_gemm_wgmma &&
          pl.algorithm != ConvAlgorithm::halo_wgmma && pl.algorithm != ConvAlgorithm::halo_f16)
        continue;
      ++by_algorithm[static_cast<int>(pl.algorithm)];
      plan_run = pl;
      INFO(describe(c) << " plan " << yolo12::cuda::conv_plan_detail(pl));
      check_case<__half>(c, seed++, Kernel::Plan);
      ++compared;
    }
  }
  CHECK(compared > 40);
  for (const ConvAlgorithm al : {ConvAlgorithm::implicit_gemm_f16, ConvAlgorithm::halo_f16}) {
    INFO("algorithm " << static_cast<int>(al));
    CHECK(by_algorithm[static_cast<int>(al)] > 0);
  }
  if (cd::wgmma_available())
    for (const ConvAlgorithm al : {ConvAlgorithm::implicit_gemm_wgmma, ConvAlgorithm::halo_wgmma}) {
      INFO("algorithm " << static_cast<int>(al));
      CHECK(by_algorithm[static_cast<int>(al)] > 0);
    }
}

TEST_CASE("conv2d_forward with the variants off (BK 32, several depthwise outputs per thread) matches the reference",
          "[conv][gpu][variants]") {
  VariantsSet off(false);
  const auto cases = fixed_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    check_case<float>(cases[i], 500 + i, Kernel::Forward);
    check_case<__half>(cases[i], 600 + i, Kernel::Forward);
  }
  const auto rnd = random_cases(60, 777);
  for (std::size_t i = 0; i < rnd.size(); ++i) check_case<__half>(rnd[i], 3000 + i, Kernel::Forward);
}

TEST_CASE("conv2d_forward_naive (the oracle kernel) matches the reference", "[conv][gpu]") {
  const auto cases = fixed_cases();
  for (std::size_t i = 0; i < cases.size(); i += 3) {
    check_case<float>(cases[i], 300 + i, Kernel::Naive);
    check_case<__half>(cases[i], 400 + i, Kernel::Naive);
  }
}

TEST_CASE("conv2d_forward is capturable in a CUDA graph and replays to the same result", "[conv][gpu]") {
  Case c = make_case(2, 20, 20, 64, 64, 3, 1, 1);
  const ConvShape& s = c.s;
  // This shape takes split-K (clusters of 4 blocks): their launch must capture and replay too, and the
  // cluster's reduction order is fixed, so the replay is bit-identical.
  REQUIRE(yolo12::cuda::conv_detail::f16_plan(s).split == 4);
  CHECK(label_of(s, true) == "implicit_gemm_f16 split-K 4");
  const std::size_t nx = 1ull * s.batch * s.h * s.w_in * s.c_in, ny = 1ull * s.batch * s.ho * s.wo * s.c_out;
  std::vector<float> w(1ull * s.c_out * s.c_in * 9), hx(nx);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (auto& v : w) v = 0.05f * uni(rng);
  for (auto& v : hx) v = uni(rng);
  std::vector<__half> packed(yolo12::cuda::conv_packed_weight_elems(s)), xh(nx);
  yolo12::cuda::conv_pack_weights<__half>(s, w.data(), packed.data());
  for (std::size_t i = 0; i < nx; ++i) xh[i] = __float2half_rn(hx[i]);
  DeviceBuf<__half> dx(nx), dw(packed.size()), dy1(ny), dy2(ny);
  REQUIRE((dx.base && dw.base && dy1.base && dy2.base));
  TEST_CUDA(cudaMemcpy(dx.data(), xh.data(), nx * 2, cudaMemcpyHostToDevice));
  TEST_CUDA(cudaMemcpy(dw.data(), packed.data(), packed.size() * 2, cudaMemcpyHostToDevice));
  TEST_CUDA(cudaMemset(dy1.data(), 0xff, ny * 2));  // NaN
  TEST_CUDA(cudaMemset(dy2.data(), 0xff, ny * 2));
  ConvParams<__half> p;
  static_cast<ConvShape&>(p) = s;
  p.x = dx.data();
  p.ldx = s.c_in;
  p.w = dw.data();
  p.residual = dx.data();  // same shape as the output here (stride 1, c_in == c_out)
  p.ldr = s.c_in;
  p.ldy = s.c_out;
  p.y = dy1.data();
  cudaStream_t stream;
  TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  yolo12::cuda::conv2d_forward<__half>(p, stream);
  TEST_CUDA(cudaStreamSynchronize(stream));
  p.y = dy2.data();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  yolo12::cuda::conv2d_forward<__half>(p, stream);
  TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  TEST_CUDA(cudaGraphLaunch(exec, stream));
  TEST_CUDA(cudaStreamSynchronize(stream));
  std::vector<__half> a(ny), b(ny);
  TEST_CUDA(cudaMemcpy(a.data(), dy1.data(), ny * 2, cudaMemcpyDeviceToHost));
  TEST_CUDA(cudaMemcpy(b.data(), dy2.data(), ny * 2, cudaMemcpyDeviceToHost));
  std::size_t differ = 0, nonfinite = 0, nonzero = 0;
  for (std::size_t i = 0; i < ny; ++i) {
    if (bits_of(a[i]) != bits_of(b[i])) ++differ;
    if (!std::isfinite(__half2float(a[i]))) ++nonfinite;
    if (__half2float(a[i]) != 0.f) ++nonzero;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  REQUIRE(differ == 0);
  REQUIRE(nonfinite == 0);
  REQUIRE(nonzero > ny / 2);
}

// ---- benchmark -----------------------------------------------------------------------------------

namespace {

struct BenchShape {
  const char* name;
  int h, ci, co, k, stride, groups;
};

// The conv shapes of yolo12n at 640 (one of each kind; per image, input side h).
const BenchShape kYolo12nShapes[] = {
    {"stem 3x3 s2 3->16", 640, 3, 16, 3, 2, 1},
    {"3x3 s2 16->32", 320, 16, 32, 3, 2, 1},
    {"1x1 32->32 @160", 160, 32, 32, 1, 1, 1},
    {"3x3 16->8 @160", 160, 16, 8, 3, 1, 1},
    {"1x1 48->64 @160", 160, 48, 64, 1, 1, 1},
    {"3x3 s2 64->64", 160, 64, 64, 3, 2, 1},
    {"1x1 64->64 @80", 80, 64, 64, 1, 1, 1},
    {"3x3 32->32 @80", 80, 32, 32, 3, 1, 1},
    {"1x1 96->128 @80", 80, 96, 128, 1, 1, 1},
    {"3x3 s2 128->128", 80, 128, 128, 3, 2, 1},
    {"1x1 64->192 qkv @40", 40, 64, 192, 1, 1, 1},
    {"dw7x7 64 @40", 40, 64, 64, 7, 1, 64},
    {"1x1 192->128 @40", 40, 192, 128, 1, 1, 1},
    {"3x3 s2 128->256", 40, 128, 256, 3, 2, 1},
    {"1x1 128->384 qkv @20", 20, 128, 384, 1, 1, 1},
    {"dw7x7 128 @20", 20, 128, 128, 7, 1, 128},
    {"1x1 384->256 @20", 20, 384, 256, 1, 1, 1},
    {"head 3x3 64->64 @80", 80, 64, 64, 3, 1, 1},
    {"head dw3x3 64 @80", 80, 64, 64, 3, 1, 64},
    {"head 1x1 64->80 @80", 80, 64, 80, 1, 1, 1},
    {"yolo12x-like 1x1 768->768 @40", 40, 768, 768, 1, 1, 1},
    {"yolo12x-like 3x3 384->384 @80", 80, 384, 384, 3, 1, 1},
};

template <typename T>
void bench_shape(const BenchShape& b, int batch, const char* label) {
  Case c = make_case(batch, b.h, b.h, b.ci, b.co, b.k, b.stride, b.groups);
  const ConvShape& s = c.s;
  DenseConv<T> conv(s, 11);
  const ConvParams<T>& p = conv.p;
  cudaStream_t stream;
  TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kPerGraph = 20;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kPerGraph; ++i) yolo12::cuda::conv2d_forward<T>(p, stream);
  TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  TEST_CUDA(cudaGraphLaunch(exec, stream));  // warm-up
  std::vector<float> ms;
  for (int r = 0; r < 9; ++r) {
    cudaEventRecord(e0, stream);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(e1, stream);
    TEST_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t / kPerGraph);
  }
  std::sort(ms.begin(), ms.end());
  const double t_us = ms[ms.size() / 2] * 1e3;
  const double flops = 2.0 * s.batch * s.ho * s.wo * s.c_out * (s.c_in / s.groups) * s.k * s.k;
  const double bytes = (conv.dx.n + conv.dy.n + conv.dw.n) * sizeof(T);
  const double t_flop_us = flops / 790e12 * 1e6, t_byte_us = bytes / 4.3e12 * 1e6;
  std::printf("BENCH %-5s b%-2d %-32s %9.2f us  %7.1f TFLOP/s  %7.0f GB/s  floor %7.2f us (%s)  %5.1fx floor\n",
              label, batch, b.name, t_us, flops / t_us * 1e-6, bytes / t_us * 1e-3,
              std::max(t_flop_us, t_byte_us), t_flop_us > t_byte_us ? "flops" : "bytes",
              t_us / std::max(t_flop_us, t_byte_us));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace

TEST_CASE("conv2d_forward timings on the yolo12n-at-640 shapes", "[.bench]") {
  for (int batch : {1, 32})
    for (const auto& b : kYolo12nShapes) {
      bench_shape<__half>(b, batch, "fp16");
      bench_shape<float>(b, batch, "fp32");
    }
  VariantsSet off(false);  // the same shapes with the variants off, to compare line by line
  for (int batch : {1, 32})
    for (const auto& b : kYolo12nShapes) bench_shape<__half>(b, batch, "fp16-plain");
}
