// yolo12/devices.hpp - device lists and a pool of Detectors over several devices.
//
//   auto devices = yolo12::parse_devices("cuda:0,1");        // or "0,1", "cpu", "cuda", "auto"
//   yolo12::DetectorPool pool("yolo12n.y12", options, devices);
//   // one worker thread per pool entry; worker i calls pool[i].detect(...)
//
// The pool is deliberately not a scheduler: it owns one Detector per entry, on that entry's device,
// and says which device each one is on. How work is spread is the caller's choice (the CLI sends
// batches round-robin and each video to one entry). Entries on the same device share its weights
// (Detector::clone); each entry has its own buffers, stream and graphs, so entries may run at the
// same time on different threads. One entry must not be used by two threads at once.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "yolo12/export.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12 {

struct YOLO12_API DeviceSpec {
  Device device = Device::Auto;
  int index = 0;  // CUDA ordinal (0 for cpu and auto)
  // "auto", "cpu" or "cuda:N"
  std::string name() const;
};

// Parses a device list: comma-separated entries, each `auto`, `cpu`, `cuda` (= cuda:0), `cuda:N`, or
// a bare ordinal `N` (the Ultralytics spelling, `0,1`), with `cuda:0,1` meaning cuda:0 and cuda:1. At
// most 64 entries; an entry may repeat (two workers on one GPU). Throws OptionError naming the bad
// entry. Whether a device exists is checked when a Detector is made on it.
YOLO12_API std::vector<DeviceSpec> parse_devices(const std::string& text);

class YOLO12_API DetectorPool {
 public:
  // One Detector per entry of `devices`, with `options` (whose device fields are replaced by each
  // entry's). The model file is read once. Throws as the Detector constructor does; a device that
  // is not there is an OptionError naming it.
  DetectorPool(const std::string& model_path, const DetectorOptions& options, const std::vector<DeviceSpec>& devices);

  std::size_t size() const { return detectors_.size(); }
  Detector& operator[](std::size_t i) { return detectors_.at(i); }
  const Detector& operator[](std::size_t i) const { return detectors_.at(i); }
  const DeviceSpec& device(std::size_t i) const { return devices_.at(i); }

 private:
  std::vector<DeviceSpec> devices_;
  std::vector<Detector> detectors_;
};

}  // namespace yolo12
