// yolo12/tracker.hpp - multi-object tracking across video frames: ByteTrack as Ultralytics runs it.
//
//   #include <yolo12/tracker.hpp>
//
//   yolo12::DetectorOptions dopt;
//   dopt.conf = 0.1f;                          // as Ultralytics' track mode: the tracker needs the
//   yolo12::Detector det("yolo12n.y12", dopt);  // low-score boxes for its second association
//   yolo12::ByteTracker tracker;               // Ultralytics' bytetrack.yaml defaults
//   for (each frame) {
//     for (const yolo12::Track& t : tracker.update(det.detect(frame).detections))
//       printf("#%d class %d %.2f [%.0f %.0f %.0f %.0f]\n", t.id, t.class_id, t.score,
//              t.box.x1, t.box.y1, t.box.x2, t.box.y2);
//   }
//   tracker.reset();                           // before the next, unrelated video
//
// Threads: a ByteTracker holds the state of one video; use one per stream, from one thread at a time.
// Errors: the constructor throws OptionError for impossible options. update() does not throw on odd
// detections: boxes or scores that are NaN or infinite and boxes without area are ignored, and the
// work and memory of one call are bounded by max_detections and max_tracks (docs/tracking.md).
#pragma once

#include <memory>
#include <vector>

#include "yolo12/errors.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12 {

// The tracker's settings. The first six are Ultralytics' ultralytics/cfg/trackers/bytetrack.yaml, with
// its defaults; thresholds are doubles as the yaml's Python floats are (scores are compared as floats,
// as NumPy compares float32 scores with a Python float).
struct TrackerOptions {
  double track_high_thresh = 0.25;  // first association: detections with score >= this
  double track_low_thresh = 0.1;    // second association: detections with low < score < high
  double new_track_thresh = 0.25;   // an unmatched first-association detection starts a track at >= this
  int track_buffer = 30;            // frames a lost track waits to be found again (see frame_rate)
  double match_thresh = 0.8;        // first association: largest cost 1 - IoU (x score) that may match
  bool fuse_score = true;           // first association: cost 1 - IoU * detection score
  // ByteTrack keeps a lost track for int(frame_rate / 30 * track_buffer) frames. Ultralytics always
  // runs at 30 (its track mode passes 30 whatever the video; 8.4 uses track_buffer directly), so
  // leave it at 30 for the same IDs as Ultralytics.
  int frame_rate = 30;
  // Bounds on odd input (not in Ultralytics, which has none; real video stays far below them):
  int max_detections = 1000;  // per update(): the highest-scoring valid detections beyond this are dropped
  int max_tracks = 2000;      // tracked + lost tracks kept; beyond it the longest-lost tracks are dropped
};

struct Track {
  int id = 0;        // 1, 2, 3, ... in order of creation; restarts at 1 after reset()
  Box box;           // the Kalman filter's box after this frame's update (Ultralytics reports the same)
  float score = 0;   // the score of this frame's detection
  int class_id = 0;  // the class of this frame's detection
  int detection_index = -1;  // which element of the update() argument this track was matched to
};

class YOLO12_API ByteTracker {
 public:
  // Throws OptionError naming the first impossible option.
  explicit ByteTracker(const TrackerOptions& options = {});
  ~ByteTracker();
  ByteTracker(ByteTracker&&) noexcept;
  ByteTracker& operator=(ByteTracker&&) noexcept;
  ByteTracker(const ByteTracker&) = delete;
  ByteTracker& operator=(const ByteTracker&) = delete;

  // One video frame's detections (boxes in image pixels, any order). Returns the confirmed tracks
  // matched in this frame, each with the index of its detection: a track appears from its second
  // consecutive detection on (from its first in the first frame after construction or reset()).
  std::vector<Track> update(const std::vector<Detection>& detections);

  // Forget every track and restart the frame count and the IDs at 1.
  void reset();

  const TrackerOptions& options() const;
  // Frames seen since construction or reset().
  long long frame_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo12
