// pipeline/devices.cpp - parse_devices and DetectorPool (yolo12/devices.hpp).
#include "yolo12/devices.hpp"

#include <cctype>
#include <utility>

namespace yolo12 {

namespace {

constexpr std::size_t kMaxDevices = 64;

// A CUDA ordinal of at most 4 digits, or -1.
int parse_ordinal(const std::string& s) {
  if (s.empty() || s.size() > 4) return -1;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

}  // namespace

std::string DeviceSpec::name() const {
  switch (device) {
    case Device::Auto: return "auto";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda:" + std::to_string(index);
  }
  return "?";
}

std::vector<DeviceSpec> parse_devices(const std::string& text) {
  const std::string all = trim(text);
  const auto bad = [&](const std::string& entry, const std::string& why) {
    throw OptionError("invalid option: device '" + (entry.size() > 40 ? entry.substr(0, 40) + "..." : entry) + "' " +
                      why + " (use auto, cpu, cuda, cuda:N, or a list such as cuda:0,1 or 0,1)");
  };
  if (all.empty()) return {DeviceSpec{}};
  std::vector<DeviceSpec> out;
  std::size_t start = 0;
  while (start <= all.size()) {
    const std::size_t comma = all.find(',', start);
    const std::string entry = trim(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? all.size() + 1 : comma + 1;
    if (out.size() == kMaxDevices) bad(all, "lists more than " + std::to_string(kMaxDevices) + " devices");
    std::string lower;
    for (char c : entry) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    DeviceSpec d;
    if (lower == "auto") d.device = Device::Auto;
    else if (lower == "cpu") d.device = Device::Cpu;
    else if (lower == "cuda" || lower == "gpu") d.device = Device::Cuda;
    else {
      std::string num = lower;
      if (lower.rfind("cuda:", 0) == 0) num = lower.substr(5);
      const int ordinal = parse_ordinal(num);
      if (ordinal < 0) bad(entry, entry.empty() ? "is empty" : "is not a device");
      d.device = Device::Cuda;
      d.index = ordinal;
    }
    if (d.device == Device::Auto && all.find(',') != std::string::npos) bad(entry, "cannot be part of a list");
    out.push_back(d);
  }
  return out;
}

DetectorPool::DetectorPool(const std::string& model_path, const DetectorOptions& options,
                           const std::vector<DeviceSpec>& devices)
    : devices_(devices) {
  if (devices_.empty()) throw OptionError("invalid option: the device list is empty");
  if (devices_.size() > kMaxDevices)
    throw OptionError("invalid option: more than " + std::to_string(kMaxDevices) + " devices");
  detectors_.reserve(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const DeviceSpec& d = devices_[i];
    if (d.device == Device::Auto && devices_.size() > 1)
      throw OptionError("invalid option: device auto cannot be part of a device list");
    // An earlier entry on the same device: share its weights.
    std::size_t same = i;
    for (std::size_t j = 0; j < i; ++j)
      if (devices_[j].device == d.device && devices_[j].index == d.index) {
        same = j;
        break;
      }
    if (i == 0) {
      DetectorOptions o = options;
      o.device = d.device;
      o.device_index = d.index;
      detectors_.emplace_back(model_path, o);
    } else if (same < i) {
      detectors_.push_back(detectors_[same].clone());
    } else {
      detectors_.push_back(detectors_[0].clone(d.device, d.index));
    }
    // What an `auto` entry became.
    devices_[i].device = detectors_[i].options().device;
    devices_[i].index = detectors_[i].options().device == Device::Cuda ? detectors_[i].options().device_index : 0;
  }
}

}  // namespace yolo12
