// src/backends/cuda/conv.cu - convolution entry points: weight packing, can_implement, dispatch by algorithm,
// and conv2d_direct_naive, the simple kernel every faster one is checked against.
//
// Computes, for NHWC views (see conv.cuh),
//   y[n, oy, ox, c] = act(sum_{ky, kx, ci} x[n, oy*s - p + ky*d, ox*s - p + kx*d, g*cin_g + ci]
//                          * W[c, ci, ky, kx] + bias[c]) * gamma[c] + residual[n, oy, ox, c]
// with g = c / n_g the group of output channel c, taps outside the input reading zero.
//
// Dispatch (conv_algorithm, read by conv2d_forward and conv_algorithm_name):
//   depthwise (groups == c_in == c_out > 1)  -> dwconv_direct            (conv_depthwise.cu), in fp16 over
//                                               large grids dwconv_tiled_f16 (variant dw_tiled_f16)
//   fp16, f16_plan() says Narrow             -> conv2d_narrow_f16        (conv_narrow.cu): few output channels,
//                                               short K, many pixels (the stem too, variant f16_narrow_stem)
//   groups 1, c_in <= 4 (the stem)           -> conv2d_direct_small_cin  (conv_direct.cu)
//   everything else, fp16                    -> conv2d_implicit_gemm_f16 (conv_implicit_gemm.cu)
//   everything else, fp32                    -> conv2d_implicit_gemm_f32 (conv_implicit_gemm.cu)
// conv2d_direct_naive stays as the oracle of the tests (conv2d_forward_naive).
#include "conv.cuh"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "common.cuh"
#include "conv_detail.cuh"

