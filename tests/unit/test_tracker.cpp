// tests/unit/test_tracker.cpp - yolo12::ByteTracker: the behaviour ByteTrack promises on hand-made
// scenes, its assignment solver against brute force, and the IDs and boxes of Ultralytics' own
// BYTETracker on the same detections (tests/data/track_fixture.json, tools/fixtures/make_track_fixture.py).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "track/assignment.hpp"
#include "track/kalman_xyah.hpp"
#include "yolo12/tracker.hpp"

using namespace yolo12;

namespace {

Detection det(float x1, float y1, float x2, float y2, float score = 0.9f, int cls = 0) {
  Detection d;
  d.box = {x1, y1, x2, y2};
  d.score = score;
  d.class_id = cls;
  return d;
}

// A box moving at constant velocity (pixels per frame); frame numbers count from 1.
struct Walker {
  float x, y, w, h, vx, vy;
  Detection at(int frame, float score = 0.9f, int cls = 0) const {
    const float cx = x + vx * frame, cy = y + vy * frame;
    return det(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score, cls);
  }
};

// detection index -> track id
std::map<int, int> ids_by_detection(const std::vector<Track>& tracks) {
  std::map<int, int> m;
  for (const Track& t : tracks) m[t.detection_index] = t.id;
  return m;
}

int id_of(const std::vector<Track>& tracks, int detection_index) {
  for (const Track& t : tracks)
    if (t.detection_index == detection_index) return t.id;
  return 0;
}

// A walker seen in frames 1..20, missing for `gap` frames, then seen again for two frames.
// Returns its ID before the gap and in the second frame after it (0: not output).
std::pair<int, int> ids_around_gap(const TrackerOptions& opt, int gap) {
  ByteTracker tr(opt);
  const Walker w{100, 100, 80, 160, 1.0f, 0.5f};
  int before = 0, after = 0;
  for (int f = 1; f <= 20; ++f) before = id_of(tr.update({w.at(f)}), 0);
  for (int f = 21; f <= 20 + gap; ++f) CHECK(tr.update({}).empty());
  tr.update({w.at(21 + gap)});
  after = id_of(tr.update({w.at(22 + gap)}), 0);
  return {before, after};
}

}  // namespace

// ---- options ---------------------------------------------------------------------------------------

TEST_CASE("tracker: defaults are bytetrack.yaml's; impossible options are OptionErrors naming them", "[tracker]") {
  const TrackerOptions d;
  CHECK(d.track_high_thresh == 0.25);
  CHECK(d.track_low_thresh == 0.1);
  CHECK(d.new_track_thresh == 0.25);
  CHECK(d.track_buffer == 30);
  CHECK(d.match_thresh == 0.8);
  CHECK(d.fuse_score);
  CHECK(d.frame_rate == 30);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::function<void(TrackerOptions&)>, std::string>> bad = {
      {[&](TrackerOptions& o) { o.track_high_thresh = nan; }, "track_high_thresh"},
      {[](TrackerOptions& o) { o.track_high_thresh = 1.5; }, "track_high_thresh"},
      {[](TrackerOptions& o) { o.track_low_thresh = -0.1; }, "track_low_thresh"},
      {[](TrackerOptions& o) { o.track_low_thresh = 0.5; }, "must not exceed track_high_thresh"},
      {[](TrackerOptions& o) { o.new_track_thresh = 2; }, "new_track_thresh"},
      {[&](TrackerOptions& o) { o.match_thresh = nan; }, "match_thresh"},
      {[](TrackerOptions& o) { o.track_buffer = -1; }, "track_buffer"},
      {[](TrackerOptions& o) { o.frame_rate = 0; }, "frame_rate"},
      {[](TrackerOptions& o) { o.max_detections = 0; }, "max_detections"},
      {[](TrackerOptions& o) { o.max_tracks = 10; }, "max_tracks"},
  };
  for (const auto& [set, name] : bad) {
    TrackerOptions o;
    set(o);
    CAPTURE(name);
    try {
      ByteTracker t(o);
      FAIL("no OptionError");
    } catch (const OptionError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find(name) != std::string::npos);
    }
  }
  TrackerOptions edge;  // legal extremes
  edge.track_buffer = 0;
  edge.track_low_thresh = edge.track_high_thresh = 1;
  edge.match_thresh = 0;
  CHECK_NOTHROW(ByteTracker(edge));
}

