// src/backends/cuda/preprocess.cu - letterbox of 8-bit images into the network input (see preprocess.cuh).
//
// One thread per output pixel and image, all three channels: at 640 x 640 that is 410 k threads per
// image reading at most 4 source pixels each, a few microseconds; the cost of preprocessing is the
// host-to-device copy of the pixels, which the staging block makes a single transfer.
//
// Packing the staging block is a host memcpy of every pixel row (32 frames of 1280x720 BGR: 88 MB, about
// 11 ms on one thread). Where a batch has more than kParallelBytes of pixels the rows are copied by
// several threads: the block's layout (headers, taps, offsets) is fixed first on the calling thread, then
// the row ranges of about kTaskBytes each are copied in parallel, so the block is byte for byte the one the
// serial packing writes.
#include "preprocess.cuh"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "backends/cpu/thread_pool.hpp"
#include "common.cuh"

namespace yolo12::cuda {
namespace {

constexpr int kThreadsX = 32, kThreadsY = 8;
constexpr std::size_t kParallelBytes = std::size_t(1) << 20;  // below: one thread (waking the pool costs more)
constexpr std::size_t kTaskBytes = std::size_t(256) << 10;    // pixel bytes per copy task
constexpr int kMaxStagingThreads = 8;                         // memcpy bandwidth saturates well before 16
constexpr int kStagingPools = 4;                              // callers that pack with a pool at the same time

// The process's staging pools, each made on first use: min(hardware threads, 8) threads, the caller counting
// as one. A pool serves one caller at a time; a caller takes the first free one, so that up to kStagingPools
// Detectors (one per thread, e.g. a DetectorPool's workers) pack at once. With one pool (before the twelfth
// session) the second and third of three detectors on one GPU packed their 88 MB batches alone, on one thread
// each, and the GPU waited for them (yolo12n, batch 32 of 1280x720 frames: 6,872 img/s for three). A caller
// that finds every pool busy packs on its own thread.
struct StagingPool {
  std::mutex busy;                       // held by the caller using the pool
  std::unique_ptr<cpu::ThreadPool> pool;  // made by its first caller, under `busy`
};
StagingPool* staging_pools() {
  static StagingPool pools[kStagingPools];
  return pools;
}

std::size_t header_bytes(std::size_t batch) { return align_up(sizeof(PreprocessImage) * batch, 256); }

// Taps are cheap to compute but identical for every frame of a video: keep the last few sizes.
// Per thread, so clones used from several threads never share it.
const std::vector<pre::ResizeTap>& cached_taps(bool x_axis, int src_len, int dst_len) {
  thread_local std::map<std::pair<int, int>, std::vector<pre::ResizeTap>> cache[2];
  auto& c = cache[x_axis ? 0 : 1];
  const auto key = std::make_pair(src_len, dst_len);
  auto it = c.find(key);
  if (it != c.end()) return it->second;
  if (c.size() >= 16) c.clear();
  auto taps = x_axis ? pre::resize_taps_x(src_len, dst_len) : pre::resize_taps_y(src_len, dst_len);
  return c.emplace(key, std::move(taps)).first->second;
}

void check_geometry(const ImageView& im, const pre::LetterboxParams& g, std::size_t i) {
  pre::check_image_view(im);
  if (g.src_w != im.width || g.src_h != im.height || g.new_w < 1 || g.new_h < 1 || g.left < 0 || g.top < 0 ||
      g.left + g.new_w > g.dst_w || g.top + g.new_h > g.dst_h)
    throw InputError("preprocess: letterbox geometry of image " + std::to_string(i) + " does not match its " +
                     std::to_string(im.width) + "x" + std::to_string(im.height) + " view");
}

template <typename T>
__global__ void letterbox_kernel(PreprocessParams<T> p) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int n = blockIdx.z;
  if (x >= p.w || y >= p.h) return;
  const PreprocessImage im = reinterpret_cast<const PreprocessImage*>(p.block)[n];
  int rgb[3] = {114, 114, 114};
  const int dx = x - im.left, dy = y - im.top;
  if (dx >= 0 && dx < im.new_w && dy >= 0 && dy < im.new_h) {
    // (src_h, row_bytes): packed in the block, or the caller's device memory read in place
    const unsigned char* src = im.src ? reinterpret_cast<const unsigned char*>(im.src) : p.block + im.pixels;
    const long long row_bytes =
        im.src ? static_cast<long long>(im.src_pitch) : static_cast<long long>(im.src_w) * im.bpp;
    if (im.identity) {
      const unsigned char* px = src + dy * row_bytes + static_cast<long long>(dx) * im.bpp;
#pragma unroll
      for (int c = 0; c < 3; ++c) rgb[c] = px[im.ch[c]];
    } else {
      const pre::ResizeTap tx = reinterpret_cast<const pre::ResizeTap*>(p.block + im.taps_x)[dx];
      const pre::ResizeTap ty = reinterpret_cast<const pre::ResizeTap*>(p.block + im.taps_y)[dy];
      const unsigned char* r0 = src + ty.i0 * row_bytes;
      const unsigned char* r1 = src + ty.i1 * row_bytes;
      const int o0 = tx.i0 * im.bpp, o1 = tx.i1 * im.bpp;
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const int ch = im.ch[c];
        const int h0 = pre::resize_blend_x(r0[o0 + ch], r0[o1 + ch], tx.w0, tx.w1);
        const int h1 = pre::resize_blend_x(r1[o0 + ch], r1[o1 + ch], tx.w0, tx.w1);
        rgb[c] = pre::resize_blend_y(h0, h1, ty.w0, ty.w1);
      }
    }
  }
  T* out = p.y + ((static_cast<long long>(n) * p.h + y) * p.w + x) * p.ldy;
#pragma unroll
  for (int c = 0; c < 3; ++c) out[c] = from_f32<T>(__fdiv_rn(static_cast<float>(rgb[c]), 255.f));
}

}  // namespace

