// tests/unit/test_cpu_ops.cpp - every CPU op against a deliberately naive double-precision reference
// written here, on many shapes: odd sizes, stride 2, dilation, depthwise and grouped convs,
// channel counts that are not multiples of 8, epilogues on and off, channel slices of larger
// buffers, attention with several areas / heads / head layouts, and the Detect decode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "backends/cpu/attention.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/detect_head.hpp"
#include "backends/cpu/resample.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "support.hpp"
#include "yolo12/errors.hpp"

using yolo12::cpu::TensorView;

namespace {

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Relative L2 error of `got` against a double reference.
double rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// A batched buffer with `total` channels per image, viewed as channels [c0, c0 + c).
struct Buffer {
  std::vector<float> data;
  int total = 0, c0 = 0, c = 0, h = 0, w = 0, batch = 0;
  Buffer(int batch_, int total_, int c0_, int c_, int h_, int w_, std::mt19937& rng)
      : total(total_), c0(c0_), c(c_), h(h_), w(w_), batch(batch_) {
    data = random_vector(static_cast<std::size_t>(batch) * total * h * w, rng);
  }
  TensorView view() { return TensorView{data.data(), total, c0, c, h, w}; }
  double at(int b, int ch, int y, int x) const {
    return data[((static_cast<std::size_t>(b) * total + c0 + ch) * h + y) * w + x];
  }
  // The view's elements in (b, c, y, x) order.
  std::vector<float> extract() const {
    std::vector<float> out;
    for (int b = 0; b < batch; ++b)
      for (int ch = 0; ch < c; ++ch)
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) out.push_back(static_cast<float>(at(b, ch, y, x)));
    return out;
  }
  // Channels outside the view, as a copy (to check they were not touched).
  std::vector<float> outside() const {
    std::vector<float> out;
    for (int b = 0; b < batch; ++b)
      for (int ch = 0; ch < total; ++ch)
        if (ch < c0 || ch >= c0 + c)
          for (int i = 0; i < h * w; ++i) out.push_back(data[(static_cast<std::size_t>(b) * total + ch) * h * w + i]);
    return out;
  }
};

struct ConvCase {
  int batch, c_in, c_out, h, w, k, stride, pad, dilation, groups;
  bool silu, gamma, residual;
};

void run_conv_case(const ConvCase& t, yolo12::cpu::ThreadPool& pool, std::mt19937& rng) {
  const int ho = (t.h + 2 * t.pad - t.dilation * (t.k - 1) - 1) / t.stride + 1;
  const int wo = (t.w + 2 * t.pad - t.dilation * (t.k - 1) - 1) / t.stride + 1;
  const int cin_g = t.c_in / t.groups, cout_g = t.c_out / t.groups;
  // Inputs and outputs are slices of larger buffers, to exercise channel offsets.
  Buffer x(t.batch, t.c_in + 3, 2, t.c_in, t.h, t.w, rng);
  Buffer y(t.batch, t.c_out + 5, 4, t.c_out, ho, wo, rng);
  Buffer r(t.batch, t.c_out + 1, 1, t.c_out, ho, wo, rng);
  const float scale = 1.f / std::sqrt(static_cast<float>(cin_g * t.k * t.k));
  auto weight = random_vector(static_cast<std::size_t>(t.c_out) * cin_g * t.k * t.k, rng, -2 * scale, 2 * scale);
  auto bias = random_vector(t.c_out, rng);
  auto gamma = random_vector(t.c_out, rng, 0.2f, 1.5f);
  const std::vector<float> y_outside = y.outside();

  std::vector<double> want;
  for (int b = 0; b < t.batch; ++b)
    for (int o = 0; o < t.c_out; ++o)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          const int g = o / cout_g;
          double acc = bias[o];
          for (int i = 0; i < cin_g; ++i)
            for (int ky = 0; ky < t.k; ++ky)
              for (int kx = 0; kx < t.k; ++kx) {
                const int iy = oy * t.stride - t.pad + ky * t.dilation, ix = ox * t.stride - t.pad + kx * t.dilation;
                if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
                acc += static_cast<double>(weight[((static_cast<std::size_t>(o) * cin_g + i) * t.k + ky) * t.k + kx]) *
                       x.at(b, g * cin_g + i, iy, ix);
              }
          if (t.silu) acc = acc / (1.0 + std::exp(-acc));
          if (t.gamma) acc *= gamma[o];
          if (t.residual) acc += r.at(b, o, oy, ox);
          want.push_back(acc);
        }

  for (int packed = 0; packed < 2; ++packed) {
    std::vector<float> pk;
    yolo12::cpu::ConvParams p;
    p.x = x.view();
    p.y = y.view();
    if (t.residual) p.residual = r.view();
    p.weight = weight.data();
    if (packed) {
      pk = yolo12::cpu::pack_conv_weight(weight.data(), t.c_out, t.c_in, t.k, t.groups);
      p.packed = pk.data();
    }
    p.bias = bias.data();
    p.gamma = t.gamma ? gamma.data() : nullptr;
    p.batch = t.batch;
    p.k = t.k;
    p.stride = t.stride;
    p.pad = t.pad;
    p.dilation = t.dilation;
    p.groups = t.groups;
    p.c_in = t.c_in;
    p.c_out = t.c_out;
    p.act = t.silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
    yolo12::cpu::conv2d(p, pool);
    const double err = rel_err(y.extract(), want);
    INFO("conv b" << t.batch << " " << t.c_in << "->" << t.c_out << " " << t.h << "x" << t.w << " k" << t.k << " s"
                  << t.stride << " p" << t.pad << " d" << t.dilation << " g" << t.groups << " silu " << t.silu
                  << " gamma " << t.gamma << " residual " << t.residual << " packed " << packed << ": rel err " << err);
    REQUIRE(max_abs(want) > 0.1);  // the case computes something
    REQUIRE(err < 1e-5);
    REQUIRE(y.outside() == y_outside);  // channels outside the output slice untouched
  }
}

}  // namespace

