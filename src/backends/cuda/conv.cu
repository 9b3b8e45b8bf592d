// src/backends/cuda/conv.cu - convolution entry points: weight packing, can_implement, dispatch by algorithm,
// and conv2d_direct_naive, the simple kernel every faster one is checked against.
//
// Computes, for NHWC views (see conv.cuh),
//   y[n, oy, ox, c] = act(sum_{ky, kx, ci} x[n, oy*s - p + ky*d, ox*s - p + kx*d, g*cin_g + ci]
//                          * W[c, ci, ky, kx] + bias[c]) * gamma[c] + residual[n, oy, ox, c]
// with g = c / n_g the group of output channel c, taps outside the input reading zero.
//
// Dispatch (conv_select, read by conv2d_forward and by the per-op profile's label through bind):
//   weights not 16-byte aligned              -> conv2d_direct_naive      (hand-made params only)
//   depthwise (groups == c_in == c_out > 1)  -> dwconv_direct            (conv_depthwise.cu); in fp16 with
//                                               16-byte views at stride 1 on grids of 4+ warps per SM (3x3:
//                                               16+) dwconv_rows_f16 (variant dw_rows_f16), else
//                                               dwconv_tiled_f16 (variant dw_tiled_f16)
//   fp16, 1x1 s1 g1, gemm_tma_rule()         -> conv2d_gemm_tma          (conv_gemm_tma.cu, sm_90a): wgmma with TMA
//                                               loads, persistent (variant f16_gemm_tma, off)
//   fp16, 3x3 s1/s2, halo_wgmma_rule()       -> conv2d_halo_wgmma        (conv_halo_wgmma.cu, sm_90a): 48+ output
//                                               channels on wgmma from input tiles with their halo (variants
//                                               f16_halo_wgmma, f16_halo_wgmma_s2; off by default)
//   fp16, k x k stride 1, halo_rule() takes  -> conv2d_halo_f16          (conv_halo.cu): up to 64 output channels
//                                               from input tiles with their halo (variant f16_halo)
//   fp16, f16_plan() says narrow_f16         -> conv2d_narrow_f16        (conv_narrow.cu): few output channels,
//                                               short K, many pixels (f16_narrow; wider and longer convs
//                                               with f16_narrow_wide, the stem with f16_narrow_stem)
//   fp16, 3x3/2 from 3 to <= 64 channels     -> conv2d_stem_mma          (conv_stem_mma.cu, variant f16_stem_mma;
//                                               up to 128 channels with f16_stem_mma_wide, on)
//   fp16, c_in <= 4, c_out 8..128 (the stem) -> conv2d_stem_f16          (conv_stem.cu, variant f16_stem)
//   groups 1, c_in <= 4 (the stem)           -> conv2d_direct_small_cin  (conv_direct.cu)
//   fp16, where wgmma_plan() takes it         -> conv2d_implicit_gemm_wgmma (conv_wgmma.cu, variant f16_wgmma,
//                                               Hopper sm_90a: >= 48 channels, K >= 128, grids it fills), or
//                                               its warp-specialised form conv2d_implicit_gemm_wgmma_ws for
//                                               wide long-K tiles on large grids (variant f16_wgmma_ws)
//   everything else, fp16                    -> conv2d_implicit_gemm_f16 (conv_implicit_gemm.cu), split-K
//                                               where f16_plan() says so
//   everything else, fp32                    -> conv2d_implicit_gemm_f32 (conv_implicit_gemm.cu)
// conv2d_direct_naive stays as the oracle of the tests (conv2d_forward_naive).
#include "conv.cuh"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_stem.cuh"
#include "ops.cuh"
#include "launch.cuh"

