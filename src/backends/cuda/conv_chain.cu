// src/backends/cuda/conv_chain.cu - conv2d_chain_f16 (conv_chain.cuh) and the CUDA bind of graph::ConvChainOp.
//
// The kernel (chain_layout.hpp has the plan and every index): block b takes pixels [b BM, b BM + BM) of the M = batch
// x H x W rows. It copies link 0's input rows into a shared tile (cp.async, zeros past M), then walks the chain's
// weight chunks in order: chunk t is kChunkN output channels of one link, all its K, copied into weight stage
// t % stages while chunks t - stages + 1 .. t - 1 are computed (one cp.async group per chunk; the input tile rides
// with chunk 0). For each chunk every warp computes its 16 rows x warp_cols columns with mma.sync m16n8k16 (A from
// the link's input tile, B from the stage, both through ldmatrix), then the fused epilogue of that link (bias, SiLU,
// gamma, the residual from memory or from an earlier link's tile, one rounding to half) writes the link's output
// tile. One block barrier per chunk separates a chunk's reads from the copies that refill its stage and a link's
// output from the next link's reads. A stored output is copied from its tile to memory with 16-byte stores once the
// link is done (at the start of the next link's first chunk; the last link's after the loop).
//
// A depthwise link 0 (the A2C2f attention's pe, Detect's 3x3 class convs) has no weight chunks: before the first
// chunk each thread computes items of 8 channels of one pixel of its output tile straight from the input in memory,
// tap by tap (depthwise_link0), with its epilogue, while the first chunks' copies are in flight.
//
// The results are those of the links run one by one on the fp16 kernels up to the order of the fp32 sums: every
// link's output is rounded to half once, as it would be in memory, before the next link or a residual reads it.
//
// The op's bind runs a chain one of three ways per batch (ChainRun): the whole chain on this kernel; a depthwise
// link 0 on its own conv kernel, then the rest on this kernel; or every link on its own conv kernel (fp32 always).
// chain_rule picks without tuning; kernel tuning times every way the batch allows and keeps the fastest.
//
// Status (fifteenth session): it passes its GPU tests (test_conv_chain, the op suite's ConvChain cases under every
// way), but it is slower than the links one by one on most of yolo12n's chains: Nsight Compute shows it issue-bound
// with few warps (docs/kernels-conv.md, "The fifteenth session"). Written after those measurements and not yet run on
// a GPU: the 16-row tile on 8 warps, the copy cursor and the epilogue's loads once per column pair. The layout and the
// schedule are replayed on the CPU by tests/unit/test_chain_layout.cpp. The pass that makes chains runs only under
// the conv variant conv_chain (off).
#include "conv_chain.cuh"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common.cuh"
#include "core/tune_cache.hpp"
#include "conv.cuh"
#include "conv_detail.cuh"
#include "conv_dw_branch.cuh"
#include "conv_halo_pair.cuh"
#include "conv_stem_pair.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "ops.cuh"

