// A minimal application on the public API: loads a model, detects objects in a synthetic image
// (a gradient: no OpenCV needed) and prints what it found. It also checks what an installed
// libyolo12 promises: the version macros of <yolo12/version.hpp> match the library, and a library
// error is caught by its type (across the boundary of a shared libyolo12), and the tracker
// (<yolo12/tracker.hpp>) links and runs.
// Usage: yolo12_example MODEL [cpu|cuda]
#include <cstdio>
#include <cstring>
#include <vector>

#include <yolo12/tracker.hpp>
#include <yolo12/version.hpp>
#include <yolo12/yolo12.hpp>

static_assert(YOLO12_VERSION == YOLO12_VERSION_MAJOR * 10000 + YOLO12_VERSION_MINOR * 100 + YOLO12_VERSION_PATCH,
              "version macros");

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.y12 [cpu|cuda]\n", argv[0]);
    return 2;
  }
  if (std::strcmp(yolo12::version(), YOLO12_VERSION_STRING) != 0) {
    std::fprintf(stderr, "error: headers of %s, library %s\n", YOLO12_VERSION_STRING, yolo12::version());
    return 1;
  }
  try {
    yolo12::Detector missing("/nonexistent/model.y12");
    std::fprintf(stderr, "error: a missing model loaded\n");
    return 1;
  } catch (const yolo12::ModelError&) {
    std::printf("typed errors: ok\n");
  } catch (...) {
    std::fprintf(stderr, "error: a missing model did not throw yolo12::ModelError\n");
    return 1;
  }
  {
    yolo12::ByteTracker tracker;  // bytetrack.yaml's defaults
    std::vector<yolo12::Detection> frame(1);
    frame[0].box = {10, 10, 50, 60};
    frame[0].score = 0.9f;
    const std::vector<yolo12::Track> tracks = tracker.update(frame);  // the first frame confirms at once
    if (tracks.size() != 1 || tracks[0].id != 1 || tracks[0].detection_index != 0) {
      std::fprintf(stderr, "error: the tracker did not start track 1 on a first frame\n");
      return 1;
    }
    std::printf("tracker: ok\n");
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
    std::printf("yolo12 %s (headers %d.%d.%d) on %s: %zu detections at %dx%d\n", yolo12::version(),
                YOLO12_VERSION_MAJOR, YOLO12_VERSION_MINOR, YOLO12_VERSION_PATCH, detector.device_name().c_str(),
                result.detections.size(), result.input_width, result.input_height);
    return 0;
  } catch (const yolo12::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