// ---- behaviour ---------------------------------------------------------------------------------------

TEST_CASE("tracker: IDs are stable across frames whatever the detection order", "[tracker]") {
  ByteTracker tr;
  const std::vector<Walker> ws = {{100, 100, 60, 120, 3, 0}, {400, 120, 60, 120, -3, 0}, {250, 300, 80, 80, 0, -2}};
  std::vector<int> first_ids;  // walker -> ID given in frame 1
  for (int f = 1; f <= 40; ++f) {
    std::vector<Detection> dets;
    for (const Walker& w : ws) dets.push_back(w.at(f));
    if (f % 2) std::reverse(dets.begin(), dets.end());  // the indices follow the order
    const auto out = tr.update(dets);
    REQUIRE(out.size() == 3);  // the first frame's tracks are confirmed at once
    for (int i = 0; i < 3; ++i) {
      const int id = id_of(out, f % 2 ? 2 - i : i);
      CAPTURE(f, i);
      if (f == 1) first_ids.push_back(id);
      CHECK(id == first_ids[i]);
    }
    for (const Track& t : out) {  // the box is the Kalman box: close to its detection
      const Box& b = dets[t.detection_index].box;
      CHECK(std::fabs(t.box.x1 - b.x1) < 2.f);
      CHECK(std::fabs(t.box.y2 - b.y2) < 2.f);
      CHECK(t.score == dets[t.detection_index].score);
    }
  }
  CHECK(std::set<int>(first_ids.begin(), first_ids.end()) == std::set<int>{1, 2, 3});
  CHECK(first_ids[2] == 1);  // new tracks take IDs in detection order: frame 1 was reversed
  CHECK(tr.frame_count() == 40);
}

TEST_CASE("tracker: a new object gets a new ID, shown from its second detection", "[tracker]") {
  ByteTracker tr;
  const Walker a{100, 100, 60, 120, 2, 0}, b{500, 300, 60, 120, -2, 0};
  for (int f = 1; f <= 4; ++f) REQUIRE(ids_by_detection(tr.update({a.at(f)})) == std::map<int, int>{{0, 1}});
  // A one-frame false positive: started (it takes ID 2, as in Ultralytics), never confirmed.
  CHECK(ids_by_detection(tr.update({a.at(5), det(700, 50, 760, 90, 0.6f)})) == std::map<int, int>{{0, 1}});
  CHECK(ids_by_detection(tr.update({a.at(6)})) == std::map<int, int>{{0, 1}});
  // b appears at frame 7: unconfirmed (not output), then ID 3 from frame 8 on.
  CHECK(ids_by_detection(tr.update({b.at(7), a.at(7)})) == std::map<int, int>{{1, 1}});
  for (int f = 8; f <= 12; ++f)
    CHECK(ids_by_detection(tr.update({b.at(f), a.at(f)})) == std::map<int, int>{{0, 3}, {1, 1}});
  // A detection below new_track_thresh (but above track_low_thresh) never starts a track.
  for (int f = 13; f <= 16; ++f) CHECK(tr.update({a.at(f), det(700, 50, 760, 90, 0.2f)}).size() == 1);
}

