// tests/opencv/test_detect_real.cpp - the whole CPU pipeline (yolo12::Detector, Device::Cpu) with the
// real COCO YOLO11n and YOLOv8n weights on the shared images, against Ultralytics' own predict
// (tests/data/references_real.json, made by tools/fixtures/make_real_references.py from the same
// dequantized weights): same number of detections, same classes, boxes within 1 pixel, scores
// within 0.01; fixed letterbox at 320 and 640 and the rect letterbox at 640.
//
// The .onnx weights are converted at test time with exporter/export.py into the build tree; the test
// skips with a message when ../shared/data, python3 + numpy or the exporter are missing.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "catch.hpp"
#include "support.hpp"
#include "yolo12/yolo12.hpp"

namespace t = yolo12::test;

namespace {

constexpr float kBoxTolerancePx = 1.0f;
constexpr float kScoreTolerance = 0.01f;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Converts shared/<onnx> to <build>/real_models/<name>.y12 once per run; "" and a reason on failure.
std::string export_model(const std::string& shared, const std::string& onnx_rel, const std::string& name,
                         std::string& why) {
  static std::map<std::string, std::string> done;
  if (done.count(name)) return done[name];
  const std::string onnx = shared + "/" + onnx_rel;
  const std::string exporter = t::source_dir() + "/exporter/export.py";
  if (!t::file_exists(onnx)) return why = "weights " + onnx + " are absent", "";
  if (!t::file_exists(exporter)) return why = "exporter/export.py is absent", "";
  if (std::system("python3 -c 'import numpy' > /dev/null 2>&1") != 0)
    return why = "python3 with numpy is not available to run the exporter", "";
  const std::string dir = t::binary_dir() + "/real_models";
  const std::string out = dir + "/" + name + ".y12";
  const std::string log = dir + "/" + name + ".export.log";
  const std::string cmd = "mkdir -p " + quoted(dir) + " && python3 " + quoted(exporter) + " " + quoted(onnx) +
                          " -o " + quoted(out) + " > " + quoted(log) + " 2>&1";
  if (std::system(cmd.c_str()) != 0 || !t::file_exists(out))
    return why = "the exporter failed on " + onnx + " (see " + log + ")", "";
  return done[name] = out;
}

struct RefDet {
  int cls;
  float score;
  float box[4];
};

}  // namespace

TEST_CASE("CPU detections with real COCO weights equal Ultralytics predict", "[real][cpu]") {
  const std::string shared = t::shared_data_dir();
  YOLO12_SKIP_IF(shared.empty(), "../shared/data is absent (set YOLO12_SHARED_DATA); real-weight parity not checked");
  const std::string ref_path = t::test_data_dir() + "/references_real.json";
  YOLO12_SKIP_IF(!t::file_exists(ref_path), "tests/data/references_real.json is absent");
  std::ifstream in(ref_path);
  const nlohmann::json refs = nlohmann::json::parse(in);

  std::map<std::string, std::string> onnx_of;  // model name -> path under shared data
  for (const auto& m : refs.at("models")) onnx_of[m.at("name")] = m.at("onnx");

  int compared = 0;
  double worst_box = 0, worst_score = 0;
  for (const auto& r : refs.at("results")) {
    const std::string model = r.at("model"), image = r.at("image");
    const int imgsz = r.at("imgsz");
    const bool rect = r.at("rect");
    std::string why;
    const std::string y12 = export_model(shared, onnx_of.at(model), model, why);
    YOLO12_SKIP_IF(y12.empty(), why);
    const std::string image_path = shared + "/images/" + image;
    YOLO12_SKIP_IF(!t::file_exists(image_path), image_path + " is absent");

    yolo12::DetectorOptions opt;
    opt.device = yolo12::Device::Cpu;
    opt.input_height = opt.input_width = imgsz;
    opt.rect = rect;
    opt.conf = refs.at("predict").at("conf");
    opt.iou = refs.at("predict").at("iou");
    opt.max_det = refs.at("predict").at("max_det");
    yolo12::Detector det(y12, opt);

    const cv::Mat bgr = cv::imread(image_path, cv::IMREAD_COLOR);
    REQUIRE(!bgr.empty());
    const yolo12::ImageView view{bgr.data, bgr.cols, bgr.rows, bgr.step[0], yolo12::PixelFormat::BGR8};
    const yolo12::Result res = det.detect(view);

    INFO(model << " " << image << " imgsz " << imgsz << (rect ? " rect" : " fixed"));
    const auto& shape = r.at("input_shape");  // [1, 3, H, W]
    CHECK(res.input_height == shape.at(2).get<int>());
    CHECK(res.input_width == shape.at(3).get<int>());
    CHECK(res.image_width == bgr.cols);
    CHECK(res.image_height == bgr.rows);

    std::vector<RefDet> expected;
    for (const auto& d : r.at("detections")) {
      RefDet e{d.at("class_id"), d.at("score"), {}};
      for (int k = 0; k < 4; ++k) e.box[k] = d.at("box").at(k);
      expected.push_back(e);
    }
    REQUIRE(res.detections.size() == expected.size());
    // Match each reference detection to one of ours: same class, every box side within 1 pixel,
    // score within 0.01 (scores this close may swap places, so not by position).
    std::vector<bool> used(res.detections.size(), false);
    for (const RefDet& e : expected) {
      int match = -1;
      double match_box = 0, match_score = 0;
      for (std::size_t j = 0; j < res.detections.size() && match < 0; ++j) {
        const yolo12::Detection& d = res.detections[j];
        if (used[j] || d.class_id != e.cls) continue;
        const float got[4] = {d.box.x1, d.box.y1, d.box.x2, d.box.y2};
        double box_err = 0;
        for (int k = 0; k < 4; ++k) box_err = std::max(box_err, static_cast<double>(std::fabs(got[k] - e.box[k])));
        const double score_err = std::fabs(d.score - e.score);
        if (box_err <= kBoxTolerancePx && score_err <= kScoreTolerance)
          match = static_cast<int>(j), match_box = box_err, match_score = score_err;
      }
      INFO("reference class " << e.cls << " score " << e.score << " box [" << e.box[0] << " " << e.box[1] << " "
                              << e.box[2] << " " << e.box[3] << "]");
      CHECK(match >= 0);
      if (match >= 0) {
        used[static_cast<std::size_t>(match)] = true;
        worst_box = std::max(worst_box, match_box);
        worst_score = std::max(worst_score, match_score);
      }
    }
    ++compared;
  }
  std::printf("test_detect_real: %d results compared; worst box side %.4f px, worst score %.5f\n", compared,
              worst_box, worst_score);
  CHECK(compared >= 6);
}

