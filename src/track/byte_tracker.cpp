// track/byte_tracker.cpp - ByteTrack (Zhang et al., 2022) as Ultralytics' BYTETracker runs it, step
// for step, so that the same detections give the same IDs (docs/tracking.md lists the differences).
//
// One update():
//   1. detections: valid boxes with score >= high go to the first association, low < score < high to
//      the second (at most max_detections of them, highest scores first);
//   2. the pool = confirmed tracked tracks + lost tracks; each is moved one frame by its Kalman filter
//      (a lost track's height velocity is zeroed first);
//   3. first association: pool x high detections, cost 1 - IoU (x score with fuse_score), limit
//      match_thresh; a matched lost track is found again;
//   4. second association: the pool's still-unmatched *tracked* tracks x low detections, cost 1 - IoU,
//      limit 0.5; tracked tracks still unmatched become lost;
//   5. unconfirmed tracks (started last frame) x the high detections left, as in 3 with limit 0.7;
//      an unconfirmed track left unmatched is removed;
//   6. high detections still left with score >= new_track_thresh start tracks (unconfirmed, except in
//      the first frame);
//   7. lost tracks unseen for more than the buffer are removed; then the lists are merged as
//      Ultralytics' merge_track_pools does (including its one-frame lag in dropping removed tracks
//      and its memory of the last 1000 removed IDs), and near-duplicate tracked/lost pairs (IoU > 0.85)
//      lose the younger one.
// Box arithmetic is float32 where Ultralytics' is (detections, IoU, fused costs) and double where its
// is (the Kalman state).
#include "yolo12/tracker.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "track/assignment.hpp"
#include "track/kalman_xyah.hpp"

namespace yolo12 {

namespace {

using track::KalmanState;
using track::Xyah;

constexpr double kSecondMatchLimit = 0.5;       // second association (low-score detections)
constexpr double kUnconfirmedMatchLimit = 0.7;  // unconfirmed tracks
constexpr float kDuplicateCost = 0.15f;         // tracked/lost pairs closer than this are duplicates
constexpr std::size_t kRemovedMemory = 1000;    // removed IDs remembered (Ultralytics' removed_stracks)

struct BoxF {
  float x1, y1, x2, y2;
};

// A detection of this frame as the tracker sees it: top-left, width, height in float32.
struct Candidate {
  float tlwh[4];
  float score;
  int class_id;
  int index;  // into update()'s argument
};

enum class State { Tracked, Lost, Removed };

struct STrack {
  int id = 0;
  KalmanState kf;
  State state = State::Tracked;
  bool activated = false;  // confirmed: matched in two consecutive frames (or born in frame 1)
  float score = 0;
  int class_id = 0;
  int index = -1;             // detection matched in the last update
  long long frame_id = 0;     // last frame with a detection
  long long start_frame = 0;  // frame it was started in
};
using TrackPtr = std::shared_ptr<STrack>;
using TrackList = std::vector<TrackPtr>;

// Ultralytics: Boxes.xywh in float32, then xywh2ltwh on the float64 copy, stored as float32.
bool make_candidate(const Detection& d, int index, Candidate& c) {
  const Box& b = d.box;
  if (!std::isfinite(b.x1) || !std::isfinite(b.y1) || !std::isfinite(b.x2) || !std::isfinite(b.y2) ||
      !std::isfinite(d.score))
    return false;
  const float cx = (b.x1 + b.x2) / 2, cy = (b.y1 + b.y2) / 2;
  const float w = b.x2 - b.x1, h = b.y2 - b.y1;
  if (!(w > 0) || !(h > 0) || !std::isfinite(w) || !std::isfinite(h) || !std::isfinite(cx) ||
      !std::isfinite(cy))
    return false;
  c.tlwh[0] = static_cast<float>(static_cast<double>(cx) - static_cast<double>(w) / 2);
  c.tlwh[1] = static_cast<float>(static_cast<double>(cy) - static_cast<double>(h) / 2);
  c.tlwh[2] = w;
  c.tlwh[3] = h;
  c.score = d.score;
  c.class_id = d.class_id;
  c.index = index;
  return true;
}

// tlwh_to_xyah in float32.
Xyah xyah_of(const Candidate& c) {
  const float x = c.tlwh[0] + c.tlwh[2] / 2, y = c.tlwh[1] + c.tlwh[3] / 2;
  const float a = c.tlwh[2] / c.tlwh[3];
  return {x, y, a, c.tlwh[3]};
}

BoxF box_of(const Candidate& c) {
  return {c.tlwh[0], c.tlwh[1], c.tlwh[0] + c.tlwh[2], c.tlwh[1] + c.tlwh[3]};
}

// The Kalman mean as x1 y1 x2 y2, computed in double, then float32.
BoxF box_of(const STrack& t) {
  const auto& m = t.kf.mean;
  const double w = m[2] * m[3], h = m[3];
  const double x1 = m[0] - w / 2, y1 = m[1] - h / 2;
  return {static_cast<float>(x1), static_cast<float>(y1), static_cast<float>(x1 + w),
          static_cast<float>(y1 + h)};
}

// Ultralytics' bbox_ioa(iou=True) in float32: inter / (area_b + area_a - inter + 1e-7).
float iou(const BoxF& a, const BoxF& b) {
  const float iw = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1), 0.f);
  const float ih = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1), 0.f);
  const float inter = iw * ih;
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
  const float area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  return inter / (area_b + area_a - inter + 1e-7f);
}

