// cli/run.cpp - the RunContext helpers both pipelines use (see run.hpp).
#include "run.hpp"

#include <filesystem>

#include <opencv2/imgcodecs.hpp>

namespace yolo12_cli {

yolo12::ImageView view_of(const cv::Mat& bgr) {
  yolo12::ImageView view;
  view.data = bgr.data;
  view.width = bgr.cols;
  view.height = bgr.rows;
  view.pitch = bgr.step;
  view.format = yolo12::PixelFormat::BGR8;
  return view;
}

void RunContext::count(const yolo12::Result& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  totals_.preprocess_ms += r.times.preprocess_ms;
  totals_.inference_ms += r.times.inference_ms;
  totals_.postprocess_ms += r.times.postprocess_ms;
  ++totals_.results;
}

Totals RunContext::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return totals_;
}

std::string RunContext::claim_image(const std::string& stem) {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.claim_image(stem);
}

std::string RunContext::claim_video(const std::string& stem) {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.claim_video(stem);
}

void RunContext::fail_input(const std::string& source, const std::string& error) {
  console.error(source + ": " + error);
  write_json(error_json(source, error));
  std::lock_guard<std::mutex> lock(mutex_);
  ++totals_.failed_inputs;
}

void RunContext::write_json(const nlohmann::ordered_json& object) {
  if (!json || json->write(object)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // only the first failure is reported
    if (json_failed_) return;
    json_failed_ = true;
  }
  fail_output(json->path() == "-" ? "stdout" : json->path(), json->error());
}

void RunContext::fail_output(const std::string& path, const std::string& why) {
  console.error(path + ": " + why);
  std::lock_guard<std::mutex> lock(mutex_);
  ++totals_.failed_outputs;
}

bool RunContext::may_write(const std::string& path) {
  const std::string input = protected_files.find(path);
  if (input.empty()) return true;
  fail_output(path, "not written: it is " + input);
  return false;
}

bool RunContext::save_file(const std::string& path, const std::string& bytes) {
  if (!may_write(path)) return false;
  const std::string why = write_file(path, bytes);
  if (why.empty()) return true;
  fail_output(path, "cannot write (" + why + ")");
  return false;
}

std::vector<Object> RunContext::objects(const yolo12::Result& r, yolo12::ByteTracker* tracker) const {
  if (!tracker) return objects_of(r.detections);
  return tracked_objects(r.detections, tracker->update(r.detections), tracker->options(), r.image_width,
                         r.image_height);
}

void RunContext::save_labels_and_crops(const cv::Mat& image, const yolo12::Result& r, const std::vector<Object>& objects,
                                       const std::string& base) {
  if (options.save_txt && !objects.empty())
    save_file(run_dir + "/labels/" + base + ".txt", label_text(objects, r.image_width, r.image_height, options.save_conf));
  if (!options.save_crop) return;
  for (const Object& o : objects) {
    const cv::Mat crop = crop_of(image, o.detection.box);
    if (crop.empty()) continue;
    const std::string folder = run_dir + "/crops/" + class_name(info.class_names, o.detection.class_id);
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    std::vector<unsigned char> jpeg;
    if (!cv::imencode(".jpg", crop, jpeg, {cv::IMWRITE_JPEG_QUALITY, 95})) {
      fail_output(folder, "cannot encode a crop");
      continue;
    }
    std::string path;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      path = names_.claim_crop(folder, base, "jpg");
    }
    save_file(path, std::string(jpeg.begin(), jpeg.end()));
  }
}

std::unique_ptr<yolo12::ByteTracker> RunContext::make_tracker() const {
  if (!options.track) return nullptr;
  return std::make_unique<yolo12::ByteTracker>(yolo12::TrackerOptions{});
}

}  // namespace yolo12_cli
