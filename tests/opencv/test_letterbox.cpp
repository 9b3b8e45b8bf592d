// tests/opencv/test_letterbox.cpp - pre::letterbox_params / letterbox_to_nchw / resize_bilinear_u8
// against Ultralytics' LetterBox (parameters computed by Ultralytics 8.4 in Python, embedded below)
// and against OpenCV (cv::resize INTER_LINEAR + cv::copyMakeBorder), bit-exact.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "catch.hpp"
#include "pre/letterbox.hpp"
#include "support.hpp"

using yolo12::ImageView;
using yolo12::PixelFormat;
using yolo12::pre::LetterboxParams;

namespace {

// One row: image w, h; target h, w; rect (LetterBox auto); expected new_w, new_h, left, top, dst_w, dst_h.
struct ParamRow {
  int w, h, th, tw;
  bool rect;
  int new_w, new_h, left, top, dst_w, dst_h;
};

// Made with Ultralytics 8.4.190: for each case, LetterBox((th, tw), auto=rect, stride=32)
// .get_params({"img": np.zeros((h, w, 3))}); dst = new_unpad + left + right, new_unpad + top + bottom.
// Includes ties of Python's round() (5 x 128 at 320: 12.5 -> 12; 15 x 1280 at 640: 7.5 -> 8).
const ParamRow kUltralyticsParams[] = {
    {810, 1080, 640, 640, false, 480, 640, 80, 0, 640, 640},
    {810, 1080, 640, 640, true, 480, 640, 0, 0, 480, 640},
    {810, 1080, 320, 320, false, 240, 320, 40, 0, 320, 320},
    {810, 1080, 320, 320, true, 240, 320, 8, 0, 256, 320},
    {810, 1080, 384, 640, false, 288, 384, 176, 0, 640, 384},
    {810, 1080, 384, 640, true, 288, 384, 0, 0, 288, 384},
    {810, 1080, 96, 224, false, 72, 96, 76, 0, 224, 96},
    {810, 1080, 96, 224, true, 72, 96, 12, 0, 96, 96},
    {1280, 720, 640, 640, false, 640, 360, 0, 140, 640, 640},
    {1280, 720, 640, 640, true, 640, 360, 0, 12, 640, 384},
    {1280, 720, 320, 320, false, 320, 180, 0, 70, 320, 320},
    {1280, 720, 320, 320, true, 320, 180, 0, 6, 320, 192},
    {1280, 720, 384, 640, false, 640, 360, 0, 12, 640, 384},
    {1280, 720, 384, 640, true, 640, 360, 0, 12, 640, 384},
    {1280, 720, 96, 224, false, 171, 96, 26, 0, 224, 96},
    {1280, 720, 96, 224, true, 171, 96, 10, 0, 192, 96},
    {1, 1, 640, 640, false, 640, 640, 0, 0, 640, 640},
    {1, 1, 640, 640, true, 640, 640, 0, 0, 640, 640},
    {1, 1, 320, 320, false, 320, 320, 0, 0, 320, 320},
    {1, 1, 320, 320, true, 320, 320, 0, 0, 320, 320},
    {1, 1, 384, 640, false, 384, 384, 128, 0, 640, 384},
    {1, 1, 384, 640, true, 384, 384, 0, 0, 384, 384},
    {1, 1, 96, 224, false, 96, 96, 64, 0, 224, 96},
    {1, 1, 96, 224, true, 96, 96, 0, 0, 96, 96},
    {3000, 1, 640, 640, false, 640, 1, 0, 319, 640, 640},
    {3000, 1, 640, 640, true, 640, 1, 0, 15, 640, 32},
    {3000, 1, 320, 320, false, 320, 1, 0, 159, 320, 320},
    {3000, 1, 320, 320, true, 320, 1, 0, 15, 320, 32},
    {3000, 1, 384, 640, false, 640, 1, 0, 191, 640, 384},
    {3000, 1, 384, 640, true, 640, 1, 0, 15, 640, 32},
    {3000, 1, 96, 224, false, 224, 1, 0, 47, 224, 96},
    {3000, 1, 96, 224, true, 224, 1, 0, 15, 224, 32},
    {1, 3000, 640, 640, false, 1, 640, 319, 0, 640, 640},
    {1, 3000, 640, 640, true, 1, 640, 15, 0, 32, 640},
    {1, 3000, 320, 320, false, 1, 320, 159, 0, 320, 320},
    {1, 3000, 320, 320, true, 1, 320, 15, 0, 32, 320},
    {1, 3000, 384, 640, false, 1, 384, 319, 0, 640, 384},
    {1, 3000, 384, 640, true, 1, 384, 15, 0, 32, 384},
    {1, 3000, 96, 224, false, 1, 96, 111, 0, 224, 96},
    {1, 3000, 96, 224, true, 1, 96, 15, 0, 32, 96},
    {640, 480, 640, 640, false, 640, 480, 0, 80, 640, 640},
    {640, 480, 640, 640, true, 640, 480, 0, 0, 640, 480},
    {640, 480, 320, 320, false, 320, 240, 0, 40, 320, 320},
    {640, 480, 320, 320, true, 320, 240, 0, 8, 320, 256},
    {640, 480, 384, 640, false, 512, 384, 64, 0, 640, 384},
    {640, 480, 384, 640, true, 512, 384, 0, 0, 512, 384},
    {640, 480, 96, 224, false, 128, 96, 48, 0, 224, 96},
    {640, 480, 96, 224, true, 128, 96, 0, 0, 128, 96},
    {640, 640, 640, 640, false, 640, 640, 0, 0, 640, 640},
    {640, 640, 640, 640, true, 640, 640, 0, 0, 640, 640},
    {640, 640, 320, 320, false, 320, 320, 0, 0, 320, 320},
    {640, 640, 320, 320, true, 320, 320, 0, 0, 320, 320},
    {640, 640, 384, 640, false, 384, 384, 128, 0, 640, 384},
    {640, 640, 384, 640, true, 384, 384, 0, 0, 384, 384},
    {640, 640, 96, 224, false, 96, 96, 64, 0, 224, 96},
    {640, 640, 96, 224, true, 96, 96, 0, 0, 96, 96},
    {777, 333, 640, 640, false, 640, 274, 0, 183, 640, 640},
    {777, 333, 640, 640, true, 640, 274, 0, 7, 640, 288},
    {777, 333, 320, 320, false, 320, 137, 0, 91, 320, 320},
    {777, 333, 320, 320, true, 320, 137, 0, 11, 320, 160},
    {777, 333, 384, 640, false, 640, 274, 0, 55, 640, 384},
    {777, 333, 384, 640, true, 640, 274, 0, 7, 640, 288},
    {777, 333, 96, 224, false, 224, 96, 0, 0, 224, 96},
    {777, 333, 96, 224, true, 224, 96, 0, 0, 224, 96},
    {999, 1000, 640, 640, false, 639, 640, 0, 0, 640, 640},
    {999, 1000, 640, 640, true, 639, 640, 0, 0, 640, 640},
    {999, 1000, 320, 320, false, 320, 320, 0, 0, 320, 320},
    {999, 1000, 320, 320, true, 320, 320, 0, 0, 320, 320},
    {999, 1000, 384, 640, false, 384, 384, 128, 0, 640, 384},
    {999, 1000, 384, 640, true, 384, 384, 0, 0, 384, 384},
    {999, 1000, 96, 224, false, 96, 96, 64, 0, 224, 96},
    {999, 1000, 96, 224, true, 96, 96, 0, 0, 96, 96},
    {333, 101, 640, 640, false, 640, 194, 0, 223, 640, 640},
    {333, 101, 640, 640, true, 640, 194, 0, 15, 640, 224},
    {333, 101, 320, 320, false, 320, 97, 0, 111, 320, 320},
    {333, 101, 320, 320, true, 320, 97, 0, 15, 320, 128},
    {333, 101, 384, 640, false, 640, 194, 0, 95, 640, 384},
    {333, 101, 384, 640, true, 640, 194, 0, 15, 640, 224},
    {333, 101, 96, 224, false, 224, 68, 0, 14, 224, 96},
    {333, 101, 96, 224, true, 224, 68, 0, 14, 224, 96},
    {7, 2, 640, 640, false, 640, 183, 0, 228, 640, 640},
    {7, 2, 640, 640, true, 640, 183, 0, 4, 640, 192},
    {7, 2, 320, 320, false, 320, 91, 0, 114, 320, 320},
    {7, 2, 320, 320, true, 320, 91, 0, 2, 320, 96},
    {7, 2, 384, 640, false, 640, 183, 0, 100, 640, 384},
    {7, 2, 384, 640, true, 640, 183, 0, 4, 640, 192},
    {7, 2, 96, 224, false, 224, 64, 0, 16, 224, 96},
    {7, 2, 96, 224, true, 224, 64, 0, 0, 224, 64},
    {1001, 5, 640, 640, false, 640, 3, 0, 318, 640, 640},
    {1001, 5, 640, 640, true, 640, 3, 0, 14, 640, 32},
    {1001, 5, 320, 320, false, 320, 2, 0, 159, 320, 320},
    {1001, 5, 320, 320, true, 320, 2, 0, 15, 320, 32},
    {1001, 5, 384, 640, false, 640, 3, 0, 190, 640, 384},
    {1001, 5, 384, 640, true, 640, 3, 0, 14, 640, 32},
    {1001, 5, 96, 224, false, 224, 1, 0, 47, 224, 96},
    {1001, 5, 96, 224, true, 224, 1, 0, 15, 224, 32},
    {1080, 1920, 640, 640, false, 360, 640, 140, 0, 640, 640},
    {1080, 1920, 640, 640, true, 360, 640, 12, 0, 384, 640},
    {1080, 1920, 320, 320, false, 180, 320, 70, 0, 320, 320},
    {1080, 1920, 320, 320, true, 180, 320, 6, 0, 192, 320},
    {1080, 1920, 384, 640, false, 216, 384, 212, 0, 640, 384},
    {1080, 1920, 384, 640, true, 216, 384, 4, 0, 224, 384},
    {1080, 1920, 96, 224, false, 54, 96, 85, 0, 224, 96},
    {1080, 1920, 96, 224, true, 54, 96, 5, 0, 64, 96},
    {1919, 1081, 640, 640, false, 640, 361, 0, 139, 640, 640},
    {1919, 1081, 640, 640, true, 640, 361, 0, 11, 640, 384},
    {1919, 1081, 320, 320, false, 320, 180, 0, 70, 320, 320},
    {1919, 1081, 320, 320, true, 320, 180, 0, 6, 320, 192},
    {1919, 1081, 384, 640, false, 640, 361, 0, 11, 640, 384},
    {1919, 1081, 384, 640, true, 640, 361, 0, 11, 640, 384},
    {1919, 1081, 96, 224, false, 170, 96, 27, 0, 224, 96},
    {1919, 1081, 96, 224, true, 170, 96, 11, 0, 192, 96},
    {640, 427, 640, 640, false, 640, 427, 0, 106, 640, 640},
    {640, 427, 640, 640, true, 640, 427, 0, 10, 640, 448},
    {640, 427, 320, 320, false, 320, 214, 0, 53, 320, 320},
    {640, 427, 320, 320, true, 320, 214, 0, 5, 320, 224},
    {640, 427, 384, 640, false, 576, 384, 32, 0, 640, 384},
    {640, 427, 384, 640, true, 576, 384, 0, 0, 576, 384},
    {640, 427, 96, 224, false, 144, 96, 40, 0, 224, 96},
    {640, 427, 96, 224, true, 144, 96, 8, 0, 160, 96},
    {375, 500, 640, 640, false, 480, 640, 80, 0, 640, 640},
    {375, 500, 640, 640, true, 480, 640, 0, 0, 480, 640},
    {375, 500, 320, 320, false, 240, 320, 40, 0, 320, 320},
    {375, 500, 320, 320, true, 240, 320, 8, 0, 256, 320},
    {375, 500, 384, 640, false, 288, 384, 176, 0, 640, 384},
    {375, 500, 384, 640, true, 288, 384, 0, 0, 288, 384},
    {375, 500, 96, 224, false, 72, 96, 76, 0, 224, 96},
    {375, 500, 96, 224, true, 72, 96, 12, 0, 96, 96},
    {48, 64, 640, 640, false, 480, 640, 80, 0, 640, 640},
    {48, 64, 640, 640, true, 480, 640, 0, 0, 480, 640},
    {48, 64, 320, 320, false, 240, 320, 40, 0, 320, 320},
    {48, 64, 320, 320, true, 240, 320, 8, 0, 256, 320},
    {48, 64, 384, 640, false, 288, 384, 176, 0, 640, 384},
    {48, 64, 384, 640, true, 288, 384, 0, 0, 288, 384},
    {48, 64, 96, 224, false, 72, 96, 76, 0, 224, 96},
    {48, 64, 96, 224, true, 72, 96, 12, 0, 96, 96},
    {3, 7, 640, 640, false, 274, 640, 183, 0, 640, 640},
    {3, 7, 640, 640, true, 274, 640, 7, 0, 288, 640},
    {3, 7, 320, 320, false, 137, 320, 91, 0, 320, 320},
    {3, 7, 320, 320, true, 137, 320, 11, 0, 160, 320},
    {3, 7, 384, 640, false, 165, 384, 237, 0, 640, 384},
    {3, 7, 384, 640, true, 165, 384, 13, 0, 192, 384},
    {3, 7, 96, 224, false, 41, 96, 91, 0, 224, 96},
    {3, 7, 96, 224, true, 41, 96, 11, 0, 64, 96},
    {7, 3, 640, 640, false, 640, 274, 0, 183, 640, 640},
    {7, 3, 640, 640, true, 640, 274, 0, 7, 640, 288},
    {7, 3, 320, 320, false, 320, 137, 0, 91, 320, 320},
    {7, 3, 320, 320, true, 320, 137, 0, 11, 320, 160},
    {7, 3, 384, 640, false, 640, 274, 0, 55, 640, 384},
    {7, 3, 384, 640, true, 640, 274, 0, 7, 640, 288},
    {7, 3, 96, 224, false, 224, 96, 0, 0, 224, 96},
    {7, 3, 96, 224, true, 224, 96, 0, 0, 224, 96},
    {1, 800, 640, 640, false, 1, 640, 319, 0, 640, 640},
    {1, 800, 640, 640, true, 1, 640, 15, 0, 32, 640},
    {1, 800, 320, 320, false, 1, 320, 159, 0, 320, 320},
    {1, 800, 320, 320, true, 1, 320, 15, 0, 32, 320},
    {1, 800, 384, 640, false, 1, 384, 319, 0, 640, 384},
    {1, 800, 384, 640, true, 1, 384, 15, 0, 32, 384},
    {1, 800, 96, 224, false, 1, 96, 111, 0, 224, 96},
    {1, 800, 96, 224, true, 1, 96, 15, 0, 32, 96},
    {721, 1279, 640, 640, false, 361, 640, 139, 0, 640, 640},
    {721, 1279, 640, 640, true, 361, 640, 11, 0, 384, 640},
    {721, 1279, 320, 320, false, 180, 320, 70, 0, 320, 320},
    {721, 1279, 320, 320, true, 180, 320, 6, 0, 192, 320},
    {721, 1279, 384, 640, false, 216, 384, 212, 0, 640, 384},
    {721, 1279, 384, 640, true, 216, 384, 4, 0, 224, 384},
    {721, 1279, 96, 224, false, 54, 96, 85, 0, 224, 96},
    {721, 1279, 96, 224, true, 54, 96, 5, 0, 64, 96},
    {250, 250, 640, 640, false, 640, 640, 0, 0, 640, 640},
    {250, 250, 640, 640, true, 640, 640, 0, 0, 640, 640},
    {250, 250, 320, 320, false, 320, 320, 0, 0, 320, 320},
    {250, 250, 320, 320, true, 320, 320, 0, 0, 320, 320},
    {250, 250, 384, 640, false, 384, 384, 128, 0, 640, 384},
    {250, 250, 384, 640, true, 384, 384, 0, 0, 384, 384},
    {250, 250, 96, 224, false, 96, 96, 64, 0, 224, 96},
    {250, 250, 96, 224, true, 96, 96, 0, 0, 96, 96},
    {2000, 9, 640, 640, false, 640, 3, 0, 318, 640, 640},
    {2000, 9, 640, 640, true, 640, 3, 0, 14, 640, 32},
    {2000, 9, 320, 320, false, 320, 1, 0, 159, 320, 320},
    {2000, 9, 320, 320, true, 320, 1, 0, 15, 320, 32},
    {2000, 9, 384, 640, false, 640, 3, 0, 190, 640, 384},
    {2000, 9, 384, 640, true, 640, 3, 0, 14, 640, 32},
    {2000, 9, 96, 224, false, 224, 1, 0, 47, 224, 96},
    {2000, 9, 96, 224, true, 224, 1, 0, 15, 224, 32},
    {5, 128, 640, 640, false, 25, 640, 307, 0, 640, 640},
    {5, 128, 640, 640, true, 25, 640, 3, 0, 32, 640},
    {5, 128, 320, 320, false, 12, 320, 154, 0, 320, 320},
    {5, 128, 320, 320, true, 12, 320, 10, 0, 32, 320},
    {5, 128, 384, 640, false, 15, 384, 312, 0, 640, 384},
    {5, 128, 384, 640, true, 15, 384, 8, 0, 32, 384},
    {5, 128, 96, 224, false, 4, 96, 110, 0, 224, 96},
    {5, 128, 96, 224, true, 4, 96, 14, 0, 32, 96},
    {15, 1280, 640, 640, false, 8, 640, 316, 0, 640, 640},
    {15, 1280, 640, 640, true, 8, 640, 12, 0, 32, 640},
    {15, 1280, 320, 320, false, 4, 320, 158, 0, 320, 320},
    {15, 1280, 320, 320, true, 4, 320, 14, 0, 32, 320},
    {15, 1280, 384, 640, false, 4, 384, 318, 0, 640, 384},
    {15, 1280, 384, 640, true, 4, 384, 14, 0, 32, 384},
    {15, 1280, 96, 224, false, 1, 96, 111, 0, 224, 96},
    {15, 1280, 96, 224, true, 1, 96, 15, 0, 32, 96},
    {13, 1280, 640, 640, false, 6, 640, 317, 0, 640, 640},
    {13, 1280, 640, 640, true, 6, 640, 13, 0, 32, 640},
    {13, 1280, 320, 320, false, 3, 320, 158, 0, 320, 320},
    {13, 1280, 320, 320, true, 3, 320, 14, 0, 32, 320},
    {13, 1280, 384, 640, false, 4, 384, 318, 0, 640, 384},
    {13, 1280, 384, 640, true, 4, 384, 14, 0, 32, 384},
    {13, 1280, 96, 224, false, 1, 96, 111, 0, 224, 96},
    {13, 1280, 96, 224, true, 1, 96, 15, 0, 32, 96},
    {1280, 5, 640, 640, false, 640, 2, 0, 319, 640, 640},
    {1280, 5, 640, 640, true, 640, 2, 0, 15, 640, 32},
    {1280, 5, 320, 320, false, 320, 1, 0, 159, 320, 320},
    {1280, 5, 320, 320, true, 320, 1, 0, 15, 320, 32},
    {1280, 5, 384, 640, false, 640, 2, 0, 191, 640, 384},
    {1280, 5, 384, 640, true, 640, 2, 0, 15, 640, 32},
    {1280, 5, 96, 224, false, 224, 1, 0, 47, 224, 96},
    {1280, 5, 96, 224, true, 224, 1, 0, 15, 224, 32},
};

ImageView view_of(const cv::Mat& m, PixelFormat f) {
  return ImageView{m.data, m.cols, m.rows, m.step[0], f};
}

cv::Mat random_image(std::mt19937& rng, int h, int w, int type) {
  cv::Mat m(h, w, type);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = m.ptr<std::uint8_t>(y);
    for (std::size_t i = 0; i < static_cast<std::size_t>(w) * m.elemSize(); ++i)
      row[i] = static_cast<std::uint8_t>(byte(rng));
  }
  return m;
}

