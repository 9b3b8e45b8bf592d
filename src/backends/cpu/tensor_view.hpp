// cpu/tensor_view.hpp - a channel slice of a batched NCHW float32 buffer, as the CPU ops see it.
//
// The buffer holds `batch` images of `channels` x h x w; the view covers channels [c0, c0 + c).
// Image b, channel i of the view (0 <= i < c) starts at data + ((b * channels) + c0 + i) * h * w.
// This is how a graph::ValueRef reaches the kernels: concats are slices of one buffer, and a value
// read through a slice needs no copy.
#pragma once

#include <cstddef>

namespace yolo12::cpu {

struct TensorView {
  float* data = nullptr;
  int channels = 0;  // channels of the whole buffer (per image)
  int c0 = 0;        // first channel of the view
  int c = 0;         // channels in the view
  int h = 0, w = 0;

  bool valid() const { return data != nullptr; }
  std::size_t plane() const { return static_cast<std::size_t>(h) * w; }
  // Start of channel i (of the view) of image b.
  float* at(int b, int i) const {
    return data + (static_cast<std::size_t>(b) * channels + c0 + i) * plane();
  }
};

}  // namespace yolo12::cpu