namespace yolo12::cuda {

namespace {

using conv_detail::cp_async_16;
using conv_detail::cp_async_commit;
using conv_detail::cp_async_wait_dyn;
using conv_detail::load_a_frag;
using conv_detail::load_b_frag;
using conv_detail::load_b_frag_pair;
using conv_detail::mma_16816;

// Copies a tile of bm rows x c channels from memory ((M, ld) view, rows from m0) into shared memory, zeros past M.
__device__ __forceinline__ void load_tile(unsigned char* smem, int off, const __half* src, int ld, long long m0,
                                          long long m, int bm, int c) {
  for (chain::CopyCursor tc(threadIdx.x, blockDim.x, c); tc.row < bm; tc.next()) {
    const bool in = m0 + tc.row < m;
    const __half* from = in ? src + (m0 + tc.row) * ld + 8 * tc.col8 : src;
    cp_async_16(smem + chain::tile_byte(off, c, tc.row, tc.col8), from, in ? 16 : 0);
  }
}

// Copies chunk t's weights (link i's chunk j) into its weight stage.
__device__ __forceinline__ void load_chunk(unsigned char* smem, const ConvChainParams& p, int t) {
  const chain::ChainLayout& L = p.layout;
  const int i = chain::chunk_link(L, p.links, t), j = t - L.first_chunk[i], c_in = p.c[i];
  const int rows = chain::chunk_rows(p.c[i + 1], j), off = chain::stage_offset(L, t);
  const __half* w = p.link[i].w + static_cast<long long>(j) * chain::kChunkN * p.link[i].k_pad;
  for (chain::CopyCursor tc(threadIdx.x, blockDim.x, c_in); tc.row < rows; tc.next()) {
    cp_async_16(smem + chain::tile_byte(off, c_in, tc.row, tc.col8),
                w + static_cast<long long>(tc.row) * p.link[i].k_pad + 8 * tc.col8, 16);
  }
}

// Stores link i's output tile (bm rows x c[i + 1]) into its view, rows below M only, 16 bytes at a time.
__device__ __forceinline__ void store_tile(const unsigned char* smem, const ConvChainParams& p, int i, long long m0,
                                           long long m) {
  const int c = p.c[i + 1];
  const ChainLinkParams& k = p.link[i];
  for (chain::CopyCursor tc(threadIdx.x, blockDim.x, c); tc.row < p.layout.bm && m0 + tc.row < m; tc.next()) {
    const uint4 v = *reinterpret_cast<const uint4*>(smem + chain::tile_byte(p.layout.out_off[i], c, tc.row, tc.col8));
    *reinterpret_cast<uint4*>(k.y + (m0 + tc.row) * k.ldy + 8 * tc.col8) = v;
  }
}

// The taps of a depthwise link 0 for one item (8 channels from 8 * col8 of pixel (b, y, x)), added to acc in
// row-major order, zero outside the map. K a compile-time size: each row's K input and K weight words are loaded
// before any is used, so they are in flight together (a loop over a run-time size issued them one tap at a time:
// about 7 us of a 7x7 link at batch 1, fifteenth session). K 0: any size, the plain loop.
template <int K>
__device__ __forceinline__ void depthwise_taps(float (&acc)[8], const ConvChainParams& p, long long b, int y, int x,
                                               int col8) {
  const ChainLinkParams& l0 = p.link[0];
  const __half* w = l0.w + 8 * col8;
  const __half* in = p.x + 8 * col8;
  if constexpr (K == 0) {
    const int k = p.dw_k, pad = k / 2;
    for (int ky = 0; ky < k; ++ky) {
      const int yy = y + ky - pad;
      if (yy < 0 || yy >= p.h) continue;
      for (int kx = 0; kx < k; ++kx) {
        const int xx = x + kx - pad;
        if (xx < 0 || xx >= p.w) continue;
        float xv[8], wv[8];
        conv_detail::unpack8(conv_detail::load_nc(reinterpret_cast<const uint4*>(in + ((b * p.h + yy) * p.w + xx) * p.ldx)), xv);
        conv_detail::unpack8(conv_detail::load_nc(reinterpret_cast<const uint4*>(w + (ky * k + kx) * l0.k_pad)), wv);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] += xv[e] * wv[e];
      }
    }
  } else {
    constexpr int kPad = K / 2;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const int yy = y + ky - kPad;
      const bool row_in = yy >= 0 && yy < p.h;
      uint4 xr[K], wr[K];
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const int xx = x + kx - kPad;
        xr[kx] = row_in && xx >= 0 && xx < p.w
                     ? conv_detail::load_nc(reinterpret_cast<const uint4*>(in + ((b * p.h + yy) * p.w + xx) * p.ldx))
                     : make_uint4(0u, 0u, 0u, 0u);
        wr[kx] = conv_detail::load_nc(reinterpret_cast<const uint4*>(w + (ky * K + kx) * l0.k_pad));
      }
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        float xv[8], wv[8];
        conv_detail::unpack8(xr[kx], xv);
        conv_detail::unpack8(wr[kx], wv);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] += xv[e] * wv[e];
      }
    }
  }
}

