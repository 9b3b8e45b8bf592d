// cli/tracker_stub.cpp - STAND-IN tracker for --track until include/yolo12/tracker.hpp lands (see
// tracker_stub.hpp). Greedy matching by IoU within a class, highest IoU first; unmatched
// detections above new_track_thresh start tracks; a track unseen for track_buffer frames is dropped.
#include "tracker_stub.hpp"

#include <algorithm>
#include <tuple>

namespace yolo12 {
namespace {

float iou(const Box& a, const Box& b) {
  const float w = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float h = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float inter = w * h;
  const float uni = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

}  // namespace

ByteTracker::ByteTracker(const TrackerOptions& options) : options_(options) {}

std::vector<Track> ByteTracker::update(const std::vector<Detection>& detections) {
  std::vector<std::tuple<float, std::size_t, std::size_t>> pairs;  // (iou, live, detection)
  for (std::size_t t = 0; t < live_.size(); ++t)
    for (std::size_t d = 0; d < detections.size(); ++d)
      if (detections[d].class_id == live_[t].track.class_id && detections[d].score >= options_.track_low_thresh) {
        const float v = iou(live_[t].track.box, detections[d].box);
        if (v >= 1.0f - options_.match_thresh) pairs.emplace_back(v, t, d);
      }
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  std::vector<bool> track_used(live_.size()), detection_used(detections.size());
  std::vector<Track> out;
  for (const auto& [v, t, d] : pairs) {
    if (track_used[t] || detection_used[d]) continue;
    track_used[t] = detection_used[d] = true;
    Live& l = live_[t];
    l.track.box = detections[d].box;
    l.track.score = detections[d].score;
    l.missed = 0;
    out.push_back(l.track);
  }
  for (std::size_t t = 0; t < live_.size(); ++t)
    if (!track_used[t]) ++live_[t].missed;
  live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const Live& l) { return l.missed > options_.track_buffer; }),
              live_.end());
  for (std::size_t d = 0; d < detections.size(); ++d) {
    if (detection_used[d] || detections[d].score < options_.new_track_thresh) continue;
    Live l;
    l.track.id = next_id_++;
    l.track.box = detections[d].box;
    l.track.score = detections[d].score;
    l.track.class_id = detections[d].class_id;
    live_.push_back(l);
    out.push_back(l.track);
  }
  return out;
}

}  // namespace yolo12
