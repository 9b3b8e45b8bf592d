// src/backends/cuda/conv_narrow.cu - conv2d_narrow_f16: the fp16 implicit GEMM (conv_gemm.cuh) for convs
// with few output channels and a short K over many pixels: c_out <= 128, k*k*cin_pad <= 320, at least one
// 128-pixel tile per SM. At batch 32 these are the 160x160 and 80x80 layers (c_out 8..128), which the
// general kernel ran at 0.2-0.8 TB/s: its 64-wide K tiles, tile shapes for wide N and one short K loop per
// block left each block waiting on one load after another.
//
// Here the weights (all of N x K, at most 128 x 328 halves) are loaded into shared memory once per block
// and kept; the grid is persistent (about as many blocks as fit on the GPU), and each block streams pixel
// tiles of 128 output rows x the whole K through a pipeline of 2..4 stages: while one tile's MMAs and
// epilogue run, the next tiles' A rows are in flight (cp.async, 16-byte chunks through L1 so that the k x k
// taps of neighbouring pixels hit in cache; zero-filled outside the image). A block has 4 or 8
// warps (ConvPlan::warps; 8 since the seventh session, variant f16_narrow8w: twice the warps to hide the
// latency of the gather); warp w of W computes rows [w * 128 / W, (w + 1) * 128 / W) x all bn channels with mma.sync m16n8k16 (fp16 in, fp32 accumulate), fragments from
// ldmatrix. The epilogue (bias, SiLU, gamma, residual) runs on the fp32 accumulators, which each warp
// stages through its own shared rows so that the stores (and the residual loads) are 16 bytes wide.
// Where the input view is not 16-byte aligned or cin_g is not a multiple of 8 (the stem's 3 channels), the
// A rows are gathered with scalar loads (one row per thread) instead of cp.async.
//
// Layout, the loads and the epilogue pieces: conv_narrow.cuh (the tests replay them on the CPU).
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "conv_narrow.cuh"
#include "mma.cuh"
#include "launch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

template <int BN, bool kVecA, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) conv2d_narrow_f16(const NarrowParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  static_assert(BN == 8 || BN % 16 == 0, "B fragments are read one n8 block (bn 8) or two at a time");
  constexpr int kThreads = narrow_threads(WARPS);
  constexpr int kWarpRows = kNarrowRows / WARPS;  // 32 (4 warps) or 16 (8 warps)
  constexpr int NI = BN / 8;
  constexpr int MI = kWarpRows / 16;
  const ImplicitGemmParams<__half>& a = p.g;
  const NarrowLayout& L = p.layout;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* Bs = reinterpret_cast<__half*>(smem_raw);                // (BN, b_row)
  __half* As = reinterpret_cast<__half*>(smem_raw + L.a_off);      // (stages, 128, a_row)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  float* Cs = reinterpret_cast<float*>(smem_raw + L.c_off) + warp * kNarrowStageRows * L.c_row;  // (8, c_row)
  const int stage_halves = kNarrowRows * L.a_row;
  const CpAsyncZfill16<true> copy{a.x};  // through L1: the k x k taps of neighbouring pixels
  auto gather = [&](int tile, int stage) {
    __half* as = As + stage * stage_halves;
    if constexpr (kVecA) narrow_gather_vec(a, tile, L.a_row, p.k16, as, tid, kThreads, copy);
    else narrow_gather_scalar(a, tile, L.a_row, p.k16, as, tid, kThreads);
  };

  // Bias and gamma of this lane's 2 * NI channels (0 and 1 past n_g or when absent), loaded once.
  float2 bias_r[NI], gamma_r[NI];
  narrow_lane_bias_gamma<NI>(a, lane, bias_r, gamma_r);
  auto finish = [&](float v, float b, float g) {
    v += b;
    if (a.silu()) v = silu_fast(v);
    return v * g;
  };

  // The weights travel in the first tile's cp.async group. Prologue: stages - 1 tiles in flight.
  narrow_load_weights(a, BN, p.k16, L.b_row, Bs, tid, kThreads, copy);
  const int S = p.stages;
  for (int s = 0; s < S - 1; ++s) {
    const int t = blockIdx.x + s * gridDim.x;
    if (t < p.tiles) gather(t, s);
    cp_async_commit();
  }

  for (int it = 0, t = blockIdx.x; t < p.tiles; ++it, t += gridDim.x) {
    // Tile it + S - 1 goes into the stage tile it - 1 used (every warp left it at the barrier below).
    const int ahead = t + (S - 1) * gridDim.x;
    if (ahead < p.tiles) gather(ahead, (it + S - 1) % S);
    cp_async_commit();
    cp_async_wait_dyn(S - 1);  // groups 0 .. it (this tile, and the weights) have landed for this thread
    __syncthreads();           // ... and for every thread

    const __half* as = As + (it % S) * stage_halves;
    float acc[MI][NI][4];
    zero_accumulators(acc);
#pragma unroll 2
    for (int ks = 0; ks < p.k16; ks += 16) {
      std::uint32_t af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) load_a_frag(af[i], as, L.a_row, warp * kWarpRows + i * 16, ks, lane);
      if constexpr (NI == 1) {
        load_b_frag(bf[0], Bs, L.b_row, 0, ks, lane);
      } else {
#pragma unroll
        for (int j = 0; j < NI; j += 2) load_b_frag_pair(bf[j], bf[j + 1], Bs, L.b_row, j * 8, ks, lane);
      }
      mma_grid(acc, af, bf);
    }

    // Epilogue, per warp and 8 rows at a time: stage the finished fp32 values, then 16-byte stores.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v[NI][2];
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          v[j][0] = finish(acc[i][j][2 * h], bias_r[j].x, gamma_r[j].x);
          v[j][1] = finish(acc[i][j][2 * h + 1], bias_r[j].y, gamma_r[j].y);
        }
        narrow_stage<NI>(Cs, L.c_row, lane, v);
        __syncwarp();
        narrow_store_staged<BN>(a, Cs, L.c_row, t * kNarrowRows + warp * kWarpRows + i * 16 + h * 8, lane);
        __syncwarp();  // the staging rows are rewritten by the next pass
      }
    __syncthreads();  // every warp is done reading stage it % S before it is refilled
  }
  cp_async_wait<0>();
}

