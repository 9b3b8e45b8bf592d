// cli/tests/test_cli_units.cpp - unit tests of yolo12-infer's parts that need no model: argument
// rewriting, output names and guards, image headers, labels, crops and drawing, and the in-order
// spreading of work over worker threads (spread.hpp). Built with UBSan
// (float-cast-overflow included) where the compiler has it, so that a NaN or huge box reaching an
// int conversion in draw_detections fails the test instead of drawing garbage.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "catch.hpp"  // tests/catch.hpp
#include "args.hpp"
#include "image_header.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "spread.hpp"
#include "stderr_capture.hpp"

namespace fs = std::filesystem;
using namespace yolo12_cli;

namespace {

// The options yolo12-infer declares that these tests use.
std::vector<KnownOption> known_options() {
  const auto value = [](std::vector<std::string> names) { return KnownOption{names, {}, false}; };
  const auto flag = [](std::vector<std::string> names, std::vector<std::string> shorts = {}) {
    return KnownOption{names, shorts, true};
  };
  return {value({"model"}),       value({"conf"}),       value({"imgsz"}),        value({"classes"}),
          value({"max-det"}),     value({"device"}),     value({"line-width"}),   value({"project"}),
          flag({"half"}),         flag({"save"}),        flag({"save-txt"}),      flag({"hide-labels"}),
          flag({"hide-conf"}),    flag({"quiet"}, {"q"}), flag({"verbose"}, {"v"}), flag({"track"}),
          flag({"exist-ok"}),     flag({"help"}, {"h"})};
}

std::vector<std::string> normalize(const std::vector<std::string>& args, const std::vector<std::string>& files = {}) {
  return normalize_arguments(args, known_options(), [&](const std::string& token) {
    return std::find(files.begin(), files.end(), token) != files.end();
  });
}

yolo12::Detection detection(float x1, float y1, float x2, float y2, float score = 0.9f, int class_id = 0) {
  yolo12::Detection d;
  d.box = {x1, y1, x2, y2};
  d.score = score;
  d.class_id = class_id;
  return d;
}

fs::path temp_folder() {
  char pattern[] = "/tmp/yolo12_cli_units_XXXXXX";
  const char* made = mkdtemp(pattern);
  REQUIRE(made != nullptr);
  return made;
}

void write_bytes(const fs::path& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("Ultralytics key=value spellings become our options", "[args]") {
  CHECK(normalize({"bus.jpg", "conf=0.3"}) == std::vector<std::string>{"bus.jpg", "--conf=0.3"});
  CHECK(normalize({"imgsz=[640, 480]", "x.jpg"}) == std::vector<std::string>{"--imgsz=640,480", "x.jpg"});
  CHECK(normalize({"classes=0,2"}) == std::vector<std::string>{"--classes=0,2"});
  CHECK(normalize({"half=True", "save=False", "save_txt=true"}) == std::vector<std::string>{"--half", "--save-txt"});
  CHECK(normalize({"show_labels=False", "show_conf=True"}) == std::vector<std::string>{"--hide-labels"});
  CHECK(normalize({"verbose=False"}) == std::vector<std::string>{"--quiet"});
  CHECK(normalize({"max_det=5", "device=0"}) == std::vector<std::string>{"--max-det=5", "--device=0"});
  CHECK(normalize({"source=bus.jpg", "model=m.y12"}) == std::vector<std::string>{"--model=m.y12", "--", "bus.jpg"});
  CHECK(normalize({"tracker=bytetrack.yaml"}).empty());
  // A key=value that names an existing file stays a source.
  CHECK(normalize({"conf=0.3"}, {"conf=0.3"}) == std::vector<std::string>{"conf=0.3"});
  // Leading mode words, as `yolo predict ...`; "track" turns tracking on.
  CHECK(normalize({"predict", "bus.jpg"}) == std::vector<std::string>{"bus.jpg"});
  CHECK(normalize({"detect", "track", "clip.mp4"}) == std::vector<std::string>{"--track", "clip.mp4"});
  CHECK(normalize({"bus.jpg", "predict"}) == std::vector<std::string>{"bus.jpg", "predict"});  // not leading: a source
}

TEST_CASE("underscores in option names and integer lists", "[args]") {
  CHECK(normalize({"--max_det", "5"}) == std::vector<std::string>{"--max-det", "5"});
  CHECK(normalize({"--save_txt", "--line_width=3"}) == std::vector<std::string>{"--save-txt", "--line-width=3"});
  CHECK(normalize({"--imgsz", "320", "256", "bus.jpg"}) == std::vector<std::string>{"--imgsz=320,256", "bus.jpg"});
  CHECK(normalize({"--classes", "0", "2", "5", "x.jpg"}) == std::vector<std::string>{"--classes=0,2,5", "x.jpg"});
  CHECK(normalize({"-qv", "--", "--conf", "a=b"}) == std::vector<std::string>{"-qv", "--", "--conf", "a=b"});
  CHECK(normalize({"--conf", "-0.5"}) == std::vector<std::string>{"--conf", "-0.5"});  // a negative value, not an option
}

TEST_CASE("unknown options and keys are errors with a suggestion", "[args]") {
  REQUIRE_THROWS_WITH(normalize({"conff=0.3"}), Catch::Contains("unknown option 'conff'") && Catch::Contains("did you mean conf=?"));
  REQUIRE_THROWS_WITH(normalize({"--conff", "0.3"}), Catch::Contains("unknown option --conff (did you mean --conf?)"));
  REQUIRE_THROWS_WITH(normalize({"--max_dett=3"}), Catch::Contains("did you mean --max-det?"));
  REQUIRE_THROWS_WITH(normalize({"show_label=False"}), Catch::Contains("did you mean show_labels=?"));
  REQUIRE_THROWS_WITH(normalize({"augment=True"}), Catch::Contains("not supported by yolo12-infer"));
  REQUIRE_THROWS_WITH(normalize({"half=maybe"}), Catch::Contains("expected True or False"));
  REQUIRE_THROWS_WITH(normalize({"tracker=botsort.yaml"}), Catch::Contains("only ByteTrack"));
  REQUIRE_THROWS_WITH(normalize({"-x"}), Catch::Contains("unknown option -x"));
  REQUIRE_THROWS_WITH(normalize({"--zzzzzz"}), Catch::Matches("unknown option --zzzzzz"));  // nothing close
  CHECK(closest_match("imgz", {"imgsz", "iou", "conf"}) == "imgsz");
  CHECK(closest_match("ab", {"xy", "cd"}).empty());
}

TEST_CASE("output names stay unique across images and video frames", "[paths]") {
  OutputNames names;
  CHECK(names.claim_image("bus") == "bus");
  CHECK(names.claim_image("bus") == "bus-2");
  CHECK(names.claim_image("clip_1") == "clip_1");
  // clip.mp4's frame 1 would be labels/clip_1.txt, the image's: the video gets another name.
  CHECK(names.claim_video("clip") == "clip-2");
  // An image named like a frame of a video claimed before gets another name too.
  CHECK(names.claim_video("cam") == "cam");
  CHECK(names.claim_image("cam_12") == "cam_12-2");
  CHECK(names.claim_image("cam_x") == "cam_x");  // not a frame name
  CHECK(names.claim_crop("crops/person", "bus", "jpg") == "crops/person/bus.jpg");
  CHECK(names.claim_crop("crops/person", "bus", "jpg") == "crops/person/bus2.jpg");
  CHECK(names.claim_crop("crops/car", "bus", "jpg") == "crops/car/bus.jpg");
}

TEST_CASE("run folders: predict, predict2, ... and --exist-ok", "[paths]") {
  const fs::path root = temp_folder();
  const std::string project = (root / "runs" / "detect").string();
  CHECK(make_run_folder(project, "predict", false) == project + "/predict");
  CHECK(make_run_folder(project, "predict", false) == project + "/predict2");
  CHECK(make_run_folder(project, "predict", false) == project + "/predict3");
  CHECK(make_run_folder(project, "predict", true) == project + "/predict");
  CHECK(fs::is_directory(project + "/predict3"));
  REQUIRE_THROWS_WITH(make_run_folder(project, "a/b", false), Catch::Contains("without '/'"));
  std::ofstream(root / "file") << "x";
  REQUIRE_THROWS_AS(make_run_folder((root / "file").string(), "predict", false), UsageError);
  fs::remove_all(root);
}

TEST_CASE("protected files are found by any name of the same file", "[paths]") {
  const fs::path root = temp_folder();
  fs::create_directories(root / "in");
  std::ofstream(root / "in" / "bus.jpg") << "x";
  std::ofstream(root / "model.y12") << "x";
  fs::create_hard_link(root / "in" / "bus.jpg", root / "hard.jpg");
  fs::create_symlink(root / "model.y12", root / "link.y12");
  ProtectedFiles protect;
  protect.add((root / "in" / "bus.jpg").string(), "input", true);
  protect.add((root / "model.y12").string(), "model");
  protect.add((root / "missing.jpg").string(), "input", true);  // ignored
  CHECK(protect.find((root / "in" / ".." / "in" / "bus.jpg").string()).find("the input") == 0);
  CHECK(!protect.find((root / "hard.jpg").string()).empty());
  CHECK(protect.find((root / "link.y12").string()).find("the model") == 0);
  CHECK(protect.find((root / "other.jpg").string()).empty());
  CHECK(!protect.find_in_folder((root / "in").string()).empty());
  CHECK(protect.find_in_folder(root.string()).empty());  // the model's folder is no input folder
  fs::remove_all(root);
}

TEST_CASE("image headers give the size before decoding", "[image_header]") {
  // PNG: signature, IHDR 30000 x 20000.
  std::vector<unsigned char> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                    0, 0, 0x75, 0x30, 0, 0, 0x4E, 0x20, 8, 2, 0, 0, 0};
  ImageHeader h = read_image_header(png);
  CHECK((h.format == "png" && h.width == 30000 && h.height == 20000));
  // JPEG: SOI, an APP0 segment to skip, fill bytes, then SOF0 with height 1080 and width 810.
  std::vector<unsigned char> jpeg = {0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 'J', 'F', 0xFF, 0xFF, 0xC0, 0, 17, 8, 0x04, 0x38, 0x03, 0x2A, 3};
  h = read_image_header(jpeg);
  CHECK((h.format == "jpeg" && h.width == 810 && h.height == 1080));
  jpeg.resize(12);  // cut inside the frame header
  h = read_image_header(jpeg);
  CHECK((h.format == "jpeg" && h.width == 0));
  // BMP with a negative (top-down) height.
  std::vector<unsigned char> bmp(26, 0);
  bmp[0] = 'B';
  bmp[1] = 'M';
  bmp[14] = 40;
  bmp[18] = 0x40;  // width 64
  bmp[22] = 0xE0;  // height -32
  bmp[23] = bmp[24] = bmp[25] = 0xFF;
  h = read_image_header(bmp);
  CHECK((h.format == "bmp" && h.width == 64 && h.height == 32));
  // WebP VP8X: canvas 16384 x 9000.
  std::vector<unsigned char> webp = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0,
                                     0, 0, 0, 0, 0xFF, 0x3F, 0, 0x27, 0x23, 0};
  h = read_image_header(webp);
  CHECK((h.format == "webp" && h.width == 16384 && h.height == 9000));
  // TIFF, little-endian, IFD after the header with ImageWidth (SHORT) and ImageLength (LONG).
  std::vector<unsigned char> tiff = {'I', 'I', '*', 0, 8, 0, 0, 0, 2, 0,  // 2 entries
                                     0, 1, 3, 0, 1, 0, 0, 0, 0xE8, 0x03, 0, 0,  // 256 SHORT 1000
                                     1, 1, 4, 0, 1, 0, 0, 0, 0x40, 0x42, 0x0F, 0};  // 257 LONG 1000000
  h = read_image_header(tiff);
  CHECK((h.format == "tiff" && h.width == 1000 && h.height == 1000000));
  CHECK(read_image_header(std::vector<unsigned char>{'G', 'I', 'F'}).format.empty());
  CHECK(read_image_header(std::vector<unsigned char>{}).format.empty());
}

