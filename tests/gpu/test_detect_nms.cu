// tests/gpu/test_detect_nms.cu - the NMS of the Detect head on the GPU against CPU references.
//
// The GPU's kept boxes against two CPU references run on the GPU's own raw head (written by the same
// launch, every element of it): the greedy NMS written out below (torchvision's arithmetic) and the
// library's yolo12::post::nms. Both must agree exactly (same boxes, scores, classes, order), over conf
// / iou / agnostic / classes / max_det / max_nms settings, fp32 and fp16 maps, from a few candidates
// to every anchor. The decode itself (the raw head against a float64 decode, through channel-slice
// views) is the shared op suite's (tests/ops, test_ops_gpu).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "backends/cuda/common.cuh"
#include "core/half.hpp"
#include "backends/cuda/detect.cuh"
#include "post/nms.hpp"

using namespace yolo12;
using namespace yolo12::cuda;

namespace {

template <typename T> T from_float(float f);
template <> float from_float<float>(float f) { return f; }
template <> __half from_float<__half>(float f) {
  const std::uint16_t b = float_to_half(f);
  __half h;
  std::memcpy(&h, &b, 2);
  return h;
}

struct Level {
  int h, w, stride;
};

struct Setting {
  const char* name;
  float conf = 0.25f, iou = 0.7f;
  int max_det = 300, max_nms = 30000;
  bool agnostic = false;
  std::vector<int> classes;
};

// Host copy of the inputs of one test: per level a box buffer (B, H, W, ldb) and a class buffer
// (B, H, W, ldc), the used channels starting at channel offsets cb0 / cc0.
template <typename T>
struct Maps {
  std::vector<std::vector<T>> box, cls;
  int ldb, cb0, ldc, cc0;
};

template <typename T>
Maps<T> make_maps(std::mt19937& rng, int B, const std::vector<Level>& levels, int nc, int reg_max, float cls_mean,
                  float cls_sd) {
  Maps<T> m;
  m.cb0 = 3;
  m.ldb = 4 * reg_max + 5;
  m.cc0 = 1;
  m.ldc = nc + 2;
  std::normal_distribution<float> box_logit(0.f, 2.f), cls_logit(cls_mean, cls_sd);
  for (const Level& l : levels) {
    std::vector<T> b(static_cast<std::size_t>(B) * l.h * l.w * m.ldb), c(static_cast<std::size_t>(B) * l.h * l.w * m.ldc);
    for (auto& v : b) v = from_float<T>(box_logit(rng));
    for (auto& v : c) v = from_float<T>(cls_logit(rng));
    m.box.push_back(std::move(b));
    m.cls.push_back(std::move(c));
  }
  return m;
}

// The threshold as typed (shortest decimal of the float), compared in double as torchvision does.
double iou_decimal(float t) {
  char text[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(t));
    if (static_cast<float>(std::strtod(text, nullptr)) == t) return std::strtod(text, nullptr);
  }
  return t;
}

