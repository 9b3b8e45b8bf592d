// src/backends/cuda/detect_backward.cu - see detect_backward.cuh. One thread per (image, anchor): the
// DFL softmax of each side is recomputed from the logits (reg_max values, in registers up to 64).
#include "detect_backward.cuh"

#include <string>

#include "common.cuh"
#include "yolo12/errors.hpp"

namespace yolo12::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBins = 64;

template <typename T>
__global__ void __launch_bounds__(kThreads) detect_decode_backward_kernel(const DetectBackwardParams<T> p) {
  const int n = blockIdx.y;
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= p.anchors) return;
  int local = 0;
  const int level = anchor_level(p.h, p.w, p.levels, a, local);
  const long long pix = static_cast<long long>(n) * p.h[level] * p.w[level] + local;
  const T* box = p.box[level] + pix * p.ldb[level];    // (4 * reg_max)
  const T* cls = p.cls[level] + pix * p.ldc[level];    // (nc)
  T* dbox = p.dbox[level] + pix * p.lddb[level];       // (4 * reg_max)
  T* dcls = p.dcls[level] + pix * p.lddc[level];       // (nc)
  const long long A = p.anchors;
  const T* g = p.dout + static_cast<long long>(n) * (4 + p.nc) * A + a;  // column a: channel ch at g[ch * A]
  const float s = p.stride[level];
  const float g_cx = to_f32(g[0]), g_cy = to_f32(g[A]), g_w = to_f32(g[2 * A]), g_h = to_f32(g[3 * A]);
  const float dside[4] = {s * (g_w - 0.5f * g_cx), s * (g_h - 0.5f * g_cy), s * (g_w + 0.5f * g_cx),
                          s * (g_h + 0.5f * g_cy)};  // left, top, right, bottom
  for (int side = 0; side < 4; ++side) {
    const T* bins = box + side * p.reg_max;
    float e[kMaxBins];
    float m = to_f32(bins[0]);
    for (int i = 1; i < p.reg_max; ++i) m = fmaxf(m, to_f32(bins[i]));
    float sum = 0.f, acc = 0.f;
    for (int i = 0; i < p.reg_max; ++i) {
      e[i] = expf(to_f32(bins[i]) - m);
      sum += e[i];
      acc += e[i] * static_cast<float>(i);
    }
    const float inv = 1.f / sum, dist = acc * inv;
    for (int i = 0; i < p.reg_max; ++i)
      dbox[side * p.reg_max + i] = from_f32<T>(e[i] * inv * (static_cast<float>(i) - dist) * dside[side]);
  }
  for (int c = 0; c < p.nc; ++c) {
    const float sg = 1.f / (1.f + expf(-to_f32(cls[c])));
    dcls[c] = from_f32<T>(to_f32(g[(4 + c) * A]) * sg * (1.f - sg));
  }
}

}  // namespace

template <typename T>
void detect_decode_backward(const DetectBackwardParams<T>& p, cudaStream_t stream) {
  auto fail = [](const std::string& what) { throw InputError("detect decode backward: " + what); };
  if (!detect_can_implement(p.levels, p.reg_max, p.nc, 1) || p.levels < 1) fail("unsupported levels / reg_max / nc");
  if (p.batch < 1 || p.batch > 65535 || p.dout == nullptr) fail("batch outside [1, 65535] or null gradient");
  long long anchors = 0;
  for (int l = 0; l < p.levels; ++l) {
    if (!p.box[l] || !p.cls[l] || !p.dbox[l] || !p.dcls[l]) fail("null map at level " + std::to_string(l));
    if (p.ldb[l] < 4 * p.reg_max || p.lddb[l] < 4 * p.reg_max || p.ldc[l] < p.nc || p.lddc[l] < p.nc)
      fail("row stride smaller than the channels at level " + std::to_string(l));
    anchors += 1LL * p.h[l] * p.w[l];
  }
  if (anchors != p.anchors) fail("anchors != sum of H * W over the levels");
  const dim3 grid(ceil_div(p.anchors, kThreads), p.batch);
  detect_decode_backward_kernel<T><<<grid, kThreads, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
}

template void detect_decode_backward<float>(const DetectBackwardParams<float>&, cudaStream_t);
template void detect_decode_backward<__half>(const DetectBackwardParams<__half>&, cudaStream_t);

}  // namespace yolo12::cuda
