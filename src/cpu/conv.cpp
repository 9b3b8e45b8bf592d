// cpu/conv.cpp - see conv.hpp.
#include "cpu/conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define YOLO12_CPU_X86 1
#endif

#include "cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {
namespace {

constexpr int MR = kConvMR;
constexpr int NR = kConvNR;

inline float silu(float v) { return v / (1.f + std::exp(-v)); }

// Shape of one conv call, derived from the params and checked once.
struct ConvShape {
  int batch, c_in, h, w, c_out, ho, wo, k, stride, pad, dilation, groups;
  int cin_g, cout_g, K;  // K = cin_g * k * k
  std::ptrdiff_t N;      // ho * wo
};

ConvShape check_shape(const ConvParams& p) {
  ConvShape s;
  s.batch = p.batch;
  s.c_in = p.x.c;
  s.h = p.x.h;
  s.w = p.x.w;
  s.c_out = p.y.c;
  s.ho = p.y.h;
  s.wo = p.y.w;
  s.k = p.k;
  s.stride = p.stride;
  s.pad = p.pad;
  s.dilation = p.dilation;
  s.groups = p.groups;
  auto bad = [&](const std::string& what) { throw InputError("conv2d: " + what); };
  if (!p.x.valid() || !p.y.valid() || !p.weight || !p.bias) bad("missing input, output, weight or bias");
  if (s.batch < 1 || s.k < 1 || s.stride < 1 || s.dilation < 1 || s.pad < 0 || s.groups < 1)
    bad("impossible batch/kernel/stride/dilation/pad/groups");
  if (s.c_in % s.groups || s.c_out % s.groups) bad("channels not divisible by groups");
  const int ho = (s.h + 2 * s.pad - s.dilation * (s.k - 1) - 1) / s.stride + 1;
  const int wo = (s.w + 2 * s.pad - s.dilation * (s.k - 1) - 1) / s.stride + 1;
  if (ho != s.ho || wo != s.wo)
    bad("output is " + std::to_string(s.ho) + "x" + std::to_string(s.wo) + ", the conv gives " + std::to_string(ho) +
        "x" + std::to_string(wo));
  if (p.residual.valid() && (p.residual.c != s.c_out || p.residual.h != s.ho || p.residual.w != s.wo))
    bad("residual shape differs from the output");
  s.cin_g = s.c_in / s.groups;
  s.cout_g = s.c_out / s.groups;
  s.K = s.cin_g * s.k * s.k;
  s.N = static_cast<std::ptrdiff_t>(s.ho) * s.wo;
  return s;
}

// out[j] = act(acc[j] + bias) * gamma + residual[j], for one output row segment.
inline void epilogue_row(const ConvParams& p, int b, int o, std::ptrdiff_t n0, int cols, const float* acc) {
  float* y = p.y.at(b, o) + n0;
  const float* r = p.residual.valid() ? p.residual.at(b, o) + n0 : nullptr;
  const float bias = p.bias[o];
  const float gamma = p.gamma ? p.gamma[o] : 1.f;
  for (int j = 0; j < cols; ++j) {
    float v = acc[j] + bias;
    if (p.silu) v = silu(v);
    v *= gamma;
    if (r) v += r[j];
    y[j] = v;
  }
}

// ---- GEMM register-tile kernels: c[MR][NR] = sum_kk a[kk][0..MR) (outer) b[kk][0..NR) -----------
void tile_kernel_generic(int K, const float* a,  // (K, MR) packed weights
                         const float* b,         // (K, NR) packed im2col strip
                         float* c) {             // (MR, NR)
  float acc[MR][NR] = {};
  for (int kk = 0; kk < K; ++kk) {
    const float* ak = a + static_cast<std::ptrdiff_t>(kk) * MR;
    const float* bk = b + static_cast<std::ptrdiff_t>(kk) * NR;
    for (int i = 0; i < MR; ++i) {
      const float ai = ak[i];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * bk[j];
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * NR + j] = acc[i][j];
}

#ifdef YOLO12_CPU_X86
static_assert(MR == 6 && NR == 16, "the AVX2 tile kernel is written for 6 x 16");
__attribute__((target("avx2,fma"))) void tile_kernel_avx2(int K, const float* a, const float* b, float* c) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(),
         c11 = _mm256_setzero_ps(), c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(),
         c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps(), c40 = _mm256_setzero_ps(),
         c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int kk = 0; kk < K; ++kk, a += MR, b += NR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(ai, b0, c00);
    c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10);
    c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20);
    c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30);
    c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40);
    c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50);
    c51 = _mm256_fmadd_ps(ai, b1, c51);
  }
  _mm256_storeu_ps(c + 0 * NR, c00);
  _mm256_storeu_ps(c + 0 * NR + 8, c01);
  _mm256_storeu_ps(c + 1 * NR, c10);
  _mm256_storeu_ps(c + 1 * NR + 8, c11);
  _mm256_storeu_ps(c + 2 * NR, c20);
  _mm256_storeu_ps(c + 2 * NR + 8, c21);
  _mm256_storeu_ps(c + 3 * NR, c30);
  _mm256_storeu_ps(c + 3 * NR + 8, c31);
  _mm256_storeu_ps(c + 4 * NR, c40);
  _mm256_storeu_ps(c + 4 * NR + 8, c41);
  _mm256_storeu_ps(c + 5 * NR, c50);
  _mm256_storeu_ps(c + 5 * NR + 8, c51);
}
#endif

