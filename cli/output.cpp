// cli/output.cpp - console, JSON Lines, labels and drawing for yolo12-infer.
#include "output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <opencv2/imgproc.hpp>

#include "yolo12/errors.hpp"

namespace yolo12_cli {

// ---- console -------------------------------------------------------------------------------------

Console::Console(bool quiet, bool verbose, bool stdout_is_data)
    : quiet_(quiet),
      verbose_(verbose && !quiet),
      out_(stdout_is_data ? stderr : stdout),
      progress_enabled_(!quiet && isatty(fileno(stderr))) {}

void Console::print(std::FILE* stream, const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!progress_.empty()) std::fputs("\r\033[K", stderr);  // take the progress line away
  std::fflush(stderr);
  std::fputs(line.c_str(), stream);
  std::fputc('\n', stream);
  std::fflush(stream);
  if (!progress_.empty()) {  // and draw it again below
    std::fputs(progress_.c_str(), stderr);
    std::fflush(stderr);
  }
}

void Console::summary(const std::string& line) {
  if (!quiet_) print(out_, line);
}
void Console::info(const std::string& line) {
  if (!quiet_) print(out_, line);
}
void Console::verbose(const std::string& line) {
  if (verbose_) print(stderr, line);
}
void Console::warning(const std::string& line) { print(stderr, "warning: " + line); }
void Console::error(const std::string& line) { print(stderr, "error: " + line); }

