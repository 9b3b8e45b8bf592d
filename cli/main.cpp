// cli/main.cpp - yolo12-infer: detect objects in images, folders, videos, cameras and streams
// with a .y12 model. Options and defaults follow Ultralytics predict; docs/cli.md describes them all.
//
// Order of work: rewrite Ultralytics spellings and check every option (exit 2 on a usage error,
// before anything is loaded), find the model, expand the sources and check that no output would
// overwrite one of them or the model, load the model onto every device of --device (exit 1 if it
// cannot be used), create the run folder, then process the sources in order, spread over those
// devices (cli/spread.cpp). A bad input is reported and skipped; the exit status is 1 when any input
// or output failed, 130 after Ctrl-C.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <opencv2/core/utils/logger.hpp>

#include "args.hpp"
#include "ffmpeg.hpp"
#include "npy.hpp"
#include "run.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;
using namespace yolo12_cli;

namespace {

// The --device list (yolo12::parse_devices): "auto", "cpu", "cuda", "cuda:N", "N", or a list such as
// "cuda:0,1" or "0,1".
std::vector<yolo12::DeviceSpec> parse_device_list(const std::string& text) {
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw UsageError("--device needs a value (cpu, cuda, cuda:N, N, auto or a list such as 0,1)");
  try {
    return yolo12::parse_devices(text);
  } catch (const yolo12::OptionError& e) {
    std::string why = e.what();
    const std::string prefix = "invalid option: ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    throw UsageError("--device " + text + ": " + why);
  }
}

// Checks every option that can be checked without the model, and turns them into DetectorOptions
// (their device fields are the first entry's; *devices gets the whole list).
yolo12::DetectorOptions check_options(const CliOptions& opt, std::vector<yolo12::DeviceSpec>* devices) {
  yolo12::DetectorOptions d;
  *devices = parse_device_list(opt.device);
  d.device = devices->front().device;
  d.device_index = devices->front().index;
  if (opt.imgsz.size() > 2) throw UsageError("--imgsz takes one size (square) or two (height width)");
  for (int size : opt.imgsz)
    if (size <= 0 || size % 32 != 0 || size > 8192)
      throw UsageError("--imgsz " + std::to_string(size) + ": must be a positive multiple of 32 (at most 8192)");
  if (!opt.imgsz.empty()) {
    d.input_height = opt.imgsz[0];
    d.input_width = opt.imgsz.size() == 2 ? opt.imgsz[1] : opt.imgsz[0];
  }
  if (!(opt.conf >= 0 && opt.conf <= 1)) throw UsageError("--conf " + std::to_string(opt.conf) + ": must be in [0, 1]");
  if (!(opt.iou >= 0 && opt.iou <= 1)) throw UsageError("--iou " + std::to_string(opt.iou) + ": must be in [0, 1]");
  if (opt.max_det < 1) throw UsageError("--max-det " + std::to_string(opt.max_det) + ": must be at least 1");
  if (opt.batch < 1 || opt.batch > 1024) throw UsageError("--batch " + std::to_string(opt.batch) + ": must be 1..1024");
  if (opt.vid_stride < 1) throw UsageError("--vid-stride " + std::to_string(opt.vid_stride) + ": must be at least 1");
  if (opt.threads < 0 || opt.threads > 1024) throw UsageError("--threads " + std::to_string(opt.threads) + ": must be 0..1024");
  if (opt.line_width < 0 || opt.line_width > 1000)
    throw UsageError("--line-width " + std::to_string(opt.line_width) + ": must be 0..1000 (0: scaled to the image)");
  if (opt.max_pixels < 0) throw UsageError("--max-pixels " + std::to_string(opt.max_pixels) + ": must be 0 (no limit) or more");
  if (!(opt.stream_timeout > 0 && opt.stream_timeout <= 86400))
    throw UsageError("--stream-timeout " + format_ms(opt.stream_timeout) + ": must be in (0, 86400] seconds");
  if (opt.stream_retries < 0 || opt.stream_retries > 1000)
    throw UsageError("--stream-retries " + std::to_string(opt.stream_retries) + ": must be 0..1000");
  for (int c : opt.classes)
    if (c < 0) throw UsageError("--classes " + std::to_string(c) + ": class ids are 0 or more");
  if (opt.input_tensor.empty() != opt.dump_raw.empty())
    throw UsageError("--input-tensor and --dump-raw go together");
  if (opt.quiet && opt.verbose) throw UsageError("--quiet and --verbose exclude each other");
  if (opt.save_conf && !opt.save_txt) throw UsageError("--save-conf adds a column to --save-txt's label files: add --save-txt");
  if (!opt.output.empty() && (opt.project != "runs/detect" || !opt.name.empty()))
    throw UsageError("--output names the folder itself: give it, or --project/--name, not both");
  d.rect = opt.rect;
  d.conf = opt.conf;
  d.iou = opt.iou;
  d.max_det = opt.max_det;
  d.classes = opt.classes;
  d.agnostic_nms = opt.agnostic_nms;
  d.precision = opt.half ? yolo12::Precision::Fp16 : yolo12::Precision::Fp32;
  d.max_batch = opt.batch;
  d.cpu_threads = opt.threads;
  d.tune_kernels = opt.tune;
  d.tune_cache = opt.tune_cache;
  return d;
}

std::string gib(double bytes) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << bytes / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return s.str();
}

