// tests/ops/op_cases.cpp - the shared op test: per op of the table (src/graph/ops.hpp) ONE naive
// reference in double precision and the generator of its cases, and the Detect head's decode.
// Adding an op to the table adds a section here: its reference (an overload of reference_of, which
// expected() needs for every op) and its cases (a line in op_cases()). See op_suite.hpp.
#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "ops/op_suite.hpp"

namespace yolo12::test::ops {

namespace {

// Builds one case: its values, its weights, then the op (or the head).
class CaseBuilder {
 public:
  CaseBuilder(int batch, std::uint64_t seed) : rng_(seed ^ 0x9e3779b97f4a7c15ull) {
    c_.batch = batch;
    c_.seed = seed;
  }
  // A new value (ch, h, w) filled from f; returns its index.
  int value(int ch, int h, int w, Fill f = {}) {
    const int v = static_cast<int>(c_.graph.values.size());
    c_.graph.values.push_back(graph::Value{"v" + std::to_string(v), ch, h, w});
    c_.fill.push_back(f);
    return v;
  }
  // A value of c0 + c + extra channels and its slice [c0, c0 + c).
  graph::ValueRef slice(int c0, int c, int extra, int h, int w, Fill f = {}) {
    return graph::ValueRef{value(c0 + c + extra, h, w, f), c0, c};
  }
  // Weight tensor `name`: n values uniform in [lo, hi], fp16-representable.
  std::string tensor(const std::string& name, std::size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> t(n);
    for (float& x : t) x = round_half(u(rng_));
    c_.tensors[name] = std::move(t);
    return name;
  }
  // "v1[3:16 of 19]": a slice and its value's channels.
  std::string operand(const graph::ValueRef& r) const {
    if (!r.valid()) return "none";
    const graph::Value& v = c_.graph.values[static_cast<std::size_t>(r.value)];
    return "v" + std::to_string(r.value) + "[" + std::to_string(r.c0) + ":" + std::to_string(r.c0 + r.c) + " of " +
           std::to_string(v.c) + "]";
  }
  OpCase op(const std::string& what, graph::OpVariant op, std::vector<Tolerance> tol) {
    c_.what = what + " | batch " + std::to_string(c_.batch);
    c_.graph.ops.push_back(graph::Op{"case", std::move(op)});
    c_.tol = std::move(tol);
    return std::move(c_);
  }
  OpCase head(const std::string& what, const graph::HeadSpec& head, int input_h, int input_w, Tolerance tol) {
    c_.what = what + " | batch " + std::to_string(c_.batch);
    c_.graph.head = head;
    c_.graph.outputs = head.inputs();
    c_.graph.input_h = input_h;
    c_.graph.input_w = input_w;
    c_.tol = {tol};
    return std::move(c_);
  }

