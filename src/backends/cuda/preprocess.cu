// src/backends/cuda/preprocess.cu - letterbox of 8-bit images into the network input (see preprocess.cuh).
//
// One thread per output pixel and image, all three channels: at 640 x 640 that is 410 k threads per
// image reading at most 4 source pixels each, a few microseconds; the cost of preprocessing is the
// host-to-device copy of the pixels, which the staging block makes a single transfer.
//
// Packing the staging block is a host copy of the pixel rows the resize weighs (preprocess.cuh: 32 frames of
// 1280x720 BGR, all of whose rows and columns count, are 88 MB, about 11 ms on one thread; 32 of 1920x1080 are
// 22 MB of 199). Where a batch's images hold more than kParallelBytes of pixels the rows are copied by several
// threads: the block's layout (headers, taps, offsets) is fixed first on the calling thread, then the ranges of
// about kTaskBytes of packed rows are copied in parallel, so the block is byte for byte the one the serial
// packing writes. With StageOptions::ready the tasks run in consecutive groups, and each group's range of the block is
// handed to the caller once it is written (the executor copies it to the device while the next group packs).
// An image reduced by an even factor is packed already resized (StageOptions::halves): its tasks write output rows,
// each the rounded 2x2 mean of two source rows (pre::resize_halves_row, vectorised), which reads the same source
// bytes as the row copy and writes a quarter of them.
#include "preprocess.cuh"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "backends/cpu/thread_pool.hpp"
#include "common.cuh"
#include "pre/resize_halves.hpp"