// The least memory a detector for batch x H x W can plan: the input tensor (3 floats a pixel) and
// the first layer's output, alive together (at least 16 channels at stride 2: 4 floats a pixel).
double least_plan_bytes(int batch, int height, int width) { return batch * 28.0 * height * width; }

// Creates the detectors, one per device entry (yolo12::DetectorPool). An option the model or machine
// cannot honour is a usage error (exit 2), a device that is not there too, and so is a plan that
// cannot fit in this machine's memory: refused before it is tried when even its lower bound does not
// fit, and reported the same way when the allocation fails.
std::unique_ptr<yolo12::DetectorPool> make_pool(const std::string& model, const yolo12::DetectorOptions& d,
                                                const std::vector<yolo12::DeviceSpec>& devices) {
  int height = d.input_height, width = d.input_width;
  if (!height && d.max_batch > 1) {  // the model's own size matters only for batches
    const yolo12::ModelInfo info = yolo12::read_model_info(model);
    height = info.input_height;
    width = info.input_width;
  }
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  const auto refuse = [&] {
    return UsageError("--batch " + std::to_string(d.max_batch) + " at " + std::to_string(height) + "x" +
                      std::to_string(width) + ": not enough memory for the detector (its input tensor and first layer "
                      "alone need " + gib(least_plan_bytes(d.max_batch, height, width)) +
                      ", the whole plan several times that; this machine has " + gib(memory) + "): lower --batch or --imgsz");
  };
  if (height && least_plan_bytes(d.max_batch, height, width) > memory) throw refuse();
  try {
    return std::make_unique<yolo12::DetectorPool>(model, d, devices);
  } catch (const std::bad_alloc&) {
    if (!height) {
      const yolo12::ModelInfo info = yolo12::read_model_info(model);
      height = info.input_height;
      width = info.input_width;
    }
    throw refuse();
  }
}

