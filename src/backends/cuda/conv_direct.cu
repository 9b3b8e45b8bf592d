// src/backends/cuda/conv_direct.cu - conv2d_direct_small_cin: direct convolution for convs with few input channels
// (groups 1, c_in <= 4: the stem, 3x3 stride 2 from RGB), NHWC.
//
// As an implicit GEMM such a conv wastes most of each 8-channel K chunk (3 of 8 channels real) and
// gathers its input with scalar loads, so it runs far from the bytes floor (stem at 640, batch 1:
// 20.8 us against a 1.3 us floor). Here one thread computes 8 output channels of one output pixel:
// for every tap it reads the pixel's c_in input values (neighbouring threads share them through L1)
// and multiplies them with the block's copy of the weights in shared memory, stored (K, c_out) fp32
// so that 8 consecutive output channels are two 16-byte reads that the whole warp broadcasts.
// Same fused epilogue as every conv kernel.
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "launch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

constexpr int kSmallCinMax = 4;
constexpr int kSmallCinMaxCout = 64;     // shared weights: k*k*c_in*64 floats, at most 49 KiB (k = 7)
constexpr int kSmallCinThreads = 256;

template <typename T>
struct SmallCinParams : ConvParams<T> {  // the launch (w: (c_out, k_pad) packed, K = tap * cin_pad + ci), plus:
  int c_out_pad, cin_pad, k_pad;
  bool vec_out;  // 8 output channels are one 16-byte store
};

// I: the type of the flat (pixel, chunk) index: int where the count allows, since 64-bit division
// costs tens of instructions and this kernel does only 8 * k * k * c_in FMAs per index.
template <typename T, typename I>
__global__ void __launch_bounds__(kSmallCinThreads) conv2d_direct_small_cin(const SmallCinParams<T> a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  extern __shared__ __align__(16) float ws[];  // (k*k*c_in, c_out_pad): weight of (tap, ci) for channel c
  const int taps = a.k * a.k;
  for (int i = threadIdx.x; i < taps * a.c_in * a.c_out_pad; i += blockDim.x) {
    const int c = i % a.c_out_pad;
    const int tc = i / a.c_out_pad;  // tap * c_in + ci
    const int tap = tc / a.c_in, ci = tc % a.c_in;
    ws[i] = c < a.c_out ? to_float(a.w[static_cast<long long>(c) * a.k_pad + tap * a.cin_pad + ci]) : 0.f;
  }
  __syncthreads();

  const I chunks = a.c_out_pad / 8;
  const I total = static_cast<I>(a.batch) * a.ho * a.wo * chunks;
  for (I idx = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<I>(gridDim.x) * blockDim.x) {
    const int cc = static_cast<int>(idx % chunks);
    const I pix = idx / chunks;  // (n, oy, ox)
    const int ox = static_cast<int>(pix % a.wo);
    const I rest = pix / a.wo;
    const int oy = static_cast<int>(rest % a.ho);
    const int n = static_cast<int>(rest / a.ho);
    const int c0 = cc * 8;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    const T* ximg = a.x + static_cast<long long>(n) * a.h * a.w_in * a.ldx;  // (H, W, ldx)
    for (int ky = 0; ky < a.k; ++ky) {
      const int iy = oy * a.stride - a.pad + ky * a.dilation;
      if (iy < 0 || iy >= a.h) continue;
      for (int kx = 0; kx < a.k; ++kx) {
        const int ix = ox * a.stride - a.pad + kx * a.dilation;
        if (ix < 0 || ix >= a.w_in) continue;
        const T* xp = ximg + (static_cast<long long>(iy) * a.w_in + ix) * a.ldx;  // (c_in)
        const float* wp = ws + ((ky * a.k + kx) * a.c_in) * a.c_out_pad + c0;   // (c_in, c_out_pad) at c0
        for (int ci = 0; ci < a.c_in; ++ci) {
          const float xv = to_float(__ldg(xp + ci));
          const float4 w0 = *reinterpret_cast<const float4*>(wp + ci * a.c_out_pad);
          const float4 w1 = *reinterpret_cast<const float4*>(wp + ci * a.c_out_pad + 4);
          acc[0] = fmaf(xv, w0.x, acc[0]);
          acc[1] = fmaf(xv, w0.y, acc[1]);
          acc[2] = fmaf(xv, w0.z, acc[2]);
          acc[3] = fmaf(xv, w0.w, acc[3]);
          acc[4] = fmaf(xv, w1.x, acc[4]);
          acc[5] = fmaf(xv, w1.y, acc[5]);
          acc[6] = fmaf(xv, w1.z, acc[6]);
          acc[7] = fmaf(xv, w1.w, acc[7]);
        }
      }
    }
    T* yp = a.y + static_cast<long long>(pix) * a.ldy + c0;
    const T* rp = a.residual ? a.residual + static_cast<long long>(pix) * a.ldr + c0 : nullptr;
    if (a.vec_out) {  // c_out % 8 == 0 and 16-byte aligned rows
      constexpr int kPerVec = 16 / static_cast<int>(sizeof(T));  // 8 halves or 4 floats per 16 bytes
      __align__(16) T out[8];
      __align__(16) T res[8];
      if (rp) {
#pragma unroll
        for (int q = 0; q < 8 / kPerVec; ++q)
          reinterpret_cast<uint4*>(res)[q] = __ldg(reinterpret_cast<const uint4*>(rp) + q);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float v = epilogue<T>(acc[j], a.bias, a.gamma, a.silu(), c0 + j);
        if (rp) v += to_float(res[j]);
        out[j] = from_float<T>(v);
      }
#pragma unroll
      for (int q = 0; q < 8 / kPerVec; ++q)
        reinterpret_cast<uint4*>(yp)[q] = reinterpret_cast<const uint4*>(out)[q];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (c0 + j >= a.c_out) break;
        float v = epilogue<T>(acc[j], a.bias, a.gamma, a.silu(), c0 + j);
        if (rp) v += to_float(rp[j]);
        yp[j] = from_float<T>(v);
      }
    }
  }
}

}  // namespace