using TileKernel = void (*)(int, const float*, const float*, float*);

TileKernel pick_tile_kernel() {
#ifdef YOLO12_CPU_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return tile_kernel_avx2;
#endif
  return tile_kernel_generic;
}

// Gathers the im2col columns [n0, n0 + nstrips * NR) of image b, group g into NR-wide strips:
// strip s holds dst[(s * K + kk) * NR + j] = X_col[kk, n0 + s * NR + j] (zero past N).
void pack_columns(const ConvParams& p, const ConvShape& s, int b, int g, std::ptrdiff_t n0, int nstrips,
                  float* dst) {
  const bool pointwise = s.k == 1 && s.stride == 1 && s.pad == 0;
  for (int st = 0; st < nstrips; ++st) {
    const std::ptrdiff_t nb = n0 + static_cast<std::ptrdiff_t>(st) * NR;
    const int cols = static_cast<int>(std::min<std::ptrdiff_t>(NR, s.N - nb));
    float* strip = dst + static_cast<std::ptrdiff_t>(st) * s.K * NR;
    if (pointwise) {
      for (int ci = 0; ci < s.cin_g; ++ci) {
        const float* src = p.x.at(b, g * s.cin_g + ci) + nb;
        float* d = strip + static_cast<std::ptrdiff_t>(ci) * NR;
        for (int j = 0; j < cols; ++j) d[j] = src[j];
        for (int j = cols; j < NR; ++j) d[j] = 0.f;
      }
      continue;
    }
    int oy[NR], ox[NR];
    for (int j = 0; j < cols; ++j) {
      oy[j] = static_cast<int>((nb + j) / s.wo);
      ox[j] = static_cast<int>((nb + j) % s.wo);
    }
    int kk = 0;
    for (int ci = 0; ci < s.cin_g; ++ci) {
      const float* plane = p.x.at(b, g * s.cin_g + ci);
      for (int ky = 0; ky < s.k; ++ky) {
        for (int kx = 0; kx < s.k; ++kx, ++kk) {
          float* d = strip + static_cast<std::ptrdiff_t>(kk) * NR;
          const int dy = ky * s.dilation - s.pad, dx = kx * s.dilation - s.pad;
          for (int j = 0; j < cols; ++j) {
            const int iy = oy[j] * s.stride + dy, ix = ox[j] * s.stride + dx;
            d[j] = (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) ? plane[static_cast<std::ptrdiff_t>(iy) * s.w + ix] : 0.f;
          }
          for (int j = cols; j < NR; ++j) d[j] = 0.f;
        }
      }
    }
  }
}

void conv2d_im2col_gemm(const ConvParams& p, const ConvShape& s, ThreadPool& pool) {
  static const TileKernel kernel = pick_tile_kernel();
  std::vector<float> local_packed;
  const float* packed = p.packed;
  if (!packed) {
    local_packed = pack_conv_weight(p.weight, s.c_out, s.c_in, s.k, s.groups);
    packed = local_packed.data();
  }
  const int mstrips = (s.cout_g + MR - 1) / MR;
  // Columns per task: keep the packed strips (K x NC floats) within about 256 KiB of L2, and at
  // least 4 strips so the weights streamed per strip are reused.
  const int nc_strips = std::max(4, std::min(16, 65536 / std::max(1, s.K) / NR));
  const std::ptrdiff_t nc = static_cast<std::ptrdiff_t>(nc_strips) * NR;
  const std::ptrdiff_t nblocks = (s.N + nc - 1) / nc;
  // Split the output channels too when there are few column blocks (small late feature maps).
  int mchunks = 1;
  const std::ptrdiff_t base_tasks = static_cast<std::ptrdiff_t>(s.batch) * s.groups * nblocks;
  while (base_tasks * mchunks < 4 * pool.size() && mstrips / (mchunks * 2) >= 2) mchunks *= 2;
  const std::ptrdiff_t tasks = base_tasks * mchunks;

  pool.parallel_for(tasks, [&](std::ptrdiff_t t, int) {
    const int mc = static_cast<int>(t % mchunks);
    std::ptrdiff_t r = t / mchunks;
    const std::ptrdiff_t nbk = r % nblocks;
    r /= nblocks;
    const int g = static_cast<int>(r % s.groups);
    const int b = static_cast<int>(r / s.groups);
    const std::ptrdiff_t n0 = nbk * nc;
    const int nstrips = static_cast<int>((std::min(nc, s.N - n0) + NR - 1) / NR);
    thread_local std::vector<float> cols;
    const std::size_t need = static_cast<std::size_t>(nstrips) * s.K * NR;
    if (cols.size() < need) cols.resize(need);
    pack_columns(p, s, b, g, n0, nstrips, cols.data());
    const int ms0 = mc * mstrips / mchunks, ms1 = (mc + 1) * mstrips / mchunks;
    const float* gw = packed + static_cast<std::ptrdiff_t>(g) * mstrips * MR * s.K;
    float tile[MR * NR];
    for (int st = 0; st < nstrips; ++st) {
      const std::ptrdiff_t nb = n0 + static_cast<std::ptrdiff_t>(st) * NR;
      const int ncols = static_cast<int>(std::min<std::ptrdiff_t>(NR, s.N - nb));
      const float* bstrip = cols.data() + static_cast<std::ptrdiff_t>(st) * s.K * NR;
      for (int ms = ms0; ms < ms1; ++ms) {
        kernel(s.K, gw + static_cast<std::ptrdiff_t>(ms) * MR * s.K, bstrip, tile);
        const int rows = std::min(MR, s.cout_g - ms * MR);
        for (int i = 0; i < rows; ++i) epilogue_row(p, b, g * s.cout_g + ms * MR + i, nb, ncols, tile + i * NR);
      }
    }
  });
}

