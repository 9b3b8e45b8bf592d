// pre/letterbox.hpp - Ultralytics' LetterBox, reproduced exactly (CPU reference; the CUDA backend
// has its own kernel using the same LetterboxParams and the same resize taps).
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_device.hpp"  // functions marked YOLO12_HOST_DEVICE are also called by CUDA kernels
#include "yolo12/yolo12.hpp"

namespace yolo12::pre {

// Geometry of one letterboxed image.
struct LetterboxParams {
  int src_w = 0, src_h = 0;  // original image
  int dst_w = 0, dst_h = 0;  // network input (padded)
  int new_w = 0, new_h = 0;  // resized, before padding
  int left = 0, top = 0;     // padding before the image
  float ratio = 1.f;         // new / old
};

// target_h x target_w: the configured input size. rect: minimum rectangle (pad only up to the
// next multiple of `stride`), as Ultralytics predict does for .pt models; else pad to the target.
// Throws InputError for a non-positive image or target size.
LetterboxParams letterbox_params(int src_w, int src_h, int target_h, int target_w, bool rect,
                                 int stride = 32);

// Resizes (bilinear, bit-exact with OpenCV's 8-bit INTER_LINEAR) and pads with 114, converts to
// RGB float in [0, 1], planar. dst: (3, dst_h, dst_w) float32. Throws InputError on a bad view.
void letterbox_to_nchw(const ImageView& image, const LetterboxParams& p, float* dst);

// Python's round(): to the nearest integer, ties to even (round(2.5) == 2). Used wherever
// Ultralytics rounds a size or a pad.
double round_half_even(double x);

// Checks a view (non-null, 1..kMaxImageSide pixels a side, a known format, pitch >= width * bytes
// per pixel); throws InputError. The pipeline checks every image of a batch with it before any work.
constexpr int kMaxImageSide = 65536;
void check_image_view(const ImageView& image);
// Bytes per pixel of a format (1, 3 or 4).
int bytes_per_pixel(PixelFormat format);

// ---- The bilinear resize, as OpenCV computes it for 8-bit images ---------------------------------
//
// Output pixel d along an axis samples the source at f = (d + 0.5) * (src / dst) - 0.5, evaluated in
// double and rounded to float; i0 = floor(f), frac = f - i0 (float). The two weights are
// round((1 - frac) * 2^11) and round(frac * 2^11) (they need not sum to exactly 2^11).
//
//   horizontal pass (exact integers):  h = s[i0] * w0 + s[i1] * w1            (<= 255 * 2^11)
//   vertical pass (rounded):           v = (((h0 >> 4) * b0) >> 16) + (((h1 >> 4) * b1) >> 16)
//                                      out = clamp((v + 2) >> 2, 0, 255)
//
// The vertical rounding is that of OpenCV's vectorised 8-bit path (drop 4 bits, high half of a
// 16 x 16 bit product, then a rounding shift by 2); it differs from the exact (sum + 2^21) >> 22 in
// about one pixel in ten, and it is what cv::resize returns on x86 for every pixel (measured against
// opencv-python 5.0 and the C++ OpenCV 4.6 on random images, tests/opencv/test_letterbox.cpp).
// Borders differ by axis: along x, a tap left of 0 or at/after the last column is moved onto the
// edge pixel with weights (2^11, 0); along y only the row indices are clamped and the weights kept.
// An exact 2x reduction (OpenCV switches to its area filter) gives the same numbers.
constexpr int kResizeCoefBits = 11;
constexpr int kResizeCoefScale = 1 << kResizeCoefBits;  // 2048

// One output column (or row): the two source indices it blends, already inside [0, src_len - 1],
// and their fixed-point weights.
struct ResizeTap {
  int i0 = 0, i1 = 0;
  int w0 = 0, w1 = 0;
};

// Taps for every output column (x) / output row (y); dst_len entries. src_len, dst_len >= 1.
std::vector<ResizeTap> resize_taps_x(int src_len, int dst_len);
std::vector<ResizeTap> resize_taps_y(int src_len, int dst_len);

// Horizontal pass of one channel of one pixel: s0 = src[i0], s1 = src[i1] of the tap's row.
YOLO12_HOST_DEVICE inline int resize_blend_x(int s0, int s1, int w0, int w1) {
  return s0 * w0 + s1 * w1;
}

// Vertical pass: h0, h1 = horizontal results of rows i0 and i1 of the y tap (b0, b1 its weights).
YOLO12_HOST_DEVICE inline std::uint8_t resize_blend_y(int h0, int h1, int b0, int b1) {
  const int v = (((h0 >> 4) * b0) >> 16) + (((h1 >> 4) * b1) >> 16);
  const int r = (v + 2) >> 2;
  return static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
}

// Resizes an 8-bit image with `channels` interleaved channels (any count >= 1), bit-exact with
// cv::resize(src, dst, {dst_w, dst_h}, 0, 0, cv::INTER_LINEAR).
// src: (src_h rows of src_pitch bytes, src_w * channels used); dst: (dst_h, dst_w, channels) dense.
void resize_bilinear_u8(const std::uint8_t* src, int src_w, int src_h, std::size_t src_pitch,
                        int channels, std::uint8_t* dst, int dst_w, int dst_h);

}  // namespace yolo12::pre