TEST_CASE("conv2d matches a naive reference", "[cpu][conv]") {
  std::mt19937 rng(12);
  yolo12::cpu::ThreadPool pool(3);
  const std::vector<ConvCase> cases = {
      // batch, c_in, c_out, h, w, k, stride, pad, dilation, groups, silu, gamma, residual
      {1, 3, 16, 17, 23, 3, 2, 1, 1, 1, true, false, false},     // stem-like, odd sizes
      {2, 16, 32, 9, 11, 1, 1, 0, 1, 1, true, false, false},     // pointwise
      {1, 13, 7, 5, 6, 1, 1, 0, 1, 1, false, true, true},        // pointwise, odd channels, full epilogue
      {2, 24, 40, 12, 10, 3, 1, 1, 1, 1, true, false, true},     // bottleneck cv2 + residual
      {1, 20, 20, 15, 13, 3, 2, 1, 1, 1, true, true, false},     // stride 2
      {1, 12, 12, 9, 9, 3, 1, 2, 2, 1, true, false, false},      // dilation 2
      {2, 32, 32, 11, 7, 7, 1, 3, 1, 32, false, false, true},    // 7x7 depthwise (pe) + residual
      {1, 19, 19, 8, 9, 5, 1, 2, 1, 19, false, false, false},    // 5x5 depthwise, odd channels
      {1, 10, 10, 13, 11, 3, 2, 1, 1, 10, true, false, false},   // depthwise stride 2
      {1, 16, 24, 10, 9, 3, 2, 1, 1, 2, true, false, false},     // grouped (turbo stem)
      {2, 12, 18, 7, 8, 3, 1, 1, 1, 3, true, true, true},        // grouped, everything on
      {1, 8, 16, 6, 5, 3, 1, 1, 1, 8, true, false, false},       // groups = c_in < c_out
      {1, 300, 9, 4, 5, 1, 1, 0, 1, 1, false, false, false},     // long K, few outputs
      {1, 70, 130, 3, 3, 3, 1, 1, 1, 1, true, false, false},     // tiny map, many outputs
      {3, 5, 6, 1, 1, 1, 1, 0, 1, 1, true, true, true},          // 1x1 map
      {1, 4, 5, 33, 37, 1, 2, 0, 1, 1, true, false, false},      // pointwise stride 2
      {1, 5, 7, 6, 5, 3, 2, 4, 1, 1, true, false, false},        // pad > k: whole taps off the image
      {2, 6, 9, 3, 2, 5, 1, 2, 1, 1, false, true, true},         // map narrower than the kernel
      {1, 8, 12, 70, 3, 3, 2, 1, 1, 1, true, false, false},      // many output rows per column block
      {1, 3, 16, 64, 64, 3, 2, 1, 1, 1, true, false, false},     // stem at a larger size
  };
  for (const auto& t : cases) run_conv_case(t, pool, rng);
}