// Link 0 as a depthwise conv (chain_layout.hpp): the block's rows of its output, from the input in memory (taps
// outside the map read zero), with link 0's epilogue, into its output tile; rows past M are zeros.
__device__ __forceinline__ void depthwise_link0(unsigned char* smem, const ConvChainParams& p, long long m0,
                                                long long m) {
  const int c = p.c[0];
  const long long hw = static_cast<long long>(p.h) * p.w;
  const ChainLinkParams& l0 = p.link[0];
  for (chain::CopyCursor tc(threadIdx.x, blockDim.x, c); tc.row < p.layout.bm; tc.next()) {
    const long long row = m0 + tc.row;
    uint4 packed = make_uint4(0u, 0u, 0u, 0u);
    if (row < m) {
      const long long b = row / hw;
      const int rest = static_cast<int>(row - b * hw), y = rest / p.w, x = rest % p.w;
      float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      switch (p.dw_k) {
        case 3: depthwise_taps<3>(acc, p, b, y, x, tc.col8); break;
        case 5: depthwise_taps<5>(acc, p, b, y, x, tc.col8); break;
        case 7: depthwise_taps<7>(acc, p, b, y, x, tc.col8); break;
        default: depthwise_taps<0>(acc, p, b, y, x, tc.col8); break;
      }
      float res[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      if (l0.residual)
        conv_detail::unpack8(*reinterpret_cast<const uint4*>(l0.residual + row * l0.ldr + 8 * tc.col8), res);
      float v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = conv_detail::epilogue<__half>(acc[e], l0.bias, l0.gamma, l0.silu, 8 * tc.col8 + e) + res[e];
      packed = conv_detail::pack8(v);
    }
    *reinterpret_cast<uint4*>(smem + chain::tile_byte(p.layout.out_off[0], c, tc.row, tc.col8)) = packed;
  }
}

// BM rows per block on WARPS warps (chain::warp_tile): NI n8 blocks per warp and chunk.
template <int BM, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) conv2d_chain_f16_kernel(const ConvChainParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int kWM = BM / 16, kWN = WARPS / kWM, kWarpCols = chain::kChunkN / kWN, kNI = kWarpCols / 8;
  static_assert(kWM * kWN == WARPS && (kNI % 2 == 0 || kNI == 1), "warps cover the tile in n16 pairs or one n8 block");
  static_assert(chain::kMaxStages - 2 <= 3, "cp_async_wait_dyn takes pending counts up to 3");
  extern __shared__ __align__(128) unsigned char smem[];
  const chain::ChainLayout& L = p.layout;
  const int lane = threadIdx.x % 32;
  const chain::WarpTile wt = chain::warp_tile(BM, WARPS, threadIdx.x / 32);
  const long long m = static_cast<long long>(p.batch) * p.h * p.w, m0 = static_cast<long long>(blockIdx.x) * BM;
  const int chunks = chain::total_chunks(L, p.links), ahead = L.stages - 1;

  if (!p.dw_k) load_tile(smem, L.in_off, p.x, p.ldx, m0, m, BM, p.c[0]);
  for (int t = 0; t < ahead; ++t) {  // chunk 0 with the input, then one group per chunk (empty past the last)
    if (t < chunks) load_chunk(smem, p, t);
    cp_async_commit();
  }
  if (p.dw_k) depthwise_link0(smem, p, m0, m);  // while the first chunks' copies fly
  int i = chain::first_chunked_link(p.dw_k), j = 0;  // chunk t is link i's chunk j
  for (int t = 0; t < chunks; ++t) {
    cp_async_wait_dyn(ahead - 1);  // groups 0..t have landed (ahead groups were committed before t's successors)
    __syncthreads();               // ... for every thread; chunk t - 1's stage and tiles are read, link i - 1 written
    if (j == 0 && i > 0 && p.link[i - 1].y) store_tile(smem, p, i - 1, m0, m);
    if (t + ahead < chunks) load_chunk(smem, p, t + ahead);
    cp_async_commit();

    const int c_in = p.c[i], c_out = p.c[i + 1], n_base = j * chain::kChunkN;
    const int cols = min(chain::kChunkN, c_out - n_base);  // a multiple of 16
    const __half* a_tile = reinterpret_cast<const __half*>(smem + (i == 0 ? L.in_off : L.out_off[i - 1]));
    const __half* b_tile = reinterpret_cast<const __half*>(smem + chain::stage_offset(L, t));
    const int rh = chain::row_halves(c_in);
    float acc[kNI][4];
#pragma unroll
    for (int q = 0; q < kNI; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.f;
    for (int k0 = 0; k0 < c_in && wt.col0 < cols; k0 += 16) {
      std::uint32_t af[4];
      load_a_frag(af, a_tile, rh, wt.row0, k0, lane);
      if constexpr (kNI == 1) {  // 16 rows on 8 warps: one n8 block per warp
        std::uint32_t bf[2];
        load_b_frag(bf, b_tile, rh, wt.col0, k0, lane);
        mma_16816(acc[0], af, bf[0], bf[1]);
      } else {
#pragma unroll
        for (int q = 0; q < kNI; q += 2) {
          if (wt.col0 + 8 * q >= cols) continue;
          std::uint32_t b_lo[2], b_hi[2];
          load_b_frag_pair(b_lo, b_hi, b_tile, rh, wt.col0 + 8 * q, k0, lane);
          mma_16816(acc[q], af, b_lo[0], b_lo[1]);
          mma_16816(acc[q + 1], af, b_hi[0], b_hi[1]);
        }
      }
    }

    // The epilogue: this lane's values are channel pairs (acc_col, + 1) of rows acc_row (chain_layout.hpp).
    const ChainLinkParams& k = p.link[i];
    const int r_link = p.residual_link[i];
    __half* out_tile = reinterpret_cast<__half*>(smem + L.out_off[i]);
    const __half* res_tile = r_link >= 0 ? reinterpret_cast<const __half*>(smem + L.out_off[r_link]) : nullptr;
    const int oh = chain::row_halves(c_out);
#pragma unroll
    for (int q = 0; q < kNI; ++q) {
      if (wt.col0 + 8 * q >= cols) continue;
      const int n = n_base + chain::acc_col(wt, q, lane, 0);
      // bias and gamma of the lane's two channels, loaded once for both row halves
      const conv_detail::EpiloguePair e = conv_detail::epilogue_pair(k.bias, k.gamma, n, 0, 2);  // both real
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = chain::acc_row(wt, lane, 2 * h);
        float v0 = conv_detail::epilogue_with(acc[q][2 * h], e.bias[0], e.gamma[0], k.silu);
        float v1 = conv_detail::epilogue_with(acc[q][2 * h + 1], e.bias[1], e.gamma[1], k.silu);
        if (res_tile) {
          const __half2 rv = *reinterpret_cast<const __half2*>(res_tile + r * oh + n);
          v0 += __low2float(rv);
          v1 += __high2float(rv);
        } else if (k.residual && m0 + r < m) {
          const __half2 rv = *reinterpret_cast<const __half2*>(k.residual + (m0 + r) * k.ldr + n);
          v0 += __low2float(rv);
          v1 += __high2float(rv);
        }
        *reinterpret_cast<__half2*>(out_tile + r * oh + n) = __floats2half2_rn(v0, v1);
      }
    }
    if (++j == L.first_chunk[i + 1] - L.first_chunk[i]) {
      j = 0;
      ++i;
    }
  }
  __syncthreads();  // the last link's tile is complete
  store_tile(smem, p, p.links - 1, m0, m);
}