// (tracks, boxes) row-major: 1 - IoU, or with scores 1 - IoU * score (matching.fuse_score), float32.
std::vector<float> iou_cost(const TrackList& tracks, const std::vector<BoxF>& boxes,
                            const std::vector<float>* scores) {
  std::vector<float> cost(tracks.size() * boxes.size());
  for (std::size_t r = 0; r < tracks.size(); ++r) {
    const BoxF tb = box_of(*tracks[r]);
    for (std::size_t k = 0; k < boxes.size(); ++k) {
      float c = 1.f - iou(tb, boxes[k]);
      if (scores) c = 1.f - (1.f - c) * (*scores)[k];
      cost[r * boxes.size() + k] = c;
    }
  }
  return cost;
}

std::vector<BoxF> boxes_of(const std::vector<Candidate>& cands) {
  std::vector<BoxF> out;
  out.reserve(cands.size());
  for (const Candidate& c : cands) out.push_back(box_of(c));
  return out;
}

std::vector<BoxF> boxes_of(const TrackList& tracks) {
  std::vector<BoxF> out;
  out.reserve(tracks.size());
  for (const auto& t : tracks) out.push_back(box_of(*t));
  return out;
}

std::vector<float> scores_of(const std::vector<Candidate>& cands) {
  std::vector<float> out;
  out.reserve(cands.size());
  for (const Candidate& c : cands) out.push_back(c.score);
  return out;
}

// The tracks of a whose ID is not in ids (Ultralytics' sub_stracks).
TrackList without_ids(const TrackList& a, const std::unordered_set<int>& ids) {
  TrackList out;
  for (const auto& t : a)
    if (!ids.count(t->id)) out.push_back(t);
  return out;
}

std::unordered_set<int> ids_of(const TrackList& tracks) {
  std::unordered_set<int> ids;
  for (const auto& t : tracks) ids.insert(t->id);
  return ids;
}

// a + the tracks of b whose ID is not in a (Ultralytics' joint_stracks).
TrackList joint(const TrackList& a, const TrackList& b) {
  const std::unordered_set<int> ids = ids_of(a);
  TrackList out = a;
  for (const auto& t : b)
    if (!ids.count(t->id)) out.push_back(t);
  return out;
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void require(bool ok, const std::string& what) {
  if (!ok) throw OptionError("TrackerOptions: " + what);
}

void validate(const TrackerOptions& o) {
  auto unit = [](double v) { return std::isfinite(v) && v >= 0 && v <= 1; };
  require(unit(o.track_high_thresh), "track_high_thresh must be in [0, 1], got " + num(o.track_high_thresh));
  require(unit(o.track_low_thresh), "track_low_thresh must be in [0, 1], got " + num(o.track_low_thresh));
  require(o.track_low_thresh <= o.track_high_thresh,
          "track_low_thresh (" + num(o.track_low_thresh) + ") must not exceed track_high_thresh (" +
              num(o.track_high_thresh) + ")");
  require(unit(o.new_track_thresh), "new_track_thresh must be in [0, 1], got " + num(o.new_track_thresh));
  require(unit(o.match_thresh), "match_thresh must be in [0, 1], got " + num(o.match_thresh));
  require(o.track_buffer >= 0, "track_buffer must be >= 0, got " + std::to_string(o.track_buffer));
  require(o.frame_rate >= 1, "frame_rate must be >= 1, got " + std::to_string(o.frame_rate));
  require(o.max_detections >= 1, "max_detections must be >= 1, got " + std::to_string(o.max_detections));
  require(o.max_tracks >= o.max_detections, "max_tracks (" + std::to_string(o.max_tracks) +
                                                ") must be >= max_detections (" + std::to_string(o.max_detections) + ")");
}

}  // namespace

struct ByteTracker::Impl {
  TrackerOptions opt;
  long long max_frames_lost = 0;
  long long frame_id = 0;
  int last_id = 0;
  TrackList tracked;            // tracked_stracks: state Tracked, confirmed or not
  TrackList lost;               // lost_stracks
  std::deque<int> removed_ids;  // IDs of the last kRemovedMemory removals (with repeats)