// A smooth image (gradients plus a little noise): exercises the rounding more like a photo.
cv::Mat smooth_image(std::mt19937& rng, int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  std::uniform_int_distribution<int> noise(-3, 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      cv::Vec3b& p = m.at<cv::Vec3b>(y, x);
      p[0] = cv::saturate_cast<std::uint8_t>(255 * x / std::max(w - 1, 1) + noise(rng));
      p[1] = cv::saturate_cast<std::uint8_t>(255 * y / std::max(h - 1, 1) + noise(rng));
      p[2] = cv::saturate_cast<std::uint8_t>(128 + 100 * ((x / 7 + y / 5) % 2) + noise(rng));
    }
  return m;
}

// Count of differing bytes between two same-shaped 8-bit Mats.
long long count_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::compare(a.reshape(1), b.reshape(1), d, cv::CMP_NE);
  return cv::countNonZero(d);
}

// The reference letterbox with OpenCV: resize (if the size changes), pad with 114, BGR -> RGB,
// planar, / 255 as float. bgr: CV_8UC3.
std::vector<float> opencv_letterbox(const cv::Mat& bgr, const LetterboxParams& p) {
  cv::Mat resized = bgr;
  if (bgr.cols != p.new_w || bgr.rows != p.new_h)
    cv::resize(bgr, resized, cv::Size(p.new_w, p.new_h), 0, 0, cv::INTER_LINEAR);
  cv::Mat padded;
  cv::copyMakeBorder(resized, padded, p.top, p.dst_h - p.new_h - p.top, p.left,
                     p.dst_w - p.new_w - p.left, cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
  std::vector<float> out(3 * static_cast<std::size_t>(p.dst_w) * p.dst_h);
  const std::size_t plane = static_cast<std::size_t>(p.dst_w) * p.dst_h;
  for (int y = 0; y < p.dst_h; ++y)
    for (int x = 0; x < p.dst_w; ++x) {
      const cv::Vec3b& v = padded.at<cv::Vec3b>(y, x);
      for (int c = 0; c < 3; ++c)
        out[c * plane + static_cast<std::size_t>(y) * p.dst_w + x] = static_cast<float>(v[2 - c]) / 255.f;
    }
  return out;
}

std::size_t count_diff(const std::vector<float>& a, const std::vector<float>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST_CASE("letterbox_params: equal to Ultralytics' LetterBox", "[letterbox]") {
  int checked = 0;
  for (const ParamRow& r : kUltralyticsParams) {
    const LetterboxParams p = yolo12::pre::letterbox_params(r.w, r.h, r.th, r.tw, r.rect, 32);
    INFO("image " << r.w << "x" << r.h << " target " << r.tw << "x" << r.th << " rect " << r.rect);
    CHECK(p.src_w == r.w);
    CHECK(p.src_h == r.h);
    CHECK(p.new_w == r.new_w);
    CHECK(p.new_h == r.new_h);
    CHECK(p.left == r.left);
    CHECK(p.top == r.top);
    CHECK(p.dst_w == r.dst_w);
    CHECK(p.dst_h == r.dst_h);
    ++checked;
  }
  CHECK(checked > 200);
}

TEST_CASE("letterbox_params: impossible sizes throw InputError", "[letterbox]") {
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_params(0, 10, 640, 640, false), yolo12::InputError);
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_params(10, -1, 640, 640, false), yolo12::InputError);
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_params(10, 10, 0, 640, false), yolo12::InputError);
}

