// pre/letterbox.hpp - Ultralytics' LetterBox, reproduced exactly (CPU reference; the CUDA backend
// has its own kernel using the same LetterboxParams).
#pragma once

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
LetterboxParams letterbox_params(int src_w, int src_h, int target_h, int target_w, bool rect,
                                 int stride = 32);

// Resizes (bilinear, bit-exact with OpenCV's 8-bit INTER_LINEAR) and pads with 114, converts to
// RGB float in [0, 1], planar. dst: (3, dst_h, dst_w) float32. Throws InputError on a bad view.
void letterbox_to_nchw(const ImageView& image, const LetterboxParams& p, float* dst);

}  // namespace yolo12::pre
