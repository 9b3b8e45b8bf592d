// cli/main.cpp - yolo12-infer: detect objects in images, folders, videos, cameras and streams
// with a .y12 model. Options and defaults follow Ultralytics predict; docs/cli.md describes them all.
//
// Order of work: parse and check every option (exit 2 on a usage error, before anything is loaded),
// load the model (exit 1 if it cannot be used), then process the sources one after another. A bad
// input is reported and skipped; the exit status is 1 when any input failed, 130 after Ctrl-C.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include <CLI/CLI.hpp>
#include <opencv2/core/utils/logger.hpp>

#include "npy.hpp"
#include "run.hpp"

namespace fs = std::filesystem;
using namespace yolo12_cli;

namespace {

// A usage error: the message is printed with a pointer to --help and the exit status is 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// CLI11 gives a multi-value option every token that follows it, so `--imgsz 320 bus.jpg` would try to
// read "bus.jpg" as a size. Before parsing, the integers right after --imgsz (at most two) and
// --classes (any number) are folded into one token, `--imgsz=320` or `--classes=0,2,5`, and the
// tokens after them stay sources. "--" ends the options, as usual.
std::vector<std::string> fold_integer_lists(int argc, char** argv) {
  static const std::regex integer("-?[0-9]+");
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> folded;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      folded.insert(folded.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    const std::size_t max_values = arg == "--imgsz" ? 2 : arg == "--classes" ? 1000 : 0;
    std::string values;
    std::size_t taken = 0;
    while (max_values && taken < max_values && i + 1 < args.size() && std::regex_match(args[i + 1], integer)) {
      values += (taken++ ? "," : "") + args[++i];
    }
    folded.push_back(taken ? arg + "=" + values : arg);
  }
  return folded;
}

// "320,320" -> {320, 320}; "" -> {}. Throws UsageError naming the option for anything else.
std::vector<int> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int> values;
  if (text.empty()) return values;
  std::stringstream items(text);
  std::string item;
  static const std::regex integer(" *-?[0-9]{1,9} *");
  while (std::getline(items, item, ',')) {
    if (!std::regex_match(item, integer)) throw UsageError(option + " " + text + ": expected integers");
    values.push_back(std::stoi(item));
  }
  return values;
}

// "auto", "cpu", "cuda", "cuda:N" or a bare GPU index "N" (as Ultralytics' device=0).
void parse_device(const std::string& text, yolo12::DetectorOptions* options) {
  static const std::regex cuda_n("(cuda:)?([0-9]{1,3})");
  std::smatch m;
  if (text == "auto") {
    options->device = yolo12::Device::Auto;
  } else if (text == "cpu") {
    options->device = yolo12::Device::Cpu;
  } else if (text == "cuda") {
    options->device = yolo12::Device::Cuda;
  } else if (std::regex_match(text, m, cuda_n)) {
    options->device = yolo12::Device::Cuda;
    options->device_index = std::stoi(m[2]);
  } else {
    throw UsageError("--device " + text + ": unknown device (use cpu, cuda, cuda:N or auto)");
  }
}

// Checks every option that can be checked without the model, and turns them into DetectorOptions.
yolo12::DetectorOptions check_options(const CliOptions& opt) {
  yolo12::DetectorOptions d;
  parse_device(opt.device, &d);
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
  if (opt.batch < 1) throw UsageError("--batch " + std::to_string(opt.batch) + ": must be at least 1");
  if (opt.vid_stride < 1) throw UsageError("--vid-stride " + std::to_string(opt.vid_stride) + ": must be at least 1");
  for (int c : opt.classes)
    if (c < 0) throw UsageError("--classes " + std::to_string(c) + ": class ids are 0 or more");
  if (opt.input_tensor.empty() != opt.dump_raw.empty())
    throw UsageError("--input-tensor and --dump-raw go together");
  if (opt.quiet && opt.verbose) throw UsageError("--quiet and --verbose exclude each other");
  d.rect = opt.rect;
  d.conf = opt.conf;
  d.iou = opt.iou;
  d.max_det = opt.max_det;
  d.classes = opt.classes;
  d.agnostic_nms = opt.agnostic_nms;
  d.precision = opt.half ? yolo12::Precision::Fp16 : yolo12::Precision::Fp32;
  d.max_batch = opt.batch;
  return d;
}

// Creates a folder (and its parents) or throws UsageError.
void make_folder(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) throw UsageError("--output " + path + ": cannot create the folder (" +
                                                      (ec ? ec.message() : std::string("not a folder")) + ")");
}