namespace yolo12::cuda {

using conv_detail::GemmLayout;
using conv_detail::gemm_layout;
using conv_detail::is_depthwise;
using conv_detail::kChunk;
using conv_detail::round_up;

ConvShape conv_shape(const graph::Graph& g, const graph::ConvOp& op, int batch) {
  const graph::Value& in = g.values[static_cast<std::size_t>(op.in.value)];
  const graph::Value& out = g.values[static_cast<std::size_t>(op.out.value)];
  ConvShape s;
  static_cast<graph::ConvAttrs&>(s) = op.attrs;
  s.batch = batch;
  s.h = in.h;
  s.w_in = in.w;
  s.ho = out.h;
  s.wo = out.w;
  return s;
}

std::size_t conv_packed_weight_elems(const ConvShape& s) {
  if (is_depthwise(s)) return static_cast<std::size_t>(s.k) * s.k * round_up(s.c_out, kChunk);
  const GemmLayout l = gemm_layout(s);
  return static_cast<std::size_t>(s.groups) * l.n_g * l.k_pad;
}

template <typename T>
void conv_pack_weights(const ConvShape& s, const float* oihw, T* dst, int tensor_c_out, int tensor_c_in) {
  const int co_n = tensor_c_out > 0 ? tensor_c_out : s.c_out;  // the stored tensor's channels
  const int ci_n = tensor_c_in > 0 ? tensor_c_in : s.c_in;
  const bool widened = co_n != s.c_out || ci_n != s.c_in;
  if (co_n > s.c_out || ci_n > s.c_in || (widened && s.groups != 1))
    throw Error("conv_pack_weights: a tensor of " + std::to_string(co_n) + " x " + std::to_string(ci_n) +
                " channels does not fit a conv of " + std::to_string(s.c_out) + " x " + std::to_string(s.c_in) +
                " in groups of " + std::to_string(s.groups) + " (only groups-1 convs are widened)");
  const GemmLayout l = gemm_layout(s);  // the GEMM packing's (depthwise convs pack their own way, below)
  // The GEMM kernels address one group's packed weights with 32-bit offsets (conv2d_implicit_gemm_f16's B rows).
  if (!is_depthwise(s) && 1LL * l.n_g * l.k_pad > std::numeric_limits<int>::max())
    throw Error("conv_pack_weights: a conv of " + std::to_string(s.c_out) + " x " + std::to_string(s.c_in) + " x " +
                std::to_string(s.k) + "x" + std::to_string(s.k) + " has 2^31 or more weights per group");
  const std::size_t total = conv_packed_weight_elems(s);
  for (std::size_t i = 0; i < total; ++i) dst[i] = T(0.f);
  const int kk = s.k * s.k;
  if (is_depthwise(s)) {  // oihw is (c, 1, k, k)
    const int c_pad = round_up(s.c_out, kChunk);
    for (int c = 0; c < s.c_out; ++c)
      for (int t = 0; t < kk; ++t) dst[static_cast<std::size_t>(t) * c_pad + c] = T(oihw[c * kk + t]);
    return;
  }
  const int cin_t = widened ? ci_n : l.cin_g;  // the tensor's input channels per group (groups 1 if widened)
  for (int co = 0; co < co_n; ++co)  // row co of (groups * n_g, k_pad) is (group, n) = divmod(co, n_g)
    for (int ci = 0; ci < cin_t; ++ci)
      for (int t = 0; t < kk; ++t)
        dst[static_cast<std::size_t>(co) * l.k_pad + t * l.cin_pad + ci] =
            T(oihw[(static_cast<std::size_t>(co) * cin_t + ci) * kk + t]);
}
template void conv_pack_weights<float>(const ConvShape&, const float*, float*, int, int);
template void conv_pack_weights<__half>(const ConvShape&, const float*, __half*, int, int);

bool conv_can_implement(const ConvShape& s) {
  if (s.batch < 1 || s.h < 1 || s.w_in < 1 || s.c_in < 1 || s.c_out < 1) return false;
  if (s.k < 1 || s.stride < 1 || s.pad < 0 || s.dilation < 1 || s.groups < 1) return false;
  if (s.c_in % s.groups != 0 || s.c_out % s.groups != 0) return false;
  const long long span = 1LL * s.dilation * (s.k - 1) + 1;
  if (s.h + 2LL * s.pad < span || s.w_in + 2LL * s.pad < span) return false;
  if (s.ho != s.out_size(s.h) || s.wo != s.out_size(s.w_in)) return false;
  // Per-image element offsets are computed in 32 bits, the batch offset in 64.
  const long long img_in = 1LL * s.h * s.w_in * s.c_in * 4, img_out = 1LL * s.ho * s.wo * s.c_out * 4;
  return img_in < (1LL << 31) && img_out < (1LL << 31);
}

namespace conv_detail {

// Every variant's name (as YOLO12_CONV_VARIANTS spells it) and switch: the one list of them.
struct VariantName {
  const char* name;
  bool ConvVariants::*on;
};
constexpr VariantName kVariantNames[] = {
    {"f16_bk64", &ConvVariants::f16_bk64},         {"dw_one_output", &ConvVariants::dw_one_output},
    {"f16_split_k", &ConvVariants::f16_split_k},   {"f16_narrow", &ConvVariants::f16_narrow},
    {"f16_narrow_wide", &ConvVariants::f16_narrow_wide}, {"f16_narrow_stem", &ConvVariants::f16_narrow_stem},
    {"dw_tiled_f16", &ConvVariants::dw_tiled_f16}, {"f16_fit_smem", &ConvVariants::f16_fit_smem},
    {"f16_tiles2", &ConvVariants::f16_tiles2},     {"dw_tiled_small", &ConvVariants::dw_tiled_small},
    {"f16_stem", &ConvVariants::f16_stem},         {"f16_narrow8w", &ConvVariants::f16_narrow8w},
    {"f16_tiles3", &ConvVariants::f16_tiles3},     {"f16_wide_tiles", &ConvVariants::f16_wide_tiles},
    {"f16_wgmma", &ConvVariants::f16_wgmma},       {"f16_wgmma_ws", &ConvVariants::f16_wgmma_ws},
    {"f16_wgmma_short", &ConvVariants::f16_wgmma_short}, {"f16_wgmma_ping", &ConvVariants::f16_wgmma_ping},
    {"f16_halo", &ConvVariants::f16_halo}, {"dw_rows_f16", &ConvVariants::dw_rows_f16},
    {"dw_rows_small", &ConvVariants::dw_rows_small},
    {"pad_channels", &ConvVariants::pad_channels}, {"raster_n", &ConvVariants::raster_n},
    {"f16_wgmma_waves", &ConvVariants::f16_wgmma_waves}, {"f16_tiles4", &ConvVariants::f16_tiles4},
    {"f16_halo_wgmma", &ConvVariants::f16_halo_wgmma}, {"f16_halo_wgmma_s2", &ConvVariants::f16_halo_wgmma_s2},
    {"f16_stem_mma", &ConvVariants::f16_stem_mma},
    {"f16_stem_mma_wide", &ConvVariants::f16_stem_mma_wide}, {"f16_gemm_tma", &ConvVariants::f16_gemm_tma},
    {"f16_tall_1x1", &ConvVariants::f16_tall_1x1}, {"f16_wgmma_fewrows", &ConvVariants::f16_wgmma_fewrows},
    {"conv_chain", &ConvVariants::conv_chain},     {"f16_stem_pair", &ConvVariants::f16_stem_pair},
    {"dw_rows_c16", &ConvVariants::dw_rows_c16},   {"f16_stem_pair_mma", &ConvVariants::f16_stem_pair_mma},
    {"f16_halo_pair", &ConvVariants::f16_halo_pair}, {"f16_dw_branch", &ConvVariants::f16_dw_branch},
    {"f16_halo_k576", &ConvVariants::f16_halo_k576}, {"f16_wgmma_ws_s2", &ConvVariants::f16_wgmma_ws_s2},
    {"dw_tiled_80", &ConvVariants::dw_tiled_80},     {"f16_n96_short", &ConvVariants::f16_n96_short},
    {"f16_nosplit_small", &ConvVariants::f16_nosplit_small},
};
static_assert(sizeof(kVariantNames) / sizeof(kVariantNames[0]) * sizeof(bool) == sizeof(ConvVariants),
              "every ConvVariants switch has a name here");

ConvVariants parse_conv_variants(const char* list) {
  ConvVariants v;  // the defaults, kept where the list's first entry is "+name" or "-name"
  const std::string s = list ? list : "";
  if (s.empty() || (s[0] != '+' && s[0] != '-'))
    for (const VariantName& n : kVariantNames) v.*n.on = false;
  std::size_t begin = 0;
  while (begin <= s.size()) {
    std::size_t end = s.find(',', begin);
    if (end == std::string::npos) end = s.size();
    std::string name = s.substr(begin, end - begin);
    const bool on = name.empty() || name[0] != '-';
    if (!name.empty() && (name[0] == '+' || name[0] == '-')) name.erase(0, 1);
    for (const VariantName& n : kVariantNames)
      if (name == n.name) v.*n.on = on;
    begin = end + 1;
  }
  return v;
}

ConvVariants& conv_variants() {
  // YOLO12_CONV_VARIANTS (comma-separated names, or "none"), when set, replaces the defaults, so that
  // the benchmark and the model tests can compare variants without a rebuild.
  static ConvVariants v = [] {
    const char* env = std::getenv("YOLO12_CONV_VARIANTS");
    return env ? parse_conv_variants(env) : ConvVariants();
  }();
  return v;
}

// One thread per output element (n, oy, ox, c), c fastest so that stores coalesce.
template <typename T>
struct DirectNaiveParams {
  ConvParams<T> p;
  GemmLayout l;
  bool depthwise;
};

template <typename T>
__global__ void conv2d_direct_naive(const DirectNaiveParams<T> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const ConvParams<T>& p = a.p;
  const ConvShape& s = p;
  const long long total = 1LL * s.batch * s.ho * s.wo * s.c_out;
  for (long long i = blockIdx.x * 1LL * blockDim.x + threadIdx.x; i < total; i += 1LL * gridDim.x * blockDim.x) {
    const int c = static_cast<int>(i % s.c_out);
    const long long pix = i / s.c_out;
    const int ox = static_cast<int>(pix % s.wo);
    const int oy = static_cast<int>((pix / s.wo) % s.ho);
    const int n = static_cast<int>(pix / (1LL * s.wo * s.ho));
    const int g = a.depthwise ? c : c / a.l.n_g;
    const int cin_g = a.depthwise ? 1 : a.l.cin_g;
    float acc = 0.f;
    for (int ky = 0; ky < s.k; ++ky) {
      const int iy = oy * s.stride - s.pad + ky * s.dilation;
      if (iy < 0 || iy >= s.h) continue;
      for (int kx = 0; kx < s.k; ++kx) {
        const int ix = ox * s.stride - s.pad + kx * s.dilation;
        if (ix < 0 || ix >= s.w_in) continue;
        const T* xp = p.x + ((1LL * n * s.h + iy) * s.w_in + ix) * p.ldx + g * cin_g;  // (cin_g)
        const int t = ky * s.k + kx;
        if (a.depthwise) {
          acc += to_float(xp[0]) * to_float(p.w[t * ((s.c_out + kChunk - 1) / kChunk * kChunk) + c]);
        } else {
          const T* wp = p.w + 1LL * c * a.l.k_pad + t * a.l.cin_pad;  // (cin_g)
          for (int ci = 0; ci < cin_g; ++ci) acc += to_float(xp[ci]) * to_float(wp[ci]);
        }
      }
    }
    float v = epilogue<float>(acc, p.bias, p.gamma, p.silu(), c);
    if (p.residual) v += to_float(p.residual[pix * p.ldr + c]);
    p.y[pix * p.ldy + c] = from_float<T>(v);
  }
}

template <typename T>
void launch_conv2d_direct_naive(const ConvParams<T>& p, cudaStream_t stream) {
  DirectNaiveParams<T> a{p, gemm_layout(p), is_depthwise(p)};
  const long long total = 1LL * p.batch * p.ho * p.wo * p.c_out;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  launch_kernel(conv2d_direct_naive<T>, static_cast<unsigned>(blocks < 65536 * 8 ? blocks : 65536 * 8), threads, 0, stream, a);
}
template void launch_conv2d_direct_naive<float>(const ConvParams<float>&, cudaStream_t);
template void launch_conv2d_direct_naive<__half>(const ConvParams<__half>&, cudaStream_t);

}  // namespace conv_detail

template <typename T>
ConvPlan conv_select(const ConvParams<T>& p) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  ConvPlan plan;  // direct_naive
  // The tiled kernels read packed weights in 16-byte vectors; the executor's weight buffer is
  // 256-byte aligned, so the naive kernel is only a safety net for hand-made parameters.
  const bool w_aligned = reinterpret_cast<std::uintptr_t>(p.w) % 16 == 0;
  if (!w_aligned) return plan;
  if (is_depthwise(p)) {
    if (!conv_detail::dwconv_direct_supports(p)) return plan;
    plan.algorithm = ConvAlgorithm::dwconv_direct;
    if constexpr (kHalf) {
      if (conv_detail::dwconv_rows_f16_takes(p)) return conv_detail::dwconv_rows_f16_plan(p, device_info());
      if (conv_detail::dwconv_tiled_f16_takes(p)) plan.algorithm = ConvAlgorithm::dwconv_tiled_f16;
    }
    return plan;
  }
  const bool small_cin = conv_detail::conv2d_direct_small_cin_supports(p);
  if constexpr (kHalf) {
    // gemm_tma (under its variant) where it runs p
    if (conv_detail::conv_variants().f16_gemm_tma && conv_detail::gemm_tma_runs(p)) {
      const ConvPlan tma = conv_detail::gemm_tma_rule(p, device_info());
      if (tma.algorithm == ConvAlgorithm::gemm_tma) return tma;
    }
    // halo_wgmma (under its variants) where it runs p, then halo_f16, then narrow_f16 (the small-c_in convs too,
    // under their own variant) or implicit_gemm_f16
    if (conv_detail::halo_wgmma_enabled(p, conv_detail::conv_variants()) && conv_detail::halo_wgmma_runs(p)) {
      const ConvPlan halo = conv_detail::halo_wgmma_rule(p, device_info());
      if (halo.algorithm == ConvAlgorithm::halo_wgmma) return halo;
    }
    if (conv_detail::conv_variants().f16_halo && conv_detail::halo_runs(p)) {
      const ConvPlan halo = conv_detail::halo_rule(p, device_info());
      if (halo.algorithm == ConvAlgorithm::halo_f16) return halo;
    }
    const ConvPlan f16 = conv_detail::f16_plan(p, conv_detail::wgmma_runs(p));
    if (f16.algorithm == ConvAlgorithm::narrow_f16) return f16;
    if (conv_detail::conv_variants().f16_stem_mma && conv_detail::stem_mma_preferred(p)) {
      plan.algorithm = ConvAlgorithm::stem_mma;
      return plan;
    }
    if (conv_detail::conv_variants().f16_stem && conv_detail::conv2d_stem_f16_supports(p)) {
      plan.algorithm = ConvAlgorithm::stem_f16;  // also over 64 channels (yolo12x's 96), where small_cin stops
      return plan;
    }
    if (!small_cin) return f16;
  }
  plan.algorithm = small_cin ? ConvAlgorithm::direct_small_cin : ConvAlgorithm::implicit_gemm_f32;
  return plan;
}
template ConvPlan conv_select<float>(const ConvParams<float>&);
template ConvPlan conv_select<__half>(const ConvParams<__half>&);