// Greedy NMS on one image's raw head, with torchvision's fp32 arithmetic; candidates ordered by
// descending score, ties by anchor (a stable sort).
std::vector<Detection> reference_nms(const float* raw, int nc, int A, const Setting& s) {
  struct Cand {
    float x1, y1, x2, y2, score;
    int cls, anchor;
  };
  std::vector<Cand> cands;
  for (int a = 0; a < A; ++a) {
    float best = -1.f;
    int bc = 0;
    for (int c = 0; c < nc; ++c)
      if (raw[static_cast<std::size_t>(4 + c) * A + a] > best) best = raw[static_cast<std::size_t>(4 + c) * A + a], bc = c;
    if (!(best > s.conf)) continue;
    if (!s.classes.empty() && std::find(s.classes.begin(), s.classes.end(), bc) == s.classes.end()) continue;
    const float cx = raw[a], cy = raw[A + a], w = raw[2 * static_cast<std::size_t>(A) + a], h = raw[3 * static_cast<std::size_t>(A) + a];
    const float hw = w / 2.f, hh = h / 2.f;
    cands.push_back({cx - hw, cy - hh, cx + hw, cy + hh, best, bc, a});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& p, const Cand& q) { return p.score > q.score; });
  if (static_cast<int>(cands.size()) > s.max_nms) cands.resize(static_cast<std::size_t>(s.max_nms));
  struct B4 {
    float x1, y1, x2, y2;
  };
  std::vector<B4> kept_boxes;
  std::vector<Detection> kept;
  for (const Cand& c : cands) {
    if (static_cast<int>(kept.size()) >= s.max_det) break;
    const float off = s.agnostic ? 0.f : static_cast<float>(c.cls) * 7680.f;
    const B4 b{c.x1 + off, c.y1 + off, c.x2 + off, c.y2 + off};
    bool dead = false;
    for (const B4& k : kept_boxes) {
      const float iw = std::max(std::min(k.x2, b.x2) - std::max(k.x1, b.x1), 0.f);
      const float ih = std::max(std::min(k.y2, b.y2) - std::max(k.y1, b.y1), 0.f);
      const float inter = iw * ih;
      const float ak = (k.x2 - k.x1) * (k.y2 - k.y1), ab = (b.x2 - b.x1) * (b.y2 - b.y1);
      if (static_cast<double>(inter / (ak + ab - inter)) > iou_decimal(s.iou)) {
        dead = true;
        break;
      }
    }
    if (dead) continue;
    kept_boxes.push_back(b);
    Detection d;
    d.box = Box{c.x1, c.y1, c.x2, c.y2};
    d.score = c.score;
    d.class_id = c.cls;
    kept.push_back(d);
  }
  return kept;
}

void require_same(const std::vector<Detection>& got, const std::vector<Detection>& want, const char* what) {
  INFO(what << ": got " << got.size() << " detections, want " << want.size());
  REQUIRE(got.size() == want.size());
  std::size_t mismatch = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Detection &g = got[i], &w = want[i];
    if (g.box.x1 != w.box.x1 || g.box.y1 != w.box.y1 || g.box.x2 != w.box.x2 || g.box.y2 != w.box.y2 ||
        g.score != w.score || g.class_id != w.class_id) {
      if (mismatch < 3)
        UNSCOPED_INFO("row " << i << ": got (" << g.box.x1 << ", " << g.box.y1 << ", " << g.box.x2 << ", " << g.box.y2
                             << ", " << g.score << ", " << g.class_id << ") want (" << w.box.x1 << ", " << w.box.y1
                             << ", " << w.box.x2 << ", " << w.box.y2 << ", " << w.score << ", " << w.class_id << ")");
      ++mismatch;
    }
  }
  CHECK(mismatch == 0);
}