  explicit Impl(const TrackerOptions& o) : opt(o) {
    validate(o);
    max_frames_lost = static_cast<long long>(o.frame_rate / 30.0 * o.track_buffer);
  }

  int next_id() {
    last_id = last_id == INT_MAX ? 1 : last_id + 1;
    return last_id;
  }

  // Detections split into the first (high) and second (low) association, in input order.
  void split(const std::vector<Detection>& dets, std::vector<Candidate>& high, std::vector<Candidate>& low) const {
    const float hi = static_cast<float>(opt.track_high_thresh), lo = static_cast<float>(opt.track_low_thresh);
    std::vector<Candidate> kept;
    for (std::size_t i = 0; i < dets.size() && i <= static_cast<std::size_t>(INT_MAX); ++i) {
      Candidate c;
      if (make_candidate(dets[i], static_cast<int>(i), c) && (c.score >= hi || c.score > lo)) kept.push_back(c);
    }
    if (kept.size() > static_cast<std::size_t>(opt.max_detections)) {
      std::stable_sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
      kept.resize(opt.max_detections);
      std::sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
    }
    for (const Candidate& c : kept) (c.score >= hi ? high : low).push_back(c);
  }

  void update_track(STrack& t, const Candidate& c) {
    const Xyah z = xyah_of(c);
    if (!track::kalman_update(t.kf, z)) t.kf = track::kalman_initiate(z);
    t.state = State::Tracked;
    t.activated = true;
    t.frame_id = frame_id;
    t.score = c.score;
    t.class_id = c.class_id;
    t.index = c.index;
  }

  // Applies one association's matches: a tracked track is updated, a lost one found again.
  void apply(const track::Assignment& a, const TrackList& tracks, const std::vector<Candidate>& cands,
             TrackList& activated, TrackList& refind) {
    for (const auto& [r, k] : a.matches) {
      const TrackPtr& t = tracks[r];
      const bool was_tracked = t->state == State::Tracked;
      update_track(*t, cands[k]);
      (was_tracked ? activated : refind).push_back(t);
    }
  }

  std::vector<float> first_cost(const TrackList& tracks, const std::vector<Candidate>& cands) const {
    const std::vector<float> scores = scores_of(cands);
    return iou_cost(tracks, boxes_of(cands), opt.fuse_score ? &scores : nullptr);
  }

  std::vector<Track> update(const std::vector<Detection>& dets) {
    ++frame_id;
    std::vector<Candidate> high, low;
    split(dets, high, low);
    TrackList activated, refind, lost_now, removed_now;

    TrackList unconfirmed, confirmed;
    for (const auto& t : tracked) (t->activated ? confirmed : unconfirmed).push_back(t);
    const TrackList pool = joint(confirmed, lost);
    for (const auto& t : pool) {
      if (t->state != State::Tracked) t->kf.mean[7] = 0;
      track::kalman_predict(t->kf);
    }

    // First association: the pool against the high-score detections.
    const int nh = static_cast<int>(high.size());
    const track::Assignment first =
        track::linear_assignment(first_cost(pool, high), static_cast<int>(pool.size()), nh, opt.match_thresh);
    apply(first, pool, high, activated, refind);

    // Second association: tracked tracks still unmatched against the low-score detections.
    TrackList remaining;
    for (int r : first.unmatched_rows)
      if (pool[r]->state == State::Tracked) remaining.push_back(pool[r]);
    std::vector<int> still_unmatched(remaining.size());
    std::iota(still_unmatched.begin(), still_unmatched.end(), 0);
    if (!remaining.empty() && !low.empty()) {
      const track::Assignment second =
          track::linear_assignment(iou_cost(remaining, boxes_of(low), nullptr), static_cast<int>(remaining.size()),
                                   static_cast<int>(low.size()), kSecondMatchLimit);
      apply(second, remaining, low, activated, refind);
      still_unmatched = second.unmatched_rows;
    }
    for (int r : still_unmatched) {
      remaining[r]->state = State::Lost;
      lost_now.push_back(remaining[r]);
    }

    // Unconfirmed tracks against the high-score detections left over.
    std::vector<Candidate> left;
    for (int k : first.unmatched_cols) left.push_back(high[k]);
    std::vector<int> new_tracks(left.size());
    std::iota(new_tracks.begin(), new_tracks.end(), 0);
    if (!unconfirmed.empty()) {
      const track::Assignment third =
          track::linear_assignment(first_cost(unconfirmed, left), static_cast<int>(unconfirmed.size()),
                                   static_cast<int>(left.size()), kUnconfirmedMatchLimit);
      for (const auto& [r, k] : third.matches) {
        update_track(*unconfirmed[r], left[k]);
        activated.push_back(unconfirmed[r]);
      }
      for (int r : third.unmatched_rows) {
        unconfirmed[r]->state = State::Removed;
        removed_now.push_back(unconfirmed[r]);
      }
      new_tracks = third.unmatched_cols;
    }

    // New tracks.
    const float new_thresh = static_cast<float>(opt.new_track_thresh);
    for (int k : new_tracks) {
      const Candidate& c = left[k];
      if (c.score < new_thresh) continue;
      auto t = std::make_shared<STrack>();
      t->id = next_id();
      t->kf = track::kalman_initiate(xyah_of(c));
      t->activated = frame_id == 1;
      t->frame_id = t->start_frame = frame_id;
      t->score = c.score;
      t->class_id = c.class_id;
      t->index = c.index;
      activated.push_back(t);
    }

    // Lost tracks past the buffer.
    for (const auto& t : lost)
      if (frame_id - t->frame_id > max_frames_lost) {
        t->state = State::Removed;
        removed_now.push_back(t);
      }

    merge(activated, refind, lost_now, removed_now);

    std::vector<Track> out;
    for (const auto& t : tracked) {
      if (!t->activated) continue;
      const BoxF b = box_of(*t);
      Track r;
      r.id = t->id;
      r.box = {b.x1, b.y1, b.x2, b.y2};
      r.score = t->score;
      r.class_id = t->class_id;
      r.detection_index = t->index;
      out.push_back(r);
    }
    return out;
  }