TEST_CASE("tracker: a lost track is found again within the buffer and removed after it", "[tracker]") {
  TrackerOptions opt;  // buffer 30
  for (int gap : {1, 10, 30, 31}) {
    CAPTURE(gap);
    const auto [before, after] = ids_around_gap(opt, gap);
    CHECK(before == 1);
    CHECK(after == 1);
  }
  // Removed when frame - last_seen > buffer: after 31 missing frames; ByteTrack drops a removed track
  // from its lost list one frame late, so a gap of 31 still finds it, 32 does not.
  for (int gap : {32, 40}) {
    CAPTURE(gap);
    const auto [before, after] = ids_around_gap(opt, gap);
    CHECK(before == 1);
    CHECK(after == 2);
  }
  // A track found in that lingering frame is remembered as removed: lost again, it is dropped at once.
  {
    ByteTracker tr;
    const Walker w{100, 100, 80, 160, 1.0f, 0.5f};
    int f = 1;
    for (; f <= 20; ++f) tr.update({w.at(f)});
    for (; f <= 51; ++f) tr.update({});
    CHECK(id_of(tr.update({w.at(f++)}), 0) == 1);  // 31 missing: found again
    for (int i = 0; i < 5; ++i) tr.update({w.at(f++)});
    for (int i = 0; i < 3; ++i, ++f) tr.update({});
    tr.update({w.at(f++)});
    CHECK(id_of(tr.update({w.at(f++)}), 0) == 2);  // 3 missing, but a new ID
  }
  opt.track_buffer = 10;
  CHECK(ids_around_gap(opt, 11).second == 1);
  CHECK(ids_around_gap(opt, 12).second == 2);
  opt.track_buffer = 30;
  opt.frame_rate = 15;  // int(15 / 30 * 30) = 15 frames
  CHECK(ids_around_gap(opt, 16).second == 1);
  CHECK(ids_around_gap(opt, 17).second == 2);
}

TEST_CASE("tracker: low-score detections keep a track through the second association", "[tracker]") {
  const Walker w{100, 100, 60, 120, 2, 1};
  auto run = [&](const TrackerOptions& opt) {
    ByteTracker tr(opt);
    std::vector<int> ids;
    for (int f = 1; f <= 30; ++f) {
      const float score = f >= 11 && f <= 16 ? 0.15f : 0.9f;
      const auto out = tr.update({w.at(f, score)});
      ids.push_back(out.empty() ? 0 : out[0].id);
      if (!out.empty()) CHECK(out[0].score == score);
    }
    return ids;
  };
  const std::vector<int> kept = run(TrackerOptions{});
  CHECK(std::count(kept.begin(), kept.end(), 1) == 30);  // output in every frame, one ID

  TrackerOptions no_second;  // 0.15 is now below track_low_thresh: no second association
  no_second.track_low_thresh = 0.2;
  const std::vector<int> lost = run(no_second);
  CHECK(std::count(lost.begin() + 10, lost.begin() + 16, 0) == 6);  // lost during the dip
  CHECK(std::count(lost.begin() + 16, lost.end(), 1) == 14);        // found again after it, same ID

  // The second association matches on plain IoU >= 0.5 only.
  ByteTracker tr;
  tr.update({det(100, 100, 200, 300)});
  tr.update({det(100, 100, 200, 300)});
  CHECK(tr.update({det(100, 230, 200, 430, 0.2f)}).empty());  // IoU 0.21 with the track: no match
}

TEST_CASE("tracker: fuse_score weighs IoU by the detection score in the first association", "[tracker]") {
  // A track, then a detection with IoU ~0.33 to it and score 0.5: fused cost 1 - 0.33 * 0.5 = 0.83 > 0.8
  // (no match: the track is lost and a new one starts), plain cost 0.67 <= 0.8 (match).
  auto second_id = [](bool fuse) {
    TrackerOptions o;
    o.fuse_score = fuse;
    ByteTracker tr(o);
    tr.update({det(100, 100, 200, 200)});
    tr.update({det(150, 100, 250, 200, 0.5f)});
    const auto out = tr.update({det(150, 100, 250, 200, 0.5f)});
    return out.empty() ? 0 : out[0].id;
  };
  CHECK(second_id(false) == 1);
  CHECK(second_id(true) == 2);
}

TEST_CASE("tracker: the first association is an optimal assignment, not greedy", "[tracker]") {
  // Two overlapping objects step left together by 33.3 px. The cheapest single pair is A with B's new
  // box (IoU 0.70); taking it leaves B nothing (IoU 0.09 with A's new box). The optimal assignment pairs
  // A with its new box and B with its own (IoU 0.50 each), keeping both IDs.
  ByteTracker tr;
  const Detection a = det(100, 100, 200, 200, 0.95f), b = det(150.9f, 100, 250.9f, 200, 0.95f);
  for (int f = 1; f <= 5; ++f) REQUIRE(ids_by_detection(tr.update({a, b})) == std::map<int, int>{{0, 1}, {1, 2}});
  const Detection a_new = det(66.7f, 100, 166.7f, 200, 0.95f), b_new = det(117.6f, 100, 217.6f, 200, 0.95f);
  CHECK(ids_by_detection(tr.update({b_new, a_new})) == std::map<int, int>{{0, 2}, {1, 1}});
}