TEST_CASE("label files: Ultralytics' 5 columns, then conf, then the track id", "[output]") {
  std::vector<Object> objects = {{detection(10, 20, 110, 220, 0.5f, 3), -1}};
  CHECK(label_text(objects, 200, 400, false) == "3 0.3 0.3 0.5 0.5\n");
  CHECK(label_text(objects, 200, 400, true) == "3 0.3 0.3 0.5 0.5 0.5\n");
  objects[0].track_id = 7;
  CHECK(label_text(objects, 200, 400, false) == "3 0.3 0.3 0.5 0.5 7\n");
  CHECK(label_text(objects, 200, 400, true) == "3 0.3 0.3 0.5 0.5 0.5 7\n");
  CHECK(label_text({}, 200, 400, true).empty());
}

TEST_CASE("tracked frames show what Ultralytics' track mode shows", "[output]") {
  const yolo12::TrackerOptions options;  // bytetrack.yaml: high 0.25, new track 0.25
  const std::vector<yolo12::Detection> dets = {detection(10, 10, 50, 50, 0.8f, 2), detection(60, 5, 90, 40, 0.2f, 7)};
  // Tracks: the Kalman box clipped to the image, the id, the score and class of detection_index.
  yolo12::Track t;
  t.id = 4;
  t.box = {-3.5f, 10, 120, 70};
  t.score = 0.2f;
  t.class_id = 7;
  t.detection_index = 1;
  std::vector<Object> shown = tracked_objects(dets, {t}, options, 100, 60);
  REQUIRE(shown.size() == 1);
  CHECK(shown[0].track_id == 4);
  CHECK(shown[0].detection.box.x1 == 0.0f);
  CHECK(shown[0].detection.box.y1 == 10.0f);
  CHECK(shown[0].detection.box.x2 == 100.0f);
  CHECK(shown[0].detection.box.y2 == 60.0f);
  CHECK(shown[0].detection.class_id == 7);
  CHECK(shown[0].detection.score == 0.2f);
  // No track, but a detection at >= 0.25 is a new track waiting for its second frame: nothing shown.
  CHECK(tracked_objects(dets, {}, options, 100, 60).empty());
  // No track and nothing that could start one: the frame's own detections, without ids.
  const std::vector<yolo12::Detection> weak = {detection(60, 5, 90, 40, 0.2f, 7), detection(1, 1, 9, 9, 0.12f)};
  shown = tracked_objects(weak, {}, options, 100, 60);
  REQUIRE(shown.size() == 2);
  CHECK(shown[0].track_id == -1);
  CHECK(shown[1].detection.score == 0.12f);
}