std::string conv_plan_name(const ConvPlan& plan) {
  switch (plan.algorithm) {
    case ConvAlgorithm::direct_naive: return "direct_naive";
    case ConvAlgorithm::dwconv_direct: return "depthwise";
    case ConvAlgorithm::dwconv_tiled_f16: return "depthwise tiled_f16";
    case ConvAlgorithm::direct_small_cin: return "direct_small_cin";
    case ConvAlgorithm::stem_f16: return "stem_f16";
    case ConvAlgorithm::narrow_f16: return "narrow_f16 n" + std::to_string(plan.bn);
    case ConvAlgorithm::halo_f16: return "halo_f16 n" + std::to_string(plan.bn);
    case ConvAlgorithm::implicit_gemm_f32: return "implicit_gemm_f32";
    case ConvAlgorithm::implicit_gemm_f16:
      return plan.split > 1 ? "implicit_gemm_f16 split-K " + std::to_string(plan.split) : "implicit_gemm_f16";
    case ConvAlgorithm::implicit_gemm_wgmma: return "implicit_gemm_wgmma";
    case ConvAlgorithm::dwconv_rows_f16: return "depthwise rows_f16";
    case ConvAlgorithm::halo_wgmma: return "halo_wgmma";
    case ConvAlgorithm::stem_mma: return "stem_mma";
    case ConvAlgorithm::gemm_tma: return "gemm_tma";
  }
  return "?";
}