TEST_CASE("tracker: of a tracked and a lost track on the same box, the younger goes", "[tracker]") {
  // Frame 1 confirms two near-identical boxes (IoU 0.9). Then one detection: one track takes it, the
  // other is lost -- and dropped at once as a duplicate, so when a second box comes back it gets a new ID.
  ByteTracker tr;
  const Detection one = det(100, 100, 200, 300), other = det(105, 100, 205, 300);
  CHECK(tr.update({one, other}).size() == 2);
  for (int f = 2; f <= 4; ++f) CHECK(ids_by_detection(tr.update({one})) == std::map<int, int>{{0, 1}});
  CHECK(ids_by_detection(tr.update({one, other})) == std::map<int, int>{{0, 1}});  // new, unconfirmed
  CHECK(ids_by_detection(tr.update({one, other})) == std::map<int, int>{{0, 1}, {1, 3}});
}

TEST_CASE("tracker: reset() restarts IDs and frames", "[tracker]") {
  ByteTracker tr;
  const Walker w{100, 100, 60, 120, 2, 0};
  tr.update({w.at(1)});
  tr.update({w.at(2), det(500, 500, 560, 560)});
  tr.update({w.at(3), det(500, 500, 560, 560)});
  CHECK(ids_by_detection(tr.update({w.at(4), det(500, 500, 560, 560)})) == std::map<int, int>{{0, 1}, {1, 2}});
  tr.reset();
  CHECK(tr.frame_count() == 0);
  // First frame again: confirmed at once, IDs from 1, no memory of the old tracks.
  CHECK(ids_by_detection(tr.update({det(500, 500, 560, 560), w.at(5)})) == std::map<int, int>{{0, 1}, {1, 2}});
}

TEST_CASE("tracker: NaN, infinite and empty boxes are ignored, never an error", "[tracker]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  ByteTracker tr;
  const Walker w{100, 100, 60, 120, 2, 0};
  for (int f = 1; f <= 10; ++f) {
    std::vector<Detection> dets = {det(nan, 0, 10, 10), det(0, 0, inf, 10), det(-inf, 0, inf, 10),
                                   det(5, 5, 5, 50),    det(5, 5, 50, 5),   det(50, 5, 10, 50),
                                   det(0, 0, 10, 10, nan), det(0, 0, 10, 10, inf), w.at(f),
                                   det(-3e38f, 0, 3e38f, 10), det(1e30f, 1e30f, 2e30f, 2e30f)};
    std::vector<Track> out;
    REQUIRE_NOTHROW(out = tr.update(dets));
    for (const Track& t : out) {
      CHECK(std::isfinite(t.box.x1));
      CHECK(std::isfinite(t.box.y2));
    }
    CHECK(id_of(out, 8) == 1);
    REQUIRE_NOTHROW(tr.update({}));
  }
}

TEST_CASE("tracker: thousands of detections cost bounded time", "[tracker]") {
  using clock = std::chrono::steady_clock;
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> pos(0, 4000), score(0.05f, 1.f);
  ByteTracker tr;
  const auto t0 = clock::now();
  std::size_t most = 0;
  for (int f = 1; f <= 20; ++f) {  // 5000 fresh random boxes per frame: the lost pool fills up
    std::vector<Detection> dets;
    for (int i = 0; i < 5000; ++i) {
      const float x = pos(rng), y = pos(rng);
      dets.push_back(det(x, y, x + 30, y + 30, score(rng)));
    }
    most = std::max(most, tr.update(dets).size());
  }
  const double random_s = std::chrono::duration<double>(clock::now() - t0).count();
  CHECK(most <= 1000);  // max_detections

  // 1500 identical boxes, frame after frame: one group where every pair may match (greedy beyond the work limit).
  ByteTracker same;
  const auto t1 = clock::now();
  std::size_t last = 0;
  for (int f = 1; f <= 5; ++f) {
    std::vector<Detection> dets(1500, det(10, 10, 110, 210));
    for (int i = 0; i < 1500; ++i) dets[i].score = 0.3f + 0.6f * static_cast<float>(i) / 1500;
    const auto out = same.update(dets);
    std::set<int> ids;
    for (const Track& t : out) ids.insert(t.id);
    CHECK(ids.size() == out.size());  // one track per ID
    last = out.size();
  }
  const double same_s = std::chrono::duration<double>(clock::now() - t1).count();
  WARN("20 frames x 5000 random boxes: " << random_s << " s; 5 frames x 1500 identical boxes: " << same_s
                                          << " s (" << last << " tracks in the last)");
  CHECK(random_s < 30);
  CHECK(same_s < 30);
}