bool conv2d_direct_small_cin_supports(const ConvShape& s) {
  return s.groups == 1 && s.c_in <= kSmallCinMax && s.c_out <= kSmallCinMaxCout && s.k <= 7;
}

template <typename T>
void launch_conv2d_direct_small_cin(const ConvParams<T>& p, cudaStream_t stream) {
  const GemmLayout l = gemm_layout(p);
  SmallCinParams<T> a;
  static_cast<ConvParams<T>&>(a) = p;
  a.c_out_pad = round_up(p.c_out, 8);
  a.cin_pad = l.cin_pad;
  a.k_pad = l.k_pad;
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  a.vec_out = p.c_out % 8 == 0 && p.ldy % kVec == 0 && aligned(p.y) &&
              (!p.residual || (p.ldr % kVec == 0 && aligned(p.residual)));
  const int smem = p.k * p.k * p.c_in * a.c_out_pad * static_cast<int>(sizeof(float));
  constexpr int kMaxSmem = kSmallCinMax * 49 * kSmallCinMaxCout * 4;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(conv2d_direct_small_cin<T, int>), kMaxSmem));
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(conv2d_direct_small_cin<T, long long>), kMaxSmem));
  const long long total = 1LL * p.batch * p.ho * p.wo * (a.c_out_pad / 8);
  // Grid-stride, at most 8 blocks per SM (device_info()): each block stages the weights once.
  const long long blocks = (total + kSmallCinThreads - 1) / kSmallCinThreads;
  const long long max_blocks = 8LL * device_info().sm_count;
  const int grid = static_cast<int>(blocks < max_blocks ? blocks : max_blocks);
  // int indices while idx + one grid stride stays far from overflow.
  if (total + 1LL * grid * kSmallCinThreads < (1LL << 30))
    launch_kernel(conv2d_direct_small_cin<T, int>, grid, kSmallCinThreads, smem, stream, a);
  else
    launch_kernel(conv2d_direct_small_cin<T, long long>, grid, kSmallCinThreads, smem, stream, a);
}
template void launch_conv2d_direct_small_cin<float>(const ConvParams<float>&, cudaStream_t);
template void launch_conv2d_direct_small_cin<__half>(const ConvParams<__half>&, cudaStream_t);

}  // namespace yolo12::cuda::conv_detail