TEST_CASE("resize_bilinear_u8: bit-exact with cv::resize INTER_LINEAR", "[letterbox][resize]") {
  std::mt19937 rng(12345);
  // Hand-picked: 1-pixel images, extreme aspect ratios, exact 2x (OpenCV's area path), identity,
  // large up/down factors, odd sizes.
  std::vector<std::array<int, 4>> sizes = {  // src_w, src_h, dst_w, dst_h
      {1, 1, 7, 5},      {1, 1, 640, 640},  {500, 1, 640, 1},   {1, 500, 1, 640},  {3000, 3, 640, 1},
      {810, 1080, 480, 640}, {1280, 720, 640, 360}, {100, 100, 50, 50}, {99, 101, 49, 50},
      {640, 640, 320, 640}, {9, 7, 4, 3},    {2, 2, 1, 1},      {2, 1, 1, 1},      {3, 4000, 1, 640},
      {5, 5, 5, 5},      {17, 13, 1200, 1000}, {1080, 1920, 360, 640}, {1000, 2, 500, 1},
      {640, 480, 641, 479}, {33, 31, 640, 600}};
  std::uniform_int_distribution<int> len(1, 400);
  for (int i = 0; i < 60; ++i) sizes.push_back({len(rng), len(rng), len(rng), len(rng)});
  for (int type : {CV_8UC1, CV_8UC3, CV_8UC4}) {
    for (const auto& s : sizes) {
      const int sw = s[0], sh = s[1], dw = s[2], dh = s[3];
      // A view into a wider image, so the pitch is larger than width * channels.
      cv::Mat big = random_image(rng, sh, sw + 3, type);
      cv::Mat src = big(cv::Rect(1, 0, sw, sh));
      cv::Mat expected;
      cv::resize(src, expected, cv::Size(dw, dh), 0, 0, cv::INTER_LINEAR);
      cv::Mat got(dh, dw, type);
      yolo12::pre::resize_bilinear_u8(src.data, sw, sh, src.step[0], src.channels(), got.data, dw, dh);
      INFO("channels " << src.channels() << " " << sw << "x" << sh << " -> " << dw << "x" << dh);
      CHECK(count_diff(got, expected) == 0);
    }
  }
}