void Console::progress(const std::string& line) {
  if (!progress_enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  progress_ = line;
  std::fputs("\r\033[K", stderr);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Console::end_progress() {
  if (!progress_enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!progress_.empty()) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  progress_.clear();
}

// ---- JSON Lines ----------------------------------------------------------------------------------

JsonLines::JsonLines(const std::string& path) {
  if (path == "-") {
    file_ = stdout;
    return;
  }
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw yolo12::InputError(path + ": cannot create the JSON file (does its folder exist?)");
  owned_ = true;
}

JsonLines::~JsonLines() {
  if (owned_ && file_) std::fclose(file_);
}

void JsonLines::write(const nlohmann::ordered_json& object) {
  // Invalid UTF-8 (a file name in another encoding) is replaced, never thrown.
  const std::string line = object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mutex_);
  std::fputs(line.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

// ---- names ---------------------------------------------------------------------------------------

std::string OutputNames::claim(const std::string& stem) {
  std::string name = stem;
  for (int k = 2; used_.count(name); ++k) name = stem + "-" + std::to_string(k);
  used_.insert(name);
  return name;
}

std::string class_name(const std::vector<std::string>& names, int class_id) {
  if (class_id >= 0 && class_id < static_cast<int>(names.size())) return names[class_id];
  return "class" + std::to_string(class_id);
}

std::string count_summary(const std::vector<yolo12::Detection>& detections,
                          const std::vector<std::string>& names) {
  if (detections.empty()) return "(no detections)";
  std::map<int, int> counts;  // ordered by class id
  for (const auto& d : detections) ++counts[d.class_id];
  std::string text;
  for (const auto& [id, n] : counts) {
    if (!text.empty()) text += ", ";
    text += std::to_string(n) + " " + class_name(names, id) + (n > 1 ? "s" : "");
  }
  return text;
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ms);
  return buf;
}

// ---- JSON objects --------------------------------------------------------------------------------

namespace {
// Rounded so that the JSON stays short: scores to 4 decimals, pixels to 2, times to 3 (ms). Dividing
// by a power of ten (exact) gives the double nearest the decimal, which prints as that decimal.
double round_to(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}
}  // namespace

nlohmann::ordered_json result_json(const std::string& source, long frame, const yolo12::Result& result,
                           const std::vector<std::string>& names, double decode_ms) {
  nlohmann::ordered_json j;
  j["source"] = source;
  if (frame >= 0) j["frame"] = frame;
  j["width"] = result.image_width;
  j["height"] = result.image_height;
  j["input"] = {result.input_height, result.input_width};
  nlohmann::ordered_json detections = nlohmann::ordered_json::array();
  for (const auto& d : result.detections) {
    detections.push_back({{"class_id", d.class_id},
                          {"class_name", class_name(names, d.class_id)},
                          {"score", round_to(d.score, 4)},
                          {"box",
                           {round_to(d.box.x1, 2), round_to(d.box.y1, 2), round_to(d.box.x2, 2),
                            round_to(d.box.y2, 2)}}});
  }
  j["detections"] = std::move(detections);
  j["times_ms"] = {{"decode", round_to(decode_ms, 3)},
                   {"preprocess", round_to(result.times.preprocess_ms, 3)},
                   {"inference", round_to(result.times.inference_ms, 3)},
                   {"postprocess", round_to(result.times.postprocess_ms, 3)}};
  return j;
}

nlohmann::ordered_json error_json(const std::string& source, const std::string& error, long frame) {
  nlohmann::ordered_json j;
  j["source"] = source;
  if (frame >= 0) j["frame"] = frame;
  j["error"] = error;
  return j;
}

// ---- labels --------------------------------------------------------------------------------------

bool write_labels(const std::string& path, const yolo12::Result& result) {
  if (result.detections.empty()) return true;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const double w = result.image_width, h = result.image_height;
  for (const auto& d : result.detections) {
    const double cx = (d.box.x1 + d.box.x2) / 2 / w, cy = (d.box.y1 + d.box.y2) / 2 / h;
    const double bw = (d.box.x2 - d.box.x1) / w, bh = (d.box.y2 - d.box.y1) / h;
    std::fprintf(f, "%d %g %g %g %g %g\n", d.class_id, cx, cy, bw, bh, static_cast<double>(d.score));
  }
  return std::fclose(f) == 0;
}

// ---- drawing -------------------------------------------------------------------------------------

namespace {

// 20 well-separated colours (RGB); class id k gets kPalette[k % 20], so a class keeps its colour
// across images, frames and runs.
const unsigned char kPalette[20][3] = {
    {230, 25, 75},   {60, 180, 75},   {255, 200, 25},  {0, 130, 200},   {245, 130, 48},
    {145, 30, 180},  {70, 220, 220},  {240, 50, 230},  {170, 210, 60},  {250, 160, 170},
    {0, 128, 128},   {200, 160, 250}, {170, 110, 40},  {255, 240, 150}, {128, 0, 0},
    {120, 255, 180}, {128, 128, 0},   {255, 210, 180}, {0, 0, 128},     {128, 128, 128}};

cv::Scalar class_colour_bgr(int class_id) {
  const unsigned char* rgb = kPalette[((class_id % 20) + 20) % 20];
  return cv::Scalar(rgb[2], rgb[1], rgb[0]);
}

// Black text on light colours, white on dark ones (perceived luminance).
cv::Scalar text_colour_for(const cv::Scalar& bgr) {
  const double luminance = 0.299 * bgr[2] + 0.587 * bgr[1] + 0.114 * bgr[0];
  return luminance > 150 ? cv::Scalar(0, 0, 0) : cv::Scalar(255, 255, 255);
}

}  // namespace

void draw_detections(cv::Mat& image, const std::vector<yolo12::Detection>& detections,
                     const std::vector<std::string>& names) {
  // Line width grows with the image: 2 px up to about 670 px (mean side), then 0.3% of the mean side.
  const int line = std::max(2, static_cast<int>(std::lround((image.cols + image.rows) / 2.0 * 0.003)));
  const double font_scale = line / 3.0;
  const int font_thickness = std::max(line - 1, 1);
  // Draw the weakest first so that the strongest boxes and labels end up on top.
  for (auto it = detections.rbegin(); it != detections.rend(); ++it) {
    const auto& d = *it;
    const cv::Scalar colour = class_colour_bgr(d.class_id);
    const cv::Point p1(static_cast<int>(d.box.x1), static_cast<int>(d.box.y1));
    const cv::Point p2(static_cast<int>(d.box.x2), static_cast<int>(d.box.y2));
    cv::rectangle(image, p1, p2, colour, line, cv::LINE_AA);

    char score[16];
    std::snprintf(score, sizeof score, " %.2f", static_cast<double>(d.score));
    const std::string label = class_name(names, d.class_id) + score;
    int baseline = 0;
    const cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, font_thickness, &baseline);
    // The label sits above the box, or inside it when the box touches the top edge.
    // It moves left when it would run off the right edge.
    const bool above = p1.y - text.height - 3 >= 0;
    const int left = std::max(0, std::min(p1.x, image.cols - text.width));
    const cv::Point corner(left, above ? p1.y - text.height - 3 : p1.y);
    cv::rectangle(image, corner, cv::Point(left + text.width, corner.y + text.height + 3), colour, cv::FILLED,
                  cv::LINE_AA);
    cv::putText(image, label, cv::Point(left, corner.y + text.height + 1), cv::FONT_HERSHEY_SIMPLEX, font_scale,
                text_colour_for(colour), font_thickness, cv::LINE_AA);
  }
}

}  // namespace yolo12_cli