TEST_CASE("conv2d rejects views that disagree with the conv", "[cpu][conv]") {
  std::mt19937 rng(3);
  yolo12::cpu::ThreadPool pool(1);
  Buffer x(1, 4, 0, 4, 8, 8, rng), y(1, 4, 0, 4, 7, 8, rng);
  auto w = random_vector(4 * 4 * 9, rng), b = random_vector(4, rng);
  yolo12::cpu::ConvParams p;
  p.x = x.view();
  p.y = y.view();
  p.weight = w.data();
  p.bias = b.data();
  p.k = 3;
  p.pad = 1;
  p.c_in = p.c_out = 4;
  REQUIRE_THROWS_AS(yolo12::cpu::conv2d(p, pool), yolo12::InputError);
}

namespace {

struct AttnCase {
  int batch, heads, dqk, dv, h, w, area;
  int layout;  // 0: Ultralytics qkv (per head q,k,v side by side), 1: turbo (q | k, separate v), 2: PSA
};

void run_attention_case(const AttnCase& t, yolo12::cpu::ThreadPool& pool, std::mt19937& rng) {
  const int N = t.h * t.w, n = N / t.area;
  yolo12::cpu::AttentionParams p;
  p.batch = t.batch;
  p.heads = t.heads;
  p.dqk = t.dqk;
  p.dv = t.dv;
  p.area = t.area;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.dqk)));
  const int stride = 2 * t.dqk + t.dv;
  // One buffer holding q, k (and v for the fused layouts), with two spare channels in front.
  const int qkv_c = t.layout == 1 ? 2 * t.heads * t.dqk : t.heads * stride;
  Buffer qkv(t.batch, qkv_c + 2, 2, qkv_c, t.h, t.w, rng);
  // Larger logits than unit noise so the softmax is far from uniform.
  for (auto& v : qkv.data) v *= 2.5f;
  Buffer vsep(t.batch, t.heads * t.dv, 0, t.heads * t.dv, t.h, t.w, rng);
  Buffer out(t.batch, t.heads * t.dv + 3, 3, t.heads * t.dv, t.h, t.w, rng);
  Buffer vimg(t.batch, t.heads * t.dv, 0, t.heads * t.dv, t.h, t.w, rng);
  const TensorView base = qkv.view();
  auto sub = [&](const TensorView& v, int c0, int c) { return TensorView{v.data, v.channels, v.c0 + c0, c, v.h, v.w}; };
  int qs, ks, vs, q0, k0, v0;  // per-head stride and first channel, within their buffers
  if (t.layout == 1) {
    qs = ks = vs = t.dqk;
    q0 = 0, k0 = t.heads * t.dqk, v0 = 0;
    p.q = sub(base, 0, t.heads * t.dqk);
    p.k = sub(base, k0, t.heads * t.dqk);
    p.v = vsep.view();
  } else {
    qs = ks = vs = stride;
    q0 = 0, k0 = t.dqk, v0 = 2 * t.dqk;
    p.q = sub(base, 0, qkv_c - t.dqk - t.dv);
    p.k = sub(base, k0, qkv_c - t.dqk - t.dv);
    p.v = sub(base, v0, qkv_c - 2 * t.dqk);
  }
  p.q_head_stride = qs;
  p.k_head_stride = ks;
  p.v_head_stride = vs;
  p.out = out.view();
  p.v_image = vimg.view();
  const Buffer& vb = t.layout == 1 ? vsep : qkv;

  std::vector<double> want(static_cast<std::size_t>(t.batch) * t.heads * t.dv * N);
  std::vector<double> want_v(want.size());
  for (int b = 0; b < t.batch; ++b)
    for (int hd = 0; hd < t.heads; ++hd)
      for (int a = 0; a < t.area; ++a)
        for (int i = 0; i < n; ++i) {
          const int ti = a * n + i;
          std::vector<double> s(n);
          double mx = -1e300;
          for (int j = 0; j < n; ++j) {
            const int tj = a * n + j;
            double dot = 0;
            for (int d = 0; d < t.dqk; ++d)
              dot += qkv.at(b, q0 + hd * qs + d, ti / t.w, ti % t.w) * qkv.at(b, k0 + hd * ks + d, tj / t.w, tj % t.w);
            s[j] = dot / std::sqrt(static_cast<double>(t.dqk));
            mx = std::max(mx, s[j]);
          }
          double sum = 0;
          for (int j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
          for (int d = 0; d < t.dv; ++d) {
            double acc = 0;
            for (int j = 0; j < n; ++j) {
              const int tj = a * n + j;
              acc += s[j] / sum * vb.at(b, v0 + hd * vs + d, tj / t.w, tj % t.w);
            }
            const std::size_t idx = ((static_cast<std::size_t>(b) * t.heads + hd) * t.dv + d) * N + ti;
            want[idx] = acc;
            want_v[idx] = vb.at(b, v0 + hd * vs + d, ti / t.w, ti % t.w);
          }
        }
  const std::vector<float> out_outside = out.outside();
  yolo12::cpu::area_attention(p, pool);
  const double err = rel_err(out.extract(), want);
  INFO("attention b" << t.batch << " heads " << t.heads << " dqk " << t.dqk << " dv " << t.dv << " " << t.h << "x"
                     << t.w << " area " << t.area << " layout " << t.layout << ": rel err " << err);
  REQUIRE(max_abs(want) > 0.05);
  REQUIRE(err < 1e-5);
  REQUIRE(rel_err(vimg.extract(), want_v) == 0.0);
  REQUIRE(out.outside() == out_outside);
}

}  // namespace