TEST_CASE("resize_bilinear_u8: bit-exact on smooth images", "[letterbox][resize]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(2, 900);
  for (int i = 0; i < 25; ++i) {
    const int sw = len(rng), sh = len(rng), dw = len(rng), dh = len(rng);
    cv::Mat src = smooth_image(rng, sh, sw);
    cv::Mat expected;
    cv::resize(src, expected, cv::Size(dw, dh), 0, 0, cv::INTER_LINEAR);
    cv::Mat got(dh, dw, CV_8UC3);
    yolo12::pre::resize_bilinear_u8(src.data, sw, sh, src.step[0], 3, got.data, dw, dh);
    INFO(sw << "x" << sh << " -> " << dw << "x" << dh);
    CHECK(count_diff(got, expected) == 0);
  }
}

TEST_CASE("resize taps: weights and indices as documented", "[letterbox][resize]") {
  // 4 -> 8 (upscale by 2): output 0 samples at -0.25: x clamps onto pixel 0 with (2048, 0); y keeps
  // the weights: 0.25 * 2048 = 512 on row -1 (clamped to 0), 0.75 * 2048 = 1536 on row 0.
  const auto tx = yolo12::pre::resize_taps_x(4, 8);
  const auto ty = yolo12::pre::resize_taps_y(4, 8);
  REQUIRE(tx.size() == 8);
  CHECK(tx[0].i0 == 0);
  CHECK(tx[0].w0 == 2048);
  CHECK(tx[0].w1 == 0);
  CHECK(ty[0].i0 == 0);
  CHECK(ty[0].i1 == 0);
  CHECK(ty[0].w0 == 512);
  CHECK(ty[0].w1 == 1536);
  // Output 3 samples at 1.25: pixels 1 and 2, weights 1536 / 512.
  CHECK(tx[3].i0 == 1);
  CHECK(tx[3].i1 == 2);
  CHECK(tx[3].w0 == 1536);
  CHECK(tx[3].w1 == 512);
  // Output 7 samples at 3.25: past the last pixel; x: (3, 3) with (2048, 0); y: rows (3, 3),
  // weights kept (1536, 512).
  CHECK(tx[7].i0 == 3);
  CHECK(tx[7].i1 == 3);
  CHECK(tx[7].w0 == 2048);
  CHECK(ty[7].i0 == 3);
  CHECK(ty[7].i1 == 3);
  CHECK(ty[7].w0 == 1536);
  CHECK(ty[7].w1 == 512);
}