template <typename T>
void run_case(std::mt19937& rng, int B, const std::vector<Level>& levels, int nc, float cls_mean, float cls_sd,
              const std::vector<Setting>& settings, std::size_t* total_kept) {
  const int reg_max = 16;
  int A = 0;
  for (const Level& l : levels) A += l.h * l.w;
  const Maps<T> m = make_maps<T>(rng, B, levels, nc, reg_max, cls_mean, cls_sd);
  std::vector<DeviceBuffer> dbox, dcls;
  for (std::size_t li = 0; li < levels.size(); ++li) {
    dbox.emplace_back(m.box[li].size() * sizeof(T));
    dcls.emplace_back(m.cls[li].size() * sizeof(T));
    YOLO12_CUDA_CHECK(cudaMemcpy(dbox.back().get(), m.box[li].data(), m.box[li].size() * sizeof(T), cudaMemcpyHostToDevice));
    YOLO12_CUDA_CHECK(cudaMemcpy(dcls.back().get(), m.cls[li].data(), m.cls[li].size() * sizeof(T), cudaMemcpyHostToDevice));
  }

  for (const Setting& s : settings) {
    INFO("B " << B << " A " << A << " nc " << nc << " setting " << s.name << (sizeof(T) == 2 ? " fp16" : " fp32"));
    REQUIRE(detect_can_implement(static_cast<int>(levels.size()), reg_max, nc, s.max_det));
    DetectHeadParams<T> p;
    p.batch = B;
    p.nc = nc;
    p.reg_max = reg_max;
    p.levels = static_cast<int>(levels.size());
    for (std::size_t li = 0; li < levels.size(); ++li) {
      p.box[li] = dbox[li].as<T>() + m.cb0;
      p.ldb[li] = m.ldb;
      p.cls[li] = dcls[li].as<T>() + m.cc0;
      p.ldc[li] = m.ldc;
      p.h[li] = levels[li].h;
      p.w[li] = levels[li].w;
      p.stride[li] = static_cast<float>(levels[li].stride);
    }
    p.anchors = A;
    p.conf = s.conf;
    p.iou = s.iou;
    p.max_det = s.max_det;
    p.max_nms = s.max_nms;
    p.agnostic = s.agnostic;
    const std::size_t raw_n = static_cast<std::size_t>(B) * (4 + nc) * A;
    std::vector<float> nan_raw(raw_n, std::nanf(""));
    DeviceBuffer draw(raw_n * sizeof(float));
    YOLO12_CUDA_CHECK(cudaMemcpy(draw.get(), nan_raw.data(), raw_n * sizeof(float), cudaMemcpyHostToDevice));
    p.raw = draw.as<float>();
    DeviceBuffer keep;
    if (!s.classes.empty()) {
      std::vector<unsigned char> k(static_cast<std::size_t>(nc), 0);
      for (int c : s.classes) k[static_cast<std::size_t>(c)] = 1;
      keep = DeviceBuffer(k.size());
      YOLO12_CUDA_CHECK(cudaMemcpy(keep.get(), k.data(), k.size(), cudaMemcpyHostToDevice));
      p.class_keep = keep.as<unsigned char>();
    }
    DeviceBuffer ws(detect_workspace_bytes(B, A, s.max_nms));
    detect_workspace_carve<T>(p, ws.get());
    const std::size_t det_n = static_cast<std::size_t>(B) * s.max_det * 6;
    DeviceBuffer ddets(det_n * sizeof(float)), dcount(sizeof(int) * B);
    YOLO12_CUDA_CHECK(cudaMemset(dcount.get(), 0xff, sizeof(int) * B));  // -1: never written
    p.dets = ddets.as<float>();
    p.det_count = dcount.as<int>();
    detect_forward<T>(p, nullptr);
    YOLO12_CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<float> raw(raw_n), dets(det_n);
    std::vector<int> count(static_cast<std::size_t>(B));
    YOLO12_CUDA_CHECK(cudaMemcpy(raw.data(), draw.get(), raw_n * sizeof(float), cudaMemcpyDeviceToHost));
    YOLO12_CUDA_CHECK(cudaMemcpy(dets.data(), ddets.get(), det_n * sizeof(float), cudaMemcpyDeviceToHost));
    YOLO12_CUDA_CHECK(cudaMemcpy(count.data(), dcount.get(), sizeof(int) * B, cudaMemcpyDeviceToHost));

    // Raw head: every element written (the references below read it).
    std::size_t unwritten = 0;
    for (float v : raw) unwritten += std::isnan(v) ? 1 : 0;
    CHECK(unwritten == 0);

    post::NmsParams np;
    np.conf = s.conf;
    np.iou = s.iou;
    np.max_det = s.max_det;
    np.agnostic = s.agnostic;
    np.classes = s.classes;
    np.max_nms = s.max_nms;
    for (int n = 0; n < B; ++n) {
      const float* img_raw = raw.data() + static_cast<std::size_t>(n) * (4 + nc) * A;
      REQUIRE(count[n] >= 0);
      REQUIRE(count[n] <= s.max_det);
      std::vector<Detection> got(static_cast<std::size_t>(count[n]));
      for (int i = 0; i < count[n]; ++i) {
        const float* r = dets.data() + (static_cast<std::size_t>(n) * s.max_det + i) * 6;
        got[i].box = Box{r[0], r[1], r[2], r[3]};
        got[i].score = r[4];
        got[i].class_id = static_cast<int>(r[5]);
      }
      require_same(got, reference_nms(img_raw, nc, A, s), "vs the greedy reference");
      require_same(got, post::nms(img_raw, nc, A, np), "vs yolo12::post::nms");
      *total_kept += got.size();
    }
  }
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> s = [] {
    std::vector<Setting> v;
    v.push_back({"default"});
    Setting a{"agnostic"};
    a.agnostic = true;
    v.push_back(a);
    Setting c{"classes 1,3"};
    c.classes = {1, 3};
    v.push_back(c);
    Setting d{"max_det 7, iou 0.45"};
    d.max_det = 7;
    d.iou = 0.45f;
    v.push_back(d);
    Setting n{"max_nms 40, conf 0.1"};
    n.max_nms = 40;
    n.conf = 0.1f;
    v.push_back(n);
    Setting z{"conf 0.999 (nothing)"};
    z.conf = 0.999f;
    v.push_back(z);
    Setting w{"iou 0.6, conf 0.05"};
    w.iou = 0.6f;
    w.conf = 0.05f;
    v.push_back(w);
    return v;
  }();
  return s;
}

}  // namespace