// One instantiation: shared-memory opt-in (once, to the device's limit), a persistent grid of as many
// blocks as fit on the GPU (at most one per tile), launch.
template <int BN, bool kVecA, int WARPS>
void launch_narrow(const NarrowParams& p, int smem, int max_grid, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_narrow_f16<BN, kVecA, WARPS>;
  constexpr int kThreads = narrow_threads(WARPS);
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel),
                                       static_cast<int>(device_info().smem_per_block_optin)));
  const int grid = persistent_grid(kKernel, kThreads, smem, p.tiles, max_grid);
  launch_kernel(kKernel, static_cast<unsigned>(grid), kThreads, static_cast<std::size_t>(smem), stream, p);
}

template <int BN>
void launch_narrow_a(const NarrowParams& p, int warps, int smem, int max_grid, cudaStream_t stream) {
  if (warps == 8) {
    if (p.g.vec_a) launch_narrow<BN, true, 8>(p, smem, max_grid, stream);
    else launch_narrow<BN, false, 8>(p, smem, max_grid, stream);
  } else {
    if (p.g.vec_a) launch_narrow<BN, true, 4>(p, smem, max_grid, stream);
    else launch_narrow<BN, false, 4>(p, smem, max_grid, stream);
  }
}

}  // namespace

ConvPlan narrow_plan(const ConvShape& s, const DeviceInfo& dev, int warps) {
  ConvPlan plan;  // not narrow_f16: not taken
  if (s.groups != 1) return plan;
  const GemmLayout l = gemm_layout(s);
  const int k16 = round_up(l.k_real, 16);
  const long long m = 1LL * s.batch * s.ho * s.wo;
  if (l.n_g > kNarrowMaxN || k16 > kNarrowMaxK || (m + kNarrowRows - 1) / kNarrowRows < dev.sm_count) return plan;
  const int bn = narrow_bn(l.n_g);
  // The deepest pipeline (4, 3, 2 tiles) that keeps two blocks on an SM, else the deepest that fits one.
  // The scalar gather (cin_g not a multiple of 8: the stem) loads synchronously, so its stages hide
  // nothing: 2 stages, and as many blocks per SM as fit.
  const bool scalar_gather = l.cin_g % kChunk != 0;
  const long long sm = static_cast<long long>(dev.smem_per_sm), reserved = static_cast<long long>(dev.smem_reserved_per_block);
  const long long optin = static_cast<long long>(dev.smem_per_block_optin);
  const long long two_per_sm = sm / 2 - reserved;
  const long long one_per_sm = optin < sm - reserved ? optin : sm - reserved;
  for (const long long budget : {two_per_sm, one_per_sm})
    for (const int stages : {4, 3, 2}) {
      if (scalar_gather && stages != 2) continue;
      const int bytes = narrow_layout(bn, k16, stages, warps).bytes;
      if (bytes <= budget) {
        plan.algorithm = ConvAlgorithm::narrow_f16;
        plan.bm = kNarrowRows;
        plan.bn = bn;
        plan.bk = k16;
        plan.split = 1;
        plan.stages = stages;
        plan.warps = warps;
        plan.smem_bytes = bytes;
        return plan;
      }
    }
  return plan;
}

void launch_conv2d_narrow_f16(const ConvParams<__half>& cp, const ConvPlan& plan, cudaStream_t stream, int max_grid) {
  NarrowParams p;
  p.g = make_params(cp);
  p.k16 = plan.bk;
  p.stages = plan.stages;
  const int warps = plan.warps == 8 ? 8 : 4;
  p.layout = narrow_layout(plan.bn, plan.bk, plan.stages, warps);
  p.tiles = ceil_div(p.g.m, kNarrowRows);
  const int smem = p.layout.bytes;
  switch (plan.bn) {
    case 8: launch_narrow_a<8>(p, warps, smem, max_grid, stream); break;
    case 16: launch_narrow_a<16>(p, warps, smem, max_grid, stream); break;
    case 32: launch_narrow_a<32>(p, warps, smem, max_grid, stream); break;
    case 48: launch_narrow_a<48>(p, warps, smem, max_grid, stream); break;
    case 64: launch_narrow_a<64>(p, warps, smem, max_grid, stream); break;
    case 80: launch_narrow_a<80>(p, warps, smem, max_grid, stream); break;
    case 96: launch_narrow_a<96>(p, warps, smem, max_grid, stream); break;
    default: launch_narrow_a<128>(p, warps, smem, max_grid, stream); break;
  }
}

}  // namespace yolo12::cuda::conv_detail