// The parity hook: raw head output for a float32 NCHW tensor, no letterbox, no NMS.
int run_raw(const std::string& model, yolo12::DetectorOptions d, const CliOptions& opt) {
  NpyArray input = read_npy_f32(opt.input_tensor);  // InputError: exit 1
  if (input.shape.size() != 4 || input.shape[1] != 3 || input.shape[0] == 0)
    throw yolo12::InputError(opt.input_tensor + ": shape " + shape_string(input.shape) +
                             " is not (B, 3, H, W): --input-tensor takes a float32 NCHW RGB tensor");
  const int batch = static_cast<int>(input.shape[0]);
  const int height = static_cast<int>(input.shape[2]), width = static_cast<int>(input.shape[3]);
  if (height % 32 || width % 32 || height <= 0 || width <= 0)
    throw yolo12::InputError(opt.input_tensor + ": height and width " + std::to_string(height) + "x" +
                             std::to_string(width) + " must be positive multiples of 32");
  if (d.input_height && (d.input_height != height || d.input_width != width))
    throw UsageError("--imgsz disagrees with the tensor's size " + std::to_string(height) + "x" + std::to_string(width));
  d.input_height = height;
  d.input_width = width;
  d.max_batch = std::max(batch, d.max_batch);
  yolo12::Detector detector(model, d);
  int channels = 0, anchors = 0;
  const std::vector<float> raw = detector.forward_raw(input.data.data(), batch, height, width, &channels, &anchors);
  const std::vector<std::size_t> shape = {static_cast<std::size_t>(batch), static_cast<std::size_t>(channels),
                                          static_cast<std::size_t>(anchors)};
  if (raw.size() != shape[0] * shape[1] * shape[2])
    throw yolo12::InputError("forward_raw returned " + std::to_string(raw.size()) + " values for shape " +
                             shape_string(shape));
  write_npy_f32(opt.dump_raw, shape, raw.data());
  if (!opt.quiet)
    std::cerr << "wrote " << opt.dump_raw << " " << shape_string(shape) << " on " << detector.device_name() << "\n";
  return kExitOk;
}