struct ChainConfig {
  int bm, warps;
  void (*kernel)(ConvChainParams);
};
// Large grids take the first of these that still gives two blocks per SM; small grids (batch 1) the last that fits:
// 16 rows on 8 warps, one n8 block of each chunk per warp (fifteenth session: on 4 warps the kernel was issue-bound,
// one warp per scheduler, each warp issuing every copy, tap and epilogue of its quarter of the block).
const ChainConfig kChainConfigs[] = {
    {128, 8, conv2d_chain_f16_kernel<128, 8>},
    {64, 4, conv2d_chain_f16_kernel<64, 4>},
    {32, 4, conv2d_chain_f16_kernel<32, 4>},
    {16, 4, conv2d_chain_f16_kernel<16, 4>},
    {16, 8, conv2d_chain_f16_kernel<16, 8>},
};

constexpr float kChainKeepWithin = 1.03f;  // tuning keeps the chain's kernel unless the links are 3 % faster

// What the tuning choice of a chain depends on: the links' channels, epilogues, residuals and stores, the views'
// leading dimensions, the pixels and the batch.
std::string chain_tune_key(const ConvChainParams& p) {
  std::ostringstream s;
  s << "chain f16 " << p.h << "x" << p.w << " b" << p.batch << " c" << p.c[0] << " ld" << p.ldx;
  if (p.dw_k) s << " dw" << p.dw_k;
  for (int i = 0; i < p.links; ++i) {
    const ChainLinkParams& k = p.link[i];
    s << " | " << p.c[i + 1] << (k.silu ? " silu" : "") << (k.gamma ? " gamma" : "") << " r" << p.residual_link[i]
      << (k.residual ? " mem" + std::to_string(k.ldr) : "") << (k.y ? " y" + std::to_string(k.ldy) : "");
  }
  return s.str();
}

// Tuning's choice among the ways a fused op can run, names[0] its own kernel (kept unless another way is 3 %
// faster): the way the cache holds under `key`, else each way timed by time_of(k) on the op's buffers, logged
// (YOLO12_CONV_TUNE_LOG: "tune KEY: PREFIX NAME MS; ...") and cached. Returns the index of the choice; *cached says
// whether it came from the cache. The chains' tuning and the stride-2 pairs' share it.
std::size_t tune_way(const std::string& key, const std::vector<const char*>& names, const char* prefix,
                     const std::function<float(std::size_t)>& time_of, TuneCache* cache, bool* cached) {
  *cached = false;
  if (const std::string* hit = cache ? cache->find(key) : nullptr)
    for (std::size_t k = 0; k < names.size(); ++k)
      if (*hit == names[k]) {
        *cached = true;
        return k;
      }
  std::vector<float> ms;
  for (std::size_t k = 0; k < names.size(); ++k) ms.push_back(time_of(k));
  std::size_t best = 0;
  for (std::size_t k = 1; k < names.size(); ++k)
    if (ms[k] * kChainKeepWithin < ms[best]) best = k;
  if (tune_log_enabled()) {
    std::ostringstream line;
    line << "tune " << key << ":";
    for (std::size_t k = 0; k < names.size(); ++k) line << (k ? "; " : " ") << prefix << " " << names[k] << " " << ms[k];
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }
  if (cache) cache->put(key, names[best]);
  return best;
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// The most weight stages that fit with bm rows on `warps` warps.
// The most weight stages that fit with bm rows on `warps` warps; with two_per_sm, only those with which two blocks
// share an SM (on a large grid a second resident block hides a block's barriers and epilogues; fewer stages for it).
bool fit_layout(const chain::ChainShape& s, int bm, int warps, int smem_limit, bool two_per_sm, chain::ChainLayout& l) {
  const DeviceInfo& dev = device_info();
  for (int stages = chain::kMaxStages; stages >= chain::kMinStages; --stages) {
    if (!chain::chain_layout(s, bm, warps, stages, smem_limit, l)) continue;
    if (!two_per_sm || 2 * (static_cast<std::size_t>(l.smem_bytes) + dev.smem_reserved_per_block) <= dev.smem_per_sm)
      return true;
  }
  return false;
}

}  // namespace

graph::ChainLimits chain_limits() {
  graph::ChainLimits l;
  l.max_links = chain::kMaxLinks;
  l.channel_multiple = chain::kChannelStep;
  l.max_channels = 512;
  l.max_weights = 512 * 1024;
  l.max_depthwise_k = 7;
  return l;
}

chain::ChainShape chain_shape(const ConvChainParams& p) {
  chain::ChainShape s;
  s.links = p.links;
  s.dw_k = p.dw_k;
  for (int i = 0; i <= p.links && i <= chain::kMaxLinks; ++i) s.c[i] = p.c[i];
  for (int i = 0; i < p.links && i < chain::kMaxLinks; ++i) s.residual_link[i] = p.residual_link[i];
  return s;
}