TEST_CASE("tracker: max_tracks drops the longest-lost tracks first", "[tracker]") {
  auto revived = [](int max_tracks) {
    TrackerOptions o;
    o.max_detections = 5;
    o.max_tracks = max_tracks;
    ByteTracker tr(o);
    std::vector<Detection> a, b;
    for (int i = 0; i < 5; ++i) {
      a.push_back(det(100.f * i, 0, 100.f * i + 50, 80));
      b.push_back(det(100.f * i, 500, 100.f * i + 50, 580));
    }
    for (int f = 0; f < 3; ++f) tr.update(a);  // IDs 1..5
    for (int f = 0; f < 3; ++f) tr.update(b);  // IDs 6..10; a is lost
    const auto out = tr.update(a);
    return out.size() == 5 && std::all_of(out.begin(), out.end(), [](const Track& t) { return t.id <= 5; });
  };
  CHECK(revived(2000));
  CHECK_FALSE(revived(5));  // the lost a tracks did not fit beside the 5 tracked b tracks
}

// ---- assignment and Kalman filter --------------------------------------------------------------------

namespace {

// Brute force over every matching of a small matrix: the least sum of (cost - limit) over allowed pairs.
double best_matching(const std::vector<float>& c, int rows, int cols, double limit, int r = 0,
                     std::vector<char>* used = nullptr) {
  std::vector<char> mine;
  if (!used) {
    mine.assign(cols, 0);
    used = &mine;
  }
  if (r == rows) return 0;
  double best = best_matching(c, rows, cols, limit, r + 1, used);  // row r unmatched
  for (int k = 0; k < cols; ++k) {
    const double x = c[r * cols + k];
    if ((*used)[k] || !(x <= limit)) continue;
    (*used)[k] = 1;
    best = std::min(best, (x - limit) + best_matching(c, rows, cols, limit, r + 1, used));
    (*used)[k] = 0;
  }
  return best;
}

double matching_value(const std::vector<float>& c, int cols, double limit, const track::Assignment& a) {
  double v = 0;
  for (const auto& [r, k] : a.matches) v += c[r * cols + k] - limit;
  return v;
}

// Every row and column once: matched or in the unmatched list, matches allowed.
void check_consistent(const track::Assignment& a, const std::vector<float>& c, int rows, int cols, double limit) {
  std::vector<int> row_seen(rows, 0), col_seen(cols, 0);
  for (const auto& [r, k] : a.matches) {
    ++row_seen[r];
    ++col_seen[k];
    CHECK(c[r * cols + k] <= limit);
  }
  for (int r : a.unmatched_rows) ++row_seen[r];
  for (int k : a.unmatched_cols) ++col_seen[k];
  CHECK(std::all_of(row_seen.begin(), row_seen.end(), [](int n) { return n == 1; }));
  CHECK(std::all_of(col_seen.begin(), col_seen.end(), [](int n) { return n == 1; }));
  CHECK(std::is_sorted(a.matches.begin(), a.matches.end()));
}

}  // namespace

