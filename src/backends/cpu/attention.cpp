// cpu/attention.cpp - see attention.hpp.
#include "backends/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/cpu/gemm_tile.hpp"
#include "backends/cpu/ops.hpp"
#include "backends/cpu/simd.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

namespace {

constexpr int MR = kGemmMR;
constexpr int NR = kGemmNR;
constexpr int QB = 8 * MR;  // queries per block

// One task: one head of one area of one image (n tokens). Both products run on the GEMM tile
// kernel: scores (QB x n) = Q (QB x dqk) K (dqk x n), then out (QB x dv) = P (QB x n) V (n x dv).
// The scores are stored in the packed left-operand layout of the second product (MR-row strips,
// element (i, j) of strip s at sp[(s * n + j) * MR + i]), so the softmax runs in place and P never
// needs repacking.
YOLO12_CPU_INLINE void attention_task_impl(const AttentionParams& p, std::ptrdiff_t n, std::ptrdiff_t t) {
  static const GemmTileFn tile_kernel = gemm_tile_kernel();
  const int h = static_cast<int>(t % p.heads);
  const int a = static_cast<int>((t / p.heads) % p.area);
  const int b = static_cast<int>(t / (static_cast<std::ptrdiff_t>(p.heads) * p.area));
  const std::ptrdiff_t t0 = a * n;  // first token of this area
  const std::ptrdiff_t kstrips = (n + NR - 1) / NR, vstrips = (p.dv + NR - 1) / NR;
  thread_local std::vector<float> kp, vp, qp, sp;
  // k as NR-column strips (dqk x NR each); v as the right operand (n x NR strips over dv).
  kp.assign(static_cast<std::size_t>(kstrips) * p.dqk * NR, 0.f);
  for (int d = 0; d < p.dqk; ++d) {
    const float* src = p.k.at(b, h * p.k_head_stride + d) + t0;
    for (std::ptrdiff_t j = 0; j < n; ++j) kp[((j / NR) * p.dqk + d) * NR + j % NR] = src[j];
  }
  vp.assign(static_cast<std::size_t>(vstrips) * n * NR, 0.f);
  for (int d = 0; d < p.dv; ++d) {
    const float* src = p.v.at(b, h * p.v_head_stride + d) + t0;
    float* dst = vp.data() + (d / NR) * n * NR + d % NR;
    for (std::ptrdiff_t j = 0; j < n; ++j) dst[j * NR] = src[j];
    if (p.v_image.valid()) std::copy(src, src + n, p.v_image.at(b, h * p.dv + d) + t0);
  }
  qp.resize(static_cast<std::size_t>(QB) * p.dqk);
  sp.resize(static_cast<std::size_t>(QB) * n);
  float tile[MR * NR];
  for (std::ptrdiff_t i0 = 0; i0 < n; i0 += QB) {
    const int qb = static_cast<int>(std::min<std::ptrdiff_t>(QB, n - i0));
    const int qstrips = (qb + MR - 1) / MR;
    // scaled queries as MR-row strips (dqk x MR each), zero rows past qb
    std::fill(qp.begin(), qp.begin() + static_cast<std::ptrdiff_t>(qstrips) * p.dqk * MR, 0.f);
    for (int d = 0; d < p.dqk; ++d) {
      const float* src = p.q.at(b, h * p.q_head_stride + d) + t0 + i0;
      for (int i = 0; i < qb; ++i) qp[((i / MR) * p.dqk + d) * MR + i % MR] = src[i] * p.scale;
    }
    for (int is = 0; is < qstrips; ++is) {
      float* s = sp.data() + static_cast<std::ptrdiff_t>(is) * n * MR;
      // scores of the strip
      for (std::ptrdiff_t js = 0; js < kstrips; ++js) {
        tile_kernel(p.dqk, qp.data() + static_cast<std::ptrdiff_t>(is) * p.dqk * MR,
                    kp.data() + js * p.dqk * NR, tile);
        const int cols = static_cast<int>(std::min<std::ptrdiff_t>(NR, n - js * NR));
        for (int jj = 0; jj < cols; ++jj)
          for (int i = 0; i < MR; ++i) s[(js * NR + jj) * MR + i] = tile[i * NR + jj];
      }
      // softmax of each of the MR rows, in place (rows past qb are harmless zeros)
      float mx[MR], sum[MR];
      for (int i = 0; i < MR; ++i) mx[i] = s[i], sum[i] = 0.f;
      for (std::ptrdiff_t j = 1; j < n; ++j)
        for (int i = 0; i < MR; ++i) mx[i] = s[j * MR + i] > mx[i] ? s[j * MR + i] : mx[i];
      for (std::ptrdiff_t j = 0; j < n; ++j)
        for (int i = 0; i < MR; ++i) s[j * MR + i] = exp_approx(s[j * MR + i] - mx[i]);
      for (std::ptrdiff_t j = 0; j < n; ++j)
        for (int i = 0; i < MR; ++i) sum[i] += s[j * MR + i];
      // out = P V / sum
      const int rows = std::min(MR, qb - is * MR);
      if (p.lse) {
        float* lse = p.lse + (static_cast<std::ptrdiff_t>(b) * p.heads + h) * n * p.area + t0 + i0 + is * MR;
        for (int i = 0; i < rows; ++i) lse[i] = mx[i] + std::log(sum[i]);
      }
      for (std::ptrdiff_t ds = 0; ds < vstrips; ++ds) {
        tile_kernel(static_cast<int>(n), s, vp.data() + ds * n * NR, tile);
        const int dims = static_cast<int>(std::min<std::ptrdiff_t>(NR, p.dv - ds * NR));
        for (int dd = 0; dd < dims; ++dd) {
          float* o = p.out.at(b, h * p.dv + static_cast<int>(ds) * NR + dd) + t0 + i0 + is * MR;
          for (int i = 0; i < rows; ++i) o[i] = tile[i * NR + dd] / sum[i];
        }
      }
    }
  }
}
YOLO12_CPU_AVX2 void attention_task_avx2(const AttentionParams& p, std::ptrdiff_t n, std::ptrdiff_t t) {
  attention_task_impl(p, n, t);
}
void attention_task_generic(const AttentionParams& p, std::ptrdiff_t n, std::ptrdiff_t t) { attention_task_impl(p, n, t); }

}  // namespace