TEST_CASE("area attention matches a naive reference", "[cpu][attention]") {
  std::mt19937 rng(5);
  yolo12::cpu::ThreadPool pool(3);
  const std::vector<AttnCase> cases = {
      // batch, heads, dqk, dv, h, w, area, layout
      {1, 1, 32, 32, 5, 7, 1, 0},
      {2, 2, 32, 32, 8, 8, 4, 0},    // areas of two whole rows
      {1, 3, 32, 32, 6, 10, 4, 0},   // 15 tokens per area: not whole rows
      {1, 4, 32, 32, 9, 10, 2, 0},
      {1, 2, 32, 32, 12, 11, 4, 1},  // turbo layout, 33 tokens per area
      {2, 3, 32, 32, 7, 7, 1, 1},
      {1, 2, 32, 64, 6, 5, 1, 2},    // PSA: key_dim 32, head_dim 64
      {1, 1, 16, 32, 4, 9, 1, 2},
      {1, 4, 8, 16, 10, 13, 2, 2},   // 65 tokens per area, > one query block of 64
      {1, 1, 32, 32, 20, 20, 1, 0},  // 400 tokens: several query blocks
  };
  for (const auto& t : cases) run_attention_case(t, pool, rng);
}

TEST_CASE("area attention rejects a token count the areas do not divide", "[cpu][attention]") {
  std::mt19937 rng(1);
  yolo12::cpu::ThreadPool pool(1);
  Buffer qkv(1, 96, 0, 96, 3, 5, rng), out(1, 32, 0, 32, 3, 5, rng);
  yolo12::cpu::AttentionParams p;
  p.q = TensorView{qkv.data.data(), 96, 0, 32, 3, 5};
  p.k = TensorView{qkv.data.data(), 96, 32, 32, 3, 5};
  p.v = TensorView{qkv.data.data(), 96, 64, 32, 3, 5};
  p.out = out.view();
  p.area = 4;
  p.scale = 0.1f;
  REQUIRE_THROWS_AS(yolo12::cpu::area_attention(p, pool), yolo12::InputError);
}

