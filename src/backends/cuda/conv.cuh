// src/backends/cuda/conv.cuh - convolution kernels (NHWC, fp32 and fp16) with the fused epilogue
//   y = act(conv(x, W) + bias) * (gamma ? gamma[c] : 1) + (residual ? residual : 0)
// written straight into a channel slice of the output buffer (concat for free).
//
// Tensors are NHWC views: element (n, y, x, c) of a view lives at ptr[((n * H + y) * W + x) * ld + c]
// where ptr already points at the slice's first channel and ld is the buffer's total channels.
// Weights are repacked once at load time by conv_pack_weights into the layout the kernel wants.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "graph/graph.hpp"

namespace yolo12 {
class TuneCache;  // core/tune_cache.hpp
}

namespace yolo12::cuda {

// One conv call: the graph op's attributes verbatim (c_in, c_out, k, stride, pad, groups, dilation,
// act) and the sizes of this call.
struct ConvShape : graph::ConvAttrs {
  int batch = 1;
  int h = 0, w_in = 0;   // input
  int ho = 0, wo = 0;    // output
};

// The launch: the shape and the views. Every conv kernel's params struct derives from it, adding only
// what that kernel derives from it (tile counts, alignment flags).
template <typename T>  // T = float or __half; accumulation is always fp32
struct ConvParams : ConvShape {
  const T* x = nullptr;         // (B, H, W, ldx) view, c_in channels used
  int ldx = 0;
  const T* w = nullptr;         // packed by conv_pack_weights (conv_packed_weight_elems elements)
  const float* bias = nullptr;  // (c_out)
  const float* gamma = nullptr; // (c_out) or nullptr
  const T* residual = nullptr;  // (B, Ho, Wo, ldr) view or nullptr
  int ldr = 0;
  T* y = nullptr;               // (B, Ho, Wo, ldy) view
  int ldy = 0;
};

// The shape of a graph conv op for `batch` images (its sizes from the graph's values).
ConvShape conv_shape(const graph::Graph& g, const graph::ConvOp& op, int batch);

// Number of T elements the packed weights of this conv take.
std::size_t conv_packed_weight_elems(const ConvShape& s);
// oihw: PyTorch layout (c_out, c_in / groups, k, k), float32. dst: conv_packed_weight_elems values.
// Place each conv's packed weights at a 16-byte aligned address (ConvParams::w): the tiled kernels read
// them in 16-byte vectors, and an unaligned w falls back to the slow naive kernel.
// tensor_c_out / tensor_c_in: the stored tensor's channels where graph::pad_channels widened the conv
// (graph::ConvOp::tensor_c_out(), tensor_c_in(); 0: as s). Then oihw is (tensor_c_out, tensor_c_in, k, k),
// groups 1, and every stored weight lands where the unwidened conv's packing puts it, with zeros in the
// widened rows and columns. Throws yolo12::Error for tensor channels above s's or a widened grouped conv.
template <typename T>
void conv_pack_weights(const ConvShape& s, const float* oihw, T* dst, int tensor_c_out = 0, int tensor_c_in = 0);
// Whether conv2d_forward supports this shape (checked when the graph is built, never mid-inference).
bool conv_can_implement(const ConvShape& s);
// Launches on `stream`; no allocation, no synchronisation (safe inside CUDA graph capture).
template <typename T>
void conv2d_forward(const ConvParams<T>& p, cudaStream_t stream);
// The simple direct kernel (one thread per output element), same contract: the oracle of the tests
// and a fallback. Slow: not for inference.
template <typename T>
void conv2d_forward_naive(const ConvParams<T>& p, cudaStream_t stream);
// The one selection: which kernel conv2d_forward runs for these params (shape, element type, the
// kernel variants (conv_detail::conv_variants) and the alignment of the weights and views), and its
// configuration. The dispatcher switches on it; the per-op profile's label names it.
enum class ConvAlgorithm {
  direct_naive,       // conv2d_direct_naive (conv.cu): unaligned weights, shapes no other kernel takes
  dwconv_direct,      // depthwise, conv_depthwise.cu
  dwconv_tiled_f16,   // depthwise, fp16, 16-byte views, grids that fill the GPU (variant dw_tiled_f16)
  direct_small_cin,   // the stem (c_in <= 4), conv_direct.cu
  stem_f16,           // the stem in fp16 (c_in <= 4, c_out 8..128), conv_stem.cu (variant f16_stem)
  narrow_f16,         // fp16, few output channels, short K, many pixels (variants f16_narrow, f16_narrow_stem)
  implicit_gemm_f16,  // every other fp16 conv
  implicit_gemm_wgmma,  // fp16 on Hopper's wgmma (sm_90a), where wgmma_plan takes the conv: conv_wgmma.cu (variant f16_wgmma)
  implicit_gemm_f32,  // every other fp32 conv
  halo_f16,           // fp16 k x k at stride 1, c_out <= 64: input tiles with their halo in shared memory,
                      // conv_halo.cu (variant f16_halo)
  dwconv_rows_f16,    // depthwise, fp16, stride 1, 16-byte views, register-blocked rows (variant dw_rows_f16)
  halo_wgmma,         // fp16 3x3 at stride 1 or 2 on wgmma (sm_90a) from input tiles with their halo,
                      // conv_halo_wgmma.cu (variants f16_halo_wgmma, f16_halo_wgmma_s2)
  stem_mma,           // the stem in fp16 on mma.sync (3x3/2 from 3 channels, c_out <= 128), conv_stem_mma.cu
                      // (variant f16_stem_mma)
  gemm_tma,           // fp16 1x1 (stride 1, groups 1) on wgmma (sm_90a) with TMA loads, persistent and
                      // warp-specialised: conv_gemm_tma.cu (variant f16_gemm_tma)
};
// The last ConvAlgorithm (conv_plan_decode's range). New algorithms go after it, so that the numbers
// already written into tune caches (conv_plan_encode) keep their meaning.
constexpr ConvAlgorithm kLastConvAlgorithm = ConvAlgorithm::gemm_tma;
// The fp16 GEMM kernels' configuration (conv_detail::f16_plan), zero for the other algorithms:
//   implicit_gemm_f16: block tile bm x bn on `warps` warps, K tile bk, split = blocks of one cluster
//                      sharing an output tile (each summing 1/split of K); stages and smem_bytes unused.
//   implicit_gemm_wgmma: block tile bm (128) x bn on `warps` warps (8: two warpgroups; 12: the warp-specialised
//                      kernel, a loading warpgroup and two computing ones), bk = 64, stages = shared-memory
//                      pipeline stages (3 or 4; 4 to 8 warp-specialised); split 1; pingpong: the
//                      warp-specialised kernel's ping-pong schedule (each computing warpgroup on its own
//                      output tiles, 128 x 64 or 128 x 128).
//   narrow_f16:        bm = 128 pixels per tile, bn = the N tile (all of c_out), bk = the whole K
//                      (k*k*cin_pad rounded up to 16), stages = pipeline depth in pixel tiles,
//                      smem_bytes = dynamic shared memory, warps = 4 or 8 per block.
//   halo_f16:          as narrow_f16 (bm = 128 pixels: 8 x 16; warps = 8; stages = halo tiles in flight).
//   dwconv_rows_f16:   bn = channels per block (8, 16 or 32: one warp per 8 channels), the rest 0.
//   halo_wgmma:        bm = output pixels per tile (128: 16 x 8, or 256: 16 x 16), bn = N tile (48, 64, 96, 128,
//                      192), bk = input channels per pipeline stage (16), stages (3 or 4), warps 8, smem_bytes.
//   gemm_tma:          block tile bm (128 or 256) x bn (64, 96, 128, 192, 256), bk = 64, stages = shared-memory
//                      stages (4 to 8), warps 9 (two computing warpgroups and a loading warp); pingpong: each
//                      computing warpgroup on its own output tiles (128 x 64, 96 or 128).
struct ConvPlan {
  ConvAlgorithm algorithm = ConvAlgorithm::direct_naive;
  int bm = 0, bn = 0, bk = 0;
  int split = 1;
  int stages = 0, smem_bytes = 0;
  int warps = 0;
  bool pingpong = false;
  // The same kernel and configuration (smem_bytes follows from the rest).
  bool operator==(const ConvPlan& o) const {
    return algorithm == o.algorithm && bm == o.bm && bn == o.bn && bk == o.bk && split == o.split && stages == o.stages &&
           warps == o.warps && pingpong == o.pingpong;
  }
};
template <typename T>
ConvPlan conv_select(const ConvParams<T>& p);
// "implicit_gemm_f16 split-K 4", "narrow_f16 n32", "depthwise rows_f16", "depthwise tiled_f16", "depthwise", ...
std::string conv_plan_name(const ConvPlan& plan);
// The name with the configuration: "implicit_gemm_f16 128x64x64 w8 split-K 2", "narrow_f16 n16 k144 s4",
// "depthwise rows_f16 c32".
std::string conv_plan_detail(const ConvPlan& plan);

// Kernel tuning (conv_tune.cu). Every plan conv2d_forward can run these params with: conv_select's first,
// then, in fp16, the implicit GEMM's other tiles and splits (conv_detail::implicit_gemm_candidates),
// the wgmma kernel's tiles where it runs p (conv_detail::wgmma_candidates), conv2d_halo_f16's plan and (variant
// f16_halo_wgmma / _s2) conv2d_halo_wgmma's plans where they run p, (variant f16_gemm_tma) conv2d_gemm_tma's plans
// where it runs p, conv2d_narrow_f16 where it takes the shape, and the
// stem kernels for c_in <= 4;
// for depthwise convs dwconv_direct, dwconv_tiled_f16 and dwconv_rows_f16 at each of its channel counts per block. fp32 has the one plan.
// Each plan computes the same conv; each is deterministic, but split-K plans sum K in another order, so
// fp16 results may differ between plans in the last bit.
template <typename T>
std::vector<ConvPlan> conv_candidates(const ConvParams<T>& p);
// conv2d_forward with a given plan (one of conv_candidates(p)).
template <typename T>
void conv2d_forward(const ConvParams<T>& p, const ConvPlan& plan, cudaStream_t stream);
// Times every candidate on p's own buffers (it overwrites p.y) and returns the fastest: per candidate
// one warm-up launch, then the best of 3 runs of 5 launches between events (one run for a candidate
// 1.5x slower than the fastest before it). conv_select's plan is kept
// unless another is more than 3% faster. Synchronises the stream: never call it during capture.
template <typename T>
ConvPlan conv_tune(const ConvParams<T>& p, cudaStream_t stream);

// The tuning protocol for any launch: one warm-up launch, then the best of 3 runs of 5 launches between events
// (YOLO12_CONV_TUNE_QUICK=1: one run of one launch), in ms per launch; no more runs once the best is above
// give_up_above (> 0). Synchronises the stream. conv_tune times each candidate with it (giving up at 1.5x the fastest
// so far), the conv chains' tuning (conv_chain.cu) each way to run a chain.
float tune_time(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream, float give_up_above = 0.f);
// Whether YOLO12_CONV_TUNE_LOG=1 (tuning writes every candidate's time to stderr).
bool tune_log_enabled();

// The tune cache (core/tune_cache.hpp) for convs. A plan as one field of text and back:
// "<algorithm number> <bm> <bn> <bk> <split> <stages> <warps>", then " 1" for a ping-pong plan (smem_bytes
// follows from the rest); conv_plan_decode returns false for text that is not seven integers with a known
// algorithm, optionally followed by an eighth, 0 or 1 (pingpong).
std::string conv_plan_encode(const ConvPlan& plan);
bool conv_plan_decode(const std::string& text, ConvPlan& plan);
// What conv_candidates and their speed depend on: the element type, the attributes, the sizes and batch,
// the views' leading dimensions, the residual and gamma, and the 16-byte alignment of every pointer.
template <typename T>
std::string conv_tune_key(const ConvParams<T>& p);
// conv_tune through the cache: the cached plan where the cache has one for conv_tune_key(p) and it is
// one of conv_candidates(p) (*from_cache = true; nothing runs), else conv_tune's choice, which is stored
// (a stale or foreign entry is replaced). The caller saves the cache.
template <typename T>
ConvPlan conv_tune_cached(const ConvParams<T>& p, cudaStream_t stream, TuneCache& cache, bool* from_cache);

}  // namespace yolo12::cuda
