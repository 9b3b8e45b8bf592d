// yolo12/yolo12.hpp - the public C++ API of libyolo12.
//
//   #include <yolo12/yolo12.hpp>
//
//   yolo12::DetectorOptions opt;                  // defaults: device auto, fp32, conf 0.25, iou 0.7
//   opt.device = yolo12::Device::Cuda;
//   yolo12::Detector det("yolo12n.y12", opt);     // throws yolo12::ModelError / OptionError
//   yolo12::ImageView img{pixels, width, height, /*pitch bytes*/ width * 3, yolo12::PixelFormat::BGR8};
//   yolo12::Result r = det.detect(img);           // boxes in original-image pixels
//   for (const auto& d : r.detections)
//     printf("%s %.2f [%.0f %.0f %.0f %.0f]\n", det.info().class_names[d.class_id].c_str(),
//            d.score, d.box.x1, d.box.y1, d.box.x2, d.box.y2);
//
// Threads: one Detector must not be used by two threads at once. clone() gives another Detector
// that shares the (read-only) weights and has its own buffers and CUDA stream; use one per thread.
// Errors: every failure is a yolo12::Error subclass (errors.hpp); nothing exits or aborts.
// The library does not depend on OpenCV: images come in as ImageView, a non-owning pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "yolo12/errors.hpp"
#include "yolo12/export.hpp"

namespace yolo12 {

// Library version, "MAJOR.MINOR.PATCH".
YOLO12_API const char* version();

enum class Device { Auto, Cpu, Cuda };
enum class Precision { Fp32, Fp16 };
enum class PixelFormat { BGR8, RGB8, BGRA8, RGBA8, GRAY8 };

// A non-owning view of an 8-bit image. pitch is the distance in bytes between the starts of two rows
// (>= width * channels). The pixels must stay valid during the detect() call. On the CUDA backend they
// may also be in page-locked host memory (cudaMallocHost / cudaHostRegister: copied to the GPU
// straight from there) or in device memory of the detector's GPU (read in place, no copy); the CPU
// backend needs host memory and refuses device memory with an InputError (docs/api.md, "Images in
// pinned or device memory").
struct ImageView {
  const std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t pitch = 0;
  PixelFormat format = PixelFormat::BGR8;
};

struct DetectorOptions {
  Device device = Device::Auto;  // Auto: CUDA if this build has it and a GPU is present, else CPU
  int device_index = 0;          // CUDA device ordinal
  Precision precision = Precision::Fp32;  // Fp16 is honoured by the CUDA backend only
  // Network input size (multiples of 32). 0 = the model's default (its export size).
  int input_height = 0;
  int input_width = 0;
  // Letterbox mode. false: every image is padded to input_height x input_width (Ultralytics'
  // fixed-size / exported-model behaviour). true: the smallest multiple-of-32 rectangle that holds
  // the image scaled to fit input_height x input_width (Ultralytics' predict on a .pt model).
  bool rect = false;
  int max_batch = 1;  // largest batch detect() may be called with
  // Post-processing, as Ultralytics predict.
  float conf = 0.25f;
  float iou = 0.7f;
  int max_det = 300;
  bool agnostic_nms = false;
  std::vector<int> classes;  // keep only these class ids (empty: all)
  int cpu_threads = 0;       // CPU backend threads; 0 = hardware concurrency
  // CUDA backend, fp16: before the first inference of each batch size, time every kernel and tile that
  // can run each convolution, on this GPU, and keep the fastest (a fraction of a second per batch size
  // for yolo12n; the choice is fixed from then on, so results stay deterministic). Off: the built-in
  // rules choose. The environment variable YOLO12_CONV_TUNE=1 turns it on as well.
  bool tune_kernels = false;
  // A file that keeps tune_kernels' choices per GPU model, library version and conv shape, so that only
  // the first Detector on a GPU model times the kernels and later ones start at once. Non-empty turns
  // tune_kernels on. A missing file is created; a choice this build cannot run is timed again and
  // replaced; a file that is not a tune cache is an OptionError and is left as it is; a file that cannot
  // be written is a warning. Several processes may share the path. YOLO12_CONV_TUNE_CACHE=path in the
  // environment gives the path to every Detector that tunes (it does not turn tuning on by itself).
  std::string tune_cache;
  // Memory guard: the Detector refuses (OptionError, naming the bytes) a model + input size +
  // max_batch whose planned host memory (model, weights, activations, input and output; computed
  // from the model's metadata before anything is allocated) exceeds this. Raise it to go beyond.
  std::uint64_t max_memory_bytes = std::uint64_t{8} << 30;
};

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // original-image pixels, clipped to the image
};