bool chain_plan(const ConvChainParams& p, chain::ChainLayout& layout) {
  if (p.links < 2 || p.links > chain::kMaxLinks || p.batch < 1 || p.h < 1 || p.w < 1) return false;
  if (!p.x || !aligned16(p.x) || p.ldx % 8 != 0) return false;
  for (int i = 0; i < p.links; ++i) {
    const ChainLinkParams& k = p.link[i];
    if (!k.w || !aligned16(k.w) || k.k_pad % 8 != 0 || k.k_pad < p.c[i]) return false;
    if (k.residual && (p.residual_link[i] >= 0 || !aligned16(k.residual) || k.ldr % 8 != 0)) return false;
    if (k.y && (!aligned16(k.y) || k.ldy % 8 != 0)) return false;
  }
  if (!p.link[p.links - 1].y) return false;  // the last link is always stored
  const chain::ChainShape s = chain_shape(p);
  const DeviceInfo& dev = device_info();
  const int limit = static_cast<int>(dev.smem_per_block_optin);
  const long long m = static_cast<long long>(p.batch) * p.h * p.w;
  // Large grids: the widest tile with two blocks per SM in the grid, the most stages with which two are resident
  // per SM, else the most that fit; small grids (batch 1): 16 rows on 8 warps, the most blocks and warps.
  for (const bool two : {true, false})
    for (const ChainConfig& c : kChainConfigs)
      if ((m + c.bm - 1) / c.bm >= 2LL * dev.sm_count && fit_layout(s, c.bm, c.warps, limit, two, layout)) return true;
  for (int k = static_cast<int>(sizeof(kChainConfigs) / sizeof(kChainConfigs[0])) - 1; k >= 0; --k)
    if (fit_layout(s, kChainConfigs[k].bm, kChainConfigs[k].warps, limit, false, layout)) return true;
  return false;
}

void conv2d_chain_f16(const ConvChainParams& p, cudaStream_t stream) {
  for (const ChainConfig& c : kChainConfigs) {
    if (c.bm != p.layout.bm || c.warps != p.layout.warps) continue;
    YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(c.kernel), p.layout.smem_bytes));
    const long long m = static_cast<long long>(p.batch) * p.h * p.w;
    launch_kernel(c.kernel, dim3(static_cast<unsigned>((m + c.bm - 1) / c.bm)), dim3(32 * c.warps),
                  static_cast<std::size_t>(p.layout.smem_bytes), stream, p);
    return;
  }
  throw Error("conv2d_chain_f16: no kernel for a plan of " + std::to_string(p.layout.bm) + " rows on " +
              std::to_string(p.layout.warps) + " warps");
}

// ---- the op --------------------------------------------------------------------------------------------------------