void conv2d_depthwise_direct(const ConvParams& p, const ConvShape& s, ThreadPool& pool) {
  const std::ptrdiff_t tasks = static_cast<std::ptrdiff_t>(s.batch) * s.c_out;
  pool.parallel_for(tasks, [&](std::ptrdiff_t t, int) {
    const int b = static_cast<int>(t / s.c_out), c = static_cast<int>(t % s.c_out);
    const float* in = p.x.at(b, c);
    const float* wc = p.weight + static_cast<std::ptrdiff_t>(c) * s.k * s.k;
    thread_local std::vector<float> acc;
    if (acc.size() < static_cast<std::size_t>(s.wo)) acc.resize(s.wo);
    // Per kx: the range of output columns whose tap lands inside the row.
    thread_local std::vector<int> lo, hi;
    lo.assign(s.k, 0);
    hi.assign(s.k, -1);
    for (int kx = 0; kx < s.k; ++kx) {
      const int dx = kx * s.dilation - s.pad;
      int a = 0, z = s.wo - 1;
      while (a < s.wo && a * s.stride + dx < 0) ++a;
      while (z >= a && z * s.stride + dx >= s.w) --z;
      lo[kx] = a;
      hi[kx] = z;
    }
    for (int oy = 0; oy < s.ho; ++oy) {
      std::fill(acc.begin(), acc.begin() + s.wo, 0.f);
      for (int ky = 0; ky < s.k; ++ky) {
        const int iy = oy * s.stride + ky * s.dilation - s.pad;
        if (iy < 0 || iy >= s.h) continue;
        const float* row = in + static_cast<std::ptrdiff_t>(iy) * s.w;
        for (int kx = 0; kx < s.k; ++kx) {
          const float wv = wc[ky * s.k + kx];
          const int dx = kx * s.dilation - s.pad;
          float* a = acc.data();
          if (s.stride == 1) {
            const float* src = row + dx;
            for (int ox = lo[kx]; ox <= hi[kx]; ++ox) a[ox] += wv * src[ox];
          } else {
            for (int ox = lo[kx]; ox <= hi[kx]; ++ox) a[ox] += wv * row[ox * s.stride + dx];
          }
        }
      }
      epilogue_row(p, b, c, static_cast<std::ptrdiff_t>(oy) * s.wo, s.wo, acc.data());
    }
  });
}

}  // namespace

bool conv_is_depthwise(int c_in, int c_out, int groups) { return groups > 1 && groups == c_in && groups == c_out; }

std::vector<float> pack_conv_weight(const float* weight, int c_out, int c_in, int k, int groups) {
  const int cout_g = c_out / groups, cin_g = c_in / groups;
  const int K = cin_g * k * k;
  const int mstrips = (cout_g + MR - 1) / MR;
  std::vector<float> out(static_cast<std::size_t>(groups) * mstrips * MR * K, 0.f);
  for (int g = 0; g < groups; ++g)
    for (int m = 0; m < cout_g; ++m) {
      const float* src = weight + static_cast<std::ptrdiff_t>(g * cout_g + m) * K;
      float* strip = out.data() + (static_cast<std::ptrdiff_t>(g) * mstrips + m / MR) * MR * K;
      for (int kk = 0; kk < K; ++kk) strip[static_cast<std::ptrdiff_t>(kk) * MR + m % MR] = src[kk];
    }
  return out;
}

void conv2d(const ConvParams& p, ThreadPool& pool) {
  const ConvShape s = check_shape(p);
  if (conv_is_depthwise(s.c_in, s.c_out, s.groups))
    conv2d_depthwise_direct(p, s, pool);
  else
    conv2d_im2col_gemm(p, s, pool);
}

}  // namespace yolo12::cpu