TEST_CASE("tracker: linear_assignment is optimal under its cost limit (brute force)", "[tracker][assignment]") {
  std::mt19937 rng(1401);
  std::uniform_real_distribution<float> u(0, 1);
  int nontrivial = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int rows = 1 + trial % 6, cols = 1 + (trial / 6) % 6;
    std::vector<float> c(rows * cols);
    for (float& x : c) x = trial % 3 == 0 ? std::round(u(rng) * 4) / 4 : u(rng);  // some with ties
    if (trial % 5 == 0) c[0] = std::numeric_limits<float>::quiet_NaN();        // never matches
    const double limit = 0.3 + 0.5 * u(rng);
    CAPTURE(trial, rows, cols, limit);
    const track::Assignment a = track::linear_assignment(c, rows, cols, limit);
    check_consistent(a, c, rows, cols, limit);
    const double want = best_matching(c, rows, cols, limit);
    CHECK(std::fabs(matching_value(c, cols, limit, a) - want) < 1e-9);
    nontrivial += a.matches.size() > 1;
    // Without the work to solve exactly: greedy, still a valid matching.
    const track::Assignment g = track::linear_assignment(c, rows, cols, limit, 0);
    check_consistent(g, c, rows, cols, limit);
    CHECK(matching_value(c, cols, limit, g) >= want - 1e-9);
  }
  CHECK(nontrivial > 100);
  // Where greedy is not optimal: rows 0/1, the cheapest pair (0, 0) blocks the better total.
  const std::vector<float> c = {0.1f, 0.2f, 0.15f, 0.9f};
  const track::Assignment a = track::linear_assignment(c, 2, 2, 0.8);
  CHECK(a.matches == std::vector<std::pair<int, int>>{{0, 1}, {1, 0}});
  CHECK(track::linear_assignment(c, 2, 2, 0.8, 0).matches == std::vector<std::pair<int, int>>{{0, 0}});
  // A cost equal to the limit may match (lap.lapjv matches it too).
  CHECK(track::linear_assignment({0.5f}, 1, 1, 0.5).matches.size() == 1);
}

TEST_CASE("tracker: min_cost_assignment on a known matrix and its work limit", "[tracker][assignment]") {
  const std::vector<double> c = {4, 1, 3, 2, 0, 5, 3, 2, 2};  // optimum 1 + 2 + 2 = 5: (0,1) (1,0) (2,2)
  std::vector<int> r2c;
  REQUIRE(track::min_cost_assignment(c, 3, 3, 1000, r2c));
  CHECK(r2c == std::vector<int>{1, 0, 2});
  CHECK_FALSE(track::min_cost_assignment(c, 3, 3, 2, r2c));
}

TEST_CASE("tracker: Kalman filter noise terms and steps", "[tracker][kalman]") {
  track::KalmanState s = track::kalman_initiate({50, 60, 0.5, 100});
  const double want_diag[8] = {100, 100, 1e-4, 100, 6.25 * 6.25, 6.25 * 6.25, 1e-10, 6.25 * 6.25};
  for (int i = 0; i < 8; ++i) CHECK(std::fabs(s.cov[i * 9] - want_diag[i]) <= 1e-12 * want_diag[i]);
  s.mean[4] = 3;  // moving right by 3 px per frame
  track::kalman_predict(s);
  CHECK(s.mean[0] == 53);
  // predicted var(x) = P_xx + 2 P_x,vx + P_vx,vx + (h / 20)^2 = 100 + 0 + 39.0625 + 25
  CHECK(std::fabs(s.cov[0] - 164.0625) < 1e-9);
  CHECK(std::fabs(s.cov[4] - 39.0625) < 1e-9);  // cov(x, vx) picks up var(vx)
  const double var_before = s.cov[0];
  REQUIRE(track::kalman_update(s, {53, 60, 0.5, 100}));
  CHECK(std::fabs(s.mean[0] - 53) < 1e-9);   // measured where predicted: stays
  CHECK(s.cov[0] < var_before);              // and is more certain
  REQUIRE(track::kalman_update(s, {63, 60, 0.5, 100}));
  CHECK(s.mean[0] > 53);
  CHECK(s.mean[0] < 63);
  CHECK(s.mean[4] > 3);  // a measurement ahead pulls the velocity up
}

// ---- Ultralytics' BYTETracker ------------------------------------------------------------------------

