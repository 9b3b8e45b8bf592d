// cpu/detect_head.cpp - see detect_head.hpp.
#include "backends/cpu/detect_head.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/cpu/ops.hpp"
#include "backends/cpu/simd.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

namespace {

// One row y of level l's grid, all cells at once: every loop runs along the row (contiguous in
// memory for the box and class maps and for the output), so each one vectorizes.
YOLO12_CPU_INLINE void detect_row_impl(const DetectDecodeParams& p, int b, std::size_t l, int y, std::ptrdiff_t offset,
                                       std::ptrdiff_t A) {
  const int W = p.box[l].w;
  const float stride = static_cast<float>(p.strides[l]);
  const std::ptrdiff_t plane = p.box[l].plane();
  const std::ptrdiff_t cell0 = static_cast<std::ptrdiff_t>(y) * W;
  const float* box = p.box[l].at(b, 0) + cell0;  // bin i of side s at box[(s * reg_max + i) * plane + x]
  const float* cls = p.cls[l].at(b, 0) + cell0;
  float* out = p.out.at(b, 0) + offset + cell0;  // channel ch at out[ch * A + x]
  thread_local std::vector<float> mx, sum, wsum, dist;
  mx.resize(W), sum.resize(W), wsum.resize(W), dist.resize(4 * static_cast<std::size_t>(W));
  for (int side = 0; side < 4; ++side) {
    const float* logits = box + static_cast<std::ptrdiff_t>(side) * p.reg_max * plane;
    float* m = mx.data();
    for (int x = 0; x < W; ++x) m[x] = logits[x];
    for (int i = 1; i < p.reg_max; ++i) {
      const float* li = logits + i * plane;
      for (int x = 0; x < W; ++x) m[x] = li[x] > m[x] ? li[x] : m[x];
    }
    float* su = sum.data();
    float* ws = wsum.data();
    for (int x = 0; x < W; ++x) su[x] = 0.f, ws[x] = 0.f;
    for (int i = 0; i < p.reg_max; ++i) {
      const float* li = logits + i * plane;
      const float fi = static_cast<float>(i);
      for (int x = 0; x < W; ++x) {
        const float e = exp_approx(li[x] - m[x]);
        su[x] += e;
        ws[x] += e * fi;
      }
    }
    float* d = dist.data() + static_cast<std::ptrdiff_t>(side) * W;
    for (int x = 0; x < W; ++x) d[x] = ws[x] / su[x];
  }
  const float* left = dist.data();
  const float* top = left + W;
  const float* right = top + W;
  const float* bottom = right + W;
  const float ay = static_cast<float>(y) + 0.5f;
  for (int x = 0; x < W; ++x) {
    const float ax = static_cast<float>(x) + 0.5f;
    const float x1 = ax - left[x], y1 = ay - top[x], x2 = ax + right[x], y2 = ay + bottom[x];
    out[0 * A + x] = (x1 + x2) * 0.5f * stride;
    out[1 * A + x] = (y1 + y2) * 0.5f * stride;
    out[2 * A + x] = (x2 - x1) * stride;
    out[3 * A + x] = (y2 - y1) * stride;
  }
  for (int c = 0; c < p.nc; ++c) {
    const float* lc = cls + static_cast<std::ptrdiff_t>(c) * plane;
    float* oc = out + (4 + static_cast<std::ptrdiff_t>(c)) * A;
    for (int x = 0; x < W; ++x) oc[x] = 1.f / (1.f + exp_approx(-lc[x]));
  }
}
YOLO12_CPU_AVX2 void detect_row_avx2(const DetectDecodeParams& p, int b, std::size_t l, int y, std::ptrdiff_t offset,
                                     std::ptrdiff_t A) {
  detect_row_impl(p, b, l, y, offset, A);
}
void detect_row_generic(const DetectDecodeParams& p, int b, std::size_t l, int y, std::ptrdiff_t offset, std::ptrdiff_t A) {
  detect_row_impl(p, b, l, y, offset, A);
}

}  // namespace

void detect_decode(const DetectDecodeParams& p, ThreadPool& pool) {
  const std::size_t levels = p.box.size();
  auto bad = [](const std::string& what) { throw InputError("detect_decode: " + what); };
  if (levels == 0 || p.cls.size() != levels || p.strides.size() != levels) bad("need box, cls and stride per level");
  if (p.reg_max < 1 || p.nc < 1) bad("reg_max and nc must be positive");
  std::vector<std::ptrdiff_t> offset(levels + 1, 0);
  for (std::size_t l = 0; l < levels; ++l) {
    if (p.box[l].c != 4 * p.reg_max || p.cls[l].c != p.nc || p.box[l].h != p.cls[l].h || p.box[l].w != p.cls[l].w)
      bad("level " + std::to_string(l) + " has mismatched box / class maps");
    offset[l + 1] = offset[l] + static_cast<std::ptrdiff_t>(p.box[l].h) * p.box[l].w;
  }
  const std::ptrdiff_t A = offset[levels];
  if (p.out.c != 4 + p.nc || static_cast<std::ptrdiff_t>(p.out.h) * p.out.w != A) bad("output must be (4 + nc, A)");

  // One task per (image, level, row of cells).
  std::vector<std::ptrdiff_t> row_start(levels + 1, 0);
  for (std::size_t l = 0; l < levels; ++l) row_start[l + 1] = row_start[l] + p.box[l].h;
  const std::ptrdiff_t rows = row_start[levels];
  const auto task = cpu_has_avx2() ? detect_row_avx2 : detect_row_generic;
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * rows, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / rows);
    const std::ptrdiff_t r = t % rows;
    std::size_t l = 0;
    while (r >= row_start[l + 1]) ++l;
    task(p, b, l, static_cast<int>(r - row_start[l]), offset[l], A);
  });
}

HeadStep bind_head(const graph::HeadSpec& head, const BindContext& ctx) {
  switch (head.kind) {
    case graph::HeadKind::Detect: {
      const graph::DetectHead& d = head.detect;
      DetectDecodeParams p;
      static_cast<graph::DetectAttrs&>(p) = d.attrs;
      p.strides = d.strides;
      const int channels = head.raw_channels(), anchors = head.raw_anchors();
      return [p, d, channels, anchors](const ValueViews& v, int batch, float* raw, ThreadPool& pool) {
        DetectDecodeParams q = p;
        q.box.clear();
        q.cls.clear();
        for (const auto& r : d.box) q.box.push_back(v.view(r));
        for (const auto& r : d.cls) q.cls.push_back(v.view(r));
        q.out = TensorView{raw, channels, 0, channels, 1, anchors};
        q.batch = batch;
        detect_decode(q, pool);
      };
    }
  }
  throw ModelError("CPU backend: head of " + ctx.op_name + " has an unknown kind");
}

}  // namespace yolo12::cpu
