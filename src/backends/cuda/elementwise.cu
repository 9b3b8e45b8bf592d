// src/backends/cuda/elementwise.cu - upsample, max-pool, channel copy and the input cast (see elementwise.cuh),
// and the binds of the Upsample, MaxPool and Copy ops.
//
// All four are memory-bound. The general kernels are one thread per output element, channel fastest,
// so a warp reads and writes consecutive channels of one pixel (coalesced for the NHWC views the
// executor hands in); a grid-stride loop keeps the grid size bounded whatever the batch.
// Upsample and channel copy also have a 16-byte-vector kernel, taken when the channel count, both
// leading dimensions and both base pointers allow 16-byte accesses (every yolo12 layer does): one
// thread per vector, the upsample reading each input vector once and writing it factor^2 times, with
// 32-bit index arithmetic where the element count allows (64-bit division is slow on the GPU). At
// batch 32 the per-element upsample ran at ~265 GB/s on the H200 (profile of 2026-11-30).
#include "elementwise.cuh"

#include <cstdint>
#include <limits>
#include <string>

#include "common.cuh"
#include "ops.cuh"
#include "launch.cuh"

namespace yolo12::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned grid_for(long long n) {
  long long blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535LL * 8) blocks = 65535LL * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

template <typename T>
__global__ void upsample_nearest_kernel(UpsampleNearestParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const int ho = p.h * p.factor, wo = p.w * p.factor;
  const long long total = static_cast<long long>(p.batch) * ho * wo * p.c;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % p.c);
    long long pix = i / p.c;  // (n, oy, ox)
    const int ox = static_cast<int>(pix % wo);
    pix /= wo;
    const int oy = static_cast<int>(pix % ho);
    const int n = static_cast<int>(pix / ho);
    const long long src = ((static_cast<long long>(n) * p.h + oy / p.factor) * p.w + ox / p.factor) * p.ldx + c;
    const long long dst = ((static_cast<long long>(n) * ho + oy) * wo + ox) * p.ldy + c;
    p.y[dst] = p.x[src];
  }
}

// 16-byte vectors of T fit the views: channel count, leading dimensions and base pointers.
template <typename T>
bool vec16_fits(const void* x, int ldx, const void* y, int ldy, int c) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  return c % V == 0 && ldx % V == 0 && ldy % V == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
         reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
}

// One thread per 16-byte input vector (n, iy, ix, v): read once, stored to the factor x factor block.
// I: index type of the vector count (int where it fits).
template <typename T, typename I>
__global__ void upsample_nearest_vec16_kernel(UpsampleNearestParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const I cv = p.c / V;
  const I total = static_cast<I>(p.batch) * p.h * p.w * cv;
  const int ho = p.h * p.factor, wo = p.w * p.factor;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I v = i % cv;
    I pix = i / cv;  // (n, iy, ix)
    const I ix = pix % p.w;
    pix /= p.w;
    const I iy = pix % p.h;
    const I n = pix / p.h;
    const uint4 val = *reinterpret_cast<const uint4*>(
        p.x + ((static_cast<long long>(n) * p.h + iy) * p.w + ix) * p.ldx + v * V);  // (V) channels
    for (int dy = 0; dy < p.factor; ++dy) {
      T* row = p.y + ((static_cast<long long>(n) * ho + iy * p.factor + dy) * wo + ix * p.factor) * p.ldy + v * V;
      for (int dx = 0; dx < p.factor; ++dx) *reinterpret_cast<uint4*>(row + static_cast<long long>(dx) * p.ldy) = val;
    }
  }
}

// One thread per 16-byte vector (pixel, v).
template <typename T, typename I>
__global__ void copy_channels_vec16_kernel(CopyChannelsParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const I cv = p.c / V;
  const I total = static_cast<I>(p.batch) * p.pixels * cv;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I v = i % cv;
    const long long pix = i / cv;  // n * pixels + p
    *reinterpret_cast<uint4*>(p.y + pix * p.ldy + v * V) = *reinterpret_cast<const uint4*>(p.x + pix * p.ldx + v * V);
  }
}