TEST_CASE("Detect decode + NMS: small maps, batch 3", "[gpu][detect]") {
  std::mt19937 rng(11);
  std::size_t kept = 0;
  const std::vector<Level> levels = {{8, 12, 8}, {4, 6, 16}, {2, 3, 32}};
  SECTION("fp32") { run_case<float>(rng, 3, levels, 5, -2.5f, 1.5f, settings(), &kept); }
  SECTION("fp16") { run_case<__half>(rng, 3, levels, 5, -2.5f, 1.5f, settings(), &kept); }
  CHECK(kept > 20);  // the cases really exercised NMS
}

TEST_CASE("Detect decode + NMS: 640x640 head, 80 classes", "[gpu][detect][big]") {
  std::mt19937 rng(12);
  std::size_t kept = 0;
  const std::vector<Level> levels = {{80, 80, 8}, {40, 40, 16}, {20, 20, 32}};
  SECTION("fp32, few candidates") { run_case<float>(rng, 2, levels, 80, -6.f, 1.2f, settings(), &kept); }
  SECTION("fp16, many candidates") { run_case<__half>(rng, 1, levels, 80, -2.f, 1.5f, settings(), &kept); }
  CHECK(kept > 20);
}

TEST_CASE("Detect decode + NMS: every anchor a candidate, more than 256 kept", "[gpu][detect][big]") {
  std::mt19937 rng(13);
  std::size_t kept = 0;
  Setting all{"conf 0, max_det 1000, iou 0.9"};
  all.conf = 0.f;
  all.max_det = 1000;
  all.iou = 0.9f;
  const std::vector<Level> levels = {{48, 64, 8}, {24, 32, 16}, {12, 16, 32}};
  run_case<float>(rng, 1, levels, 3, 0.f, 1.f, {all}, &kept);
  CHECK(kept > 256);  // several NMS chunks contributed kept boxes
}

TEST_CASE("detect_can_implement rejects what the kernels cannot run", "[gpu][detect]") {
  CHECK(detect_can_implement(3, 16, 80, 300));
  CHECK_FALSE(detect_can_implement(5, 16, 80, 300));
  CHECK_FALSE(detect_can_implement(3, 65, 80, 300));
  CHECK_FALSE(detect_can_implement(3, 16, 80, 1025));
  CHECK_FALSE(detect_can_implement(3, 16, 0, 300));
}