 private:
  OpCase c_;
  std::mt19937_64 rng_;
};

// The state's slice r as a reference operand / output.
HostView view(const OpCase& c, const HostState& s, const graph::ValueRef& r) {
  if (!r.valid()) return HostView{};
  const graph::Value& v = c.graph.values[static_cast<std::size_t>(r.value)];
  return HostView{s.values[static_cast<std::size_t>(r.value)].data(), v.c, r.c0, r.c, v.h, v.w, false};
}
RefOut out(const OpCase& c, Expected& e, const graph::ValueRef& r) {
  if (!r.valid()) return RefOut{};
  const graph::Value& v = c.graph.values[static_cast<std::size_t>(r.value)];
  return RefOut{e.values[static_cast<std::size_t>(r.value)].data(), v.c, r.c0, r.c, v.h, v.w, false};
}

// Tolerances. fp16 bounds are multiples of the error of the reference rounded to fp16 (a naive fp16
// implementation: fp32 arithmetic on the fp16 inputs, one rounding of the output).
Tolerance exact() {
  Tolerance t;
  t.exact = true;
  return t;
}
Tolerance rounded_once() {  // fp32 accumulation, the output rounded once: twice the naive error
  Tolerance t;
  t.f16_factor = 2;
  return t;
}

}  // namespace

// =====================================================================================================
// Conv
// =====================================================================================================

namespace {

// conv_reference on operands of any element type: a conv chain's links read what earlier links computed, in
// double.
template <typename X, typename R>
void conv_of(const graph::ConvAttrs& a, const Slice<const X>& x, const float* w, const float* bias,
             const float* gamma, const Slice<const R>& residual, int batch, const RefOut& y) {
  const int cin_g = a.c_in / a.groups, cout_g = a.c_out / a.groups;
  std::vector<double> acc(static_cast<std::size_t>(y.h) * y.w);  // one output plane
  for (int b = 0; b < batch; ++b)
    for (int o = 0; o < a.c_out; ++o) {
      const int g = o / cout_g;
      std::fill(acc.begin(), acc.end(), bias ? bias[o] : 0.0);
      for (int i = 0; i < cin_g; ++i)
        for (int ky = 0; ky < a.k; ++ky)
          for (int kx = 0; kx < a.k; ++kx) {
            const double wv = w[((static_cast<std::size_t>(o) * cin_g + i) * a.k + ky) * a.k + kx];
            const std::size_t step = x.nhwc ? static_cast<std::size_t>(x.channels) : 1;  // between pixels of a row
            for (int oy = 0; oy < y.h; ++oy) {
              const int iy = oy * a.stride - a.pad + ky * a.dilation;
              if (iy < 0 || iy >= x.h) continue;  // taps outside the image read zero
              const X* row = &x.at(b, g * cin_g + i, iy, 0);
              double* out_row = &acc[static_cast<std::size_t>(oy) * y.w];
              for (int ox = 0; ox < y.w; ++ox) {
                const int ix = ox * a.stride - a.pad + kx * a.dilation;
                if (ix >= 0 && ix < x.w) out_row[ox] += wv * row[static_cast<std::size_t>(ix) * step];
              }
            }
          }
      for (int oy = 0; oy < y.h; ++oy)
        for (int ox = 0; ox < y.w; ++ox) {
          double v = acc[static_cast<std::size_t>(oy) * y.w + ox];
          if (a.silu()) v = v / (1.0 + std::exp(-v));
          if (gamma) v *= gamma[o];
          if (residual.valid()) v += residual.at(b, o, oy, ox);
          y.at(b, o, oy, ox) = v;
        }
    }
}

}  // namespace

void conv_reference(const graph::ConvAttrs& a, const HostView& x, const float* w, const float* bias,
                    const float* gamma, const HostView& residual, int batch, const RefOut& y) {
  conv_of(a, x, w, bias, gamma, residual, batch, y);
}

namespace {

void reference_of(const graph::ConvOp& op, const OpCase& c, const HostState& in, Expected& e) {
  conv_reference(op.attrs, view(c, in, op.in), c.tensors.at(op.weight).data(), c.tensors.at(op.bias).data(),
                 op.gamma.empty() ? nullptr : c.tensors.at(op.gamma).data(), view(c, in, op.residual), c.batch,
                 out(c, e, op.out));
}

// pad = dil * (k / 2) ("same" for stride 1).
ConvSpec conv_spec(int batch, int h, int w, int ci, int co, int k, int stride, int groups, int dil = 1) {
  ConvSpec s;
  s.a = graph::ConvAttrs{ci, co, k, stride, dil * (k / 2), groups, dil, graph::Act::SiLU};
  s.batch = batch;
  s.h = h;
  s.w = w;
  return s;
}
ConvSpec with_pad(ConvSpec s, int pad) {
  s.a.pad = pad;
  return s;
}
// The fusions and the slices of a spec (conv_options' arguments).
template <typename... Options>
ConvSpec fused(ConvSpec s, Options... options) {
  static_cast<ConvOptions&>(s) = conv_options(options...);
  return s;
}
// The CPU kernels' edges: x, y and the residual always slices of wider values.
ConvSpec cpu_edge(int batch, int ci, int co, int h, int w, int k, int stride, int pad, int dil, int groups, bool silu,
                  bool gamma, bool residual) {
  ConvSpec s = conv_spec(batch, h, w, ci, co, k, stride, groups, dil);
  s.a.pad = pad;
  return fused(s, gamma, residual, silu, 2, 1, 4, 1, 1, 0);
}

// How the operands of a conv case share values: each its own; x and y slices of one value (a C2f
// concat buffer: a bottleneck reads chunk j and writes chunk j + 1); the residual and y of one value.
enum class ConvShare { none, x_and_y, residual_and_y };

OpCase conv_case(const ConvSpec& s, ConvShare share, std::uint64_t seed) {
  const graph::ConvAttrs a = s.attrs();
  const int ho = static_cast<int>(a.out_size(s.h)), wo = static_cast<int>(a.out_size(s.w));
  CaseBuilder cb(s.batch, seed);
  graph::ValueRef x, y, r;
  if (share == ConvShare::x_and_y) {  // needs ho == h and wo == w
    const int v = cb.value(s.x_c0 + a.c_in + s.y_c0 + a.c_out + s.y_extra, s.h, s.w);
    x = {v, s.x_c0, a.c_in};
    y = {v, s.x_c0 + a.c_in + s.y_c0, a.c_out};
    if (s.residual) r = cb.slice(s.r_c0, a.c_out, s.r_extra, ho, wo);
  } else if (share == ConvShare::residual_and_y) {
    x = cb.slice(s.x_c0, a.c_in, s.x_extra, s.h, s.w);
    const int v = cb.value(s.r_c0 + a.c_out + s.y_c0 + a.c_out + s.y_extra, ho, wo);
    r = {v, s.r_c0, a.c_out};
    y = {v, s.r_c0 + a.c_out + s.y_c0, a.c_out};
  } else {
    x = cb.slice(s.x_c0, a.c_in, s.x_extra, s.h, s.w);
    y = cb.slice(s.y_c0, a.c_out, s.y_extra, ho, wo);
    if (s.residual) r = cb.slice(s.r_c0, a.c_out, s.r_extra, ho, wo);
  }
  const int cin_g = a.c_in / a.groups;
  const float ws = 1.7f / std::sqrt(static_cast<float>(cin_g * a.k * a.k));
  graph::ConvOp op;
  op.attrs = a;
  op.in = x;
  op.out = y;
  op.residual = r;
  op.weight = cb.tensor("w", static_cast<std::size_t>(a.c_out) * cin_g * a.k * a.k, -ws, ws);
  op.bias = cb.tensor("b", static_cast<std::size_t>(a.c_out), s.bias ? -0.5f : 0.f, s.bias ? 0.5f : 0.f);
  if (s.gamma) op.gamma = cb.tensor("gamma", static_cast<std::size_t>(a.c_out), -0.8f, 1.5f);
  const char* how = share == ConvShare::x_and_y ? " | x, y share a value" :
                    share == ConvShare::residual_and_y ? " | residual, y share a value" : "";
  return cb.op(s.describe() + how + " | x " + cb.operand(x) + " y " + cb.operand(y) + " r " + cb.operand(r), op,
               {rounded_once()});
}

}  // namespace

ConvOptions conv_options(bool gamma, bool residual, bool silu, int x_c0, int x_extra, int y_c0, int y_extra, int r_c0,
                         int r_extra) {
  return ConvOptions{true, gamma, residual, silu, x_c0, x_extra, y_c0, y_extra, r_c0, r_extra};
}

graph::ConvAttrs ConvSpec::attrs() const {
  graph::ConvAttrs out = a;
  out.act = silu ? graph::Act::SiLU : graph::Act::None;
  return out;
}

std::string ConvSpec::describe() const {
  std::ostringstream m;
  m << "conv " << a.k << "x" << a.k << "/" << a.stride << " p" << a.pad << " d" << a.dilation << " g" << a.groups
    << " " << a.c_in << "->" << a.c_out << " " << h << "x" << w << " batch " << batch << " | x " << x_c0 << "+"
    << a.c_in << "+" << x_extra << " y " << y_c0 << "+" << a.c_out << "+" << y_extra << " r " << r_c0 << "+"
    << a.c_out << "+" << r_extra << " | bias " << bias << " gamma " << gamma << " residual " << residual << " silu "
    << silu;
  return m.str();
}

const int kConvSliceOffsets[5] = {0, 0, 8, 3, 16};
const int kConvAlignedOffsets[5] = {0, 0, 8, 16, 16};

void conv_random_options(ConvOptions& o, const std::function<int(int, int)>& pick, const int (&x_offsets)[5]) {
  o.gamma = pick(0, 1);
  o.residual = pick(0, 1);
  o.silu = pick(0, 1);
  o.bias = pick(0, 5) != 0;
  o.x_c0 = x_offsets[pick(0, 4)];
  o.x_extra = x_offsets[pick(0, 4)];
  o.y_c0 = kConvSliceOffsets[pick(0, 4)];
  o.y_extra = kConvSliceOffsets[pick(0, 4)];
  o.r_c0 = kConvSliceOffsets[pick(0, 4)];
  o.r_extra = kConvSliceOffsets[pick(0, 4)];
}

const std::vector<ConvSpec>& conv_fixed_specs() {
  static const std::vector<ConvSpec> specs = [] {
    std::vector<ConvSpec> v;
    auto add = [&](const ConvSpec& s, auto... options) { v.push_back(fused(s, options...)); };
    // The CPU kernels' edges: batch, c_in, c_out, h, w, k, stride, pad, dilation, groups, silu, gamma, residual.
    v.push_back(cpu_edge(1, 3, 16, 17, 23, 3, 2, 1, 1, 1, true, false, false));    // stem-like, odd sizes
    v.push_back(cpu_edge(2, 16, 32, 9, 11, 1, 1, 0, 1, 1, true, false, false));    // pointwise
    v.push_back(cpu_edge(1, 13, 7, 5, 6, 1, 1, 0, 1, 1, false, true, true));       // odd channels, full epilogue
    v.push_back(cpu_edge(2, 24, 40, 12, 10, 3, 1, 1, 1, 1, true, false, true));    // bottleneck cv2 + residual
    v.push_back(cpu_edge(1, 20, 20, 15, 13, 3, 2, 1, 1, 1, true, true, false));    // stride 2
    v.push_back(cpu_edge(1, 12, 12, 9, 9, 3, 1, 2, 2, 1, true, false, false));     // dilation 2
    v.push_back(cpu_edge(2, 32, 32, 11, 7, 7, 1, 3, 1, 32, false, false, true));   // 7x7 depthwise (pe) + residual
    v.push_back(cpu_edge(1, 19, 19, 8, 9, 5, 1, 2, 1, 19, false, false, false));   // 5x5 depthwise, odd channels
    v.push_back(cpu_edge(1, 10, 10, 13, 11, 3, 2, 1, 1, 10, true, false, false));  // depthwise stride 2
    v.push_back(cpu_edge(1, 16, 24, 10, 9, 3, 2, 1, 1, 2, true, false, false));    // grouped (turbo stem)
    v.push_back(cpu_edge(2, 12, 18, 7, 8, 3, 1, 1, 1, 3, true, true, true));       // grouped, everything on
    v.push_back(cpu_edge(1, 8, 16, 6, 5, 3, 1, 1, 1, 8, true, false, false));      // groups = c_in < c_out
    v.push_back(cpu_edge(1, 300, 9, 4, 5, 1, 1, 0, 1, 1, false, false, false));    // long K, few outputs
    v.push_back(cpu_edge(1, 70, 130, 3, 3, 3, 1, 1, 1, 1, true, false, false));    // tiny map, many outputs
    v.push_back(cpu_edge(3, 5, 6, 1, 1, 1, 1, 0, 1, 1, true, true, true));         // 1x1 map
    v.push_back(cpu_edge(1, 4, 5, 33, 37, 1, 2, 0, 1, 1, true, false, false));     // pointwise stride 2
    v.push_back(cpu_edge(1, 5, 7, 6, 5, 3, 2, 4, 1, 1, true, false, false));       // pad > k: whole taps off the image
    v.push_back(cpu_edge(2, 6, 9, 3, 2, 5, 1, 2, 1, 1, false, true, true));        // map narrower than the kernel
    v.push_back(cpu_edge(1, 8, 12, 70, 3, 3, 2, 1, 1, 1, true, false, false));     // many output rows per column block
    v.push_back(cpu_edge(1, 3, 16, 64, 64, 3, 2, 1, 1, 1, true, false, false));    // stem at a larger size
    // The CUDA kernels' paths. 1x1 GEMMs: several M, N, K tiles; aligned and unaligned slices.
    add(conv_spec(2, 20, 20, 96, 160, 1, 1, 1), false, false, true);
    add(conv_spec(1, 13, 11, 64, 32, 1, 1, 1), true, true, true, 0, 0, 32, 64, 64, 0);
    add(conv_spec(3, 9, 17, 40, 72, 1, 1, 1), false, true, false, 8, 16, 8, 8, 0, 8);
    add(conv_spec(1, 7, 5, 21, 19, 1, 1, 1), true, false, true, 3, 5, 1, 2);       // odd channels and offsets
    add(conv_spec(2, 16, 16, 256, 136, 1, 1, 1), false, false, true);             // several K tiles
    add(conv_spec(1, 33, 35, 8, 8, 1, 1, 1), false, true, true);
    add(conv_spec(1, 4, 4, 768, 24, 1, 1, 1), false, false, false);
    // Large M (over 264 blocks of 128 rows): the 128-row tiles (N tiles of 32, 64 and 128).
    add(conv_spec(1, 184, 185, 64, 64, 1, 1, 1), false, true, true, 0, 64, 64, 0);
    add(conv_spec(1, 184, 184, 96, 136, 1, 1, 1), true, false, true);
    add(conv_spec(1, 185, 183, 16, 72, 3, 1, 1), false, false, true);
    add(conv_spec(1, 186, 184, 27, 24, 1, 1, 1), false, true, true, 3, 0, 8, 0);
    add(conv_spec(2, 130, 131, 24, 40, 3, 1, 1), false, false, true, 0, 0, 0, 0);
    // 3x3 stride 1 and 2, the stem (c_in 3), odd sizes.
    add(conv_spec(1, 17, 19, 32, 48, 3, 1, 1), false, true, true, 0, 32, 16, 0, 0, 0);
    add(conv_spec(2, 21, 15, 3, 16, 3, 2, 1), false, false, true);
    add(conv_spec(1, 13, 14, 3, 13, 3, 2, 1), true, true, true, 0, 1, 3, 0, 1, 2);   // small c_in, scalar stores
    add(conv_spec(1, 15, 15, 4, 24, 5, 1, 1), false, true, false, 0, 4, 8, 8, 8, 0); // small c_in, 16-byte stores
    add(conv_spec(2, 9, 10, 2, 64, 1, 1, 1), false, false, true);
    add(conv_spec(1, 40, 40, 3, 72, 3, 2, 1), false, false, true);                   // c_out > 64: fp16 stem kernel
    add(conv_spec(2, 33, 31, 3, 96, 3, 2, 1), false, true, true);                    // yolo12x's stem (96 channels)
    add(conv_spec(1, 20, 22, 3, 136, 3, 2, 1), true, false, true);                   // c_out > 128: implicit GEMM
    // Medium M: the 64x64 tiles with several blocks along M and N.
    add(conv_spec(1, 60, 75, 32, 48, 3, 1, 1), false, true, true);
    add(conv_spec(1, 50, 50, 64, 160, 1, 1, 1), true, false, true, 0, 0, 16, 16);
    add(conv_spec(1, 24, 24, 64, 64, 3, 2, 1), false, false, true, 64, 0, 0, 64);
    add(conv_spec(1, 10, 11, 13, 29, 3, 2, 1), true, true, true, 5, 0, 7, 3, 3, 1);
    add(conv_spec(1, 9, 9, 16, 8, 5, 1, 1), false, false, true);
    add(conv_spec(1, 12, 10, 24, 16, 3, 1, 1, 2), false, false, true);             // dilation 2
    add(conv_spec(1, 6, 6, 8, 8, 3, 1, 1), false, false, true);
    add(with_pad(conv_spec(1, 8, 9, 16, 24, 4, 2, 1), 1), false, true, true);     // even k
    add(with_pad(conv_spec(1, 7, 7, 16, 16, 3, 1, 1), 0), false, false, true);    // no padding
    // Grouped (turbo's Conv 3x3 groups 2 and 4) and a grouped 1x1.
    add(conv_spec(1, 16, 16, 64, 128, 3, 2, 2), false, false, true);
    add(conv_spec(2, 11, 13, 48, 32, 3, 1, 4), true, false, true, 16, 0, 0, 16);
    add(conv_spec(1, 9, 9, 36, 60, 1, 1, 3), false, true, false);
    add(conv_spec(1, 8, 8, 20, 20, 3, 1, 5), false, false, true);
    // Depthwise 3/5/7, stride 1 and 2, channels not multiples of 8, slices.
    add(conv_spec(2, 20, 20, 64, 64, 7, 1, 64), false, true, false);
    add(conv_spec(1, 13, 11, 40, 40, 5, 1, 40), false, false, true);
    add(conv_spec(1, 17, 15, 37, 37, 3, 1, 37), true, true, true, 3, 0, 5, 2, 1, 0);
    add(conv_spec(2, 16, 17, 24, 24, 3, 2, 24), false, false, true, 0, 0, 24, 8);
    add(conv_spec(1, 9, 9, 128, 128, 7, 1, 128), false, false, false, 128, 128, 128, 0);
    add(conv_spec(1, 5, 6, 8, 8, 5, 2, 8), false, false, true);
    return v;
  }();
  return specs;
}

std::vector<ConvSpec> conv_random_specs(int count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::function<int(int, int)> pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  std::vector<ConvSpec> v;
  while (static_cast<int>(v.size()) < count) {
    const int kind = pick(0, 3);  // 0: 1x1, 1: kxk, 2: grouped, 3: depthwise
    const int k = kind == 0 ? 1 : (kind == 3 ? 3 + 2 * pick(0, 2) : (pick(0, 4) == 0 ? 5 : 3));
    const int stride = pick(0, 2) == 0 ? 2 : 1;
    int groups = 1, ci = pick(1, 80), co = pick(1, 80);
    if (kind == 2) {
      groups = pick(2, 4);
      ci = groups * pick(1, 20);
      co = groups * pick(1, 20);
    } else if (kind == 3) {
      ci = co = groups = pick(2, 90);
    }
    ConvSpec s = conv_spec(pick(1, 2), pick(1, 19), pick(1, 19), ci, co, k, stride, groups);
    conv_random_options(s, pick, kConvSliceOffsets);
    v.push_back(s);
  }
  return v;
}

namespace {

std::vector<OpCase> conv_cases() {
  std::vector<OpCase> v;
  std::uint64_t seed = 1000;
  for (const ConvSpec& s : conv_fixed_specs()) v.push_back(conv_case(s, ConvShare::none, seed++));
  for (const ConvSpec& s : conv_random_specs(120, 12345)) v.push_back(conv_case(s, ConvShare::none, seed++));
  // Operands in one value: C2f's bottleneck (reads chunk j of the concat buffer, writes chunk j + 1,
  // with and without the shortcut) and an output beside its residual.
  v.push_back(conv_case(fused(conv_spec(2, 9, 11, 16, 16, 3, 1, 1), false, true, true), ConvShare::x_and_y, seed++));
  v.push_back(conv_case(fused(conv_spec(1, 12, 7, 13, 13, 1, 1, 1), true, false, true, 3, 0, 0, 5), ConvShare::x_and_y,
                        seed++));
  v.push_back(conv_case(fused(conv_spec(1, 10, 10, 32, 32, 7, 1, 32), false, true, false), ConvShare::x_and_y, seed++));
  v.push_back(conv_case(fused(conv_spec(2, 8, 8, 24, 24, 3, 1, 1), false, true, true, 0, 0, 8, 8, 8, 0),
                        ConvShare::residual_and_y, seed++));
  v.push_back(conv_case(fused(conv_spec(1, 11, 9, 19, 5, 3, 2, 1), true, true, true, 1, 2, 3, 1, 2, 0),
                        ConvShare::residual_and_y, seed++));
  // Large enough for the CUDA dispatcher's other fp16 kernels at their defaults: depthwise at stride 1
  // on dwconv_rows_f16 and at stride 2 on the tiled kernel, a narrow conv (c_out <= 16, K <= 160) on
  // conv2d_narrow_f16, a small-M long-K conv split over a cluster.
  v.push_back(conv_case(fused(conv_spec(4, 100, 100, 80, 80, 3, 1, 80), true, false, true, 0, 16, 8, 0),
                        ConvShare::none, seed++));
  v.push_back(conv_case(fused(conv_spec(5, 81, 79, 40, 40, 3, 2, 40), false, true, true), ConvShare::none, seed++));
  v.push_back(conv_case(fused(conv_spec(1, 150, 120, 16, 8, 3, 1, 1), false, true, true), ConvShare::none, seed++));
  v.push_back(conv_case(fused(conv_spec(2, 160, 160, 32, 16, 1, 1, 1), true, false, true, 0, 0, 8, 8), ConvShare::none,
                        seed++));
  v.push_back(conv_case(fused(conv_spec(1, 20, 20, 256, 64, 3, 1, 1), true, true, true, 0, 0, 64, 0), ConvShare::none,
                        seed++));
  v.push_back(conv_case(fused(conv_spec(2, 7, 9, 96, 40, 3, 2, 1), false, false, true), ConvShare::none, seed++));
  return v;
}

// =====================================================================================================
// ConvChain: 1x1 convs, each reading the whole output of the one before (ops.hpp, ConvChainAttrs)
// =====================================================================================================

// A slice of what the reference computed, as the operand of a later link.
Slice<const double> computed(const OpCase& c, const Expected& e, const graph::ValueRef& r) {
  const graph::Value& v = c.graph.values[static_cast<std::size_t>(r.value)];
  return Slice<const double>{e.values[static_cast<std::size_t>(r.value)].data(), v.c, r.c0, r.c, v.h, v.w, false};
}

// Link by link, in double throughout: a link reads the previous link's output (and a residual link's) as the
// reference computed it, never rounded; a residual from memory and link 0's input as they were before the op.
void reference_of(const graph::ConvChainOp& op, const OpCase& c, const HostState& in, Expected& e) {
  for (std::size_t i = 0; i < op.links.size(); ++i) {
    const graph::ConvOp& l = op.links[i];
    const float* w = c.tensors.at(l.weight).data();
    const float* b = c.tensors.at(l.bias).data();
    const float* g = l.gamma.empty() ? nullptr : c.tensors.at(l.gamma).data();
    const RefOut y = out(c, e, l.out);
    const bool from_link = op.attrs.residual_link[i] >= 0;
    if (i == 0)
      conv_of(l.attrs, view(c, in, l.in), w, b, g, view(c, in, l.residual), c.batch, y);
    else if (from_link)
      conv_of(l.attrs, computed(c, e, l.in), w, b, g, computed(c, e, l.residual), c.batch, y);
    else
      conv_of(l.attrs, computed(c, e, l.in), w, b, g, view(c, in, l.residual), c.batch, y);
  }
}

// The fp16 path of a fused chain kernel, emulated on the host: fp32 accumulation of the fp16 inputs and weights,
// each link's output rounded to fp16 before anything uses it (the next link, a later link's residual, memory),
// residuals from memory read as fp16. Per link, its output (batch, c_out, h, w).
std::vector<std::vector<float>> chain_f16(const graph::ConvChainOp& op, const OpCase& c, const HostState& in) {
  std::vector<std::vector<float>> outs;
  for (std::size_t i = 0; i < op.links.size(); ++i) {
    const graph::ConvOp& l = op.links[i];
    const graph::Value& yv = c.graph.values[static_cast<std::size_t>(l.out.value)];
    const int hw = yv.h * yv.w, ci = l.attrs.c_in, co = l.attrs.c_out;
    const std::size_t plane = static_cast<std::size_t>(hw);
    // The input: link 0's slice of the state, else the previous link's (rounded) output.
    const HostView x0 = view(c, in, l.in);
    auto x = [&](int b, int ch) {
      return i == 0 ? &x0.at(b, ch, 0, 0) : outs[i - 1].data() + (static_cast<std::size_t>(b) * ci + ch) * plane;
    };
    const int rl = op.attrs.residual_link[i];
    const HostView rm = view(c, in, l.residual);
    const float* w = c.tensors.at(l.weight).data();
    const float* bias = c.tensors.at(l.bias).data();
    const float* gamma = l.gamma.empty() ? nullptr : c.tensors.at(l.gamma).data();
    std::vector<float> y(static_cast<std::size_t>(c.batch) * co * plane), acc(plane);
    const int kk = l.attrs.k, pad = l.attrs.pad;
    for (int b = 0; b < c.batch; ++b)
      for (int o = 0; o < co; ++o) {
        std::fill(acc.begin(), acc.end(), 0.f);
        if (l.attrs.groups > 1) {  // a depthwise link 0: channel o's taps, in row-major tap order
          const float* xr = x(b, o);
          for (int p = 0; p < hw; ++p)
            for (int ky = 0; ky < kk; ++ky)
              for (int kx = 0; kx < kk; ++kx) {
                const int yy = p / yv.w + ky - pad, xx = p % yv.w + kx - pad;
                if (yy < 0 || yy >= yv.h || xx < 0 || xx >= yv.w) continue;
                acc[static_cast<std::size_t>(p)] +=
                    w[(static_cast<std::size_t>(o) * kk + ky) * kk + kx] * xr[static_cast<std::size_t>(yy * yv.w + xx)];
              }
        } else {
          for (int k = 0; k < ci; ++k) {
            const float wk = w[static_cast<std::size_t>(o) * ci + k];
            const float* xr = x(b, k);
            for (std::size_t p = 0; p < plane; ++p) acc[p] += wk * xr[p];
          }
        }
        float* yr = y.data() + (static_cast<std::size_t>(b) * co + o) * plane;
        for (std::size_t p = 0; p < plane; ++p) {
          float v = acc[p] + bias[o];
          if (l.attrs.silu()) v = v / (1.f + std::exp(-v));
          if (gamma) v *= gamma[o];
          if (rl >= 0) v += outs[static_cast<std::size_t>(rl)][(static_cast<std::size_t>(b) * co + o) * plane + p];
          else if (rm.valid()) v += rm.at(b, o, static_cast<int>(p) / yv.w, static_cast<int>(p) % yv.w);
          yr[p] = round_half(v);
        }
      }
    outs.push_back(std::move(y));
  }
  return outs;
}

// Rel L2 of a link's emulated output against the reference's values of its slice.
double chain_error(const OpCase& c, const Expected& e, const graph::ValueRef& r, const std::vector<float>& got) {
  const Slice<const double> want = computed(c, e, r);
  const std::size_t plane = static_cast<std::size_t>(want.h) * want.w;
  double num = 0, den = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int ch = 0; ch < r.c; ++ch)
      for (std::size_t p = 0; p < plane; ++p) {
        const double ref = want.at(b, ch, static_cast<int>(p) / want.w, static_cast<int>(p) % want.w);
        const double d = got[(static_cast<std::size_t>(b) * r.c + ch) * plane + p] - ref;
        num += d * d;
        den += ref * ref;
      }
  return std::sqrt(num / std::max(den, 1e-300));
}

constexpr int kNoResidual = -2, kMemoryResidual = -1;  // ChainLink::residual; >= 0: an earlier link's output

struct ChainLink {
  int c_out;
  bool silu = true, gamma = false;
  int residual = kNoResidual;
  bool stored = false;  // links before the last (the last always is)
  bool sliced = false;  // links before the last: the output is channels [16, 16 + c_out) of a value 32 wider (a
                        // concat buffer's slice, as A2C2f's cv1 writes), else a whole value of its own
};

// A chain case: link 0 reads channels [x_c0, x_c0 + c_in) of a value of x_c0 + c_in + x_extra, the last link
// writes [y_c0, y_c0 + c_out) of one of y_c0 + c_out + y_extra, each residual from memory is channels [r_c0,
// r_c0 + c) of a value of its own of r_c0 + c + r_extra; every other link output is a whole value of its own, or
// a slice of one (ChainLink::sliced).
struct ChainSpec {
  int batch = 1, h = 1, w = 1, c_in = 16;
  std::vector<ChainLink> links;
  int x_c0 = 0, x_extra = 0, y_c0 = 0, y_extra = 0, r_c0 = 8, r_extra = 8;
  int dw_k = 0;  // link 0 is a depthwise dw_k x dw_k conv (stride 1, pad dw_k / 2; links[0].c_out == c_in)
};

OpCase chain_case(const ChainSpec& s, std::uint64_t seed) {
  CaseBuilder cb(s.batch, seed);
  graph::ConvChainOp op;
  op.attrs.links = static_cast<int>(s.links.size());
  std::ostringstream m;
  m << "conv chain " << (s.dw_k ? "dw" + std::to_string(s.dw_k) + "x" + std::to_string(s.dw_k) : "1x1") << " "
    << s.c_in;
  for (const ChainLink& l : s.links) m << "->" << l.c_out;
  m << " " << s.h << "x" << s.w;
  graph::ValueRef x = cb.slice(s.x_c0, s.c_in, s.x_extra, s.h, s.w);
  m << " | x " << cb.operand(x);
  for (std::size_t i = 0; i < s.links.size(); ++i) {
    const ChainLink& l = s.links[i];
    const bool last = i + 1 == s.links.size();
    const std::string n = std::to_string(i);
    graph::ConvOp c;
    const graph::Act act = l.silu ? graph::Act::SiLU : graph::Act::None;
    const bool dw = i == 0 && s.dw_k > 0;
    c.attrs = dw ? graph::ConvAttrs{x.c, x.c, s.dw_k, 1, s.dw_k / 2, x.c, 1, act}
                 : graph::ConvAttrs{x.c, l.c_out, 1, 1, 0, 1, 1, act};
    c.in = x;
    const int fan_in = dw ? s.dw_k * s.dw_k : x.c;
    const float ws = 1.7f / std::sqrt(static_cast<float>(fan_in));
    c.weight = cb.tensor("w" + n, static_cast<std::size_t>(c.attrs.c_out) * fan_in, -ws, ws);
    c.bias = cb.tensor("b" + n, static_cast<std::size_t>(l.c_out), -0.5f, 0.5f);
    if (l.gamma) c.gamma = cb.tensor("gamma" + n, static_cast<std::size_t>(l.c_out), -0.8f, 1.5f);
    if (l.residual == kMemoryResidual) c.residual = cb.slice(s.r_c0, l.c_out, s.r_extra, s.h, s.w);
    if (l.residual >= 0) c.residual = op.links[static_cast<std::size_t>(l.residual)].out;
    c.out = last       ? cb.slice(s.y_c0, l.c_out, s.y_extra, s.h, s.w)
            : l.sliced ? cb.slice(16, l.c_out, 16, s.h, s.w)
                       : graph::ValueRef{cb.value(l.c_out, s.h, s.w), 0, l.c_out};
    op.attrs.residual_link[i] = l.residual >= 0 ? l.residual : -1;
    op.attrs.stored[i] = last || l.stored;
    m << " | link " << i << (l.silu ? " silu" : " no act") << (l.gamma ? " gamma" : "") << " residual "
      << (l.residual >= 0 ? "link " + std::to_string(l.residual) : cb.operand(c.residual)) << " out "
      << cb.operand(c.out) << (op.attrs.stored[i] ? " stored" : " scratch");
    x = c.out;
    op.links.push_back(c);
  }
  OpCase c = cb.op(m.str(), op, {});
  // fp16: each stored output within 3x the error of the emulated fp16 path (at least the usual bound).
  const HostState in = initial_state(c);
  const Expected e = expected(c, in);
  const std::vector<std::vector<float>> f16 = chain_f16(op, c, in);
  for (std::size_t i = 0; i < op.links.size(); ++i) {
    if (!op.attrs.stored[i]) continue;
    Tolerance t = rounded_once();
    t.f16_rel_l2 = 3 * chain_error(c, e, op.links[i].out, f16[i]);
    c.tol.push_back(t);
  }
  return c;
}

std::vector<OpCase> chain_cases() {
  using L = ChainLink;
  const int mem = kMemoryResidual;
  auto spec = [](int batch, int h, int w, int c_in, std::vector<L> links, int x_c0 = 0, int x_extra = 0,
                 int y_c0 = 0, int y_extra = 0) {
    ChainSpec s;
    s.batch = batch;
    s.h = h;
    s.w = w;
    s.c_in = c_in;
    s.links = std::move(links);
    s.x_c0 = x_c0;
    s.x_extra = x_extra;
    s.y_c0 = y_c0;
    s.y_extra = y_extra;
    return s;
  };
  auto dw = [](ChainSpec s, int k) {
    s.dw_k = k;
    return s;
  };
  // L{c_out, silu, gamma, residual, stored}
  std::vector<ChainSpec> specs = {
      // The A2C2f ABlock: attn.proj (+ the block input) -> mlp.0 -> mlp.1 (+ proj's output) -> the next qkv;
      // yolo12n's widths at P4 (40x40 at 640), then at P5 with the 128-channel blocks.
      spec(2, 40, 40, 64, {L{64, false, false, mem}, L{128}, L{64, false, false, 0, true}, L{192, false}}, 64, 128),
      spec(1, 20, 20, 128, {L{128, false, false, mem}, L{256}, L{128, false, false, 0, true}, L{384, false}}),
      // ... the last ABlock of a stage: mlp.1 into the concat buffer; yolo12l's layer-scale (gamma) block.
      spec(1, 13, 11, 64, {L{64, false, false, mem}, L{128}, L{64, false, false, 0}}, 0, 0, 128, 64),
      spec(2, 9, 10, 64, {L{64, false, true, mem}, L{80}, L{64, false, true, 0}}, 16, 0, 64, 0),
      // Detect's class branch: cv3.x.1.1 (SiLU) -> cv3.x.2 (no act), into the head's map.
      spec(2, 40, 40, 80, {L{80}, L{80, false}}),
      spec(1, 20, 20, 80, {L{80}, L{80, false}}, 0, 0, 0, 0),
      spec(3, 5, 7, 64, {L{64}, L{16, false}}, 8, 8, 0, 16),
      // Channel offsets of link 0's input: 0, 8, 16 and odd; outputs into slices of wider values.
      spec(1, 13, 11, 32, {L{48}, L{32}}, 3, 5, 16, 16),
      spec(2, 13, 11, 48, {L{32}, L{64}, L{16}}, 8, 0, 8, 8),
      spec(1, 5, 7, 16, {L{16}, L{16}, L{16}, L{16}}, 16, 16, 0, 0),
      spec(3, 1, 1, 32, {L{64, true, true}, L{32, false, false, mem}}, 3, 0, 3, 5),
      // Widths multiples of 8 only (the CUDA backend runs these link by link).
      spec(1, 13, 11, 24, {L{40}, L{56, false, false, mem}}, 0, 8, 8, 0),
      spec(2, 5, 7, 8, {L{24}, L{8, true, false, mem}, L{8, false, false, 1}}, 8, 0, 0, 8),
      spec(1, 40, 40, 72, {L{40, true, true}, L{72, false, false, mem}, L{40, true, false, 0}}, 0, 0, 0, 24),
      // A2C2f's cv1 into its slice of the concat buffer, read whole by the first block's qkv; a sliced output as a
      // later link's residual.
      spec(2, 20, 20, 128, {L{64, true, false, kNoResidual, true, true}, L{192, false}}),
      spec(1, 13, 11, 32, {L{64, true, false, kNoResidual, true, true}, L{32}, L{64, false, false, 0}}, 8, 0, 0, 8),
      // A depthwise link 0 (dw_k below): the ABlock's pe (7x7, + the attention output) before proj (+ the block input),
      // mlp.0, mlp.1 (+ proj's output) and the next qkv; Detect's 3x3 class convs; a 1x1 map (every tap but the
      // centre outside); a 5x5 with gamma.
      dw(spec(2, 20, 20, 64, {L{64, false, false, mem}, L{64, false, false, mem}, L{128},
                              L{64, false, false, 1, true}, L{192, false}}),
         7),
      dw(spec(3, 13, 11, 80, {L{80}, L{80}, L{80, false}}, 16, 0, 0, 16), 3),
      dw(spec(1, 1, 1, 32, {L{32, true, false, mem}, L{48}}), 3),
      dw(spec(2, 5, 7, 48, {L{48, true, true}, L{16, false, false, kNoResidual}, L{48, false, false, 0}}, 8, 8), 5),
      // Every residual kind: none, memory, each earlier link (link 1 from link 0 reads its own input again).
      spec(1, 13, 11, 32, {L{32}, L{32, true, false, 0}, L{32, false, true, 1}, L{32, true, false, 0}}),
      spec(2, 5, 7, 32, {L{64}, L{32, false}, L{64, true, false, 0}, L{64, false, true, 2}}, 0, 16, 16, 0),
      spec(1, 13, 11, 16, {L{48, true, false, mem}, L{16}, L{48, false, false, 0, true}, L{96, false, false, mem}}),
      // Stored intermediates (something after the chain reads them): every combination of two or three.
      spec(1, 5, 7, 32, {L{32, true, false, kNoResidual, true}, L{32}, L{32}}),
      spec(2, 13, 11, 32, {L{64, true, false, kNoResidual, true}, L{32, false, false, kNoResidual, true}, L{16}}),
      spec(1, 13, 11, 64, {L{16}, L{32, true, true, kNoResidual, true}, L{64}, L{64, false, false, mem}}, 0, 8),
      spec(1, 1, 1, 48,
           {L{48, true, false, kNoResidual, true}, L{48, true, false, 0, true}, L{48, true, false, 1, true},
            L{48, false, false, 2}}),
      // Many rows (partial 64-row tiles, many blocks), wide maps.
      spec(2, 40, 40, 64, {L{128}, L{64, false, false, mem}}, 16, 0),
      spec(1, 41, 39, 96, {L{96, true, true}, L{192}, L{96, false, false, 0}}, 3, 0, 0, 8),
      spec(3, 23, 17, 128, {L{64}, L{128, false, false, mem, true}, L{64, false}}),
      // Wide links (up to 384 channels).
      spec(1, 7, 9, 384, {L{128}, L{384, false, false, mem}}),
      spec(1, 5, 7, 256, {L{384}, L{256, false}, L{384, true, false, 0}}, 16, 0, 0, 0),
  };
  // Random chains up to 48 cases in all: 2..4 links of 8..128 channels (mostly multiples of 16), every fusion,
  // residual kind and offset.
  std::mt19937_64 rng(777);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int sizes[][2] = {{5, 7}, {13, 11}, {1, 1}, {9, 16}, {17, 3}, {40, 40}};
  while (specs.size() < 48) {
    const int* hw = sizes[pick(0, 5)];
    ChainSpec s = spec(pick(1, 3), hw[0], hw[1], 16 * pick(1, 8), {});
    if (pick(0, 3) == 0) s.c_in -= 8;
    const int n = pick(2, 4);
    const int big = hw[0] * hw[1] > 300 ? 8 : 16;  // at most 64 channels on the large maps (the reference's time)
    for (int i = 0; i < n; ++i) {
      L l{16 * pick(1, big / 2) - (pick(0, 3) == 0 ? 8 : 0)};
      l.silu = pick(0, 2) != 0;
      l.gamma = pick(0, 3) == 0;
      l.stored = pick(0, 3) == 0;
      const int r = pick(0, 3);  // 0, 1: none; 2: memory; 3: an earlier link (then as wide as it)
      if (r == 2) l.residual = mem;
      if (r == 3 && i > 0) {
        l.residual = pick(0, i - 1);
        l.c_out = s.links[static_cast<std::size_t>(l.residual)].c_out;
      }
      s.links.push_back(l);
    }
    const int offsets[] = {0, 8, 16, 3};
    s.x_c0 = offsets[pick(0, 3)];
    s.x_extra = 8 * pick(0, 2);
    s.y_c0 = offsets[pick(0, 3)];
    s.y_extra = 8 * pick(0, 2);
    s.r_c0 = offsets[pick(0, 3)];
    specs.push_back(s);
  }
  std::vector<OpCase> v;
  std::uint64_t seed = 7000;
  for (const ChainSpec& s : specs) v.push_back(chain_case(s, seed++));
  return v;
}

// =====================================================================================================
// Upsample, MaxPool, Copy: data movement (exact in every precision)
// =====================================================================================================

void reference_of(const graph::UpsampleOp& op, const OpCase& c, const HostState& in, Expected& e) {
  const HostView x = view(c, in, op.in);
  const RefOut y = out(c, e, op.out);
  const int f = op.attrs.factor;
  for (int b = 0; b < c.batch; ++b)
    for (int ch = 0; ch < y.c; ++ch)
      for (int yy = 0; yy < y.h; ++yy)
        for (int xx = 0; xx < y.w; ++xx) y.at(b, ch, yy, xx) = x.at(b, ch, yy / f, xx / f);
}

void reference_of(const graph::MaxPoolOp& op, const OpCase& c, const HostState& in, Expected& e) {
  const HostView x = view(c, in, op.in);
  const RefOut y = out(c, e, op.out);
  const int r = op.attrs.k / 2;
  for (int b = 0; b < c.batch; ++b)
    for (int ch = 0; ch < y.c; ++ch)
      for (int yy = 0; yy < y.h; ++yy)
        for (int xx = 0; xx < y.w; ++xx) {
          double m = -INFINITY;  // only real pixels compete: padding never wins
          for (int dy = -r; dy <= r; ++dy)
            for (int dx = -r; dx <= r; ++dx)
              if (yy + dy >= 0 && yy + dy < x.h && xx + dx >= 0 && xx + dx < x.w)
                m = std::max(m, static_cast<double>(x.at(b, ch, yy + dy, xx + dx)));
          y.at(b, ch, yy, xx) = m;
        }
}

void reference_of(const graph::CopyOp& op, const OpCase& c, const HostState& in, Expected& e) {
  const HostView x = view(c, in, op.in);
  const RefOut y = out(c, e, op.out);
  for (int b = 0; b < c.batch; ++b)
    for (int ch = 0; ch < y.c; ++ch)
      for (int yy = 0; yy < y.h; ++yy)
        for (int xx = 0; xx < y.w; ++xx) y.at(b, ch, yy, xx) = x.at(b, ch, yy, xx);
}

struct MapShape {
  int batch, h, w, c;
};
// Odd sizes, 1x1 maps, channel counts below, at and past a 16-byte vector of fp16 (8).
const MapShape kMapShapes[] = {{1, 20, 20, 64}, {2, 7, 5, 3}, {1, 40, 40, 17}, {3, 1, 1, 1},
                               {1, 13, 31, 96}, {2, 80, 80, 8}, {2, 3, 4, 5}};

// Where the slices of a data-movement case sit: unaligned (odd offsets and widths, the scalar
// kernels) or 16-byte aligned for fp16 (offsets and widths multiples of 8, the vector kernels).
struct MapSlices {
  int x_c0, x_extra, y_c0, y_extra;
};
MapSlices map_slices(int c, bool aligned) {
  const int c8 = (c + 7) / 8 * 8;
  return aligned ? MapSlices{8, c8 - c, 8, c8 - c + 8} : MapSlices{2, 3, 3, 4};
}

std::string map_what(const char* op, const MapShape& s, const CaseBuilder& cb, const graph::ValueRef& x,
                     const graph::ValueRef& y) {
  return std::string(op) + " " + std::to_string(s.c) + "ch " + std::to_string(s.h) + "x" + std::to_string(s.w) +
         " | x " + cb.operand(x) + " y " + cb.operand(y);
}

std::vector<OpCase> upsample_cases() {
  std::vector<OpCase> v;
  std::uint64_t seed = 2000;
  for (const MapShape& s : kMapShapes)
    for (int factor : {1, 2, 3})
      for (bool aligned : {false, true}) {
        const MapSlices p = map_slices(s.c, aligned);
        CaseBuilder cb(s.batch, seed++);
        const graph::ValueRef x = cb.slice(p.x_c0, s.c, p.x_extra, s.h, s.w);
        const graph::ValueRef y = cb.slice(p.y_c0, s.c, p.y_extra, s.h * factor, s.w * factor);
        const std::string what = map_what("upsample", s, cb, x, y) + " | factor " + std::to_string(factor);
        v.push_back(cb.op(what, graph::UpsampleOp{graph::UpsampleAttrs{factor}, x, y}, {exact()}));
      }
  return v;
}

std::vector<OpCase> maxpool_cases() {
  std::vector<OpCase> v;
  std::uint64_t seed = 3000;
  for (const MapShape& s : kMapShapes)
    for (int k : {1, 3, 5, 9}) {
      // All negative half the time: a zero padding would win if it were used.
      const Fill f = k % 4 == 1 ? Fill{-3.f, -0.5f} : Fill{};
      CaseBuilder cb(s.batch, seed++);
      const graph::ValueRef x = cb.slice(4, s.c, 0, s.h, s.w, f);
      const graph::ValueRef y = cb.slice(s.c, s.c, 2 * s.c, s.h, s.w);
      const std::string what = map_what("maxpool", s, cb, x, y) + " | k " + std::to_string(k);
      v.push_back(cb.op(what, graph::MaxPoolOp{graph::MaxPoolAttrs{k}, x, y}, {exact()}));
    }
  // SPPF: each pool reads chunk j of the concat buffer and writes chunk j + 1.
  for (const MapShape& s : {MapShape{2, 11, 9, 8}, MapShape{1, 20, 20, 13}}) {
    CaseBuilder cb(s.batch, seed++);
    const int cat = cb.value(4 * s.c, s.h, s.w, Fill{-3.f, -0.5f});
    const graph::ValueRef x{cat, s.c, s.c}, y{cat, 2 * s.c, s.c};
    v.push_back(cb.op(map_what("maxpool", s, cb, x, y) + " | k 5, x and y share a value",
                      graph::MaxPoolOp{graph::MaxPoolAttrs{5}, x, y}, {exact()}));
  }
  return v;
}

std::vector<OpCase> copy_cases() {
  std::vector<OpCase> v;
  std::uint64_t seed = 4000;
  for (const MapShape& s : kMapShapes)
    for (bool aligned : {false, true}) {
      const int c8 = (s.c + 7) / 8 * 8;
      CaseBuilder cb(s.batch, seed++);
      const graph::ValueRef x = aligned ? cb.slice(c8, s.c, 2 * c8 - s.c, s.h, s.w) : cb.slice(s.c, s.c, s.c, s.h, s.w);
      const graph::ValueRef y = aligned ? cb.slice(8, s.c, c8 - s.c, s.h, s.w) : cb.slice(s.c + 1, s.c, 0, s.h, s.w);
      v.push_back(cb.op(map_what("copy", s, cb, x, y), graph::CopyOp{x, y}, {exact()}));
    }
  {  // both slices of one value
    CaseBuilder cb(2, seed++);
    const int buf = cb.value(30, 6, 7);
    const graph::ValueRef x{buf, 4, 11}, y{buf, 17, 11};
    v.push_back(cb.op(map_what("copy", MapShape{2, 6, 7, 11}, cb, x, y) + " | x and y share a value",
                      graph::CopyOp{x, y}, {exact()}));
  }
  return v;
}

}  // namespace