template <typename T>
__global__ void max_pool_same_kernel(MaxPoolParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const int r = p.k / 2;
  const long long total = static_cast<long long>(p.batch) * p.h * p.w * p.c;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % p.c);
    long long pix = i / p.c;
    const int x = static_cast<int>(pix % p.w);
    pix /= p.w;
    const int y = static_cast<int>(pix % p.h);
    const int n = static_cast<int>(pix / p.h);
    const int y0 = max(y - r, 0), y1 = min(y + r, p.h - 1);
    const int x0 = max(x - r, 0), x1 = min(x + r, p.w - 1);
    const T* base = p.x + static_cast<long long>(n) * p.h * p.w * p.ldx + c;
    // The window always holds the centre pixel, so start from it: padding never takes part.
    float best = to_f32(base[(static_cast<long long>(y) * p.w + x) * p.ldx]);
    for (int yy = y0; yy <= y1; ++yy)
      for (int xx = x0; xx <= x1; ++xx) best = fmaxf(best, to_f32(base[(static_cast<long long>(yy) * p.w + xx) * p.ldx]));
    p.y[((static_cast<long long>(n) * p.h + y) * p.w + x) * p.ldy + c] = from_f32<T>(best);
  }
}

template <typename T>
__global__ void copy_channels_kernel(CopyChannelsParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const long long total = static_cast<long long>(p.batch) * p.pixels * p.c;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % p.c);
    const long long pix = i / p.c;  // n * pixels + p
    p.y[pix * p.ldy + c] = p.x[pix * p.ldx + c];
  }
}

template <typename T>
__global__ void nchw_to_nhwc_kernel(NchwToNhwcParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  const long long total = static_cast<long long>(p.batch) * p.h * p.w * p.c;
  const long long plane = static_cast<long long>(p.h) * p.w;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % p.c);
    const long long pix = i / p.c;  // n * plane + yx
    const long long n = pix / plane, yx = pix % plane;
    p.y[pix * p.ldy + c] = from_f32<T>(p.x[(n * p.c + c) * plane + yx]);
  }
}

// One thread per item, grid-stride: the int-indexed kernel where the item count (plus one grid
// stride, at most 65535 * 8 * 256) stays far from int overflow, else the 64-bit one.
template <typename P>
void launch_by_index_width(void (*kernel32)(P), void (*kernel64)(P), long long items, const P& p, cudaStream_t stream) {
  launch_kernel(items < std::numeric_limits<int>::max() / 2 ? kernel32 : kernel64, grid_for(items), kThreads, 0, stream, p);
}

}  // namespace

bool max_pool_can_implement(int k) { return k >= 1 && k % 2 == 1; }

template <typename T>
void upsample_nearest(const UpsampleNearestParams<T>& p, cudaStream_t stream) {
  const long long n = static_cast<long long>(p.batch) * p.h * p.factor * p.w * p.factor * p.c;
  if (n == 0) return;
  if (vec16_fits<T>(p.x, p.ldx, p.y, p.ldy, p.c)) {
    const long long vectors = static_cast<long long>(p.batch) * p.h * p.w * (p.c / (16 / static_cast<int>(sizeof(T))));
    launch_by_index_width(upsample_nearest_vec16_kernel<T, int>, upsample_nearest_vec16_kernel<T, long long>, vectors,
                          p, stream);
  } else {
    launch_kernel(upsample_nearest_kernel<T>, grid_for(n), kThreads, 0, stream, p);
  }
  YOLO12_CUDA_CHECK_LAUNCH();
}

template <typename T>
void max_pool_same(const MaxPoolParams<T>& p, cudaStream_t stream) {
  const long long n = static_cast<long long>(p.batch) * p.h * p.w * p.c;
  if (n == 0) return;
  launch_kernel(max_pool_same_kernel<T>, grid_for(n), kThreads, 0, stream, p);
}

template <typename T>
void copy_channels(const CopyChannelsParams<T>& p, cudaStream_t stream) {
  const long long n = static_cast<long long>(p.batch) * p.pixels * p.c;
  if (n == 0) return;
  if (vec16_fits<T>(p.x, p.ldx, p.y, p.ldy, p.c)) {
    launch_by_index_width(copy_channels_vec16_kernel<T, int>, copy_channels_vec16_kernel<T, long long>,
                          n / (16 / static_cast<int>(sizeof(T))), p, stream);
  } else {
    launch_kernel(copy_channels_kernel<T>, grid_for(n), kThreads, 0, stream, p);
  }
  YOLO12_CUDA_CHECK_LAUNCH();
}