struct Detection {
  Box box;
  float score = 0;
  int class_id = 0;
};

struct StageTimes {
  double preprocess_ms = 0;
  double inference_ms = 0;
  double postprocess_ms = 0;
};

struct Result {
  std::vector<Detection> detections;  // sorted by descending score
  int image_width = 0;
  int image_height = 0;
  int input_width = 0;   // the network input the image ran at
  int input_height = 0;
  StageTimes times;      // for a batch: the batch's times divided by the batch size
};

struct YOLO12_API ModelInfo {
  std::string path;
  std::string family;  // yolo12, yolo12-turbo, yolo11, yolov8
  std::string task;    // detect
  std::string scale;   // n, s, m, l, x or a custom letter
  int num_classes = 0;
  std::vector<std::string> class_names;
  std::vector<int> strides;
  int input_height = 0;  // default input size
  int input_width = 0;
  int reg_max = 0;
  int num_layers = 0;
  std::size_t num_parameters = 0;
  std::string dtype;   // f32 or f16: how the weights are stored in the file
  std::string source;  // where the weights came from
  // A multi-line human-readable summary (what `yolo12-infer --info` prints).
  std::string summary() const;
};

// Loads and fully validates a model file without creating a detector: every check a Detector runs
// that needs no device (the file, its tensors, the graph at the model's input size). Throws ModelError.
YOLO12_API ModelInfo read_model_info(const std::string& model_path);

class YOLO12_API Detector {
 public:
  // Loads the model, builds the graph for the input size and plans all memory. Throws ModelError
  // for a bad file and OptionError for impossible options.
  Detector(const std::string& model_path, const DetectorOptions& options = {});
  ~Detector();
  Detector(Detector&&) noexcept;
  Detector& operator=(Detector&&) noexcept;
  Detector(const Detector&) = delete;
  Detector& operator=(const Detector&) = delete;

  // Detect objects in one image / a batch (size <= options.max_batch). Throws InputError for a
  // bad view; the detector stays usable.
  Result detect(const ImageView& image);
  std::vector<Result> detect(const std::vector<ImageView>& images);

  // Parity hook: run only the network on a float32 NCHW tensor (B, 3, H, W) in [0, 1], RGB.
  // Returns the raw head output (B, 4 + nc, A) flattened; channels = 4 + nc, anchors = A.
  std::vector<float> forward_raw(const float* nchw, int batch, int height, int width,
                                 int* channels, int* anchors);

  // Another detector sharing this one's weights, with its own buffers (and CUDA stream).
  Detector clone() const;
  // Another detector with the same model and options on another device (e.g. Device::Cuda, 1): the
  // model already in memory is used, its weights are uploaded to that device (once per call; clones
  // of the result share them). The same device as this one is clone(). Throws OptionError for a
  // device that is not there. See yolo12/devices.hpp for a pool over several GPUs.
  Detector clone(Device device, int device_index) const;

  const ModelInfo& info() const;
  const DetectorOptions& options() const;
  // "cpu" or "cuda:N"
  std::string device_name() const;

  struct Impl;

 private:
  explicit Detector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo12
