// cli/output.cpp - console, JSON Lines, labels, drawing, crops and checked writes for yolo12-infer.
#include "output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include <opencv2/imgproc.hpp>

#include "stderr_capture.hpp"
#include "yolo12/errors.hpp"

namespace yolo12_cli {

// ---- console -------------------------------------------------------------------------------------

Console::Console(bool quiet, bool verbose, bool stdout_is_data)
    : quiet_(quiet),
      verbose_(verbose && !quiet),
      out_(stdout_is_data ? stderr : stdout),
      progress_enabled_(!quiet && isatty(fileno(stderr))) {}

// Every use of stderr holds stderr_mutex() as well: an image worker may be capturing it.
void Console::print(std::FILE* stream, const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> lock_stderr(stderr_mutex());
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
void Console::debug(const std::string& line) {
  if (verbose_) print(stderr, "debug: " + line);
}
void Console::warning(const std::string& line) { print(stderr, "warning: " + line); }
void Console::error(const std::string& line) { print(stderr, "error: " + line); }

void Console::progress(const std::string& line) {
  if (!progress_enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> lock_stderr(stderr_mutex());
  progress_ = line;
  std::fputs("\r\033[K", stderr);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Console::end_progress() {
  if (!progress_enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> lock_stderr(stderr_mutex());
  if (!progress_.empty()) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  progress_.clear();
}

// ---- JSON Lines ----------------------------------------------------------------------------------

JsonLines::JsonLines(const std::string& path) : path_(path) {
  if (path == "-") {
    file_ = stdout;
    return;
  }
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw yolo12::InputError(path + ": cannot create the JSON file (" + std::strerror(errno) + ")");
  owned_ = true;
}

JsonLines::~JsonLines() { close(); }

bool JsonLines::write(const nlohmann::ordered_json& object) {
  // Invalid UTF-8 (a file name in another encoding) is replaced, never thrown.
  const std::string line = object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.empty() || !file_) return false;
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    error_ = std::string("cannot write the JSON Lines (") + std::strerror(errno) + ")";
    return false;
  }
  return true;
}

bool JsonLines::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return error_.empty();
  const bool ok = owned_ ? std::fclose(file_) == 0 : std::fflush(file_) == 0;
  if (!ok && error_.empty()) error_ = std::string("cannot write the JSON Lines (") + std::strerror(errno) + ")";
  file_ = nullptr;
  return error_.empty();
}

std::string JsonLines::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

// ---- names ---------------------------------------------------------------------------------------

std::vector<Object> objects_of(const std::vector<yolo12::Detection>& detections) {
  std::vector<Object> objects;
  objects.reserve(detections.size());
  for (const auto& d : detections) objects.push_back(Object{d, -1});
  return objects;
}

std::vector<Object> tracked_objects(const std::vector<yolo12::Detection>& detections,
                                    const std::vector<yolo12::Track>& tracks, const yolo12::TrackerOptions& options,
                                    int image_width, int image_height) {
  if (tracks.empty()) {
    const double starts = std::max(options.track_high_thresh, options.new_track_thresh);
    for (const auto& d : detections)
      if (std::isfinite(d.score) && d.score >= starts && d.box.x2 > d.box.x1 && d.box.y2 > d.box.y1) return {};
    return objects_of(detections);
  }
  const auto clip = [](float v, int hi) { return std::clamp(v, 0.0f, static_cast<float>(hi)); };
  std::vector<Object> objects;
  objects.reserve(tracks.size());
  for (const auto& t : tracks) {
    Object o;
    const bool known = t.detection_index >= 0 && t.detection_index < static_cast<int>(detections.size());
    o.detection = known ? detections[t.detection_index] : yolo12::Detection{t.box, t.score, t.class_id};
    o.detection.box = {clip(t.box.x1, image_width), clip(t.box.y1, image_height), clip(t.box.x2, image_width),
                       clip(t.box.y2, image_height)};
    o.track_id = t.id;
    objects.push_back(o);
  }
  return objects;
}

std::string class_name(const std::vector<std::string>& names, int class_id) {
  if (class_id >= 0 && class_id < static_cast<int>(names.size())) return names[class_id];
  return "class" + std::to_string(class_id);
}

std::string count_summary(const std::vector<Object>& objects, const std::vector<std::string>& names) {
  if (objects.empty()) return "(no detections)";
  std::map<int, int> counts;  // ordered by class id
  for (const auto& o : objects) ++counts[o.detection.class_id];
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
                                   const std::vector<Object>& objects, const std::vector<std::string>& names,
                                   double decode_ms, const std::vector<std::string>& warnings) {
  nlohmann::ordered_json j;
  j["source"] = source;
  if (frame >= 0) j["frame"] = frame;
  j["width"] = result.image_width;
  j["height"] = result.image_height;
  j["input"] = {result.input_height, result.input_width};
  nlohmann::ordered_json detections = nlohmann::ordered_json::array();
  for (const auto& o : objects) {
    const yolo12::Detection& d = o.detection;
    nlohmann::ordered_json item = {{"class_id", d.class_id},
                                   {"class_name", class_name(names, d.class_id)},
                                   {"score", round_to(d.score, 4)},
                                   {"box",
                                    {round_to(d.box.x1, 2), round_to(d.box.y1, 2), round_to(d.box.x2, 2),
                                     round_to(d.box.y2, 2)}}};
    if (o.track_id >= 0) item["track_id"] = o.track_id;
    detections.push_back(std::move(item));
  }
  j["detections"] = std::move(detections);
  j["times_ms"] = {{"decode", round_to(decode_ms, 3)},
                   {"preprocess", round_to(result.times.preprocess_ms, 3)},
                   {"inference", round_to(result.times.inference_ms, 3)},
                   {"postprocess", round_to(result.times.postprocess_ms, 3)}};
  if (!warnings.empty()) j["warnings"] = warnings;
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

std::string label_text(const std::vector<Object>& objects, int image_width, int image_height, bool save_conf) {
  std::string text;
  const double w = image_width, h = image_height;
  char line[160];
  for (const auto& o : objects) {
    const yolo12::Box& b = o.detection.box;
    const double cx = (b.x1 + b.x2) / 2 / w, cy = (b.y1 + b.y2) / 2 / h;
    const double bw = (b.x2 - b.x1) / w, bh = (b.y2 - b.y1) / h;
    int n = std::snprintf(line, sizeof line, "%d %g %g %g %g", o.detection.class_id, cx, cy, bw, bh);
    if (save_conf) n += std::snprintf(line + n, sizeof line - n, " %g", static_cast<double>(o.detection.score));
    if (o.track_id >= 0) n += std::snprintf(line + n, sizeof line - n, " %d", o.track_id);
    text.append(line, static_cast<std::size_t>(n));
    text += '\n';
  }
  return text;
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

// A coordinate as a pixel index in [0, limit]. The caller has checked that v is finite.
int to_pixel(float v, int limit) {
  return static_cast<int>(std::lround(std::min(std::max(static_cast<double>(v), 0.0), static_cast<double>(limit))));
}

bool finite_box(const yolo12::Box& b) {
  return std::isfinite(b.x1) && std::isfinite(b.y1) && std::isfinite(b.x2) && std::isfinite(b.y2);
}

}  // namespace

void draw_detections(cv::Mat& image, const std::vector<Object>& objects, const std::vector<std::string>& names,
                     const DrawStyle& style) {
  if (image.empty()) return;
  // Line width as Ultralytics: 0.3% of the mean side (channels counted as Ultralytics does), at least 2.
  const int line = style.line_width > 0 ? style.line_width
                                        : std::max(2, static_cast<int>(std::lround((image.cols + image.rows + image.channels()) / 2.0 * 0.003)));
  const double font_scale = line / 3.0;
  const int font_thickness = std::max(line - 1, 1);
  // Draw the weakest first so that the strongest boxes and labels end up on top.
  for (auto it = objects.rbegin(); it != objects.rend(); ++it) {
    const yolo12::Detection& d = it->detection;
    if (!finite_box(d.box)) continue;
    const cv::Scalar colour = class_colour_bgr(d.class_id);
    const cv::Point p1(to_pixel(d.box.x1, image.cols - 1), to_pixel(d.box.y1, image.rows - 1));
    const cv::Point p2(to_pixel(d.box.x2, image.cols - 1), to_pixel(d.box.y2, image.rows - 1));
    cv::rectangle(image, p1, p2, colour, line, cv::LINE_AA);
    if (!style.labels) continue;

    std::string label = (it->track_id >= 0 ? "id:" + std::to_string(it->track_id) + " " : "") + class_name(names, d.class_id);
    if (style.conf && std::isfinite(d.score)) {
      char score[16];
      std::snprintf(score, sizeof score, " %.2f", static_cast<double>(d.score));
      label += score;
    }
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

cv::Mat crop_of(const cv::Mat& image, const yolo12::Box& box) {
  if (image.empty() || !finite_box(box)) return {};
  const double cx = (box.x1 + box.x2) / 2.0, cy = (box.y1 + box.y2) / 2.0;
  const double w = (box.x2 - box.x1) * 1.02 + 10, h = (box.y2 - box.y1) * 1.02 + 10;
  // Truncated towards zero as Ultralytics' .long(), then clipped to the image.
  const auto clip = [](double v, int limit) { return static_cast<int>(std::min(std::max(v, 0.0), static_cast<double>(limit))); };
  const int x1 = clip(cx - w / 2, image.cols), x2 = clip(cx + w / 2, image.cols);
  const int y1 = clip(cy - h / 2, image.rows), y2 = clip(cy + h / 2, image.rows);
  if (x2 <= x1 || y2 <= y1) return {};
  return image(cv::Rect(x1, y1, x2 - x1, y2 - y1));
}

// ---- files ---------------------------------------------------------------------------------------

std::string write_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return std::strerror(errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing written";
      ::close(fd);
      return why;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return std::strerror(errno);
  return "";
}

}  // namespace yolo12_cli
