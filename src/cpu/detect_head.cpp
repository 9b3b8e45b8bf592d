// cpu/detect_head.cpp - see detect_head.hpp.
#include "cpu/detect_head.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "cpu/simd.hpp"
#include "cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

void detect_decode(const DetectParams& p, ThreadPool& pool) {
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
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * rows, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / rows);
    const std::ptrdiff_t r = t % rows;
    std::size_t l = 0;
    while (r >= row_start[l + 1]) ++l;
    const int y = static_cast<int>(r - row_start[l]);
    const int W = p.box[l].w;
    const float stride = static_cast<float>(p.strides[l]);
    const std::ptrdiff_t plane = p.box[l].plane();
    const float* box = p.box[l].at(b, 0);
    const float* cls = p.cls[l].at(b, 0);
    float* out = p.out.at(b, 0);  // channel ch of anchor a at out[ch * A + a]
    for (int x = 0; x < W; ++x) {
      const std::ptrdiff_t cell = static_cast<std::ptrdiff_t>(y) * W + x;
      const std::ptrdiff_t a = offset[l] + cell;
      float dist[4];
      for (int side = 0; side < 4; ++side) {
        const float* logits = box + static_cast<std::ptrdiff_t>(side) * p.reg_max * plane + cell;
        float mx = logits[0];
        for (int i = 1; i < p.reg_max; ++i) mx = std::max(mx, logits[i * plane]);
        float sum = 0.f, weighted = 0.f;
        for (int i = 0; i < p.reg_max; ++i) {
          const float e = exp_approx(logits[i * plane] - mx);
          sum += e;
          weighted += e * static_cast<float>(i);
        }
        dist[side] = weighted / sum;
      }
      const float ax = static_cast<float>(x) + 0.5f, ay = static_cast<float>(y) + 0.5f;
      const float x1 = ax - dist[0], y1 = ay - dist[1], x2 = ax + dist[2], y2 = ay + dist[3];
      out[0 * A + a] = (x1 + x2) * 0.5f * stride;
      out[1 * A + a] = (y1 + y2) * 0.5f * stride;
      out[2 * A + a] = (x2 - x1) * stride;
      out[3 * A + a] = (y2 - y1) * stride;
      for (int c = 0; c < p.nc; ++c)
        out[(4 + c) * A + a] = 1.f / (1.f + exp_approx(-cls[static_cast<std::ptrdiff_t>(c) * plane + cell]));
    }
  });
}

}  // namespace yolo12::cpu
