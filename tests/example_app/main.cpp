// A minimal application on the public API: loads a model, detects objects in a synthetic image
// (a gradient: no OpenCV needed) and prints what it found. Usage: yolo12_example MODEL [cpu|cuda]
#include <cstdio>
#include <cstring>
#include <vector>

#include <yolo12/yolo12.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.y12 [cpu|cuda]\n", argv[0]);
    return 2;
  }
  try {
    yolo12::DetectorOptions options;
    if (argc > 2) options.device = std::strcmp(argv[2], "cuda") == 0 ? yolo12::Device::Cuda : yolo12::Device::Cpu;
    yolo12::Detector detector(argv[1], options);
    const int w = 320, h = 240;
    std::vector<unsigned char> bgr(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) bgr[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<unsigned char>((x * (c + 1) + y) & 0xff);
    const yolo12::ImageView image{bgr.data(), w, h, static_cast<size_t>(w) * 3, yolo12::PixelFormat::BGR8};
    const yolo12::Result result = detector.detect(image);
    std::printf("yolo12 %s on %s: %zu detections at %dx%d\n", yolo12::version(), detector.device_name().c_str(),
                result.detections.size(), result.input_width, result.input_height);
    return 0;
  } catch (const yolo12::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