namespace {

// How a chain runs at a batch: the whole chain on conv2d_chain_f16; a depthwise link 0 on its own conv kernel (its
// output in its memory) and the rest on conv2d_chain_f16; or every link on its own conv kernel.
enum class ChainRun { fused, split, links };
const char* run_name(ChainRun r) { return r == ChainRun::fused ? "fused" : r == ChainRun::split ? "split" : "links"; }

// The kernel's params of links [first, L) of the chain, reading link first - 1's output from memory where first > 0
// (its residual links to links before `first` become residuals from memory). No params (false) where the kernel
// cannot take them at all (shape, alignment); chain_plan decides per batch.
template <typename T>
bool chain_params(const graph::ConvChainOp& op, const BindContext<T>& ctx, int first, ConvChainParams& p) {
  if constexpr (!std::is_same_v<T, __half>) {
    return false;
  } else {
    const graph::ConvChainAttrs& a = op.attrs;
    const int n = a.links - first;
    if (n < 2) return false;
    const graph::ConvOp& l0 = op.links[static_cast<std::size_t>(first)];
    const graph::Value& map = ctx.value(l0.out);
    p = ConvChainParams{};
    p.links = n;
    p.h = map.h;
    p.w = map.w;
    p.dw_k = graph::chain_depthwise(l0.attrs) ? l0.attrs.k : 0;
    p.x = ctx.ptr(l0.in);
    p.ldx = ctx.ld(l0.in);
    p.c[0] = l0.attrs.c_in;
    for (int i = 0; i < n; ++i) {
      const graph::ConvOp& l = op.links[static_cast<std::size_t>(first + i)];
      const graph::ConvAttrs& c = l.attrs;
      if (!(graph::chain_pointwise(c) || (i == 0 && p.dw_k)) || c.c_in != p.c[i]) return false;
      p.c[i + 1] = c.c_out;
      p.stored[i] = a.stored[first + i];
      const int r = a.residual_link[first + i];
      p.residual_link[i] = r >= first ? r - first : -1;
      ChainLinkParams& k = p.link[i];
      k.w = ctx.template weight<__half>(l.weight);
      k.k_pad = i == 0 && p.dw_k ? conv_detail::round_up(c.c_out, conv_detail::kChunk)
                                 : conv_detail::gemm_layout(conv_shape(ctx.graph, l, 1)).k_pad;
      k.bias = ctx.template weight<float>(l.bias);
      k.gamma = l.gamma.empty() ? nullptr : ctx.template weight<float>(l.gamma);
      k.silu = c.silu();
      if (p.residual_link[i] < 0) {  // from memory (a link before `first` has its output there too)
        k.residual = ctx.ptr(l.residual);
        k.ldr = ctx.ld(l.residual);
      }
      if (p.stored[i]) {
        k.y = ctx.ptr(l.out);
        k.ldy = ctx.ld(l.out);
      }
    }
    p.batch = ctx.max_batch;  // chain_plan decides per batch (and refuses views it cannot take)
    return true;
  }
}

// The rule without tuning, per batch: the whole chain where conv2d_chain_f16 takes it, except that on tiles of 64+
// rows (large grids) a depthwise link 0 runs on its own kernel (the depthwise kernels compute several outputs per
// thread from registers; the chain kernel one from memory per tap), then the rest fused; else the links one by one.
// Written before any measurement; tuning replaces it. YOLO12_CHAIN_RUN=fused, split or links forces that way wherever
// the batch allows it (else the next one down), for the tests and for measuring; read at every call.
ChainRun chain_rule(const ConvChainParams* whole, const ConvChainParams* rest, int batch) {
  const char* env = std::getenv("YOLO12_CHAIN_RUN");
  const std::string forced = env ? env : "";
  if (forced == "links") return ChainRun::links;
  chain::ChainLayout l;
  ConvChainParams q;
  if (whole && forced != "split") {
    q = *whole;
    q.batch = batch;
    if (chain_plan(q, l) && (forced == "fused" || !(q.dw_k && l.bm >= 64))) return ChainRun::fused;
  }
  if (rest) {
    q = *rest;
    q.batch = batch;
    if (chain_plan(q, l)) return ChainRun::split;
  }
  return ChainRun::links;
}

// The kernel of a fused form (graph/ops.hpp): conv2d_stem_pair_f16 for stride-2 pairs (the stem and the conv after
// it), conv2d_halo_pair_f16 for stride-1 pairs (a bottleneck's two 3x3 convs), conv2d_dw_branch_f16 for depthwise
// branches (Detect's class branch). Each takes the links' conv params in order.
using LinkParams = std::vector<ConvParams<__half>>;
struct FusedKernel {
  const char* form;  // the label's words before the channels ("conv pair 3x3/2")
  const char* name;  // the label's kernel name, and the tune cache key's first word
  const char* log;   // the tune log's word for the op ("pair", "branch")
  bool (*takes)(const LinkParams& links);
  void (*launch)(const LinkParams& links, cudaStream_t stream);
  // Without tuning, whether the kernel rather than the links runs the batch of `links` (nullptr: always). Where
  // YOLO12_CHAIN_RUN is "fused" (the tests), always.
  bool (*prefer)(const LinkParams& links) = nullptr;
};

const FusedKernel kStemPair = {
    "conv pair 3x3/2", "stem_pair", "pair",
    [](const LinkParams& l) {
      return conv_detail::stem_pair_supports(l[0], l[1]) && conv_detail::stem_pair_views_ok(l[0], l[1]);
    },
    [](const LinkParams& l, cudaStream_t s) { conv_detail::launch_conv2d_stem_pair_f16(l[0], l[1], s); }};
const FusedKernel kHaloPair = {
    "conv pair 3x3/1", "halo_pair", "pair",
    [](const LinkParams& l) {
      return conv_detail::halo_pair_supports(l[0], l[1]) && conv_detail::halo_pair_views_ok(l[0], l[1]);
    },
    [](const LinkParams& l, cudaStream_t s) { conv_detail::launch_conv2d_halo_pair_f16(l[0], l[1], s); }};
// The branch kernel takes fixed arrays of its five links: their parameters, or only their shapes.
template <typename Link>
bool dw_branch_array(const LinkParams& l, Link (&a)[conv_detail::kDwBranchLinks]) {
  if (l.size() != conv_detail::kDwBranchLinks) return false;
  for (int i = 0; i < conv_detail::kDwBranchLinks; ++i) a[i] = l[static_cast<std::size_t>(i)];
  return true;
}
const FusedKernel kDwBranch = {
    "conv branch dw3x3", "dw_branch", "branch",
    [](const LinkParams& l) {
      ConvParams<__half> a[conv_detail::kDwBranchLinks];
      ConvShape s[conv_detail::kDwBranchLinks];
      return dw_branch_array(l, a) && dw_branch_array(l, s) && conv_detail::dw_branch_supports(s) &&
             conv_detail::dw_branch_views_ok(a);
    },
    [](const LinkParams& l, cudaStream_t s) {
      ConvParams<__half> a[conv_detail::kDwBranchLinks];
      dw_branch_array(l, a);
      conv_detail::launch_conv2d_dw_branch_f16(a, s);
    },
    [](const LinkParams& l) {
      ConvShape s[conv_detail::kDwBranchLinks];
      return dw_branch_array(l, s) && conv_detail::dw_branch_preferred(s);
    }};

// A fused form (graph/ops.hpp: chain_stride2_pair, chain_stride1_pair, chain_dw_branch): on its kernel where that
// takes the links (fp16, their shapes and views, no link's output but the last read outside the op), else the links
// one by one. Tuning tunes the links, then times the two ways and keeps the fused kernel unless the links are 3 %
// faster, cached as "fused" or "links" under the kernel's name and the links' conv keys.
template <typename T>
Step bind_fused(const graph::ConvChainOp& op, const BindContext<T>& ctx, const FusedKernel& kernel) {
  std::vector<Step> links;
  std::vector<ConvParams<T>> params;
  for (const graph::ConvOp& l : op.links) {
    links.push_back(bind<T>(l, ctx));
    params.push_back(conv_params(l, ctx));
  }
  const ConvParams<T>& p0 = params.front();
  const ConvParams<T>& pn = params.back();
  bool fused = false;
  if constexpr (std::is_same_v<T, __half>) {
    fused = kernel.takes(params);
    for (int i = 0; i + 1 < op.attrs.links; ++i) fused = fused && !op.attrs.stored[i];
  }
  Step step;
  for (const Step& s : links) {
    step.weight_bytes += s.weight_bytes;
    step.flops_per_image += s.flops_per_image;
    step.bytes_per_image += s.bytes_per_image;
  }
  // Without tuning, per batch: the kernel where it is fused and preferred at that batch.
  const auto prefer = kernel.prefer;
  const auto preferred = [params, prefer](int batch) {
    if (!prefer) return true;
    const char* env = std::getenv("YOLO12_CHAIN_RUN");
    if (env && std::string(env) == "fused") return true;
    if constexpr (std::is_same_v<T, __half>) {
      LinkParams q = params;
      for (ConvParams<T>& p : q) p.batch = batch;
      return prefer(q);
    }
    return false;
  };
  // The label and the bytes name the way at the executor's largest batch.
  const bool fused_at_max = fused && preferred(ctx.max_batch);
  if (fused_at_max)  // the input read, the residual read and the output written; the maps stay on chip
    step.bytes_per_image = sizeof(T) * (1.0 * p0.h * p0.w_in * p0.c_in +
                                        (pn.residual ? 2.0 : 1.0) * pn.ho * pn.wo * pn.c_out);
  std::ostringstream label;
  label << kernel.form << " " << p0.c_in;
  for (const ConvParams<T>& p : params) label << "->" << p.c_out;
  label << (pn.residual ? " +res " : " ") << p0.h << "x" << p0.w_in << "->" << pn.ho << "x" << pn.wo << " ["
        << (fused_at_max ? std::string(kernel.name) + "_f16" : std::string("links one by one")) << "]";
  step.label = label.str();
  auto use_links = std::make_shared<std::map<int, bool>>();  // per batch, where tuning chose the links
  const auto launch = kernel.launch;
  auto run_as = [params, links, launch](bool as_links, int batch, cudaStream_t stream) {
    if constexpr (std::is_same_v<T, __half>) {
      if (!as_links) {
        LinkParams q = params;
        for (ConvParams<T>& p : q) p.batch = batch;
        launch(q, stream);
        return;
      }
    }
    for (const Step& s : links) s.run(batch, stream);
  };
  step.run = [run_as, use_links, fused, preferred](int batch, cudaStream_t stream) {
    const auto it = use_links->find(batch);
    run_as(!fused || (it != use_links->end() ? it->second : !preferred(batch)), batch, stream);
  };
  const std::string key_word = kernel.name;
  const std::string log_word = kernel.log;
  step.tune = [run_as, use_links, fused, links, params, key_word, log_word](int batch, cudaStream_t stream,
                                                                            TuneCache* cache) {
    for (const Step& s : links)
      if (s.tune) s.tune(batch, stream, cache);
    Step::Tuned out;
    bool as_links = !fused;
    if constexpr (std::is_same_v<T, __half>) {  // fp32 never fuses (and conv_tune_key is fp16's)
      if (fused) {
        std::string key = key_word;
        for (std::size_t i = 0; i < params.size(); ++i) {
          ConvParams<T> q = params[i];
          q.batch = batch;
          key += (i ? " | " : " ") + conv_tune_key(q);
        }
        const auto time_of = [&](std::size_t k) {
          return tune_time([&](cudaStream_t s) { run_as(k == 1, batch, s); }, stream);
        };
        as_links = tune_way(key, {"fused", "links"}, log_word.c_str(), time_of, cache, &out.cached) == 1;
      }
    }
    (*use_links)[batch] = as_links;
    out.plan = log_word + (as_links ? " links" : " fused");
    return out;
  };
  return step;
}

}  // namespace

