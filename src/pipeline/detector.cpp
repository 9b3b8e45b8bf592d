// pipeline/detector.cpp - yolo12::Detector: loads the model, resolves the options, picks the backend
// and hands every call to the pipeline (pipeline.hpp). Also read_model_info and ModelInfo::summary.
#include <memory>
#include <sstream>
#include <utility>

#include "core/executor.hpp"
#include "graph/graph.hpp"
#include "model/memory_budget.hpp"
#include "model/model_file.hpp"
#include "pipeline/pipeline.hpp"
#include "yolo12/yolo12.hpp"

#ifndef YOLO12_VERSION_STRING
#define YOLO12_VERSION_STRING "0.0.0"
#endif

namespace yolo12 {

const char* version() { return YOLO12_VERSION_STRING; }

struct Detector::Impl {
  std::shared_ptr<const model::ModelFile> model;
  ModelInfo info;
  DetectorOptions options;  // resolved: defaults filled, device picked
  std::unique_ptr<pipeline::Pipeline> pipeline;
};

// Every check a Detector runs that needs no device: the file's own (ModelFile::open: header, tensor
// table, the tensors the architecture requires) and the graph at the model's default input size
// (the checks that depend on the size: strides, concat sizes, attention areas).
ModelInfo read_model_info(const std::string& model_path) {
  const std::shared_ptr<const model::ModelFile> file = model::ModelFile::open(model_path);
  ModelInfo info = file->info();
  graph::build_graph(file->header(), info.input_height, info.input_width);
  return info;
}

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

namespace {

// The backend for resolved options (device picked, sizes filled).
std::unique_ptr<Backend> make_backend(const std::shared_ptr<const model::ModelFile>& model, const DetectorOptions& o) {
  return o.device == Device::Cuda
             ? make_cuda_backend(model, o.device_index, o.precision, o.input_height, o.input_width)
             : make_cpu_backend(model);
}

}  // namespace

Detector::Detector(const std::string& model_path, const DetectorOptions& options) : impl_(new Impl) {
  impl_->model = model::ModelFile::open(model_path);
  impl_->info = impl_->model->info();
  DetectorOptions& o = impl_->options = pipeline::resolve_options(options, impl_->info);
  model::check_memory_budget(*impl_->model, o.input_height, o.input_width, o.max_batch, o.max_memory_bytes);
  if (o.device == Device::Auto) o.device = cuda_device_available() ? Device::Cuda : Device::Cpu;
  impl_->pipeline = std::make_unique<pipeline::Pipeline>(impl_->model, o, make_backend(impl_->model, o));
}

Detector::Detector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Detector::~Detector() = default;
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;

Result Detector::detect(const ImageView& image) { return detect(std::vector<ImageView>{image}).front(); }

std::vector<Result> Detector::detect(const std::vector<ImageView>& images) { return impl_->pipeline->detect(images); }

std::vector<float> Detector::forward_raw(const float* nchw, int batch, int height, int width, int* channels,
                                         int* anchors) {
  return impl_->pipeline->forward_raw(nchw, batch, height, width, channels, anchors);
}

Detector Detector::clone() const {
  auto impl = std::make_unique<Impl>();
  impl->model = impl_->model;
  impl->info = impl_->info;
  impl->options = impl_->options;
  impl->pipeline = impl_->pipeline->clone();
  return Detector(std::move(impl));
}

Detector Detector::clone(Device device, int device_index) const {
  if (device == Device::Auto) device = cuda_device_available() ? Device::Cuda : Device::Cpu;
  if (device_index < 0) throw OptionError("invalid option: device index must be >= 0");
  const DetectorOptions& o = impl_->options;
  if (device == o.device && (device == Device::Cpu || device_index == o.device_index)) return clone();
  auto impl = std::make_unique<Impl>();
  impl->model = impl_->model;  // already in memory and checked: nothing is read again
  impl->info = impl_->info;
  impl->options = o;
  impl->options.device = device;
  impl->options.device_index = device == Device::Cuda ? device_index : 0;
  impl->pipeline = std::make_unique<pipeline::Pipeline>(impl->model, impl->options, make_backend(impl->model, impl->options));
  return Detector(std::move(impl));
}

const ModelInfo& Detector::info() const { return impl_->info; }
const DetectorOptions& Detector::options() const { return impl_->options; }
std::string Detector::device_name() const { return impl_->pipeline->device_name(); }

}  // namespace yolo12