namespace yolo12::cuda {

using conv_detail::GemmLayout;
using conv_detail::gemm_layout;
using conv_detail::is_depthwise;
using conv_detail::kChunk;
using conv_detail::round_up;

std::size_t conv_packed_weight_elems(const ConvShape& s) {
  if (is_depthwise(s)) return static_cast<std::size_t>(s.k) * s.k * round_up(s.c_out, kChunk);
  const GemmLayout l = gemm_layout(s);
  return static_cast<std::size_t>(s.groups) * l.n_g * l.k_pad;
}

template <typename T>
void conv_pack_weights(const ConvShape& s, const float* oihw, T* dst) {
  const std::size_t total = conv_packed_weight_elems(s);
  for (std::size_t i = 0; i < total; ++i) dst[i] = T(0.f);
  const int kk = s.k * s.k;
  if (is_depthwise(s)) {  // oihw is (c, 1, k, k)
    const int c_pad = round_up(s.c_out, kChunk);
    for (int c = 0; c < s.c_out; ++c)
      for (int t = 0; t < kk; ++t) dst[static_cast<std::size_t>(t) * c_pad + c] = T(oihw[c * kk + t]);
    return;
  }
  const GemmLayout l = gemm_layout(s);
  for (int co = 0; co < s.c_out; ++co)  // row co of (groups * n_g, k_pad) is (group, n) = divmod(co, n_g)
    for (int ci = 0; ci < l.cin_g; ++ci)
      for (int t = 0; t < kk; ++t)
        dst[static_cast<std::size_t>(co) * l.k_pad + t * l.cin_pad + ci] =
            T(oihw[(static_cast<std::size_t>(co) * l.cin_g + ci) * kk + t]);
}
template void conv_pack_weights<float>(const ConvShape&, const float*, float*);
template void conv_pack_weights<__half>(const ConvShape&, const float*, __half*);

bool conv_can_implement(const ConvShape& s) {
  if (s.batch < 1 || s.h < 1 || s.w < 1 || s.c_in < 1 || s.c_out < 1) return false;
  if (s.k < 1 || s.stride < 1 || s.pad < 0 || s.dilation < 1 || s.groups < 1) return false;
  if (s.c_in % s.groups != 0 || s.c_out % s.groups != 0) return false;
  const int span = s.dilation * (s.k - 1) + 1;
  if (s.h + 2 * s.pad < span || s.w + 2 * s.pad < span) return false;
  if (s.ho != (s.h + 2 * s.pad - span) / s.stride + 1) return false;
  if (s.wo != (s.w + 2 * s.pad - span) / s.stride + 1) return false;
  // Per-image element offsets are computed in 32 bits, the batch offset in 64.
  const long long img_in = 1LL * s.h * s.w * s.c_in * 4, img_out = 1LL * s.ho * s.wo * s.c_out * 4;
  return img_in < (1LL << 31) && img_out < (1LL << 31);
}

namespace conv_detail {

ConvVariants parse_conv_variants(const char* list) {
  ConvVariants v;
  v.f16_bk64 = v.dw_one_output = v.f16_split_k = v.f16_narrow = v.f16_narrow_stem = v.dw_tiled_f16 = false;
  const std::string s = list ? list : "";
  std::size_t begin = 0;
  while (begin <= s.size()) {
    std::size_t end = s.find(',', begin);
    if (end == std::string::npos) end = s.size();
    const std::string name = s.substr(begin, end - begin);
    if (name == "f16_bk64") v.f16_bk64 = true;
    else if (name == "dw_one_output") v.dw_one_output = true;
    else if (name == "f16_split_k") v.f16_split_k = true;
    else if (name == "f16_narrow") v.f16_narrow = true;
    else if (name == "f16_narrow_stem") v.f16_narrow_stem = true;
    else if (name == "dw_tiled_f16") v.dw_tiled_f16 = true;
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

GpuFacts gpu_facts() {
  GpuFacts f;
  int dev = 0, sms = 0, smem_sm = 0, optin = 0, reserved = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) != cudaSuccess) {
    (void)cudaGetLastError();  // no device here: plan for the H200, and leave no error behind for a later check
    return f;
  }
  f.sms = sms;
  f.smem_sm = smem_sm;
  f.smem_block_optin = optin;
  f.smem_block_reserved = reserved;
  return f;
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
  const ConvParams<T>& p = a.p;
  const ConvShape& s = p.s;
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
        if (ix < 0 || ix >= s.w) continue;
        const T* xp = p.x + ((1LL * n * s.h + iy) * s.w + ix) * p.ldx + g * cin_g;  // (cin_g)
        const int t = ky * s.k + kx;
        if (a.depthwise) {
          acc += to_float(xp[0]) * to_float(p.w[t * ((s.c_out + kChunk - 1) / kChunk * kChunk) + c]);
        } else {
          const T* wp = p.w + 1LL * c * a.l.k_pad + t * a.l.cin_pad;  // (cin_g)
          for (int ci = 0; ci < cin_g; ++ci) acc += to_float(xp[ci]) * to_float(wp[ci]);
        }
      }
    }
    float v = epilogue(acc, p.bias, p.gamma, p.silu, c);
    if (p.residual) v += to_float(p.residual[pix * p.ldr + c]);
    p.y[pix * p.ldy + c] = from_float<T>(v);
  }
}

template <typename T>
void launch_conv2d_direct_naive(const ConvParams<T>& p, cudaStream_t stream) {
  DirectNaiveParams<T> a{p, gemm_layout(p.s), is_depthwise(p.s)};
  const long long total = 1LL * p.s.batch * p.s.ho * p.s.wo * p.s.c_out;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  conv2d_direct_naive<T><<<static_cast<int>(blocks < 65536 * 8 ? blocks : 65536 * 8), threads, 0, stream>>>(a);
  YOLO12_CUDA_CHECK_LAUNCH();
}
template void launch_conv2d_direct_naive<float>(const ConvParams<float>&, cudaStream_t);
template void launch_conv2d_direct_naive<__half>(const ConvParams<__half>&, cudaStream_t);

ConvAlgorithm conv_algorithm(const ConvShape& s, bool fp16) {
  if (is_depthwise(s)) {
    if (!dwconv_direct_supports(s)) return ConvAlgorithm::DirectNaive;
    return fp16 && dwconv_tiled_f16_takes(s) ? ConvAlgorithm::DepthwiseTiledF16 : ConvAlgorithm::Depthwise;
  }
  if (fp16 && f16_plan(s).kernel == F16Kernel::Narrow) return ConvAlgorithm::NarrowF16;
  if (conv2d_direct_small_cin_supports(s)) return ConvAlgorithm::DirectSmallCin;
  return fp16 ? ConvAlgorithm::ImplicitGemmF16 : ConvAlgorithm::ImplicitGemmF32;
}

}  // namespace conv_detail