// The parity hook: raw head output for a float32 NCHW tensor, no letterbox, no NMS.
// It runs on the first device of a --device list.
int run_raw(const std::string& model, yolo12::DetectorOptions d, const yolo12::DeviceSpec& device, const CliOptions& opt) {
  NpyArray input = read_npy_f32(opt.input_tensor);  // InputError: exit 1
  if (input.shape.size() != 4 || input.shape[1] != 3 || input.shape[0] == 0 || input.shape[0] > 1024 ||
      input.shape[2] > 8192 || input.shape[3] > 8192)
    throw yolo12::InputError(opt.input_tensor + ": shape " + shape_string(input.shape) +
                             " is not (B, 3, H, W) with B <= 1024 and H, W <= 8192: --input-tensor takes a float32 "
                             "NCHW RGB tensor");
  const int batch = static_cast<int>(input.shape[0]);
  const int height = static_cast<int>(input.shape[2]), width = static_cast<int>(input.shape[3]);
  if (height % 32 || width % 32 || height <= 0 || width <= 0)
    throw yolo12::InputError(opt.input_tensor + ": height and width " + std::to_string(height) + "x" +
                             std::to_string(width) + " must be positive multiples of 32");
  if (d.input_height && (d.input_height != height || d.input_width != width))
    throw UsageError("--imgsz disagrees with the tensor's size " + std::to_string(height) + "x" + std::to_string(width));
  d.input_height = height;
  d.input_width = width;
  d.max_batch = batch;
  std::unique_ptr<yolo12::DetectorPool> pool = make_pool(model, d, {device});
  yolo12::Detector* detector = &(*pool)[0];
  int channels = 0, anchors = 0;
  const std::vector<float> raw = detector->forward_raw(input.data.data(), batch, height, width, &channels, &anchors);
  const std::vector<std::size_t> shape = {static_cast<std::size_t>(batch), static_cast<std::size_t>(channels),
                                          static_cast<std::size_t>(anchors)};
  if (raw.size() != shape[0] * shape[1] * shape[2])
    throw yolo12::InputError("forward_raw returned " + std::to_string(raw.size()) + " values for shape " +
                             shape_string(shape));
  write_npy_f32(opt.dump_raw, shape, raw.data());
  if (!opt.quiet)
    std::cerr << "wrote " << opt.dump_raw << " " << shape_string(shape) << " on " << detector->device_name() << "\n";
  return kExitOk;
}

