// cli/settings.cpp - see settings.hpp.
#include "settings.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "args.hpp"

namespace yolo12_cli {
namespace {

constexpr std::size_t kMaxSettingsBytes = 1 << 20;  // a settings file is a few lines
constexpr int kMaxSettingsDepth = 64;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The "model" entry of the settings file, "" when the file or the entry does not exist.
std::string default_from_settings(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";  // no settings file: no default
  const auto corrupt = [&](const std::string& why) {
    return UsageError(file + ": corrupt settings file (" + why + "); fix or delete it, or pass --model");
  };
  std::string text;
  text.resize(kMaxSettingsBytes + 1);
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxSettingsBytes) throw corrupt("larger than 1 MiB");
  nlohmann::json settings;
  try {
    // Bounded nesting: the callback sees every value with its depth.
    settings = nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxSettingsDepth) throw std::runtime_error("nested too deeply");
      return true;
    });
  } catch (const std::exception& e) {
    throw corrupt(std::string("not JSON: ") + e.what());
  }
  if (!settings.is_object()) throw corrupt("not a JSON object");
  const auto it = settings.find("model");
  if (it == settings.end() || it->is_null()) return "";
  if (!it->is_string() || it->get<std::string>().empty()) throw corrupt("\"model\" is not a file name");
  return it->get<std::string>();
}

}  // namespace

std::string config_dir() {
  if (!env("YOLO12_CONFIG_DIR").empty()) return env("YOLO12_CONFIG_DIR");
  if (!env("XDG_CONFIG_HOME").empty()) return env("XDG_CONFIG_HOME") + "/yolo12";
  if (!env("HOME").empty()) return env("HOME") + "/.config/yolo12";
  return "";
}

ModelChoice choose_model(const std::string& from_command_line) {
  if (!from_command_line.empty()) return {from_command_line, "--model"};
  if (!env("YOLO12_MODEL").empty()) return {env("YOLO12_MODEL"), "$YOLO12_MODEL"};
  const std::string dir = config_dir();
  if (!dir.empty()) {
    const std::string file = dir + "/settings.json";
    const std::string model = default_from_settings(file);
    if (!model.empty()) return {model, "the default in " + file};
  }
  throw UsageError(
      "no model: pass --model FILE.y12, set YOLO12_MODEL, or export one with exporter/export.py (which "
      "records it as the default)");
}

}  // namespace yolo12_cli