namespace yolo12::cuda {
namespace {

constexpr int kThreadsX = 32, kThreadsY = 8;
constexpr std::size_t kParallelBytes = std::size_t(1) << 20;  // below: one thread (waking the pool costs more)
constexpr std::size_t kTaskBytes = std::size_t(256) << 10;    // pixel bytes per copy task
constexpr int kMaxStagingThreads = 8;                         // memcpy bandwidth saturates well before 16
constexpr int kStagingPools = 4;                              // callers that pack with a pool at the same time
constexpr long kStagingSpinUs = 1000;  // the pools' poll after a loop (YOLO12_STAGING_SPIN_US; below)

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

}  // namespace

std::chrono::microseconds staging_spin() {
  return std::chrono::microseconds(env_count("YOLO12_STAGING_SPIN_US", kStagingSpinUs, 1000000));
}

namespace {

std::size_t header_bytes(std::size_t batch) { return align_up(sizeof(PreprocessImage) * batch, 256); }

// One axis of an image's staging (preprocess.cuh): the plain resize taps, and where the block leaves lines out
// (rows for y, columns for x), the lines kept and the taps renumbered to them.
struct AxisPlan {
  std::vector<pre::ResizeTap> taps;    // (dst_len) pre::resize_taps_x / _y
  std::vector<int> keep;               // the source lines the block holds, ascending; empty: all of them
  std::vector<pre::ResizeTap> packed;  // (dst_len) taps into `keep` (empty with it)
  pre::HalfTaps halves = pre::HalfTaps::No;  // every tap 1024 / 1024 (an even-factor reduction)
  // The taps and the number of lines of a packed image, and source line of packed line k.
  const std::vector<pre::ResizeTap>& packed_taps() const { return keep.empty() ? taps : packed; }
  int lines(int src_len) const { return keep.empty() ? src_len : static_cast<int>(keep.size()); }
  int source(int k) const { return keep.empty() ? k : keep[static_cast<std::size_t>(k)]; }
};

// Columns are gathered pixel by pixel, so they are left out only where at most this share of them is kept.
constexpr int kColumnKeepPercent = 40;

AxisPlan make_plan(bool x_axis, int src_len, int dst_len) {
  AxisPlan p;
  p.taps = x_axis ? pre::resize_taps_x(src_len, dst_len) : pre::resize_taps_y(src_len, dst_len);
  p.halves = pre::half_taps(p.taps);
  // A line is kept where a tap gives it weight (a tap of two zero weights, never made, keeps its i0).
  std::vector<int> index(static_cast<std::size_t>(src_len), -1);
  for (const pre::ResizeTap& t : p.taps) {
    if (t.w0 != 0 || t.w1 == 0) index[static_cast<std::size_t>(t.i0)] = 0;
    if (t.w1 != 0) index[static_cast<std::size_t>(t.i1)] = 0;
  }
  std::size_t kept = 0;
  for (int v : index) kept += v == 0 ? 1 : 0;
  const bool worth = x_axis ? kept * 100 <= static_cast<std::size_t>(src_len) * kColumnKeepPercent
                            : kept < static_cast<std::size_t>(src_len);
  if (!worth) return p;
  for (int i = 0; i < src_len; ++i)
    if (index[static_cast<std::size_t>(i)] == 0) {
      index[static_cast<std::size_t>(i)] = static_cast<int>(p.keep.size());
      p.keep.push_back(i);
    }
  p.packed = p.taps;
  for (pre::ResizeTap& t : p.packed) {
    // A zero-weight side reads the other side's line: its value is multiplied by 0 either way.
    const int i0 = t.w0 != 0 || t.w1 == 0 ? index[static_cast<std::size_t>(t.i0)] : index[static_cast<std::size_t>(t.i1)];
    const int i1 = t.w1 != 0 ? index[static_cast<std::size_t>(t.i1)] : i0;
    t.i0 = i0;
    t.i1 = i1;
  }
  return p;
}

// Plans are cheap to make but identical for every frame of a video: keep the last few sizes. Per thread, so
// clones used from several threads never share it; shared pointers, so a batch of more sizes than the cache
// keeps still holds every plan it took.
std::shared_ptr<const AxisPlan> cached_plan(bool x_axis, int src_len, int dst_len) {
  thread_local std::map<std::pair<int, int>, std::shared_ptr<const AxisPlan>> cache[2];
  auto& c = cache[x_axis ? 0 : 1];
  const auto key = std::make_pair(src_len, dst_len);
  auto it = c.find(key);
  if (it != c.end()) return it->second;
  if (c.size() >= 16) c.clear();
  return c.emplace(key, std::make_shared<const AxisPlan>(make_plan(x_axis, src_len, dst_len))).first->second;
}

// Packed columns of one row: pixels cols[0..n) of `src` one after another (bpp bytes each).
template <int kBpp>
void gather_pixels(unsigned char* dst, const std::uint8_t* src, const int* cols, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i, dst += kBpp) std::memcpy(dst, src + static_cast<std::size_t>(cols[i]) * kBpp, kBpp);
}
void gather_row(unsigned char* dst, const std::uint8_t* src, const std::vector<int>& cols, int bpp) {
  switch (bpp) {
    case 1: gather_pixels<1>(dst, src, cols.data(), cols.size()); break;
    case 3: gather_pixels<3>(dst, src, cols.data(), cols.size()); break;
    default: gather_pixels<4>(dst, src, cols.data(), cols.size()); break;
  }
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
  int rgb[3];
  letterbox_rgb(p.block, im, x, y, rgb);
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
                             const std::vector<PixelSource>& sources, void* block, const StageOptions& options) {
  std::size_t packed = 0;  // the source pixels of the images this thread (or the pool) packs
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
            std::max(1, std::min<int>(kMaxStagingThreads, static_cast<int>(std::thread::hardware_concurrency()))),
            staging_spin());
      return preprocess_stage(images, geometry, sources, block, sp.pool.get(), options);
    }
  }
  return preprocess_stage(images, geometry, sources, block, nullptr, options);
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
                             const std::vector<PixelSource>& sources, void* block, cpu::ThreadPool* pool,
                             const StageOptions& options) {
  if (images.size() != geometry.size()) throw InputError("preprocess: one letterbox geometry per image is needed");
  if (images.size() != sources.size()) throw InputError("preprocess: one pixel source per image is needed");
  for (std::size_t i = 0; i < images.size(); ++i) check_geometry(images[i], geometry[i], i);
  unsigned char* base = static_cast<unsigned char*>(block);
  auto* headers = reinterpret_cast<PreprocessImage*>(base);
  std::size_t off = header_bytes(images.size());
  struct Plans {
    std::shared_ptr<const AxisPlan> x, y;
    bool halves = false;  // packed already resized, by the 2x2 mean
  };
  std::vector<Plans> plans(images.size());

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
    plans[i] = {cached_plan(true, im.width, g.new_w), cached_plan(false, im.height, g.new_h)};
    // Packed images read the lines kept; pinned and device ones all of their lines.
    const bool packed = sources[i] == PixelSource::Pack;
    plans[i].halves = packed && options.halves && plans[i].x->halves != pre::HalfTaps::No &&
                      plans[i].y->halves != pre::HalfTaps::No;
    if (plans[i].halves) h.identity = 1;  // the block holds the resized image (its taps are not read)
    const auto& tx = packed ? plans[i].x->packed_taps() : plans[i].x->taps;
    const auto& ty = packed ? plans[i].y->packed_taps() : plans[i].y->taps;
    h.taps_x = off;
    std::memcpy(base + off, tx.data(), tx.size() * sizeof(pre::ResizeTap));
    off += tx.size() * sizeof(pre::ResizeTap);
    h.taps_y = off;
    std::memcpy(base + off, ty.data(), ty.size() * sizeof(pre::ResizeTap));
    off += ty.size() * sizeof(pre::ResizeTap);
    headers[i] = h;
  }
  off = align_up(off, 256);
  // Pixels, the rows kept packed densely: each image's offset first, then the ranges of packed rows (tasks) copied.
  struct RowsTask {
    std::size_t image;
    int k0, k1;  // packed rows [k0, k1)
  };
  std::vector<RowsTask> tasks;
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (sources[i] != PixelSource::Pack) continue;
    const ImageView& im = images[i];
    const bool halves = plans[i].halves;
    const int rows = halves ? headers[i].new_h : plans[i].y->lines(im.height);
    const std::size_t row =
        static_cast<std::size_t>(halves ? headers[i].new_w : plans[i].x->lines(im.width)) * headers[i].bpp;
    headers[i].pixels = off;
    headers[i].pitch = row;
    // A task reads about kTaskBytes of source pixels: a resized row reads two source rows, at least twice its width.
    const std::size_t read_per_row = halves ? 4 * row : row;
    const int rows_per_task = static_cast<int>(std::max<std::size_t>(1, kTaskBytes / read_per_row));
    for (int k = 0; k < rows; k += rows_per_task) tasks.push_back({i, k, std::min(rows, k + rows_per_task)});
    off = align_up(off + row * rows, 256);
  }
  StagedBatch staged;
  staged.packed_bytes = off;
  // Pinned images after the packed part (copied by the caller), device ones read in place.
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageView& im = images[i];
    const std::size_t row = static_cast<std::size_t>(im.width) * headers[i].bpp;
    if (sources[i] == PixelSource::Pinned) {
      headers[i].pixels = off;
      headers[i].pitch = row;
      staged.pinned.push_back({off, im.data, im.pitch, row, im.height});
      off = align_up(off + row * im.height, 256);
    } else if (sources[i] == PixelSource::Device) {
      headers[i].src = reinterpret_cast<unsigned long long>(im.data);
      headers[i].pitch = im.pitch;
    }
  }
  const auto copy_rows = [&](std::ptrdiff_t t, int /*worker*/) {
    const RowsTask& task = tasks[static_cast<std::size_t>(t)];
    const ImageView& im = images[task.image];
    const AxisPlan& px = *plans[task.image].x;
    const AxisPlan& py = *plans[task.image].y;
    const std::size_t row = headers[task.image].pitch;
    unsigned char* dst = base + headers[task.image].pixels + row * task.k0;
    if (plans[task.image].halves) {  // output rows, each the 2x2 mean of its y tap's two source rows
      const bool adjacent = px.halves == pre::HalfTaps::Adjacent;
      for (int k = task.k0; k < task.k1; ++k, dst += row) {
        const pre::ResizeTap& ty = py.taps[static_cast<std::size_t>(k)];
        pre::resize_halves_row(dst, im.data + im.pitch * static_cast<std::size_t>(ty.i0),
                               im.data + im.pitch * static_cast<std::size_t>(ty.i1), px.taps, headers[task.image].bpp,
                               adjacent);
      }
      return;
    }
    if (px.keep.empty() && py.keep.empty() && im.pitch == row) {  // whole rows, one run
      std::memcpy(dst, im.data + im.pitch * task.k0, row * (task.k1 - task.k0));
      return;
    }
    for (int k = task.k0; k < task.k1; ++k, dst += row) {
      const std::uint8_t* src = im.data + im.pitch * static_cast<std::size_t>(py.source(k));
      if (px.keep.empty()) std::memcpy(dst, src, row);
      else gather_row(dst, src, px.keep, headers[task.image].bpp);
    }
  };
  // Tasks [first, first + count), on the pool or this thread.
  const auto run = [&](std::ptrdiff_t first, std::ptrdiff_t count) {
    if (pool)
      pool->parallel_for(count, [&](std::ptrdiff_t t, int worker) { copy_rows(first + t, worker); });
    else
      for (std::ptrdiff_t t = 0; t < count; ++t) copy_rows(first + t, 0);
  };
  const auto n = static_cast<std::ptrdiff_t>(tasks.size());
  if (!options.ready) {
    run(0, n);
    return staged;
  }
  // Ranges of whole tasks: a range ends where its last task's rows end (the last range at packed_bytes, with the
  // alignment after the last image).
  std::size_t band = options.band_bytes;
  if (options.bands > 0) {
    std::size_t total = 0;
    for (const RowsTask& task : tasks) total += headers[task.image].pitch * static_cast<std::size_t>(task.k1 - task.k0);
    band = std::max(band, total / static_cast<std::size_t>(options.bands));
  }
  std::size_t begin = 0, pixel_bytes = 0;
  std::ptrdiff_t first = 0;
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const RowsTask& task = tasks[static_cast<std::size_t>(t)];
    const std::size_t row = headers[task.image].pitch;
    pixel_bytes += row * static_cast<std::size_t>(task.k1 - task.k0);
    const bool last = t + 1 == n;
    if (pixel_bytes < band && !last) continue;
    run(first, t + 1 - first);
    const std::size_t end = last ? staged.packed_bytes : headers[task.image].pixels + row * task.k1;
    options.ready(begin, end, last);
    begin = end;
    first = t + 1;
    pixel_bytes = 0;
  }
  if (n == 0) options.ready(0, staged.packed_bytes, true);  // headers and taps only
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