TEST_CASE("crops as Ultralytics' save_one_box: 1.02 x box + 10 px, clipped", "[output]") {
  cv::Mat image(100, 200, CV_8UC3, cv::Scalar(1, 2, 3));
  cv::Mat crop = crop_of(image, {50, 40, 100, 60});
  // centre (75, 50), size 50*1.02+10 = 61 by 20*1.02+10 = 30.4 -> x 44.5..105.5, y 34.8..65.2, truncated.
  CHECK((crop.cols == 61 && crop.rows == 31));
  crop = crop_of(image, {-50, -50, 500, 500});
  CHECK((crop.cols == 200 && crop.rows == 100));
  CHECK(crop_of(image, {300, 300, 400, 400}).empty());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(crop_of(image, {nan, 0, 10, 10}).empty());
}

TEST_CASE("drawing survives NaN, infinite and huge boxes and scores", "[output]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  cv::Mat image(64, 96, CV_8UC3, cv::Scalar(0, 0, 0));
  const std::vector<Object> objects = {
      {detection(nan, nan, nan, nan), -1},        {detection(-inf, 0, inf, 10), -1},
      {detection(-1e30f, -1e30f, 1e30f, 1e30f, nan, -7), 3},
      {detection(1e10f, 1e10f, 2e10f, 2e10f, inf, 2147483647), -1},
      {detection(10, 10, 40, 30, 0.8f, 1), 12}};
  for (const DrawStyle& style : {DrawStyle{}, DrawStyle{1000, true, true}, DrawStyle{1, false, false}}) {
    cv::Mat copy = image.clone();
    draw_detections(copy, objects, {"person", "car"}, style);
    CHECK(cv::countNonZero(copy.reshape(1)) > 0);  // the finite boxes were drawn
  }
  cv::Mat empty;
  draw_detections(empty, objects, {}, DrawStyle{});
}