template <typename T>
Step bind(const graph::ConvChainOp& op, const BindContext<T>& ctx) {
  const graph::ConvChainAttrs& a = op.attrs;
  graph::check_conv_chain(ctx.graph, op, ctx.op_name);  // the CPU backend's checks: a ModelError naming the op
  if (graph::chain_stride2_pair(op)) return bind_fused(op, ctx, kStemPair);
  if (graph::chain_stride1_pair(op)) return bind_fused(op, ctx, kHaloPair);
  if (graph::chain_dw_branch(op)) return bind_fused(op, ctx, kDwBranch);
  // The links one by one, as plain convs (their outputs in memory, scratch ones included): fp32, and fp16 wherever
  // conv2d_chain_f16 does not take the chain at a batch.
  std::vector<Step> links;
  for (const graph::ConvOp& l : op.links) links.push_back(bind<T>(l, ctx));
  Step step;
  for (const Step& s : links) {
    step.weight_bytes += s.weight_bytes;
    step.flops_per_image += s.flops_per_image;
  }
  const graph::Value& v_in = ctx.value(op.links[0].in);
  const double pixels = 1.0 * v_in.h * v_in.w;
  // Bytes as the fused kernel moves them: the input, the stored outputs, the residuals from memory.
  step.bytes_per_image = sizeof(T) * pixels * op.links[0].attrs.c_in;
  for (int i = 0; i < a.links; ++i) {
    const graph::ConvOp& l = op.links[static_cast<std::size_t>(i)];
    if (a.stored[i]) step.bytes_per_image += sizeof(T) * pixels * l.attrs.c_out;
    if (a.residual_link[i] < 0 && l.residual.valid()) step.bytes_per_image += sizeof(T) * pixels * l.attrs.c_out;
  }
  const bool dw = graph::chain_depthwise(op.links[0].attrs);
  std::ostringstream label;
  label << "conv chain " << (dw ? "dw" + std::to_string(op.links[0].attrs.k) + "x" + std::to_string(op.links[0].attrs.k)
                                : std::string("1x1"))
        << " " << op.links[0].attrs.c_in;
  for (const graph::ConvOp& l : op.links) label << "->" << l.attrs.c_out << (l.residual.valid() ? "+res" : "");
  label << " " << v_in.h << "x" << v_in.w;

  // The kernel's params for the whole chain and, after a depthwise link 0, for the rest.
  ConvChainParams whole, rest;
  const bool has_whole = chain_params(op, ctx, 0, whole);
  const bool has_rest = dw && chain_params(op, ctx, 1, rest);
  const ConvChainParams* pw = has_whole ? &whole : nullptr;
  const ConvChainParams* pr = has_rest ? &rest : nullptr;
  const ChainRun at_max = chain_rule(pw, pr, ctx.max_batch);
  label << " [" << (at_max == ChainRun::fused ? "chain_f16" : at_max == ChainRun::split ? "dw + chain_f16"
                                                                                          : "links one by one")
        << "]";
  step.label = label.str();

  // Per batch, the way tuning chose (none: chain_rule's). Shared by the two closures, owned by them.
  auto chosen = std::make_shared<std::map<int, ChainRun>>();
  auto run_as = [whole, rest, has_whole, has_rest, links](ChainRun r, int batch, cudaStream_t stream) {
    ConvChainParams q = r == ChainRun::fused ? whole : rest;
    q.batch = batch;
    if (r == ChainRun::fused && has_whole && chain_plan(q, q.layout)) {
      conv2d_chain_f16(q, stream);
      return;
    }
    if (r == ChainRun::split && has_rest && chain_plan(q, q.layout)) {
      links[0].run(batch, stream);
      conv2d_chain_f16(q, stream);
      return;
    }
    for (const Step& s : links) s.run(batch, stream);
  };
  step.run = [run_as, chosen, whole, rest, has_whole, has_rest](int batch, cudaStream_t stream) {
    const auto it = chosen->find(batch);
    run_as(it != chosen->end() ? it->second
                               : chain_rule(has_whole ? &whole : nullptr, has_rest ? &rest : nullptr, batch),
           batch, stream);
  };
  // Tuning: the links' own (their kernels when run one by one), then every way the chain can run at the batch, timed
  // on the op's buffers; the fastest is kept (the whole chain unless another way is 3 % faster), and cached as
  // "fused", "split" or "links" under chain_tune_key.
  step.tune = [run_as, chosen, links, whole, rest, has_whole, has_rest](int batch, cudaStream_t stream,
                                                                         TuneCache* cache) {
    for (const Step& s : links)
      if (s.tune) s.tune(batch, stream, cache);
    Step::Tuned out;
    std::vector<ChainRun> ways;
    ConvChainParams qw = whole, qr = rest;
    qw.batch = qr.batch = batch;
    if (has_whole && chain_plan(qw, qw.layout)) ways.push_back(ChainRun::fused);
    if (has_rest && chain_plan(qr, qr.layout)) ways.push_back(ChainRun::split);
    ways.push_back(ChainRun::links);
    ChainRun pick = ways[0];
    if (ways.size() > 1) {
      std::vector<const char*> names;
      for (ChainRun r : ways) names.push_back(run_name(r));
      const auto time_of = [&](std::size_t k) {
        return tune_time([&](cudaStream_t s) { run_as(ways[k], batch, s); }, stream);
      };
      pick = ways[tune_way(chain_tune_key(has_whole ? qw : qr), names, "chain", time_of, cache, &out.cached)];
    }
    (*chosen)[batch] = pick;
    out.plan = std::string("chain ") + run_name(pick);
    return out;
  };
  return step;
}
template Step bind<float>(const graph::ConvChainOp&, const BindContext<float>&);
template Step bind<__half>(const graph::ConvChainOp&, const BindContext<__half>&);

}  // namespace yolo12::cuda