std::size_t preprocess_staging_bytes(const std::vector<ImageView>& images,
                                     const std::vector<pre::LetterboxParams>& geometry) {
  std::size_t bytes = header_bytes(images.size());
  std::size_t taps = 0;
  for (const auto& g : geometry) taps += static_cast<std::size_t>(g.new_w) + g.new_h;
  bytes += align_up(taps * sizeof(pre::ResizeTap), 256);
  for (const auto& im : images)
    bytes += align_up(static_cast<std::size_t>(im.width) * im.height * pre::bytes_per_pixel(im.format), 256);
  return bytes;
}

StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block) {
  std::size_t packed = 0;  // the pixels this thread (or the pool) copies
  for (std::size_t i = 0; i < images.size() && i < sources.size(); ++i)
    if (sources[i] == PixelSource::Pack)
      packed += static_cast<std::size_t>(images[i].width) * images[i].height * pre::bytes_per_pixel(images[i].format);
  if (packed >= kParallelBytes) {
    for (int i = 0; i < kStagingPools; ++i) {
      StagingPool& sp = staging_pools()[i];
      std::unique_lock<std::mutex> lock(sp.busy, std::try_to_lock);
      if (!lock.owns_lock()) continue;
      if (!sp.pool)  // a pool no caller has needed yet is never started
        sp.pool = std::make_unique<cpu::ThreadPool>(
            std::max(1, std::min<int>(kMaxStagingThreads, static_cast<int>(std::thread::hardware_concurrency()))));
      return preprocess_stage(images, geometry, sources, block, sp.pool.get());
    }
  }
  return preprocess_stage(images, geometry, sources, block, nullptr);
}

std::size_t preprocess_stage(const std::vector<ImageView>& images,
                             const std::vector<pre::LetterboxParams>& geometry, void* block) {
  return preprocess_stage(images, geometry, std::vector<PixelSource>(images.size(), PixelSource::Pack), block)
      .packed_bytes;
}

std::size_t preprocess_stage(const std::vector<ImageView>& images,
                             const std::vector<pre::LetterboxParams>& geometry, void* block, cpu::ThreadPool* pool) {
  return preprocess_stage(images, geometry, std::vector<PixelSource>(images.size(), PixelSource::Pack), block, pool)
      .packed_bytes;
}