std::string conv_plan_detail(const ConvPlan& plan) {
  std::string name = conv_plan_name(plan);
  if (plan.algorithm == ConvAlgorithm::implicit_gemm_f16) {  // the tile after the kernel's name, before any split
    const std::size_t kernel = std::string("implicit_gemm_f16").size();
    name.insert(kernel, " " + std::to_string(plan.bm) + "x" + std::to_string(plan.bn) + "x" + std::to_string(plan.bk) +
                            " w" + std::to_string(plan.warps));
  } else if (plan.algorithm == ConvAlgorithm::implicit_gemm_wgmma) {
    name += " " + std::to_string(plan.bm) + "x" + std::to_string(plan.bn) + "x" + std::to_string(plan.bk) + " s" +
            std::to_string(plan.stages) + (plan.warps == conv_detail::kWgmmaWsWarps ? " ws" : "") +
            (plan.pingpong ? " pingpong" : "");
  } else if (plan.algorithm == ConvAlgorithm::narrow_f16 || plan.algorithm == ConvAlgorithm::halo_f16) {
    name += " k" + std::to_string(plan.bk) + " s" + std::to_string(plan.stages) + " w" + std::to_string(plan.warps);
  } else if (plan.algorithm == ConvAlgorithm::dwconv_rows_f16) {
    name += " c" + std::to_string(plan.bn);
  } else if (plan.algorithm == ConvAlgorithm::halo_wgmma || plan.algorithm == ConvAlgorithm::gemm_tma) {
    name += " " + std::to_string(plan.bm) + "x" + std::to_string(plan.bn) + " s" + std::to_string(plan.stages) +
            (plan.pingpong ? " pingpong" : "");
  }
  return name;
}

