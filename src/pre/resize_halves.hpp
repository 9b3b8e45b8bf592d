// pre/resize_halves.hpp - the bilinear resize where every tap weighs its two source lines equally.
//
// OpenCV's INTER_LINEAR (pre/letterbox.hpp) samples output pixel d at f = (d + 0.5) * scale - 0.5. At a reduction
// by an even factor (1280x720, 2560x1440, 3840x2160 to 640x360) every f lands halfway between two source lines, so
// every tap has the weights 1024 / 1024. The two passes then reduce exactly:
//   horizontal  h = 1024 * (a + b)                      (a, b: the tap's two pixels of one row)
//   vertical    ((h >> 4) * 1024) >> 16 = a + b, per row, so out = (a + b + c + d + 2) >> 2
// the rounded mean of the 2x2 source pixels, the same byte resize_blend_x / resize_blend_y give. The CUDA staging
// block (backends/cuda/preprocess.cu) uses it to pack such images already resized: a quarter of the bytes to copy.
#pragma once

#include <cstdint>
#include <vector>

#include "pre/letterbox.hpp"

namespace yolo12::pre {

enum class HalfTaps {
  No,        // some tap's weights are not 1024 / 1024, or its two lines are not neighbours
  Any,       // every tap weighs two neighbouring lines 1024 / 1024
  Adjacent,  // and tap d reads lines 2d and 2d + 1 (a reduction by exactly 2)
};
HalfTaps half_taps(const std::vector<ResizeTap>& taps);

// One output row of an image whose x and y taps are both halves (half_taps != No): for each of the dst_w pixels of
// `taps_x` and each of `channels` (1..4) interleaved channels, the rounded mean of row0's and row1's two pixels
// (row0, row1: the source rows of the output row's y tap). `adjacent`: half_taps(taps_x) == Adjacent (the pixels
// read in one piece, else gathered through the taps). 1, 3 and 4 channels take a vectorised path (SSSE3, where the
// CPU has it). Reads no source pixel past taps_x.back().i1; writes dst[0, dst_w * channels) only.
void resize_halves_row(std::uint8_t* dst, const std::uint8_t* row0, const std::uint8_t* row1,
                       const std::vector<ResizeTap>& taps_x, int channels, bool adjacent);

}  // namespace yolo12::pre
