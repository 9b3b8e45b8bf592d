// detector.cpp - yolo12::Detector: validates options, loads the model, and hands the work to a
// backend (src/backends/cpu or cuda/). Everything here is cheap bookkeeping; no pixel is touched.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "core/backend.hpp"
#include "model/memory_budget.hpp"
#include "model/model_file.hpp"
#include "yolo12/yolo12.hpp"

#ifndef YOLO12_VERSION_STRING
#define YOLO12_VERSION_STRING "0.0.0"
#endif

namespace yolo12 {

const char* version() { return YOLO12_VERSION_STRING; }

struct Detector::Impl {
  std::shared_ptr<const model::ModelFile> model;
  ModelInfo info;
  DetectorOptions options;
  std::unique_ptr<Backend> backend;
};

namespace {

int channels_of(PixelFormat f) {
  switch (f) {
    case PixelFormat::GRAY8: return 1;
    case PixelFormat::BGR8:
    case PixelFormat::RGB8: return 3;
    case PixelFormat::BGRA8:
    case PixelFormat::RGBA8: return 4;
  }
  return 0;
}

// Fills the defaults from the model and rejects what cannot be honoured.
DetectorOptions resolve_options(DetectorOptions o, const ModelInfo& info) {
  const int max_stride = info.strides.empty() ? 32 : *std::max_element(info.strides.begin(), info.strides.end());
  if (o.input_height == 0 && o.input_width == 0) {
    o.input_height = info.input_height;
    o.input_width = info.input_width;
  } else if (o.input_height == 0 || o.input_width == 0) {
    // One side given: square input, as `--imgsz N`.
    o.input_height = o.input_width = std::max(o.input_height, o.input_width);
  }
  const auto bad = [](const std::string& what) { throw OptionError("invalid option: " + what); };
  for (int side : {o.input_height, o.input_width})
    if (side <= 0 || side % max_stride != 0 || side > 8192)
      bad("input size " + std::to_string(o.input_height) + "x" + std::to_string(o.input_width) +
          " must be positive multiples of the model's largest stride " + std::to_string(max_stride) +
          " (at most 8192)");
  if (o.max_batch < 1 || o.max_batch > 1024) bad("max_batch " + std::to_string(o.max_batch) + " must be 1..1024");
  if (!(o.conf >= 0.f && o.conf <= 1.f)) bad("conf " + std::to_string(o.conf) + " must be in [0, 1]");
  if (!(o.iou >= 0.f && o.iou <= 1.f)) bad("iou " + std::to_string(o.iou) + " must be in [0, 1]");
  if (o.max_det < 1) bad("max_det " + std::to_string(o.max_det) + " must be at least 1");
  for (int c : o.classes)
    if (c < 0 || c >= info.num_classes)
      bad("class id " + std::to_string(c) + " is outside the model's classes 0.." + std::to_string(info.num_classes - 1));
  if (o.cpu_threads < 0) bad("cpu_threads must be >= 0");
  if (o.device_index < 0) bad("device index must be >= 0");
  return o;
}

}  // namespace

ModelInfo read_model_info(const std::string& model_path) { return model::ModelFile::open(model_path)->info(); }

std::string ModelInfo::summary() const {
  std::ostringstream os;
  os << "model:      " << path << "\n"
     << "family:     " << family << " (" << task << ")" << (scale.empty() ? "" : ", scale " + scale) << "\n"
     << "classes:    " << num_classes;
  for (std::size_t i = 0; i < class_names.size() && i < 5; ++i) os << (i ? ", " : " (") << class_names[i];
  if (!class_names.empty()) os << (class_names.size() > 5 ? ", ...)" : ")");
  os << "\n"
     << "input:      " << input_height << "x" << input_width << " (height x width)\n"
     << "strides:    ";
  for (std::size_t i = 0; i < strides.size(); ++i) os << (i ? ", " : "") << strides[i];
  os << "\n"
     << "reg_max:    " << reg_max << "\n"
     << "layers:     " << num_layers << "\n"
     << "parameters: " << num_parameters << " (" << dtype << ")\n"
     << "source:     " << (source.empty() ? "unknown" : source) << "\n";
  return os.str();
}

Detector::Detector(const std::string& model_path, const DetectorOptions& options) : impl_(new Impl) {
  impl_->model = model::ModelFile::open(model_path);
  impl_->info = impl_->model->info();
  impl_->options = resolve_options(options, impl_->info);
  model::check_memory_budget(*impl_->model, impl_->options.input_height, impl_->options.input_width,
                             impl_->options.max_batch, impl_->options.max_memory_bytes);
  Device device = impl_->options.device;
  if (device == Device::Auto) device = cuda_device_available() ? Device::Cuda : Device::Cpu;
  impl_->options.device = device;
  if (device == Device::Cuda) impl_->backend = make_cuda_backend(impl_->model, impl_->options);
  else impl_->backend = make_cpu_backend(impl_->model, impl_->options);
}

Detector::Detector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Detector::~Detector() = default;
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;

static void check_view(const ImageView& v, std::size_t index) {
  const std::string which = "image " + std::to_string(index) + ": ";
  if (!v.data) throw InputError(which + "null pixel pointer");
  if (v.width <= 0 || v.height <= 0 || v.width > 65536 || v.height > 65536)
    throw InputError(which + "impossible size " + std::to_string(v.width) + "x" + std::to_string(v.height));
  const int ch = channels_of(v.format);
  if (ch == 0) throw InputError(which + "unknown pixel format");
  if (v.pitch < static_cast<std::size_t>(v.width) * ch)
    throw InputError(which + "row pitch " + std::to_string(v.pitch) + " bytes is smaller than width x channels (" +
                     std::to_string(static_cast<std::size_t>(v.width) * ch) + ")");
}

Result Detector::detect(const ImageView& image) { return detect(std::vector<ImageView>{image}).front(); }

std::vector<Result> Detector::detect(const std::vector<ImageView>& images) {
  if (images.empty()) return {};
  if (images.size() > static_cast<std::size_t>(impl_->options.max_batch))
    throw InputError("batch of " + std::to_string(images.size()) + " images exceeds max_batch " +
                     std::to_string(impl_->options.max_batch));
  for (std::size_t i = 0; i < images.size(); ++i) check_view(images[i], i);
  return impl_->backend->detect(images);
}

std::vector<float> Detector::forward_raw(const float* nchw, int batch, int height, int width, int* channels,
                                         int* anchors) {
  if (!nchw) throw InputError("forward_raw: null tensor pointer");
  const int max_stride = *std::max_element(impl_->info.strides.begin(), impl_->info.strides.end());
  if (batch < 1 || height <= 0 || width <= 0 || height % max_stride != 0 || width % max_stride != 0)
    throw InputError("forward_raw: tensor (" + std::to_string(batch) + ", 3, " + std::to_string(height) + ", " +
                     std::to_string(width) + ") must have batch >= 1 and H, W positive multiples of " +
                     std::to_string(max_stride));
  return impl_->backend->forward_raw(nchw, batch, height, width, channels, anchors);
}

Detector Detector::clone() const {
  auto impl = std::make_unique<Impl>();
  impl->model = impl_->model;
  impl->info = impl_->info;
  impl->options = impl_->options;
  impl->backend = impl_->backend->clone();
  return Detector(std::move(impl));
}

const ModelInfo& Detector::info() const { return impl_->info; }
const DetectorOptions& Detector::options() const { return impl_->options; }
std::string Detector::device_name() const { return impl_->backend->device_name(); }

}  // namespace yolo12