template <typename T>
void conv2d_forward(const ConvParams<T>& p, cudaStream_t stream) {
  conv2d_forward(p, conv_select(p), stream);
}
template void conv2d_forward<float>(const ConvParams<float>&, cudaStream_t);
template void conv2d_forward<__half>(const ConvParams<__half>&, cudaStream_t);

template <typename T>
void conv2d_forward(const ConvParams<T>& p, const ConvPlan& plan, cudaStream_t stream) {
  switch (plan.algorithm) {
    case ConvAlgorithm::direct_naive: conv_detail::launch_conv2d_direct_naive(p, stream); break;
    case ConvAlgorithm::dwconv_direct: conv_detail::launch_dwconv_direct(p, stream); break;
    case ConvAlgorithm::direct_small_cin: conv_detail::launch_conv2d_direct_small_cin(p, stream); break;
    case ConvAlgorithm::stem_f16:
    case ConvAlgorithm::stem_mma:
    case ConvAlgorithm::dwconv_tiled_f16:
    case ConvAlgorithm::dwconv_rows_f16:
    case ConvAlgorithm::narrow_f16:
    case ConvAlgorithm::halo_f16:
    case ConvAlgorithm::halo_wgmma:
    case ConvAlgorithm::gemm_tma:
    case ConvAlgorithm::implicit_gemm_f16:
    case ConvAlgorithm::implicit_gemm_wgmma:
    case ConvAlgorithm::implicit_gemm_f32:
      if constexpr (std::is_same_v<T, __half>) {
        if (plan.algorithm == ConvAlgorithm::stem_f16) conv_detail::launch_conv2d_stem_f16(p, stream);
        else if (plan.algorithm == ConvAlgorithm::stem_mma) conv_detail::launch_conv2d_stem_mma(p, stream);
        else if (plan.algorithm == ConvAlgorithm::dwconv_tiled_f16) conv_detail::launch_dwconv_tiled_f16(p, stream);
        else if (plan.algorithm == ConvAlgorithm::dwconv_rows_f16) conv_detail::launch_dwconv_rows_f16(p, plan, stream);
        else if (plan.algorithm == ConvAlgorithm::narrow_f16) conv_detail::launch_conv2d_narrow_f16(p, plan, stream);
        else if (plan.algorithm == ConvAlgorithm::halo_f16) conv_detail::launch_conv2d_halo_f16(p, plan, stream);
        else if (plan.algorithm == ConvAlgorithm::halo_wgmma) conv_detail::launch_conv2d_halo_wgmma(p, plan, stream);
        else if (plan.algorithm == ConvAlgorithm::gemm_tma) conv_detail::launch_conv2d_gemm_tma(p, plan, stream);
        else if (plan.algorithm == ConvAlgorithm::implicit_gemm_wgmma) conv_detail::launch_conv2d_implicit_gemm_wgmma(p, plan, stream);
        else conv_detail::launch_conv2d_implicit_gemm_f16(p, plan, stream);
      } else {
        conv_detail::launch_conv2d_implicit_gemm_f32(p, stream);  // conv_select gives fp32 no fp16 kernel
      }
      break;
  }
}
template void conv2d_forward<float>(const ConvParams<float>&, const ConvPlan&, cudaStream_t);
template void conv2d_forward<__half>(const ConvParams<__half>&, const ConvPlan&, cudaStream_t);