int run(int argc, char** argv) {
  CliOptions opt;
  bool show_version = false;
  CLI::App app{"yolo12-infer: detect objects with a YOLO12 (or YOLO11 / YOLOv8) .y12 model.\n"
               "Sources: image files, folders, glob patterns ('images/*.jpg'), video files, camera\n"
               "indices (0) and stream URLs (rtsp://, rtmp://, http(s)://), processed in order.",
               "yolo12-infer"};
  app.add_option("sources", opt.sources, "Images, folders, globs, videos, camera indices or stream URLs");
  app.add_option("--model", opt.model, "Model file (.y12, from exporter/export.py); default: $YOLO12_MODEL");
  app.add_option("--device", opt.device, "cpu, cuda, cuda:N or auto (CUDA when available)")->capture_default_str();
  std::string imgsz_text, classes_text;  // integer lists, split by parse_int_list()
  app.add_option("--imgsz", imgsz_text, "Network input size: N (square) or H W, multiples of 32; default: the model's")
      ->type_name("N|H W");
  app.add_flag("--rect", opt.rect, "Letterbox to the smallest multiple-of-32 rectangle instead of the full size");
  app.add_option("--conf", opt.conf, "Confidence threshold")->capture_default_str();
  app.add_option("--iou", opt.iou, "NMS IoU threshold")->capture_default_str();
  app.add_option("--max-det", opt.max_det, "Most detections kept per image")->capture_default_str();
  app.add_option("--classes", classes_text, "Keep only these class ids (e.g. --classes 0 2 5)")->type_name("ID...");
  app.add_flag("--agnostic-nms", opt.agnostic_nms, "Class-agnostic NMS");
  app.add_flag("--half", opt.half, "FP16 inference (CUDA only; the CPU runs FP32)");
  app.add_option("--batch", opt.batch, "Images per detect() call")->capture_default_str();
  app.add_option("--vid-stride", opt.vid_stride, "Detect every Nth video frame (all frames are still saved)")
      ->capture_default_str();
  app.add_option("--output", opt.output, "Folder for --save and --save-txt (created)")->capture_default_str();
  app.add_flag("--save", opt.save, "Save annotated images and videos into the output folder");
  app.add_flag("--save-txt", opt.save_txt, "Save YOLO labels (class cx cy w h conf) into OUTPUT/labels/");
  app.add_option("--json", opt.json, "Write JSON Lines (one object per image or frame) to PATH; - for stdout");
  app.add_flag("--quiet,-q", opt.quiet, "Print only errors and warnings");
  app.add_flag("--verbose,-v", opt.verbose, "Print more (model, device, video details)");
  app.add_flag("--info", opt.info, "Print the model's summary and exit");
  app.add_flag("--version", show_version, "Print the version and exit");
  app.add_option("--input-tensor", opt.input_tensor, "Parity hook: float32 NCHW (B,3,H,W) .npy to run the network on");
  app.add_option("--dump-raw", opt.dump_raw, "Parity hook: write the raw head output (B,4+nc,A) .npy here");
  app.footer(
      "Exit status: 0 all inputs done, 1 an input failed or the model cannot be used,\n"
      "2 invalid options (nothing done), 130 interrupted (files written so far are complete).\n"
      "Put sources before --imgsz/--classes, or after --, when a source is a bare number (a camera).\n"
      "Examples:\n"
      "  yolo12-infer --model models/yolo11n_coco.y12 bus.jpg --save\n"
      "  yolo12-infer --model m.y12 images/ video.mp4 --json out.jsonl --imgsz 320\n"
      "See docs/cli.md.");

  const std::vector<std::string> folded = fold_integer_lists(argc, argv);
  std::vector<const char*> folded_argv;
  for (const std::string& a : folded) folded_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(folded_argv.size()), folded_argv.data());
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

  // ---- check everything before any work.
  yolo12::DetectorOptions detector_options;
  std::string model = opt.model;
  try {
    opt.imgsz = parse_int_list("--imgsz", imgsz_text);
    opt.classes = parse_int_list("--classes", classes_text);
    detector_options = check_options(opt);
    if (model.empty()) {
      const char* env = std::getenv("YOLO12_MODEL");
      if (env && *env) model = env;
    }
    if (model.empty()) throw UsageError("no model: pass --model FILE or set YOLO12_MODEL");
    if (!opt.info && opt.input_tensor.empty() && opt.sources.empty())
      throw UsageError("no sources: give image or video files, folders, camera indices or stream URLs");
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n(run yolo12-infer --help for the options)\n";
    return kExitUsage;
  }

  if (opt.info) {
    std::cout << yolo12::read_model_info(model).summary();
    std::cout.flush();
    return kExitOk;
  }
  if (!opt.input_tensor.empty()) return run_raw(model, detector_options, opt);

  // ---- model, outputs, then the sources in order.
  Console console(opt.quiet, opt.verbose, opt.json == "-");
  std::unique_ptr<yolo12::Detector> detector;
  try {
    detector = std::make_unique<yolo12::Detector>(model, detector_options);
  } catch (const yolo12::OptionError& e) {  // e.g. --classes 99 on an 80-class model, or no GPU
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  const yolo12::ModelInfo& info = detector->info();
  std::unique_ptr<JsonLines> json;
  try {
    if (opt.save || opt.save_txt) make_folder(opt.output);
    if (opt.save_txt) make_folder(opt.output + "/labels");
    if (!opt.json.empty()) json = std::make_unique<JsonLines>(opt.json);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const yolo12::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  console.verbose("model " + model + ": " + info.family + (info.scale.empty() ? "" : " " + info.scale) + ", " +
                  std::to_string(info.num_classes) + " classes, on " + detector->device_name());
  if (opt.half && detector->device_name() == "cpu")
    console.warning("--half has no effect on the CPU backend; running FP32");

  // OpenCV's own warnings (backend probing, codec fallbacks) only with --verbose; our messages say
  // what failed.
  if (!opt.verbose) cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_ERROR);
  install_stop_handlers();
  RunContext ctx{*detector, opt, console, json.get(), {}, {}};
  const std::vector<Input> inputs = expand_sources(opt.sources);
  for (std::size_t i = 0; i < inputs.size() && !stop_requested();) {
    const Input& input = inputs[i];
    if (input.kind == InputKind::Invalid) {
      ctx.fail_input(input.name, input.error);
      ++i;
    } else if (input.kind == InputKind::Image) {
      std::size_t end = i;  // a run of consecutive images goes through the batcher together
      while (end < inputs.size() && inputs[end].kind == InputKind::Image) ++end;
      run_images(ctx, inputs, i, end);
      i = end;
    } else {
      run_video(ctx, input, i + 1, inputs.size());
      ++i;
    }
  }

  // ---- closing lines and the exit status.
  const Totals& t = ctx.totals;
  if (t.results > 0) {
    const double n = static_cast<double>(t.results);
    console.info("Speed: " + format_ms(t.preprocess_ms / n) + "ms preprocess, " + format_ms(t.inference_ms / n) +
                 "ms inference, " + format_ms(t.postprocess_ms / n) + "ms postprocess per image on " +
                 detector->device_name());
  }
  if (opt.save || opt.save_txt) console.info("Results saved to " + opt.output);
  if (t.failed_inputs > 0) console.info(std::to_string(t.failed_inputs) + " of " + std::to_string(inputs.size()) +
                                        " inputs failed (see the errors above)");
  if (stop_requested()) return kExitInterrupted;
  return t.failed_inputs > 0 ? kExitFailed : kExitOk;
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