// =====================================================================================================
// Attention
// =====================================================================================================

void attention_reference(const graph::AttentionAttrs& a, const HostView& q, const HostView& k, const HostView& v,
                         int batch, const RefOut& out, const RefOut& v_image, float (*round_p)(float)) {
  const int W = out.w, N = out.h * out.w, n = N / a.area;
  // Per image and head, the tokens' q, k and v rows (token-major copies of the views).
  std::vector<double> qt(static_cast<std::size_t>(N) * a.dqk), kt(qt.size()), vt(static_cast<std::size_t>(N) * a.dv);
  std::vector<double> p(static_cast<std::size_t>(n));
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < a.heads; ++h) {
      for (int t = 0; t < N; ++t) {
        for (int d = 0; d < a.dqk; ++d) {
          qt[static_cast<std::size_t>(t) * a.dqk + d] = q.at(b, h * a.q_head_stride + d, t / W, t % W);
          kt[static_cast<std::size_t>(t) * a.dqk + d] = k.at(b, h * a.k_head_stride + d, t / W, t % W);
        }
        for (int d = 0; d < a.dv; ++d) vt[static_cast<std::size_t>(t) * a.dv + d] = v.at(b, h * a.v_head_stride + d, t / W, t % W);
      }
      for (int area = 0; area < a.area; ++area)
        for (int i = 0; i < n; ++i) {
          const int ti = area * n + i;
          double mx = -INFINITY;
          for (int j = 0; j < n; ++j) {
            const double* qi = &qt[static_cast<std::size_t>(ti) * a.dqk];
            const double* kj = &kt[static_cast<std::size_t>(area * n + j) * a.dqk];
            double dot = 0;
            for (int d = 0; d < a.dqk; ++d) dot += qi[d] * kj[d];
            p[j] = a.scale * dot;
            mx = std::max(mx, p[j]);
          }
          double sum = 0;
          for (int j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - mx));
          for (int j = 0; j < n; ++j) {
            p[j] /= sum;
            if (round_p) p[j] = round_p(static_cast<float>(p[j]));
          }
          for (int d = 0; d < a.dv; ++d) {
            double acc = 0;
            for (int j = 0; j < n; ++j) acc += p[j] * vt[static_cast<std::size_t>(area * n + j) * a.dv + d];
            out.at(b, h * a.dv + d, ti / W, ti % W) = acc;
            if (v_image.valid()) v_image.at(b, h * a.dv + d, ti / W, ti % W) = vt[static_cast<std::size_t>(ti) * a.dv + d];
          }
        }
    }
}