template <typename T>
void conv2d_forward_naive(const ConvParams<T>& p, cudaStream_t stream) {
  conv_detail::launch_conv2d_direct_naive(p, stream);
}
template void conv2d_forward_naive<float>(const ConvParams<float>&, cudaStream_t);
template void conv2d_forward_naive<__half>(const ConvParams<__half>&, cudaStream_t);

template <typename T>
ConvParams<T> conv_params(const graph::ConvOp& op, const BindContext<T>& ctx) {
  ConvParams<T> p;
  static_cast<ConvShape&>(p) = conv_shape(ctx.graph, op, ctx.max_batch);
  const ConvShape& s = p;
  if (!conv_can_implement(s)) {
    std::ostringstream m;
    m << "conv " << s.c_in << "->" << s.c_out << " k" << s.k << " s" << s.stride << " g" << s.groups << " d"
      << s.dilation << " on " << s.h << "x" << s.w_in;
    ctx.cannot_run(m.str());
  }
  p.x = ctx.ptr(op.in);
  p.ldx = ctx.ld(op.in);
  p.w = ctx.template weight<T>(op.weight);
  p.bias = ctx.template weight<float>(op.bias);
  p.gamma = op.gamma.empty() ? nullptr : ctx.template weight<float>(op.gamma);
  p.residual = ctx.ptr(op.residual);
  p.ldr = ctx.ld(op.residual);
  p.y = ctx.ptr(op.out);
  p.ldy = ctx.ld(op.out);
  return p;
}
template ConvParams<float> conv_params<float>(const graph::ConvOp&, const BindContext<float>&);
template ConvParams<__half> conv_params<__half>(const graph::ConvOp&, const BindContext<__half>&);