TEST_CASE("CPU batch in rect mode: per-image shapes, same results as one at a time, clone too",
          "[real][cpu]") {
  const std::string shared = t::shared_data_dir();
  YOLO12_SKIP_IF(shared.empty(), "../shared/data is absent (set YOLO12_SHARED_DATA); batch check not run");
  std::string why;
  const std::string y12 = export_model(shared, "weights/yolo11n_coco_int8dyn_320.onnx", "yolo11n_coco", why);
  YOLO12_SKIP_IF(y12.empty(), why);
  const cv::Mat bus = cv::imread(shared + "/images/bus.jpg", cv::IMREAD_COLOR);
  const cv::Mat zidane = cv::imread(shared + "/images/zidane.jpg", cv::IMREAD_COLOR);
  REQUIRE(!bus.empty());
  REQUIRE(!zidane.empty());
  auto view = [](const cv::Mat& m) {
    return yolo12::ImageView{m.data, m.cols, m.rows, m.step[0], yolo12::PixelFormat::BGR8};
  };

  yolo12::DetectorOptions opt;
  opt.device = yolo12::Device::Cpu;
  opt.input_height = opt.input_width = 640;
  opt.rect = true;
  opt.max_batch = 3;
  yolo12::Detector det(y12, opt);
  // bus (810x1080) runs at 480x640 (w x h), zidane (1280x720) at 640x384: two groups in one batch.
  const auto batch = det.detect(std::vector<yolo12::ImageView>{view(bus), view(zidane), view(bus)});
  REQUIRE(batch.size() == 3);
  CHECK(batch[0].input_width == 480);
  CHECK(batch[0].input_height == 640);
  CHECK(batch[1].input_width == 640);
  CHECK(batch[1].input_height == 384);
  CHECK(batch[0].times.inference_ms > 0.0);

  yolo12::Detector other = det.clone();
  const yolo12::Result single[3] = {other.detect(view(bus)), other.detect(view(zidane)), det.detect(view(bus))};
  for (int i = 0; i < 3; ++i) {
    INFO("image " << i);
    REQUIRE(batch[i].detections.size() == single[i].detections.size());
    REQUIRE(!single[i].detections.empty());
    for (std::size_t k = 0; k < single[i].detections.size(); ++k) {
      const auto& a = batch[i].detections[k];
      const auto& b = single[i].detections[k];
      CHECK(a.class_id == b.class_id);
      CHECK(std::fabs(a.score - b.score) <= 1e-5f);
      CHECK(std::fabs(a.box.x1 - b.box.x1) <= 1e-3f);
      CHECK(std::fabs(a.box.y2 - b.box.y2) <= 1e-3f);
    }
  }
  // Bus and zidane differ: the batch did not hand one image's detections to another.
  CHECK(batch[0].detections.size() != batch[1].detections.size());
}
