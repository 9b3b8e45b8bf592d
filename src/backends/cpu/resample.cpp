// cpu/resample.cpp - see resample.hpp.
#include "backends/cpu/resample.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/cpu/ops.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

void upsample_nearest(const UpsampleParams& p, ThreadPool& pool) {
  const int f = p.factor;
  if (f < 1 || p.in.c != p.out.c || p.out.h != p.in.h * f || p.out.w != p.in.w * f)
    throw InputError("upsample_nearest: output must be the input scaled by factor " + std::to_string(f));
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * p.in.c, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / p.in.c), c = static_cast<int>(t % p.in.c);
    const float* src = p.in.at(b, c);
    float* dst = p.out.at(b, c);
    for (int y = 0; y < p.out.h; ++y) {
      const float* srow = src + static_cast<std::ptrdiff_t>(y / f) * p.in.w;
      float* drow = dst + static_cast<std::ptrdiff_t>(y) * p.out.w;
      for (int x = 0; x < p.out.w; ++x) drow[x] = srow[x / f];
    }
  });
}

void max_pool_same(const MaxPoolParams& p, ThreadPool& pool) {
  if (p.k < 1 || p.k % 2 == 0 || p.in.c != p.out.c || p.in.h != p.out.h || p.in.w != p.out.w)
    throw InputError("max_pool_same: needs an odd kernel and equal input / output shapes");
  const int r = p.k / 2, H = p.in.h, W = p.in.w;
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * p.in.c, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / p.in.c), c = static_cast<int>(t % p.in.c);
    const float* src = p.in.at(b, c);
    float* dst = p.out.at(b, c);
    thread_local std::vector<float> rowmax;
    rowmax.resize(static_cast<std::size_t>(H) * W);
    for (int y = 0; y < H; ++y) {
      const float* s = src + static_cast<std::ptrdiff_t>(y) * W;
      float* m = rowmax.data() + static_cast<std::ptrdiff_t>(y) * W;
      for (int x = 0; x < W; ++x) {
        const int x0 = std::max(0, x - r), x1 = std::min(W - 1, x + r);
        float v = s[x0];
        for (int i = x0 + 1; i <= x1; ++i) v = std::max(v, s[i]);
        m[x] = v;
      }
    }
    for (int y = 0; y < H; ++y) {
      const int y0 = std::max(0, y - r), y1 = std::min(H - 1, y + r);
      float* d = dst + static_cast<std::ptrdiff_t>(y) * W;
      std::copy(rowmax.data() + static_cast<std::ptrdiff_t>(y0) * W, rowmax.data() + static_cast<std::ptrdiff_t>(y0 + 1) * W, d);
      for (int i = y0 + 1; i <= y1; ++i) {
        const float* m = rowmax.data() + static_cast<std::ptrdiff_t>(i) * W;
        for (int x = 0; x < W; ++x) d[x] = std::max(d[x], m[x]);
      }
    }
  });
}

void copy_channels(const CopyParams& p, ThreadPool& pool) {
  if (p.in.c != p.out.c || p.in.h != p.out.h || p.in.w != p.out.w)
    throw InputError("copy_channels: input and output shapes differ");
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * p.in.c, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / p.in.c), c = static_cast<int>(t % p.in.c);
    std::copy(p.in.at(b, c), p.in.at(b, c) + p.in.plane(), p.out.at(b, c));
  });
}

namespace {

// The step of a data-movement op: P (UpsampleParams, ...) with the attributes set, `in` and `out`
// viewed per run, computed by `kernel`.
template <typename P>
Step movement_step(P p, const graph::ValueRef& in, const graph::ValueRef& out, void (*kernel)(const P&, ThreadPool&),
                   std::string label) {
  Step step;
  step.run = [p, in, out, kernel](const ValueViews& v, int batch, ThreadPool& pool) {
    P q = p;
    q.in = v.view(in);
    q.out = v.view(out);
    q.batch = batch;
    kernel(q, pool);
  };
  step.label = std::move(label);
  return step;
}

}  // namespace

Step bind(const graph::UpsampleOp& op, const BindContext& ctx) {
  UpsampleParams p;
  static_cast<graph::UpsampleAttrs&>(p) = op.attrs;
  return movement_step(p, op.in, op.out, upsample_nearest, ctx.op_name + " upsample x" + std::to_string(op.attrs.factor));
}

Step bind(const graph::MaxPoolOp& op, const BindContext& ctx) {
  MaxPoolParams p;
  static_cast<graph::MaxPoolAttrs&>(p) = op.attrs;
  return movement_step(p, op.in, op.out, max_pool_same, ctx.op_name + " maxpool k" + std::to_string(op.attrs.k));
}

Step bind(const graph::CopyOp& op, const BindContext& ctx) {
  return movement_step(CopyParams{}, op.in, op.out, copy_channels, ctx.op_name + " copy");
}

}  // namespace yolo12::cpu