bool pointer_attributes(const void* p, cudaPointerAttributes& a) {
  a = cudaPointerAttributes{};
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

PixelSource locate_pixels(const ImageView& im, int device) {
  cudaPointerAttributes a;
  if (!pointer_attributes(im.data, a)) return PixelSource::Pack;
  switch (a.type) {
    case cudaMemoryTypeDevice:
      if (a.device != device)
        throw InputError("image pixels are in the memory of CUDA device " + std::to_string(a.device) +
                         "; this detector runs on device " + std::to_string(device));
      return PixelSource::Device;
    case cudaMemoryTypeManaged:
      return PixelSource::Device;
    case cudaMemoryTypeHost:
      return PixelSource::Pinned;
    default:
      return PixelSource::Pack;
  }
}

StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block, cpu::ThreadPool* pool) {
  if (images.size() != geometry.size()) throw InputError("preprocess: one letterbox geometry per image is needed");
  if (images.size() != sources.size()) throw InputError("preprocess: one pixel source per image is needed");
  for (std::size_t i = 0; i < images.size(); ++i) check_geometry(images[i], geometry[i], i);
  unsigned char* base = static_cast<unsigned char*>(block);
  auto* headers = reinterpret_cast<PreprocessImage*>(base);
  std::size_t off = header_bytes(images.size());

  // Taps of every image, back to back.
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageView& im = images[i];
    const pre::LetterboxParams& g = geometry[i];
    PreprocessImage h;
    h.src_w = im.width;
    h.src_h = im.height;
    h.bpp = pre::bytes_per_pixel(im.format);
    switch (im.format) {
      case PixelFormat::BGR8:
      case PixelFormat::BGRA8:
        h.ch[0] = 2, h.ch[1] = 1, h.ch[2] = 0;
        break;
      case PixelFormat::RGB8:
      case PixelFormat::RGBA8:
        h.ch[0] = 0, h.ch[1] = 1, h.ch[2] = 2;
        break;
      case PixelFormat::GRAY8:
        h.ch[0] = h.ch[1] = h.ch[2] = 0;
        break;
    }
    h.new_w = g.new_w;
    h.new_h = g.new_h;
    h.left = g.left;
    h.top = g.top;
    h.identity = (g.new_w == im.width && g.new_h == im.height) ? 1 : 0;
    const auto& tx = cached_taps(true, im.width, g.new_w);
    const auto& ty = cached_taps(false, im.height, g.new_h);
    h.taps_x = off;
    std::memcpy(base + off, tx.data(), tx.size() * sizeof(pre::ResizeTap));
    off += tx.size() * sizeof(pre::ResizeTap);
    h.taps_y = off;
    std::memcpy(base + off, ty.data(), ty.size() * sizeof(pre::ResizeTap));
    off += ty.size() * sizeof(pre::ResizeTap);
    headers[i] = h;
  }
  off = align_up(off, 256);
  // Pixels, rows packed densely: each image's offset first, then the row ranges (tasks) copied.
  struct RowsTask {
    std::size_t image;
    int y0, y1;  // rows [y0, y1)
  };
  std::vector<RowsTask> tasks;
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (sources[i] != PixelSource::Pack) continue;
    const ImageView& im = images[i];
    const std::size_t row = static_cast<std::size_t>(im.width) * headers[i].bpp;
    headers[i].pixels = off;
    const int rows_per_task = static_cast<int>(std::max<std::size_t>(1, kTaskBytes / row));
    for (int y = 0; y < im.height; y += rows_per_task) tasks.push_back({i, y, std::min(im.height, y + rows_per_task)});
    off = align_up(off + row * im.height, 256);
  }
  StagedBatch staged;
  staged.packed_bytes = off;
  // Pinned images after the packed part (copied by the caller), device ones read in place.
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageView& im = images[i];
    const std::size_t row = static_cast<std::size_t>(im.width) * headers[i].bpp;
    if (sources[i] == PixelSource::Pinned) {
      headers[i].pixels = off;
      staged.pinned.push_back({off, im.data, im.pitch, row, im.height});
      off = align_up(off + row * im.height, 256);
    } else if (sources[i] == PixelSource::Device) {
      headers[i].src = reinterpret_cast<unsigned long long>(im.data);
      headers[i].src_pitch = im.pitch;
    }
  }
  const auto copy_rows = [&](std::ptrdiff_t t, int /*worker*/) {
    const RowsTask& task = tasks[static_cast<std::size_t>(t)];
    const ImageView& im = images[task.image];
    const std::size_t row = static_cast<std::size_t>(im.width) * headers[task.image].bpp;
    unsigned char* dst = base + headers[task.image].pixels + row * task.y0;
    const std::uint8_t* src = im.data + im.pitch * task.y0;
    if (im.pitch == row) {
      std::memcpy(dst, src, row * (task.y1 - task.y0));
    } else {
      for (int y = task.y0; y < task.y1; ++y, dst += row, src += im.pitch) std::memcpy(dst, src, row);
    }
  };
  const auto n = static_cast<std::ptrdiff_t>(tasks.size());
  if (pool) {
    pool->parallel_for(n, copy_rows);
  } else {
    for (std::ptrdiff_t t = 0; t < n; ++t) copy_rows(t, 0);
  }
  return staged;
}

template <typename T>
void preprocess_letterbox(const PreprocessParams<T>& p, cudaStream_t stream) {
  if (p.batch < 1 || p.h < 1 || p.w < 1) return;
  dim3 block(kThreadsX, kThreadsY);
  dim3 grid(ceil_div(p.w, kThreadsX), ceil_div(p.h, kThreadsY), p.batch);
  letterbox_kernel<T><<<grid, block, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
}

template void preprocess_letterbox<float>(const PreprocessParams<float>&, cudaStream_t);
template void preprocess_letterbox<__half>(const PreprocessParams<__half>&, cudaStream_t);

}  // namespace yolo12::cuda
