// src/backends/cuda/preprocess.cuh - Ultralytics' LetterBox on the GPU, bit-exact with the CPU letterbox
// (src/pre/letterbox.{hpp,cpp}, itself bit-exact with OpenCV's 8-bit INTER_LINEAR).
//
// One staging block carries a whole batch from pinned host memory to the device in one copy:
//   [PreprocessImage x batch | ResizeTap x (sum of new_w + new_h) | pixels of each image]
// preprocess_stage() fills it on the host: the geometry of each image, the integer resize taps from
// pre::resize_taps_x / _y (the same numbers the CPU uses, cached per size), and the pixel rows packed
// densely (each image 256-byte aligned).
// Only the source pixels the resize weighs are packed. A reduction by more than 2 reads fewer source rows
// (columns) than there are: 1920x1080 to 640x360 weighs every third row and column (the other tap of each
// output has weight 0), 3840x2160 two of every six. The rows no y tap weighs are left out of the block; so are
// the columns no x tap weighs where that leaves at most 40 % of them (a column gather costs more per byte than a
// row copy). The taps in the block are then renumbered to the rows and columns kept, and a zero-weight tap points
// at a kept one, so every value the kernel blends is the one the CPU blends. A 1080p frame puts a ninth of its
// bytes in the block. A reduction by an even factor (1280x720, 2560x1440, 3840x2160 to 640x360) has every tap
// weigh its two lines 1024 / 1024, where the resize is exactly the rounded mean of 2x2 source pixels
// (pre/resize_halves.hpp): such an image is packed already resized, by that mean on the host, and marked identity,
// so a 720p frame puts a quarter of its bytes in the block (StageOptions::halves, on by default).
// Images whose pixels are already in page-locked or device memory skip the host copy (locate_pixels):
// a pinned image's rows (all of them) go by one cudaMemcpy2DAsync from the caller's memory into the device
// block, after the packed part; a device image (on the executor's device, or managed) is read in place by
// the kernel through the address its header carries. Their taps are the plain ones.
// preprocess_letterbox() then runs one thread per output pixel (letterbox_rgb below): inside the resized area
// it blends the four source pixels with pre::resize_blend_x / _y (the CPU's own integer arithmetic), outside
// it is the pad value 114; channels are reordered to RGB (GRAY8 replicated), divided by 255 (true IEEE
// division, as torch's x / 255) and written into the NHWC network input, fp32 or fp16.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::cpu {
class ThreadPool;
}