template <typename T>
Step bind(const graph::ConvOp& op, const BindContext<T>& ctx) {
  const ConvParams<T> p = conv_params(op, ctx);
  const ConvShape& s = p;
  // The model's channels, and "(+n)" where graph::pad_channels widened them: "conv 1x1/1 384->460(+4) ...".
  const auto channels = [](int tensor, int attrs) {
    return std::to_string(tensor) + (attrs > tensor ? "(+" + std::to_string(attrs - tensor) + ")" : "");
  };
  std::ostringstream label;
  label << "conv " << s.k << "x" << s.k << "/" << s.stride << " " << channels(op.tensor_c_in(), s.c_in) << "->"
        << channels(op.tensor_c_out(), s.c_out) << " g" << s.groups << " " << s.h << "x" << s.w_in << "->" << s.ho
        << "x" << s.wo << (p.residual ? " +res" : "") << " [" << conv_plan_name(conv_select(p)) << "]";
  // Bytes (activations and weights) as the kernels move them, widened channels included; FLOPs as the model's
  // conv has them, so that a widened conv's TFLOP/s count useful work only and compare with it unwidened.
  const double in = 1.0 * s.h * s.w_in * s.c_in, out = 1.0 * s.ho * s.wo * s.c_out;
  const double macs_per_output = 1.0 * (s.c_in / s.groups) * s.k * s.k;
  const double model_macs = 1.0 * s.ho * s.wo * op.tensor_c_out() * (op.tensor_c_in() / s.groups) * s.k * s.k;
  Step step;
  // The plans step.tune chose, per batch (none: conv_select's). Shared by the two closures, owned by them.
  auto tuned = std::make_shared<std::map<int, ConvPlan>>();
  step.run = [p, tuned](int batch, cudaStream_t stream) {
    ConvParams<T> q = p;
    q.batch = batch;
    const auto it = tuned->find(batch);
    if (it != tuned->end()) conv2d_forward<T>(q, it->second, stream);
    else conv2d_forward<T>(q, stream);
  };
  if constexpr (std::is_same_v<T, __half>)  // fp32 has one kernel per conv: nothing to tune
    step.tune = [p, tuned](int batch, cudaStream_t stream, TuneCache* cache) {
      ConvParams<T> q = p;
      q.batch = batch;
      Step::Tuned out;
      const ConvPlan plan = cache ? conv_tune_cached<T>(q, stream, *cache, &out.cached) : conv_tune<T>(q, stream);
      (*tuned)[batch] = plan;
      out.plan = conv_plan_detail(plan);
      return out;
    };
  step.label = label.str();
  step.bytes_per_image = sizeof(T) * (in + out * (p.residual ? 2 : 1));
  step.weight_bytes = sizeof(T) * s.c_out * macs_per_output;
  step.flops_per_image = 2.0 * model_macs;
  return step;
}
template Step bind<float>(const graph::ConvOp&, const BindContext<float>&);
template Step bind<__half>(const graph::ConvOp&, const BindContext<__half>&);

}  // namespace yolo12::cuda