TEST_CASE("checked writes report failures", "[output]") {
  CHECK(write_file("/dev/full", "some bytes").find("No space") != std::string::npos);
  CHECK(!write_file("/nonexistent-folder/x.txt", "x").empty());
  const fs::path root = temp_folder();
  CHECK(write_file((root / "ok.txt").string(), "hello").empty());
  CHECK(fs::file_size(root / "ok.txt") == 5);
  fs::create_directories(root / "dir.jpg");  // a folder where the file should go
  CHECK(!write_file((root / "dir.jpg").string(), "x").empty());
  fs::remove_all(root);
}

TEST_CASE("run_in_order: item k on worker k % N, consumed in order, at most 2N ahead", "[spread]") {
  for (std::size_t workers : {1, 2, 3, 5}) {
    const std::size_t count = 40;
    std::atomic<long> produced{0}, consumed{0};
    std::atomic<long> most_ahead{0};
    std::mutex mutex;
    std::set<std::thread::id> threads;
    std::vector<std::size_t> order;
    const std::size_t n = run_in_order<std::pair<std::size_t, std::size_t>>(
        workers, count,
        [&](std::size_t k, std::size_t worker) {
          const long ahead = ++produced - consumed.load();
          long seen = most_ahead.load();
          while (ahead > seen && !most_ahead.compare_exchange_weak(seen, ahead)) {
          }
          {
            std::lock_guard<std::mutex> lock(mutex);
            threads.insert(std::this_thread::get_id());
          }
          // Later items finish first: without the reordering they would be consumed out of order.
          std::this_thread::sleep_for(std::chrono::microseconds(200 * ((count - k) % 7)));
          return std::make_pair(k, worker);
        },
        [&](std::size_t k, std::pair<std::size_t, std::size_t>& item) {
          CHECK(item.first == k);
          CHECK(item.second == k % workers);
          order.push_back(item.first);
          ++consumed;
        },
        [] { return false; });
    CHECK(n == count);
    CHECK(order.size() == count);
    for (std::size_t k = 0; k < order.size(); ++k) CHECK(order[k] == k);
    CHECK(threads.size() == workers);
    CHECK(threads.count(std::this_thread::get_id()) == 0);  // produced on the workers, not here
    CHECK(most_ahead.load() <= static_cast<long>(2 * workers));
  }
  CHECK(run_in_order<int>(2, 0, [](std::size_t, std::size_t) { return 1; }, [](std::size_t, int&) {}, [] { return false; }) == 0);
}