TEST_CASE("letterbox_to_nchw: equal to cv::resize + copyMakeBorder, every pixel format",
          "[letterbox]") {
  std::mt19937 rng(99);
  struct Case { int w, h, th, tw; bool rect; };
  const Case cases[] = {{810, 1080, 640, 640, false}, {1280, 720, 640, 640, true},
                        {1280, 720, 320, 320, false}, {1, 1, 64, 64, false},
                        {3000, 2, 640, 640, true},    {7, 999, 96, 224, false},
                        {640, 640, 640, 640, false},  {333, 777, 384, 640, true}};
  for (const Case& c : cases) {
    const LetterboxParams p = yolo12::pre::letterbox_params(c.w, c.h, c.th, c.tw, c.rect);
    cv::Mat bgr = random_image(rng, c.h, c.w, CV_8UC3);
    const std::vector<float> expected = opencv_letterbox(bgr, p);
    INFO("image " << c.w << "x" << c.h << " target " << c.tw << "x" << c.th << " rect " << c.rect);
    std::vector<float> got(expected.size(), -1.f);

    yolo12::pre::letterbox_to_nchw(view_of(bgr, PixelFormat::BGR8), p, got.data());
    CHECK(count_diff(got, expected) == 0);

    cv::Mat rgb, bgra, rgba;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    cv::cvtColor(bgr, bgra, cv::COLOR_BGR2BGRA);
    cv::cvtColor(bgr, rgba, cv::COLOR_BGR2RGBA);
    std::fill(got.begin(), got.end(), -1.f);
    yolo12::pre::letterbox_to_nchw(view_of(rgb, PixelFormat::RGB8), p, got.data());
    CHECK(count_diff(got, expected) == 0);
    std::fill(got.begin(), got.end(), -1.f);
    yolo12::pre::letterbox_to_nchw(view_of(bgra, PixelFormat::BGRA8), p, got.data());
    CHECK(count_diff(got, expected) == 0);
    std::fill(got.begin(), got.end(), -1.f);
    yolo12::pre::letterbox_to_nchw(view_of(rgba, PixelFormat::RGBA8), p, got.data());
    CHECK(count_diff(got, expected) == 0);

    // Gray: the same as the gray image expanded to three equal channels.
    cv::Mat gray, gray3;
    cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
    cv::cvtColor(gray, gray3, cv::COLOR_GRAY2BGR);
    const std::vector<float> expected_gray = opencv_letterbox(gray3, p);
    std::fill(got.begin(), got.end(), -1.f);
    yolo12::pre::letterbox_to_nchw(view_of(gray, PixelFormat::GRAY8), p, got.data());
    CHECK(count_diff(got, expected_gray) == 0);
  }
}