  // Ultralytics' merge_track_pools, then the max_tracks bound.
  void merge(const TrackList& activated, const TrackList& refind, const TrackList& lost_now,
             const TrackList& removed_now) {
    TrackList still;
    for (const auto& t : tracked)
      if (t->state == State::Tracked) still.push_back(t);
    tracked = joint(joint(still, activated), refind);
    lost = without_ids(lost, ids_of(tracked));
    lost.insert(lost.end(), lost_now.begin(), lost_now.end());
    lost = without_ids(lost, std::unordered_set<int>(removed_ids.begin(), removed_ids.end()));  // earlier frames' removals only
    remove_duplicates();
    for (const auto& t : removed_now) removed_ids.push_back(t->id);
    while (removed_ids.size() > kRemovedMemory) removed_ids.pop_front();

    const std::size_t cap = static_cast<std::size_t>(opt.max_tracks);
    if (tracked.size() + lost.size() > cap) {
      std::vector<std::size_t> order(lost.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return lost[a]->frame_id > lost[b]->frame_id; });
      order.resize(cap > tracked.size() ? cap - tracked.size() : 0);  // the most recently seen lost tracks
      std::sort(order.begin(), order.end());
      TrackList kept;
      for (std::size_t i : order) kept.push_back(lost[i]);
      lost = kept;
    }
  }

  // Tracked/lost pairs with IoU > 0.85: the one tracked for fewer frames goes (ties: the tracked one).
  void remove_duplicates() {
    if (tracked.empty() || lost.empty()) return;
    const std::vector<float> cost = iou_cost(tracked, boxes_of(lost), nullptr);
    std::vector<char> drop_tracked(tracked.size(), 0), drop_lost(lost.size(), 0);
    for (std::size_t p = 0; p < tracked.size(); ++p)
      for (std::size_t q = 0; q < lost.size(); ++q) {
        if (!(cost[p * lost.size() + q] < kDuplicateCost)) continue;
        const long long age_p = tracked[p]->frame_id - tracked[p]->start_frame;
        const long long age_q = lost[q]->frame_id - lost[q]->start_frame;
        (age_p > age_q ? drop_lost[q] : drop_tracked[p]) = 1;
      }
    auto keep = [](const TrackList& list, const std::vector<char>& drop) {
      TrackList out;
      for (std::size_t i = 0; i < list.size(); ++i)
        if (!drop[i]) out.push_back(list[i]);
      return out;
    };
    tracked = keep(tracked, drop_tracked);
    lost = keep(lost, drop_lost);
  }

  void reset() {
    frame_id = 0;
    last_id = 0;
    tracked.clear();
    lost.clear();
    removed_ids.clear();
  }
};

ByteTracker::ByteTracker(const TrackerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
ByteTracker::~ByteTracker() = default;
ByteTracker::ByteTracker(ByteTracker&&) noexcept = default;
ByteTracker& ByteTracker::operator=(ByteTracker&&) noexcept = default;

std::vector<Track> ByteTracker::update(const std::vector<Detection>& detections) {
  return impl_->update(detections);
}

void ByteTracker::reset() { impl_->reset(); }

const TrackerOptions& ByteTracker::options() const { return impl_->opt; }

long long ByteTracker::frame_count() const { return impl_->frame_id; }

}  // namespace yolo12