TEST_CASE("run_in_order: a stop ends it after the items in hand; errors reach the caller in turn", "[spread]") {
  std::atomic<bool> stop{false};
  std::atomic<long> produced{0};
  std::vector<std::size_t> order;
  const std::size_t n = run_in_order<std::size_t>(
      2, 1000,
      [&](std::size_t k, std::size_t) {
        ++produced;
        return k;
      },
      [&](std::size_t k, std::size_t& item) {
        CHECK(item == k);
        order.push_back(k);
        if (k == 9) stop = true;
      },
      [&] { return stop.load(); });
  CHECK(n == order.size());
  CHECK(n >= 10);
  CHECK(n <= 10 + 4);           // at most the 2N items started before the stop
  CHECK(produced.load() <= 10 + 4);
  for (std::size_t k = 0; k < order.size(); ++k) CHECK(order[k] == k);

  std::vector<std::size_t> before_error;
  CHECK_THROWS_WITH(run_in_order<int>(
                        3, 50,
                        [](std::size_t k, std::size_t) {
                          if (k == 7) throw std::runtime_error("item 7 failed");
                          return static_cast<int>(k);
                        },
                        [&](std::size_t k, int&) { before_error.push_back(k); }, [] { return false; }),
                    "item 7 failed");
  CHECK(before_error.size() == 7);  // items 0..6 were consumed first
  CHECK_THROWS_WITH(run_in_order<int>(
                        2, 50, [](std::size_t k, std::size_t) { return static_cast<int>(k); },
                        [](std::size_t k, int&) {
                          if (k == 3) throw std::runtime_error("consumer failed");
                        },
                        [] { return false; }),
                    "consumer failed");
}

TEST_CASE("stderr captures from several threads at once each get their own lines", "[spread]") {
  // The image workers decode at the same time: each capture must see only what was printed inside
  // it, and stderr must be itself again afterwards (a capture inside another would leave it pointing
  // at a closed memory file).
  std::vector<std::string> captured(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&captured, t] {
      for (int i = 0; i < 5; ++i) {
        const std::string text = capture_stderr([&] {
          std::fprintf(stderr, "thread %d line %d\n", t, i);
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // long enough for the others to start one
        });
        if (text != "thread " + std::to_string(t) + " line " + std::to_string(i) + "\n") captured[t] += "[" + text + "]";
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& wrong : captured) CHECK(wrong.empty());
  CHECK(capture_stderr([] { std::fputs("after\n", stderr); }) == "after\n");
}