TEST_CASE("letterbox_to_nchw: bad views throw InputError", "[letterbox]") {
  std::vector<std::uint8_t> pixels(30 * 20 * 3, 7);
  const LetterboxParams p = yolo12::pre::letterbox_params(30, 20, 64, 64, false);
  std::vector<float> out(3 * 64 * 64);
  ImageView ok{pixels.data(), 30, 20, 90, PixelFormat::BGR8};
  REQUIRE_NOTHROW(yolo12::pre::letterbox_to_nchw(ok, p, out.data()));
  ImageView null_data = ok;
  null_data.data = nullptr;
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_to_nchw(null_data, p, out.data()), yolo12::InputError);
  ImageView small_pitch = ok;
  small_pitch.pitch = 89;
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_to_nchw(small_pitch, p, out.data()), yolo12::InputError);
  ImageView zero = ok;
  zero.width = 0;
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_to_nchw(zero, p, out.data()), yolo12::InputError);
  ImageView other_size = ok;
  other_size.height = 19;
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_to_nchw(other_size, p, out.data()), yolo12::InputError);
  ImageView bad_format = ok;
  bad_format.format = static_cast<PixelFormat>(42);
  REQUIRE_THROWS_AS(yolo12::pre::letterbox_to_nchw(bad_format, p, out.data()), yolo12::InputError);
}

