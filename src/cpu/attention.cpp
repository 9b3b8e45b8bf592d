// cpu/attention.cpp - see attention.hpp.
#include "cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "cpu/simd.hpp"
#include "cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

namespace {

constexpr std::ptrdiff_t QB = 64;  // queries per block

// One task: one head of one area of one image (n tokens).
YOLO12_CPU_INLINE void attention_task_impl(const AttentionParams& p, std::ptrdiff_t n, std::ptrdiff_t t) {
  const int h = static_cast<int>(t % p.heads);
  const int a = static_cast<int>((t / p.heads) % p.area);
  const int b = static_cast<int>(t / (static_cast<std::ptrdiff_t>(p.heads) * p.area));
  const std::ptrdiff_t t0 = a * n;  // first token of this area
  // v of this head and area, token-major (n, dv), so the output sum runs over contiguous dims.
  thread_local std::vector<float> vt, scores, qblk, acc;
  vt.resize(static_cast<std::size_t>(n) * p.dv);
  for (int d = 0; d < p.dv; ++d) {
    const float* src = p.v.at(b, h * p.v_head_stride + d) + t0;
    for (std::ptrdiff_t j = 0; j < n; ++j) vt[j * p.dv + d] = src[j];
    if (p.v_image.valid()) std::copy(src, src + n, p.v_image.at(b, h * p.dv + d) + t0);
  }
  scores.resize(static_cast<std::size_t>(QB) * n);
  qblk.resize(static_cast<std::size_t>(QB) * p.dqk);
  acc.resize(p.dv);
  for (std::ptrdiff_t i0 = 0; i0 < n; i0 += QB) {
    const std::ptrdiff_t qb = std::min(QB, n - i0);
    // scaled queries of the block, (qb, dqk)
    for (int d = 0; d < p.dqk; ++d) {
      const float* src = p.q.at(b, h * p.q_head_stride + d) + t0 + i0;
      for (std::ptrdiff_t i = 0; i < qb; ++i) qblk[i * p.dqk + d] = src[i] * p.scale;
    }
    // scores (qb, n): row i accumulates q[i, d] * k[d, :] over d (k rows are contiguous tokens)
    float* sc = scores.data();
    for (std::ptrdiff_t i = 0; i < qb * n; ++i) sc[i] = 0.f;
    for (int d = 0; d < p.dqk; ++d) {
      const float* krow = p.k.at(b, h * p.k_head_stride + d) + t0;
      for (std::ptrdiff_t i = 0; i < qb; ++i) {
        const float qv = qblk[i * p.dqk + d];
        float* srow = sc + i * n;
        for (std::ptrdiff_t j = 0; j < n; ++j) srow[j] += qv * krow[j];
      }
    }
    for (std::ptrdiff_t i = 0; i < qb; ++i) {
      float* srow = sc + i * n;
      float mx = srow[0];
      for (std::ptrdiff_t j = 1; j < n; ++j) mx = srow[j] > mx ? srow[j] : mx;
      for (std::ptrdiff_t j = 0; j < n; ++j) srow[j] = exp_approx(srow[j] - mx);
      float sum = 0.f;
      for (std::ptrdiff_t j = 0; j < n; ++j) sum += srow[j];
      const float inv = 1.f / sum;
      // out[:, i] = sum_j p_ij v[j, :]
      float* ac = acc.data();
      for (int d = 0; d < p.dv; ++d) ac[d] = 0.f;
      for (std::ptrdiff_t j = 0; j < n; ++j) {
        const float pj = srow[j];
        const float* vj = vt.data() + j * p.dv;
        for (int d = 0; d < p.dv; ++d) ac[d] += pj * vj[d];
      }
      for (int d = 0; d < p.dv; ++d) p.out.at(b, h * p.dv + d)[t0 + i0 + i] = ac[d] * inv;
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

}  // namespace yolo12::cpu