TEST_CASE("tracker: same IDs and boxes as Ultralytics' BYTETracker on the fixture sequences", "[tracker][ultralytics]") {
  const std::string path = test::test_data_dir() + "/track_fixture.json";
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  const TrackerOptions defaults;
  const auto& d = doc.at("defaults");  // what the fixture's Ultralytics had in bytetrack.yaml
  CHECK(d.at("track_high_thresh").get<double>() == defaults.track_high_thresh);
  CHECK(d.at("track_low_thresh").get<double>() == defaults.track_low_thresh);
  CHECK(d.at("new_track_thresh").get<double>() == defaults.new_track_thresh);
  CHECK(d.at("track_buffer").get<int>() == defaults.track_buffer);
  CHECK(d.at("match_thresh").get<double>() == defaults.match_thresh);
  CHECK(d.at("fuse_score").get<bool>() == defaults.fuse_score);

  std::set<std::string> names;
  long long compared = 0, frames_compared = 0;
  double worst_overall = 0;
  for (const auto& seq : doc.at("sequences")) {
    names.insert(seq.at("name").get<std::string>());
    std::vector<std::vector<Detection>> frames;
    for (const auto& fr : seq.at("detections")) {
      std::vector<Detection> dets;
      for (const auto& x : fr)
        dets.push_back(det(x[0].get<float>(), x[1].get<float>(), x[2].get<float>(), x[3].get<float>(),
                           x[4].get<float>(), x[5].get<int>()));
      frames.push_back(dets);
    }
    for (const auto& run : seq.at("runs")) {
      const std::string label = seq.at("name").get<std::string>() + " / " + run.at("name").get<std::string>();
      const auto& o = run.at("options");
      TrackerOptions opt;
      opt.track_high_thresh = o.at("track_high_thresh").get<double>();
      opt.track_low_thresh = o.at("track_low_thresh").get<double>();
      opt.new_track_thresh = o.at("new_track_thresh").get<double>();
      opt.track_buffer = o.at("track_buffer").get<int>();
      opt.match_thresh = o.at("match_thresh").get<double>();
      opt.fuse_score = o.at("fuse_score").get<bool>();
      const std::set<int> resets = run.at("reset").get<std::set<int>>();
      const auto& want_frames = run.at("tracks");
      REQUIRE(want_frames.size() == frames.size());

      ByteTracker tr(opt);
      int bad_frames = 0;
      double worst_box = 0;
      for (std::size_t f = 0; f < frames.size(); ++f) {
        if (resets.count(static_cast<int>(f))) tr.reset();
        const std::vector<Track> got = tr.update(frames[f]);
        std::map<int, std::pair<int, Box>> ours, theirs;  // detection index -> (id, box)
        for (const Track& t : got) ours[t.detection_index] = {t.id, t.box};
        for (const auto& t : want_frames[f])
          theirs[t[0].get<int>()] = {t[1].get<int>(), Box{t[2].get<float>(), t[3].get<float>(), t[4].get<float>(),
                                                          t[5].get<float>()}};
        bool same = ours.size() == theirs.size();
        for (const auto& [idx, v] : theirs) {
          const auto it = ours.find(idx);
          if (it == ours.end() || it->second.first != v.first) {
            same = false;
            continue;
          }
          const Box &a = it->second.second, &b = v.second;
          for (const float diff : {a.x1 - b.x1, a.y1 - b.y1, a.x2 - b.x2, a.y2 - b.y2})
            worst_box = std::max(worst_box, static_cast<double>(std::fabs(diff)));
        }
        compared += static_cast<long long>(theirs.size());
        ++frames_compared;
        if (!same && bad_frames++ < 3) {
          std::ostringstream msg;
          msg << label << " frame " << f << ": detection index -> id, ours:";
          for (const auto& [idx, v] : ours) msg << " " << idx << "->" << v.first;
          msg << "; Ultralytics:";
          for (const auto& [idx, v] : theirs) msg << " " << idx << "->" << v.first;
          UNSCOPED_INFO(msg.str());
        }
      }
      CAPTURE(label, worst_box);
      CHECK(bad_frames == 0);
      CHECK(worst_box < 2e-3);  // the fixture rounds to 1e-3
      worst_overall = std::max(worst_overall, worst_box);
    }
  }
  WARN(compared << " tracks in " << frames_compared << " frames as Ultralytics'; largest box difference "
                << worst_overall << " px (the fixture rounds to 1e-3)");
  for (const char* n : {"crossing", "occlusion", "low-score", "dropout", "crowd", "odd", "tricky"}) CHECK(names.count(n) == 1);
  CHECK(names.count("car-detection") == 1);  // the real video (YOLO11n detections)
  CHECK(compared > 4000);
}