// The longest run of consecutive still images: the largest batch the detector is planned for, so
// that --batch 1024 on one image does not plan memory for 1024.
int largest_batch(const std::vector<Input>& inputs, int batch) {
  int longest = 0, run = 0;
  for (const Input& in : inputs) {
    run = in.kind == InputKind::Image ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::max(1, std::min(batch, longest));
}

// Refuses, before any work, outputs that would overwrite an input or the model: the JSON file, and
// --save into a folder holding inputs (its annotated copies would replace them).
void check_outputs(const CliOptions& opt, const ProtectedFiles& protect, const std::string& run_dir) {
  if (!opt.json.empty() && opt.json != "-") {
    const std::string hit = protect.find(opt.json);
    if (!hit.empty()) throw UsageError("--json " + opt.json + ": refusing to write over " + hit);
  }
  if (opt.save && !run_dir.empty()) {
    const std::string hit = protect.find_in_folder(run_dir);
    if (!hit.empty())
      throw UsageError("--save into " + run_dir + " would write over its inputs (" + hit + "): choose another folder");
  }
}

int run(int argc, char** argv) {
  CliOptions opt;
  bool show_version = false;
  CLI::App app{"yolo12-infer: detect objects with a YOLO12 (or YOLO11 / YOLOv8) .y12 model.\n"
               "Sources: image files, folders, globs ('images/*.jpg'), .txt lists (- for one on stdin),\n"
               "video files, cameras (0, /dev/video0), image URLs and stream URLs (rtsp://, http(s)://),\n"
               "processed in order. Ultralytics spellings work too: conf=0.3 imgsz=640 save=True ...",
               "yolo12-infer"};
  app.add_option("sources", opt.sources, "Images, folders, globs, lists, videos, cameras or URLs");
  app.add_option("--model", opt.model,
                 "Model file (.y12); default: $YOLO12_MODEL, then the one recorded by exporter/export.py");
  app.add_option("--device", opt.device,
                 "cpu, cuda, cuda:N, N or auto (CUDA when available); a list (cuda:0,1 or 0,1) spreads the work")
      ->capture_default_str();
  std::string imgsz_text, classes_text;  // integer lists, split by parse_int_list()
  CLI::Option* imgsz_option = app.add_option("--imgsz", imgsz_text, "Network input size: N (square) or H W, multiples of 32; default: the model's")
      ->type_name("N|H W");
  app.add_flag("--rect", opt.rect, "Letterbox to the smallest multiple-of-32 rectangle instead of the full size");
  app.add_option("--conf", opt.conf, "Confidence threshold (default 0.25; 0.1 with --track)");
  app.add_option("--iou", opt.iou, "NMS IoU threshold")->capture_default_str();
  app.add_option("--max-det", opt.max_det, "Most detections kept per image")->capture_default_str();
  CLI::Option* classes_option = app.add_option("--classes", classes_text, "Keep only these class ids (e.g. --classes 0 2 5)")->type_name("ID...");
  app.add_flag("--agnostic-nms", opt.agnostic_nms, "Class-agnostic NMS");
  app.add_flag("--half", opt.half, "FP16 inference (CUDA only; the CPU runs FP32)");
  app.add_flag("--tune", opt.tune, "With --half on CUDA: time each conv's kernels on this GPU first and keep the fastest");
  app.add_option("--tune-cache", opt.tune_cache,
                 "Keep --tune's choices in this file, per GPU model, so that later runs start without timing (implies --tune)")
      ->type_name("FILE");
  app.add_option("--batch", opt.batch, "Images per detect() call")->capture_default_str();
  app.add_option("--threads", opt.threads, "CPU backend threads (0: all cores)")->capture_default_str();
  app.add_option("--vid-stride", opt.vid_stride, "Detect every Nth video frame (all frames are still saved)")
      ->capture_default_str();
  app.add_flag("--track", opt.track, "Track objects across video frames (ByteTrack); IDs in JSON, labels, drawings");
  app.add_option("--project", opt.project, "Run folders go into PROJECT/NAME")->capture_default_str();
  app.add_option("--name", opt.name, "Run folder name; a new NAME2, NAME3 ... each run (default predict, or track)");
  app.add_flag("--exist-ok", opt.exist_ok, "Reuse PROJECT/NAME instead of a new folder");
  app.add_option("--output", opt.output, "Exactly this folder for the saved files (instead of PROJECT/NAME)");
  app.add_flag("--save", opt.save, "Save annotated images and videos");
  app.add_flag("--save-txt", opt.save_txt, "Save YOLO labels (class cx cy w h) into labels/");
  app.add_flag("--save-conf", opt.save_conf, "Add the confidence to the labels of --save-txt");
  app.add_flag("--save-crop", opt.save_crop, "Save each detection's crop into crops/CLASS/");
  app.add_option("--line-width", opt.line_width, "Box line width in pixels (0: scaled to the image)")->capture_default_str();
  app.add_flag("--hide-labels", opt.hide_labels, "Draw boxes without labels");
  app.add_flag("--hide-conf", opt.hide_conf, "Draw labels without the confidence");
  app.add_option("--json", opt.json, "Write JSON Lines (one object per image or frame) to PATH; - for stdout");
  app.add_option("--max-pixels", opt.max_pixels, "Refuse images above this many pixels (0: no limit)")->capture_default_str();
  app.add_option("--stream-timeout", opt.stream_timeout, "Give up a live source after this many seconds without a frame")
      ->capture_default_str();
  app.add_option("--stream-retries", opt.stream_retries, "Reopen a lost live source at most this many times in all")
      ->capture_default_str();
  app.add_flag("--quiet,-q", opt.quiet, "Print only errors and warnings (no OpenCV/FFmpeg/libpng messages either)");
  app.add_flag("--verbose,-v", opt.verbose, "Print more (model, device, video details, other libraries' messages)");
  app.add_flag("--info", opt.info, "Print the model's summary and exit");
  app.add_flag("--version", show_version, "Print the version and exit");
  app.add_option("--input-tensor", opt.input_tensor, "Parity hook: float32 NCHW (B,3,H,W) .npy to run the network on");
  app.add_option("--dump-raw", opt.dump_raw, "Parity hook: write the raw head output (B,4+nc,A) .npy here");
  app.footer(
      "The model: --model, else $YOLO12_MODEL, else \"model\" in settings.json in $YOLO12_CONFIG_DIR\n"
      "(default $XDG_CONFIG_HOME/yolo12 or ~/.config/yolo12), which exporter/export.py writes.\n"
      "Saved files go to runs/detect/predict, predict2, ... (--project, --name, --exist-ok, --output).\n"
      "Exit status: 0 all inputs done, 1 an input or output failed or the model cannot be used,\n"
      "2 invalid options (nothing done), 130 interrupted (files written so far are complete).\n"
      "Put sources before --imgsz/--classes, or after --, when a source is a bare number (a camera).\n"
      "Examples:\n"
      "  yolo12-infer bus.jpg\n"
      "  yolo12-infer bus.jpg conf=0.5 save=True\n"
      "  yolo12-infer --model m.y12 images/ video.mp4 --json out.jsonl --imgsz 320 --save\n"
      "See docs/cli.md.");

  std::vector<KnownOption> known;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional()) continue;
    known.push_back(KnownOption{o->get_lnames(), o->get_snames(), o->get_expected_max() == 0});
  }
  std::vector<std::string> args;
  try {
    args = normalize_arguments(std::vector<std::string>(argv + 1, argv + argc), known, [](const std::string& token) {
      std::error_code ec;
      return fs::exists(token, ec);
    });
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n(run yolo12-infer --help for the options)\n";
    return kExitUsage;
  }
  std::vector<const char*> parsed_argv = {argv[0]};
  for (const std::string& a : args) parsed_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(parsed_argv.size()), parsed_argv.data());
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n(run yolo12-infer --help for the options)\n";
    return kExitUsage;
  }
  if (show_version) {
    std::cout << "yolo12-infer " << yolo12::version() << "\n";
    return kExitOk;
  }
  // Ultralytics tracks at conf 0.1 unless told otherwise: ByteTrack needs the weak boxes too.
  if (opt.track && app.count("--conf") == 0) opt.conf = 0.1f;
  // Third-party messages: OpenCV's own log only with --verbose (our lines say what failed), FFmpeg's
  // routed through the console below.
  cv::utils::logging::setLogLevel(opt.verbose ? cv::utils::logging::LOG_LEVEL_WARNING
                                              : cv::utils::logging::LOG_LEVEL_SILENT);

  // ---- check everything before any work.
  yolo12::DetectorOptions detector_options;
  std::vector<yolo12::DeviceSpec> devices;
  ModelChoice model;
  Sources sources;
  ProtectedFiles protect;
  std::string run_dir;
  try {
    // Given with nothing in it (`--imgsz ""`, `imgsz=`) is an error, not the model's default.
    auto require_value = [](const CLI::Option* o, const std::string& text, const char* what) {
      if (o->count() > 0 && text.find_first_not_of(' ') == std::string::npos)
        throw UsageError(o->get_name() + ": an empty value; give " + what);
    };
    require_value(imgsz_option, imgsz_text, "one size or two (height width)");
    require_value(classes_option, classes_text, "class indices, e.g. 0,2");
    opt.imgsz = parse_int_list("--imgsz", imgsz_text);
    opt.classes = parse_int_list("--classes", classes_text);
    detector_options = check_options(opt, &devices);
    model = choose_model(opt.model);
    if (!opt.info && opt.input_tensor.empty() && opt.sources.empty())
      throw UsageError("no sources: give image or video files, folders, lists, cameras or URLs");
    sources = expand_sources(opt.sources, std::cin);
    protect.add(model.path, "model");
    for (const Input& in : sources.inputs)
      if (in.kind == InputKind::Image || in.kind == InputKind::Video) protect.add(in.name, "input", /*guard_folder=*/true);
    for (const std::string& list : sources.list_files) protect.add(list, "list of inputs");
    if (!opt.input_tensor.empty()) protect.add(opt.input_tensor, "input tensor");
    if (!opt.dump_raw.empty() && !protect.find(opt.dump_raw).empty())
      throw UsageError("--dump-raw " + opt.dump_raw + ": refusing to write over " + protect.find(opt.dump_raw));
    if (!opt.output.empty()) run_dir = opt.output;
    check_outputs(opt, protect, run_dir);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n(run yolo12-infer --help for the options)\n";
    return kExitUsage;
  }

  if (opt.info) {
    std::cout << yolo12::read_model_info(model.path).summary();
    std::cout.flush();
    return kExitOk;
  }
  if (!opt.input_tensor.empty()) return run_raw(model.path, detector_options, devices.front(), opt);

  // ---- model, outputs, then the sources in order.
  Console console(opt.quiet, opt.verbose, opt.json == "-");
  route_ffmpeg_log([&console](const std::string& line) { console.debug(line); });
  struct UnrouteFfmpeg {
    ~UnrouteFfmpeg() { route_ffmpeg_log({}); }
  } unroute;
  const std::vector<Input>& inputs = sources.inputs;
  detector_options.max_batch = largest_batch(inputs, opt.batch);
  if (detector_options.max_batch < opt.batch)
    console.verbose("planning for batches of " + std::to_string(detector_options.max_batch) + " (the longest run of images), not --batch " +
                    std::to_string(opt.batch));
  // Several CPU entries share the cores: --threads 0 ("all cores") gives each its part.
  const auto cpu_entries = std::count_if(devices.begin(), devices.end(),
                                         [](const yolo12::DeviceSpec& s) { return s.device == yolo12::Device::Cpu; });
  if (opt.threads == 0 && cpu_entries > 1)
    detector_options.cpu_threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency() / static_cast<unsigned>(cpu_entries)));
  std::unique_ptr<yolo12::DetectorPool> pool = make_pool(model.path, detector_options, devices);
  const std::string devices_used = device_names(*pool);
  const yolo12::ModelInfo& info = (*pool)[0].info();
  std::unique_ptr<JsonLines> json;
  try {
    if (opt.saves()) {
      if (run_dir.empty())
        run_dir = make_run_folder(opt.project, opt.name.empty() ? (opt.track ? "track" : "predict") : opt.name, opt.exist_ok);
      else
        make_folder(run_dir, "--output");
      check_outputs(opt, protect, run_dir);
      if (opt.save_txt) make_folder(run_dir + "/labels", "--save-txt");
    }
    if (!opt.json.empty()) json = std::make_unique<JsonLines>(opt.json);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const yolo12::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  console.verbose("model " + model.path + " (" + model.origin + "): " + info.family + (info.scale.empty() ? "" : " " + info.scale) +
                  ", " + std::to_string(info.num_classes) + " classes, on " + devices_used);
  bool on_cpu = false;  // what the entries became (auto: cpu without a GPU)
  for (std::size_t i = 0; i < pool->size(); ++i) on_cpu = on_cpu || pool->device(i).device == yolo12::Device::Cpu;
  if (opt.half && on_cpu) console.warning("--half has no effect on the CPU backend; running FP32");

  install_stop_handlers();
  ImageLimits limits;
  limits.max_pixels = static_cast<std::uint64_t>(opt.max_pixels);
  limits.timeout_s = opt.stream_timeout;
  RunContext ctx(info, opt, console, json.get(), protect, run_dir, limits);
  const bool left_thread_behind = !run_inputs(ctx, *pool, inputs);

  // ---- closing lines and the exit status.
  if (json && !json->close() && ctx.totals().failed_outputs == 0) ctx.fail_output(opt.json, json->error());
  const Totals t = ctx.totals();
  if (t.results > 0) {
    const double n = static_cast<double>(t.results);
    console.info("Speed: " + format_ms(t.preprocess_ms / n) + "ms preprocess, " + format_ms(t.inference_ms / n) +
                 "ms inference, " + format_ms(t.postprocess_ms / n) + "ms postprocess per image on " +
                 devices_used);
  }
  if (!run_dir.empty()) console.info("Results saved to " + run_dir);
  if (t.failed_inputs > 0)
    console.info(std::to_string(t.failed_inputs) + " of " + std::to_string(inputs.size()) + " inputs failed (see the errors above)");
  if (t.failed_outputs > 0)
    console.info(std::to_string(t.failed_outputs) + " outputs could not be written (see the errors above)");
  const int status = stop_requested() ? kExitInterrupted : (t.failed_inputs > 0 || t.failed_outputs > 0) ? kExitFailed : kExitOk;
  if (left_thread_behind) {  // a decoder stuck in FFmpeg: end without waiting for it (our files are closed)
    std::cout.flush();
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const yolo12::OptionError& e) {  // an option the model or machine cannot honour
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const yolo12::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailed;
  } catch (...) {
    std::cerr << "error: unexpected failure\n";
    return kExitFailed;
  }
}