template <typename T>
void nchw_to_nhwc(const NchwToNhwcParams<T>& p, cudaStream_t stream) {
  const long long n = static_cast<long long>(p.batch) * p.h * p.w * p.c;
  if (n == 0) return;
  launch_kernel(nchw_to_nhwc_kernel<T>, grid_for(n), kThreads, 0, stream, p);
}

namespace {

// The views of a per-pixel op from `in` (H, W, c channels) to `out` (any size): P's x, ldx, y, ldy,
// h, w and c.
template <typename P, typename T>
P image_views(const graph::ValueRef& in, const graph::ValueRef& out, const BindContext<T>& ctx) {
  P p;
  p.x = ctx.ptr(in);
  p.ldx = ctx.ld(in);
  p.y = ctx.ptr(out);
  p.ldy = ctx.ld(out);
  p.h = ctx.value(in).h;
  p.w = ctx.value(in).w;
  p.c = in.c;
  return p;
}

std::string map_label(const std::string& what, int c, int h, int w) {
  return what + " " + std::to_string(c) + "ch " + std::to_string(h) + "x" + std::to_string(w);
}

}  // namespace

template <typename T>
Step bind(const graph::UpsampleOp& op, const BindContext<T>& ctx) {
  if (op.attrs.factor < 1 || op.out.c != op.in.c) ctx.cannot_run("upsample factor " + std::to_string(op.attrs.factor));
  auto p = image_views<UpsampleNearestParams<T>>(op.in, op.out, ctx);
  static_cast<graph::UpsampleAttrs&>(p) = op.attrs;
  Step step;
  step.run = with_batch(p, &upsample_nearest<T>);
  step.label = map_label("upsample x" + std::to_string(p.factor), p.c, p.h, p.w);
  step.bytes_per_image = sizeof(T) * 1.0 * p.h * p.w * p.c * (1 + p.factor * p.factor);
  return step;
}

template <typename T>
Step bind(const graph::MaxPoolOp& op, const BindContext<T>& ctx) {
  if (!max_pool_can_implement(op.attrs.k)) ctx.cannot_run("max-pool k" + std::to_string(op.attrs.k));
  auto p = image_views<MaxPoolParams<T>>(op.in, op.out, ctx);
  static_cast<graph::MaxPoolAttrs&>(p) = op.attrs;
  Step step;
  step.run = with_batch(p, &max_pool_same<T>);
  step.label = map_label("maxpool k" + std::to_string(p.k), p.c, p.h, p.w);
  step.bytes_per_image = sizeof(T) * 2.0 * p.h * p.w * p.c;
  return step;
}

template <typename T>
Step bind(const graph::CopyOp& op, const BindContext<T>& ctx) {
  const graph::Value& in = ctx.value(op.in);
  CopyChannelsParams<T> p;
  p.x = ctx.ptr(op.in);
  p.ldx = ctx.ld(op.in);
  p.y = ctx.ptr(op.out);
  p.ldy = ctx.ld(op.out);
  p.pixels = in.h * in.w;
  p.c = op.in.c;
  Step step;
  step.run = with_batch(p, &copy_channels<T>);
  step.label = "copy " + std::to_string(p.c) + "ch " + std::to_string(p.pixels) + "px";
  step.bytes_per_image = sizeof(T) * 2.0 * p.pixels * p.c;
  return step;
}

#define YOLO12_INSTANTIATE(T)                                                        \
  template void upsample_nearest<T>(const UpsampleNearestParams<T>&, cudaStream_t); \
  template void max_pool_same<T>(const MaxPoolParams<T>&, cudaStream_t);            \
  template void copy_channels<T>(const CopyChannelsParams<T>&, cudaStream_t);         \
  template void nchw_to_nhwc<T>(const NchwToNhwcParams<T>&, cudaStream_t);          \
  template Step bind<T>(const graph::UpsampleOp&, const BindContext<T>&);            \
  template Step bind<T>(const graph::MaxPoolOp&, const BindContext<T>&);             \
  template Step bind<T>(const graph::CopyOp&, const BindContext<T>&);
YOLO12_INSTANTIATE(float)
YOLO12_INSTANTIATE(__half)
#undef YOLO12_INSTANTIATE

}  // namespace yolo12::cuda
