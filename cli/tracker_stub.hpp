// cli/tracker_stub.hpp - STAND-IN for include/yolo12/tracker.hpp, which helper "track" is writing
// in the library. This declares the same interface (yolo12::TrackerOptions, yolo12::Track,
// yolo12::ByteTracker) so that --track can be built and tested before that header is on main; it
// is compiled only while include/yolo12/tracker.hpp does not exist (CMakeLists.txt), and is to be
// deleted once it does. Its tracker (tracker_stub.cpp) is a plain greedy IoU matcher, NOT
// ByteTrack: the IDs it gives are only good enough to test the plumbing (JSON, labels, drawings).
#pragma once

#include <vector>

#include "yolo12/yolo12.hpp"

namespace yolo12 {

// Defaults of Ultralytics' bytetrack.yaml.
struct TrackerOptions {
  float track_high_thresh = 0.25f;
  float track_low_thresh = 0.1f;
  float new_track_thresh = 0.25f;
  int track_buffer = 30;
  float match_thresh = 0.8f;
  bool fuse_score = true;
};

struct Track {
  int id = 0;
  Box box;
  float score = 0;
  int class_id = 0;
};

class ByteTracker {
 public:
  explicit ByteTracker(const TrackerOptions& options = {});
  // The tracks confirmed in this frame, for the detections of one frame.
  std::vector<Track> update(const std::vector<Detection>& detections);

 private:
  struct Live {
    Track track;
    int missed = 0;
  };
  TrackerOptions options_;
  std::vector<Live> live_;
  int next_id_ = 1;
};

}  // namespace yolo12
