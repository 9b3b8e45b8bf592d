// src/backends/cuda/preprocess.cuh - Ultralytics' LetterBox on the GPU, bit-exact with the CPU letterbox
// (src/pre/letterbox.{hpp,cpp}, itself bit-exact with OpenCV's 8-bit INTER_LINEAR).
//
// One staging block carries a whole batch from pinned host memory to the device in one copy:
//   [PreprocessImage x batch | ResizeTap x (sum of new_w + new_h) | pixels of each image]
// preprocess_stage() fills it on the host: the geometry of each image, the integer resize taps from
// pre::resize_taps_x / _y (the same numbers the CPU uses, cached per size), and the pixel rows packed
// densely (pitch = width * bytes per pixel, each image 256-byte aligned).
// Images whose pixels are already in page-locked or device memory skip the host copy (locate_pixels):
// a pinned image's rows go by one cudaMemcpy2DAsync from the caller's memory into the device block,
// after the packed part; a device image (on the executor's device, or managed) is read in place by
// the kernel through the address its header carries.
// preprocess_letterbox() then runs one thread per output pixel: inside the resized area it blends the
// four source pixels with pre::resize_blend_x / _y (the CPU's own integer arithmetic), outside it is
// the pad value 114; channels are reordered to RGB (GRAY8 replicated), divided by 255 (true IEEE
// division, as torch's x / 255) and written into the NHWC network input, fp32 or fp16.
#pragma once

#include <cstddef>
#include <cstdint>
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
  unsigned long long pixels = 0;  // offset of the packed pixels (src_h rows of src_w * bpp bytes)
  unsigned long long src = 0;     // device address of the pixels when read in place (0: at `pixels`)
  unsigned long long src_pitch = 0;  // bytes per row at `src`
  unsigned long long taps_x = 0;  // offset of new_w ResizeTap
  unsigned long long taps_y = 0;  // offset of new_h ResizeTap
  int src_w = 0, src_h = 0, bpp = 3;
  int ch[3] = {2, 1, 0};          // source channel of R, G, B
  int new_w = 0, new_h = 0, left = 0, top = 0;
  int identity = 0;               // 1: new size == source size, no resize (as Ultralytics)
};

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
// preprocess_stage with the pixels of each image where `sources` says (one per image): Pack images as
// above, Pinned ones placed after the packed part (their copies returned), Device ones not in the block.
// The Pack images' rows go through the staging pool as above; the overload with `pool` as above too.
StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block);
StagedBatch preprocess_stage(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                             const std::vector<PixelSource>& sources, void* block, cpu::ThreadPool* pool);

template <typename T>
void preprocess_letterbox(const PreprocessParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