TEST_CASE("letterbox_to_nchw: the committed Ultralytics input tensors of the real images",
          "[letterbox][real]") {
  namespace t = yolo12::test;
  const std::string shared = t::shared_data_dir();
  YOLO12_SKIP_IF(shared.empty(), "../shared/data is absent (set YOLO12_SHARED_DATA); real images not checked");
  const std::string manifest_path = t::test_data_dir() + "/fixtures.json";
  YOLO12_SKIP_IF(!t::file_exists(manifest_path), "tests/data/fixtures.json is absent");
  std::ifstream in(manifest_path);
  const nlohmann::json manifest = nlohmann::json::parse(in);

  std::vector<std::string> seen;
  int compared = 0;
  for (const auto& e : manifest) {
    if (!e.contains("image") || !e.contains("input") || !e.contains("letterbox_target")) continue;
    const std::string root = e.value("root", "tests") == "shared" ? shared : t::test_data_dir();
    const std::string input_path = root + "/" + e["input"].get<std::string>();
    if (std::find(seen.begin(), seen.end(), input_path) != seen.end()) continue;
    seen.push_back(input_path);
    const std::string image_path = shared + "/images/" + e["image"].get<std::string>();
    if (!t::file_exists(input_path) || !t::file_exists(image_path)) {
      WARN("not found, not compared: " << input_path << " / " << image_path);
      continue;
    }
    const cv::Mat bgr = cv::imread(image_path, cv::IMREAD_COLOR);
    REQUIRE(!bgr.empty());
    const int th = e["letterbox_target"][0], tw = e["letterbox_target"][1];
    const bool rect = e.value("rect", false);
    const LetterboxParams p = yolo12::pre::letterbox_params(bgr.cols, bgr.rows, th, tw, rect);
    const t::NpyArray ref = t::load_npy_any(input_path);
    INFO(input_path << ": image " << bgr.cols << "x" << bgr.rows << " -> " << p.dst_w << "x" << p.dst_h);
    REQUIRE(ref.shape == std::vector<long long>{1, 3, p.dst_h, p.dst_w});
    std::vector<float> got(ref.data.size());
    yolo12::pre::letterbox_to_nchw(view_of(bgr, PixelFormat::BGR8), p, got.data());
    // Ours against OpenCV on the pixels decoded here: must be exact.
    CHECK(count_diff(got, opencv_letterbox(bgr, p)) == 0);
    // Ours against the tensor Ultralytics made (opencv-python's decoder and resize): exact when
    // both decoders give the same pixels, which libjpeg(-turbo) does for these baseline JPEGs.
    std::size_t diff = 0;
    float max_abs = 0.f;
    for (std::size_t i = 0; i < got.size(); ++i) {
      diff += got[i] != ref.data[i];
      max_abs = std::max(max_abs, std::fabs(got[i] - ref.data[i]));
    }
    INFO("elements differing from the Ultralytics tensor: " << diff << " of " << got.size()
                                                         << ", max |diff| " << max_abs);
    CHECK(diff == 0);
    ++compared;
  }
  CHECK(compared >= 1);
}