namespace yolo12::cuda {

// Per image, inside the staging block. Offsets are bytes from the start of the block.
struct PreprocessImage {
  unsigned long long pixels = 0;  // offset of the packed pixels (the rows kept, each of the columns kept)
  unsigned long long src = 0;     // device address of the pixels when read in place (0: at `pixels`)
  unsigned long long pitch = 0;   // bytes per row of the pixels read (at `pixels` or at `src`)
  unsigned long long taps_x = 0;  // offset of new_w ResizeTap (indices into the columns kept)
  unsigned long long taps_y = 0;  // offset of new_h ResizeTap (indices into the rows kept)
  int src_w = 0, src_h = 0, bpp = 3;  // the source image (before any rows or columns were left out)
  int ch[3] = {2, 1, 0};          // source channel of R, G, B
  int new_w = 0, new_h = 0, left = 0, top = 0;
  int identity = 0;               // 1: the pixels are the resized image (the source at its own size, as Ultralytics
                                  // skips the resize, or an even-factor reduction packed already resized)
};

// The RGB values (0..255) of output pixel (x, y) of image `im`, read from `block` (the staging block as the
// reader sees it: the device copy in the kernel, the host block in the tests' replay): the pad value 114 outside
// the resized area, else the source pixel (identity) or the bilinear blend of its taps.
YOLO12_HOST_DEVICE inline void letterbox_rgb(const unsigned char* block, const PreprocessImage& im, int x, int y,
                                            int (&rgb)[3]) {
  rgb[0] = rgb[1] = rgb[2] = 114;
  const int dx = x - im.left, dy = y - im.top;
  if (dx < 0 || dx >= im.new_w || dy < 0 || dy >= im.new_h) return;
  const unsigned char* src = im.src ? reinterpret_cast<const unsigned char*>(im.src) : block + im.pixels;
  const long long pitch = static_cast<long long>(im.pitch);
  if (im.identity) {
    const unsigned char* px = src + dy * pitch + static_cast<long long>(dx) * im.bpp;
    YOLO12_UNROLL
    for (int c = 0; c < 3; ++c) rgb[c] = px[im.ch[c]];
    return;
  }
  const pre::ResizeTap tx = reinterpret_cast<const pre::ResizeTap*>(block + im.taps_x)[dx];
  const pre::ResizeTap ty = reinterpret_cast<const pre::ResizeTap*>(block + im.taps_y)[dy];
  const unsigned char* r0 = src + ty.i0 * pitch;
  const unsigned char* r1 = src + ty.i1 * pitch;
  const int o0 = tx.i0 * im.bpp, o1 = tx.i1 * im.bpp;
  YOLO12_UNROLL
  for (int c = 0; c < 3; ++c) {
    const int ch = im.ch[c];
    const int h0 = pre::resize_blend_x(r0[o0 + ch], r0[o1 + ch], tx.w0, tx.w1);
    const int h1 = pre::resize_blend_x(r1[o0 + ch], r1[o1 + ch], tx.w0, tx.w1);
    rgb[c] = pre::resize_blend_y(h0, h1, ty.w0, ty.w1);
  }
}

template <typename T>
struct PreprocessParams {
  const unsigned char* block = nullptr;  // device copy of the staging block
  int batch = 1;
  int h = 0, w = 0;                      // network input
  T* y = nullptr;                        // (B, H, W, ldy) view, 3 channels written
  int ldy = 3;
};

// Bytes the staging block needs for these images (their views must be valid).
std::size_t preprocess_staging_bytes(const std::vector<ImageView>& images,
                                     const std::vector<pre::LetterboxParams>& geometry);
// Fills `block` (at least preprocess_staging_bytes) and returns the bytes used. Throws InputError
// for a bad view or geometry that does not match the image. Batches of more than 1 MiB of pixels are
// copied by one of the process's staging pools (4 pools of up to 8 threads each, the first one no other thread
// is using; the calling thread alone when all are in use).
std::size_t preprocess_stage(const std::vector<ImageView>& images,
                             const std::vector<pre::LetterboxParams>& geometry, void* block);
// The same with the pixel rows copied by `pool` (nullptr: on the calling thread); the block is the same
// byte for byte.
std::size_t preprocess_stage(const std::vector<ImageView>& images,
                             const std::vector<pre::LetterboxParams>& geometry, void* block, cpu::ThreadPool* pool);

// How long a staging pool's threads poll for the next batch before they sleep (cpu::ThreadPool's `spin`): a video at
// batch 1 packs a frame every 0.6 ms or so, and waking the sleeping threads for each frame costs about what the
// packing does (docs/benchmarks-gpu.md, "Twenty-seventh session"). YOLO12_STAGING_SPIN_US (microseconds, at most
// 1,000,000; 0: sleep at once) sets it, default 1,000; read when a pool is made. Throws OptionError for a bad value.
std::chrono::microseconds staging_spin();

// Where an image's pixels are, for the staging.
enum class PixelSource {
  Pack,    // pageable host memory: packed into the block on the host (then one copy with the block)
  Pinned,  // page-locked host memory: one cudaMemcpy2DAsync from it into the device block
  Device,  // memory of the executor's device (or managed memory): read in place by the kernel
};
// What the CUDA runtime knows of `p` (cudaPointerGetAttributes); false, and its error cleared, for a
// pointer it does not know (ordinary host memory). The one place pointers are asked about: also
// behind in_cuda_device_memory (core/executor.hpp), the CPU detector's check.
bool pointer_attributes(const void* p, cudaPointerAttributes& a);
// Where `im.data` is, from pointer_attributes. Throws InputError for memory of another device.
PixelSource locate_pixels(const ImageView& im, int device);

// A pinned image's rows, for the caller to copy into the device block before the letterbox runs.
struct PinnedCopy {
  std::size_t dst_offset = 0;  // into the device block
  const void* src = nullptr;
  std::size_t src_pitch = 0, row_bytes = 0;
  int rows = 0;
};
struct StagedBatch {
  std::size_t packed_bytes = 0;   // [0, packed_bytes) of the host block goes to the device block as is
  std::vector<PinnedCopy> pinned;  // then these, after it
};
// How preprocess_stage packs.
// - halves: pack the images reduced by an even factor already resized (above); off, their rows as they are. The
//   letterbox is the same byte for byte either way (the CUDA executor's YOLO12_STAGING_HALVES=0 turns it off).
// - ready: the packed part of the block in consecutive ranges, each handed over as soon as it holds its final bytes,
//   so that a caller can copy it to the device while the rest is still being packed (the CUDA executor under
//   YOLO12_STAGING_OVERLAP). ready(begin, end, last) is called on the calling thread, in order: the ranges run from
//   0 to packed_bytes without a gap, the first holds the headers and taps, each holds whole copy tasks of at least
//   max(band_bytes, the packed pixel bytes / bands) (bands 0: band_bytes; both 0: one task each), and `last` marks
//   the final one. No `ready`: one range, no call.
struct StageOptions {
  bool halves = true;
  std::size_t band_bytes = 0;
  int bands = 0;
  std::function<void(std::size_t begin, std::size_t end, bool last)> ready;
};
// preprocess_stage with the pixels of each image where `sources` says (one per image): Pack images as
// above, Pinned ones placed after the packed part (their copies returned), Device ones not in the block.
// The Pack images' rows go through the staging pool as above; the overload with `pool` as above too. `options`
// as above; with `ready` the block is the same byte for byte.
StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block, const StageOptions& options = {});
StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block, cpu::ThreadPool* pool,
                             const StageOptions& options = {});

template <typename T>
void preprocess_letterbox(const PreprocessParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