void area_attention(const AttentionParams& p, ThreadPool& pool) {
  const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(p.out.h) * p.out.w;
  auto bad = [](const std::string& what) { throw InputError("area_attention: " + what); };
  if (p.area < 1 || p.heads < 1 || p.dqk < 1 || p.dv < 1 || p.batch < 1) bad("impossible area/heads/dims/batch");
  if (N % p.area != 0)
    bad(std::to_string(N) + " tokens cannot be cut into " + std::to_string(p.area) + " equal areas");
  auto fits = [&](const TensorView& t, int stride, int dims) {
    return t.valid() && t.h == p.out.h && t.w == p.out.w && (p.heads - 1) * stride + dims <= t.c;
  };
  if (!fits(p.q, p.q_head_stride, p.dqk) || !fits(p.k, p.k_head_stride, p.dqk) || !fits(p.v, p.v_head_stride, p.dv))
    bad("q, k or v view does not hold heads x dims channels of the output's size");
  if (p.out.c != p.heads * p.dv || (p.v_image.valid() && p.v_image.c != p.heads * p.dv))
    bad("out / v_image must have heads * dv channels");

  const std::ptrdiff_t n = N / p.area;  // tokens per area
  const auto task = cpu_has_avx2() ? attention_task_avx2 : attention_task_generic;
  pool.parallel_for(static_cast<std::ptrdiff_t>(p.batch) * p.area * p.heads,
                    [&](std::ptrdiff_t t, int) { task(p, n, t); });
}

Step bind(const graph::AttentionOp& op, const BindContext& ctx) {
  const graph::AttentionAttrs& a = op.attrs;
  AttentionParams p;
  static_cast<graph::AttentionAttrs&>(p) = a;
  const graph::ValueRef q = op.q, k = op.k, v = op.v, out = op.out, v_image = op.v_image;
  Step step;
  step.run = [p, q, k, v, out, v_image](const ValueViews& views, int batch, ThreadPool& pool) {
    AttentionParams r = p;
    r.q = views.view(q);
    r.k = views.view(k);
    r.v = views.view(v);
    r.out = views.view(out);
    r.v_image = views.view(v_image);
    r.batch = batch;
    area_attention(r, pool);
  };
  step.label = ctx.op_name + " attention area " + std::to_string(a.area) + ", " + std::to_string(a.heads) +
               " heads, d " + std::to_string(a.dqk) + "/" + std::to_string(a.dv);
  return step;
}

}  // namespace yolo12::cpu