TEST_CASE("upsample, max-pool and copy match naive references", "[cpu][resample]") {
  std::mt19937 rng(9);
  yolo12::cpu::ThreadPool pool(2);
  for (int factor : {1, 2, 3}) {
    Buffer in(2, 7, 1, 5, 3, 4, rng), out(2, 9, 2, 5, 3 * factor, 4 * factor, rng);
    yolo12::cpu::UpsampleParams up;
    up.factor = factor;
    up.in = in.view();
    up.out = out.view();
    up.batch = 2;
    yolo12::cpu::upsample_nearest(up, pool);
    std::vector<double> want;
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 5; ++c)
        for (int y = 0; y < 3 * factor; ++y)
          for (int x = 0; x < 4 * factor; ++x) want.push_back(in.at(b, c, y / factor, x / factor));
    REQUIRE(rel_err(out.extract(), want) == 0.0);
  }
  for (int k : {1, 3, 5, 9}) {
    for (int shape : {0, 1}) {
      const int h = shape ? 2 : 11, w = shape ? 3 : 9;  // a map smaller than the window, too
      Buffer in(2, 6, 3, 3, h, w, rng), out(2, 4, 0, 3, h, w, rng);
      for (auto& v : in.data) v -= 2.f;  // all negative: a zero pad would win if it were used
      yolo12::cpu::MaxPoolParams mp;
      mp.k = k;
      mp.in = in.view();
      mp.out = out.view();
      mp.batch = 2;
      yolo12::cpu::max_pool_same(mp, pool);
      std::vector<double> want;
      for (int b = 0; b < 2; ++b)
        for (int c = 0; c < 3; ++c)
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
              double m = -1e300;
              for (int dy = -k / 2; dy <= k / 2; ++dy)
                for (int dx = -k / 2; dx <= k / 2; ++dx)
                  if (y + dy >= 0 && y + dy < h && x + dx >= 0 && x + dx < w) m = std::max(m, in.at(b, c, y + dy, x + dx));
              want.push_back(m);
            }
      INFO("max-pool k " << k << " " << h << "x" << w);
      REQUIRE(rel_err(out.extract(), want) == 0.0);
    }
  }
  {
    Buffer in(3, 10, 4, 5, 6, 7, rng), out(3, 12, 7, 5, 6, 7, rng);
    const auto outside = out.outside();
    yolo12::cpu::copy_channels({in.view(), out.view(), 3}, pool);
    REQUIRE(out.extract() == in.extract());
    REQUIRE(out.outside() == outside);
  }
}

TEST_CASE("detect decode matches a naive DFL + anchors reference", "[cpu][detect]") {
  std::mt19937 rng(21);
  yolo12::cpu::ThreadPool pool(3);
  for (int reg_max : {16, 4}) {
    const int batch = 2, nc = 5;
    const std::vector<int> strides = {8, 16, 32};
    const int H = 64, W = 96;  // input size
    std::vector<Buffer> box, cls;
    yolo12::cpu::DetectDecodeParams p;
    int A = 0;
    for (int s : strides) {
      box.emplace_back(batch, 4 * reg_max + 2, 1, 4 * reg_max, H / s, W / s, rng);
      cls.emplace_back(batch, nc, 0, nc, H / s, W / s, rng);
      for (auto& v : box.back().data) v *= 3.f;
      for (auto& v : cls.back().data) v *= 4.f;
      A += (H / s) * (W / s);
    }
    for (std::size_t l = 0; l < strides.size(); ++l) {
      p.box.push_back(box[l].view());
      p.cls.push_back(cls[l].view());
    }
    Buffer out(batch, 4 + nc, 0, 4 + nc, 1, A, rng);
    p.strides = strides;
    p.out = out.view();
    p.batch = batch;
    p.nc = nc;
    p.reg_max = reg_max;
    yolo12::cpu::detect_decode(p, pool);
    std::vector<double> want(static_cast<std::size_t>(batch) * (4 + nc) * A);
    for (int b = 0; b < batch; ++b) {
      int a = 0;
      for (std::size_t l = 0; l < strides.size(); ++l)
        for (int y = 0; y < H / strides[l]; ++y)
          for (int x = 0; x < W / strides[l]; ++x, ++a) {
            double dist[4];
            for (int side = 0; side < 4; ++side) {
              double sum = 0, ex = 0;
              for (int i = 0; i < reg_max; ++i) {
                const double e = std::exp(box[l].at(b, side * reg_max + i, y, x));
                sum += e;
                ex += i * e;
              }
              dist[side] = ex / sum;
            }
            const double ax = x + 0.5, ay = y + 0.5, s = strides[l];
            const double vals[4] = {(ax + (dist[2] - dist[0]) / 2) * s, (ay + (dist[3] - dist[1]) / 2) * s,
                                    (dist[0] + dist[2]) * s, (dist[1] + dist[3]) * s};
            for (int ch = 0; ch < 4; ++ch) want[(static_cast<std::size_t>(b) * (4 + nc) + ch) * A + a] = vals[ch];
            for (int c = 0; c < nc; ++c)
              want[(static_cast<std::size_t>(b) * (4 + nc) + 4 + c) * A + a] = 1.0 / (1.0 + std::exp(-cls[l].at(b, c, y, x)));
          }
    }
    const double err = rel_err(out.extract(), want);
    INFO("detect reg_max " << reg_max << ": rel err " << err);
    REQUIRE(err < 1e-6);
    // The first anchor of P3 sits at (4, 4) px before the box offsets: check the box centre is near it.
    REQUIRE(std::fabs(out.extract()[0] - want[0]) < 1e-4);
  }
}