template <typename T>
void conv2d_forward(const ConvParams<T>& p, cudaStream_t stream) {
  using conv_detail::ConvAlgorithm;
  constexpr bool kHalf = std::is_same_v<T, __half>;
  // The tiled kernels read packed weights in 16-byte vectors; the executor's weight buffer is
  // 256-byte aligned, so the naive branch is only a safety net for hand-made parameters.
  const bool w_aligned = reinterpret_cast<std::uintptr_t>(p.w) % 16 == 0;
  const ConvAlgorithm algo = w_aligned ? conv_detail::conv_algorithm(p.s, kHalf) : ConvAlgorithm::DirectNaive;
  switch (algo) {
    case ConvAlgorithm::DirectNaive: conv_detail::launch_conv2d_direct_naive(p, stream); break;
    case ConvAlgorithm::Depthwise:
    case ConvAlgorithm::DepthwiseTiledF16:  // launch_dwconv_direct checks the views' alignment too
      conv_detail::launch_dwconv_direct(p, stream);
      break;
    case ConvAlgorithm::DirectSmallCin: conv_detail::launch_conv2d_direct_small_cin(p, stream); break;
    case ConvAlgorithm::NarrowF16:
    case ConvAlgorithm::ImplicitGemmF16:
    case ConvAlgorithm::ImplicitGemmF32:
      if constexpr (kHalf) {
        if (algo == ConvAlgorithm::NarrowF16) conv_detail::launch_conv2d_narrow_f16(p, conv_detail::f16_plan(p.s), stream);
        else conv_detail::launch_conv2d_implicit_gemm_f16(p, stream);
      } else {
        conv_detail::launch_conv2d_implicit_gemm_f32(p, stream);
      }
      break;
  }
}
template void conv2d_forward<float>(const ConvParams<float>&, cudaStream_t);
template void conv2d_forward<__half>(const ConvParams<__half>&, cudaStream_t);

const char* conv_algorithm_name(const ConvShape& s, bool fp16) {
  using conv_detail::ConvAlgorithm;
  switch (conv_detail::conv_algorithm(s, fp16)) {
    case ConvAlgorithm::DirectNaive: return "direct_naive";
    case ConvAlgorithm::Depthwise: return "depthwise";
    case ConvAlgorithm::DepthwiseTiledF16: return "depthwise tiled_f16";
    case ConvAlgorithm::DirectSmallCin: return "direct_small_cin";
    case ConvAlgorithm::ImplicitGemmF32: return "implicit_gemm_f32";
    case ConvAlgorithm::NarrowF16:
      switch (conv_detail::f16_plan(s).bn) {
        case 8: return "narrow_f16 n8";
        case 16: return "narrow_f16 n16";
        case 32: return "narrow_f16 n32";
        case 48: return "narrow_f16 n48";
        case 64: return "narrow_f16 n64";
        case 80: return "narrow_f16 n80";
        case 96: return "narrow_f16 n96";
        default: return "narrow_f16 n128";
      }
    case ConvAlgorithm::ImplicitGemmF16:
      switch (conv_detail::f16_plan(s).split) {
        case 8: return "implicit_gemm_f16 split-K 8";
        case 4: return "implicit_gemm_f16 split-K 4";
        case 2: return "implicit_gemm_f16 split-K 2";
        default: return "implicit_gemm_f16";
      }
  }
  return "implicit_gemm_f16";
}

template <typename T>
void conv2d_forward_naive(const ConvParams<T>& p, cudaStream_t stream) {
  conv_detail::launch_conv2d_direct_naive(p, stream);
}
template void conv2d_forward_naive<float>(const ConvParams<float>&, cudaStream_t);
template void conv2d_forward_naive<__half>(const ConvParams<__half>&, cudaStream_t);

}  // namespace yolo12::cuda