namespace {

void reference_of(const graph::AttentionOp& op, const OpCase& c, const HostState& in, Expected& e) {
  attention_reference(op.attrs, view(c, in, op.q), view(c, in, op.k), view(c, in, op.v), c.batch, out(c, e, op.out),
                      out(c, e, op.v_image));
}

// The three layouts the builder emits (ops.hpp, AttentionAttrs).
enum class AttnLayout { yolo12, turbo, psa };

struct AttnShape {
  int batch, h, w, area, heads;
};

// One attention case. pad: channels past the last head in every value; off: channel offset of the
// views; sharp: scale 2.5 / sqrt(dqk) (a peaked softmax) rather than the model's 1 / sqrt(dqk); dqk:
// the q and k dims per head (32 in every model; PSA's dv is twice it).
OpCase attention_case(const AttnShape& s, AttnLayout layout, int pad, int off, bool sharp, std::uint64_t seed,
                      int dqk = 32) {
  graph::AttentionAttrs a;
  a.heads = s.heads;
  a.area = s.area;
  a.dqk = dqk;
  a.dv = layout == AttnLayout::psa ? 2 * dqk : 32;
  const int stride = layout == AttnLayout::turbo ? 32 : 2 * a.dqk + a.dv;
  a.q_head_stride = a.k_head_stride = a.v_head_stride = stride;
  a.scale = (sharp ? 2.5f : 1.f) / std::sqrt(static_cast<float>(a.dqk));
  CaseBuilder cb(s.batch, seed);
  const Fill f{-1.5f, 1.5f};
  const int span_qk = (s.heads - 1) * stride + a.dqk, span_v = (s.heads - 1) * stride + a.dv;
  graph::AttentionOp op;
  op.attrs = a;
  const char* name = "yolo12";
  if (layout == AttnLayout::turbo) {  // qk: every head's q, then every head's k; v its own value
    name = "turbo";
    const int qk = cb.value(off + 2 * s.heads * 32 + pad, s.h, s.w, f);
    op.q = {qk, off, span_qk};
    op.k = {qk, off + s.heads * 32, span_qk};
    op.v = cb.slice(off, span_v, pad, s.h, s.w, f);
  } else {  // per head q, k, v side by side in one value
    if (layout == AttnLayout::psa) name = "psa";
    const int qkv = cb.value(off + s.heads * stride + pad, s.h, s.w, f);
    op.q = {qkv, off, span_qk};
    op.k = {qkv, off + a.dqk, span_qk};
    op.v = {qkv, off + 2 * a.dqk, span_v};
  }
  op.out = cb.slice(off, s.heads * a.dv, pad, s.h, s.w);
  if (layout != AttnLayout::turbo) op.v_image = cb.slice(2 * off, s.heads * a.dv, pad, s.h, s.w);
  Tolerance t = rounded_once();
  t.f16_factor = 4;  // a naive fp16 attention also rounds the probabilities: about twice the error
  std::ostringstream m;
  m << "attention " << name << " " << s.h << "x" << s.w << " area " << s.area << " (" << s.h * s.w / s.area
    << " tokens each) heads " << s.heads << " dv " << a.dv << " scale " << a.scale << " | q " << cb.operand(op.q)
    << " k " << cb.operand(op.k) << " v " << cb.operand(op.v) << " out " << cb.operand(op.out) << " v_image "
    << cb.operand(op.v_image);
  OpCase c = cb.op(m.str(), op, {t, exact()});
  c.cuda_rejects = dqk != 32;
  return c;
}

std::vector<OpCase> attention_cases() {
  const AttnShape shapes[] = {
      // batch, H, W, area, heads
      {1, 6, 10, 4, 1},   // 15 tokens per area: not whole rows, under one tile
      {2, 6, 10, 4, 3},   // the same, 2 images
      {1, 1, 3, 1, 1},    // 3 tokens
      {2, 5, 7, 1, 4},    // 35
      {1, 8, 9, 2, 5},    // 36 per area, an area ends mid-row
      {1, 16, 8, 2, 2},   // exactly 64 per area
      {3, 10, 13, 2, 6},  // 65 per area: one key past a tile
      {2, 12, 11, 4, 3},  // 33 per area
      {2, 16, 10, 2, 1},  // 80 per area: one flash tile exactly
      {1, 9, 18, 2, 2},   // 81: one past it
      {1, 7, 23, 1, 3},   // 161: two tiles and one key
      {1, 20, 20, 1, 2},  // P5 at 640: 400 tokens
      {1, 40, 40, 4, 2},  // P4 at 640: area 4, 400 tokens per area
  };
  std::vector<OpCase> v;
  std::uint64_t seed = 5000;
  int i = 0;
  for (AttnLayout layout : {AttnLayout::yolo12, AttnLayout::turbo, AttnLayout::psa})
    for (const AttnShape& s : shapes)
      for (bool aligned : {true, false}) {
        // Aligned: 16-byte views in fp16 (the tensor-core kernels); unaligned: odd offsets (rowwise).
        v.push_back(attention_case(s, layout, aligned ? 8 : 5, aligned ? 16 : 3, i++ % 3 != 0, seed++));
      }
  // PSA with smaller heads: the CPU runs them, the CUDA kernels take dqk 32 only (and say so).
  v.push_back(attention_case({1, 4, 9, 1, 1}, AttnLayout::psa, 3, 2, false, seed++, 16));
  v.push_back(attention_case({1, 10, 13, 2, 4}, AttnLayout::psa, 3, 2, true, seed++, 8));
  return v;
}

// =====================================================================================================
// The Detect head: DFL box decode and sigmoid class scores into the raw head (graph.hpp, DetectHead)
// =====================================================================================================

void detect_reference(const OpCase& c, const HostState& in, std::vector<double>& raw) {
  const graph::DetectHead& d = c.graph.head.detect;
  const int nc = d.attrs.nc, rm = d.attrs.reg_max;
  const std::size_t A = static_cast<std::size_t>(d.anchors);
  raw.assign(static_cast<std::size_t>(c.batch) * (4 + nc) * A, 0.0);
  for (int b = 0; b < c.batch; ++b) {
    std::size_t a = 0;
    for (std::size_t l = 0; l < d.box.size(); ++l) {
      const HostView box = view(c, in, d.box[l]), cls = view(c, in, d.cls[l]);
      for (int y = 0; y < box.h; ++y)
        for (int x = 0; x < box.w; ++x, ++a) {
          double dist[4];  // left, top, right, bottom: the expected bin of a softmax over reg_max bins
          for (int side = 0; side < 4; ++side) {
            double mx = -INFINITY, sum = 0, ex = 0;
            for (int i = 0; i < rm; ++i) mx = std::max(mx, static_cast<double>(box.at(b, side * rm + i, y, x)));
            for (int i = 0; i < rm; ++i) {
              const double e = std::exp(box.at(b, side * rm + i, y, x) - mx);
              sum += e;
              ex += i * e;
            }
            dist[side] = ex / sum;
          }
          const double ax = x + 0.5, ay = y + 0.5, s = d.strides[l];
          const double x1 = ax - dist[0], y1 = ay - dist[1], x2 = ax + dist[2], y2 = ay + dist[3];
          double* col = raw.data() + static_cast<std::size_t>(b) * (4 + nc) * A + a;
          col[0] = (x1 + x2) / 2 * s;
          col[A] = (y1 + y2) / 2 * s;
          col[2 * A] = (x2 - x1) * s;
          col[3 * A] = (y2 - y1) * s;
          for (int k = 0; k < nc; ++k) col[(4 + static_cast<std::size_t>(k)) * A] = 1.0 / (1.0 + std::exp(-cls.at(b, k, y, x)));
        }
    }
  }
}

struct HeadShape {
  int batch, input_h, input_w, nc, reg_max;
  std::vector<int> strides;
  int box_c0, box_extra, cls_c0, cls_extra;
  bool one_value;  // box and cls slices of one value per level
};

OpCase head_case(const HeadShape& s, std::uint64_t seed) {
  CaseBuilder cb(s.batch, seed);
  graph::HeadSpec h;
  h.kind = graph::HeadKind::Detect;
  graph::DetectHead& d = h.detect;
  d.attrs.nc = s.nc;
  d.attrs.reg_max = s.reg_max;
  d.strides = s.strides;
  const Fill box_fill{-4.f, 4.f}, cls_fill{-5.f, 3.f};
  std::ostringstream m;
  m << "detect head nc " << s.nc << " reg_max " << s.reg_max << " input " << s.input_h << "x" << s.input_w
    << " levels";
  for (int stride : s.strides) {
    const int gh = s.input_h / stride, gw = s.input_w / stride;
    const int box_c = 4 * s.reg_max;
    if (s.one_value) {
      const int v = cb.value(s.box_c0 + box_c + s.cls_c0 + s.nc + s.cls_extra, gh, gw, box_fill);
      d.box.push_back({v, s.box_c0, box_c});
      d.cls.push_back({v, s.box_c0 + box_c + s.cls_c0, s.nc});
    } else {
      d.box.push_back(cb.slice(s.box_c0, box_c, s.box_extra, gh, gw, box_fill));
      d.cls.push_back(cb.slice(s.cls_c0, s.nc, s.cls_extra, gh, gw, cls_fill));
    }
    d.anchors += gh * gw;
    m << " s" << stride << " " << gh << "x" << gw << " box " << cb.operand(d.box.back()) << " cls "
      << cb.operand(d.cls.back());
  }
  Tolerance t;  // the raw head is fp32 on every backend
  t.rel_l2 = 1e-5;
  t.max_rel = 2e-5;  // a coordinate near 0 is the difference of two numbers up to the input size
  return cb.head(m.str(), h, s.input_h, s.input_w, t);
}

std::vector<OpCase> head_cases() {
  const HeadShape shapes[] = {
      {2, 64, 96, 5, 16, {8, 16, 32}, 1, 1, 0, 0, false},
      {2, 64, 96, 5, 4, {8, 16, 32}, 1, 1, 0, 0, false},
      {3, 64, 96, 5, 16, {8, 16, 32}, 3, 2, 1, 1, false},
      {2, 640, 640, 80, 16, {8, 16, 32}, 0, 0, 0, 0, false},   // yolo12 at 640
      {1, 96, 64, 3, 8, {8, 16, 32}, 2, 0, 3, 1, true},         // box and cls in one value
      {2, 64, 64, 1, 16, {16, 32}, 0, 0, 0, 0, false},          // two levels, one class
      {1, 128, 128, 7, 16, {8, 16, 32, 64}, 5, 3, 2, 2, false},  // four levels
  };
  std::vector<OpCase> v;
  std::uint64_t seed = 6000;
  for (const HeadShape& s : shapes) v.push_back(head_case(s, seed++));
  return v;
}

void append(std::vector<OpCase>& to, std::vector<OpCase> from) {
  for (OpCase& c : from) to.push_back(std::move(c));
}

}  // namespace

// =====================================================================================================

Expected expected(const OpCase& c, const HostState& in) {
  Expected e;
  for (const std::vector<float>& v : in.values) e.values.emplace_back(v.begin(), v.end());
  if (c.head()) detect_reference(c, in, e.raw);
  else graph::visit_op(c.graph.ops[0], [&](const auto& op) { reference_of(op, c, in, e); });
  return e;
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> v;
    append(v, conv_cases());
    append(v, chain_cases());
    append(v, upsample_cases());
    append(v, maxpool_cases());
    append(v, copy_cases());
    append(v, attention_cases());
    append(v, head_cases());
    return v;
  }();
  return cases;
}

}  // namespace yolo12::test::ops
