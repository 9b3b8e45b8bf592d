// tests/gpu/test_conv_chain.cu - conv2d_chain_f16 (src/backends/cuda/conv_chain.cu) on the GPU.
//
// Each case is a chain of 1x1 convs with its views at channel offsets of wider buffers, NaN around every written
// slice. The kernel runs with every tile (16, 32, 64, 128 rows) and stage count that fits, and must
//   - match a host computation of the links one by one in double, with every link's output rounded to half as the
//     kernel rounds it (rel L2 and every element within a bound),
//   - match the same links run one by one by conv2d_forward (the fp16 conv kernels; outputs of scratch links in
//     memory), within the same bounds,
//   - leave every element outside the stored slices NaN (no channel outside the view, nothing of a scratch link, and
//     none of the kGuardRows rows after each output's M rows).
// Also chain_plan's choices and refusals, and the whole model under the variant conv_chain: the fp16 executor fuses
// yolo12n's and yolo12l_narrow's chains and its raw head stays within the fp16 parity bound, with kernel tuning too. The op suite's ConvChain cases (tests/ops) run it through the executor's
// bind; test_chain_layout (tests/unit) replays its schedule on the CPU.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/chain_layout.hpp"
#include "backends/cuda/common.cuh"
#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_chain.cuh"
#include "backends/cuda/conv_detail.cuh"
#include "backends/cuda/executor.cuh"
#include "catch.hpp"
#include "core/half.hpp"
#include "model/model_file.hpp"
#include "model_fixtures.hpp"
#include "support.hpp"
#include "yolo12/yolo12.hpp"

using namespace yolo12;
using namespace yolo12::cuda;
namespace ch = yolo12::cuda::chain;

namespace {

constexpr std::uint16_t kNaNHalf = 0x7e00;
constexpr int kGuardRows = 130;  // NaN rows after every output view's M rows: a store past row M lands in them

struct LinkSpec {
  int c_out = 0;
  bool silu = true, gamma = false;
  int residual_link = -1;     // an earlier link's output
  bool mem_residual = false;  // a residual from memory
  bool stored = false;        // the last link always is
};

struct ChainCase {
  int batch = 1, h = 1, w = 1, c_in = 0;
  int x_c0 = 0, x_extra = 0;  // x is channels [x_c0, x_c0 + c_in) of a buffer of x_c0 + c_in + x_extra
  int dw_k = 0;               // link 0 is a depthwise dw_k x dw_k conv (its c_out == c_in)
  std::vector<LinkSpec> links;
  std::string describe() const {
    std::string s = std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " " +
                    (dw_k ? "dw" + std::to_string(dw_k) + " " : "") + std::to_string(c_in) + " (x at " +
                    std::to_string(x_c0) + "+" + std::to_string(x_extra) + ")";
    for (std::size_t i = 0; i < links.size(); ++i) {
      const LinkSpec& l = links[i];
      s += " -> " + std::to_string(l.c_out) + (l.silu ? "" : " noact") + (l.gamma ? " gamma" : "");
      if (l.residual_link >= 0) s += " +link" + std::to_string(l.residual_link);
      if (l.mem_residual) s += " +mem";
      if (l.stored || i + 1 == links.size()) s += " (stored)";
    }
    return s;
  }
};

float rnd_half(float v) { return half_to_float(float_to_half(v)); }

// Host data: fp16-representable floats.
struct HostChain {
  long long m = 0;
  int ldx = 0;
  std::vector<float> x;                        // (m, ldx)
  std::vector<std::vector<float>> w, bias, gamma;  // (c_out, c_in) OIHW for 1x1, (c, 1, k, k) depthwise; (c_out)
  std::vector<std::vector<float>> res;         // (m, ldr) where mem_residual
  std::vector<int> ldr, ldy, y_c0;             // outputs at channels [y_c0, y_c0 + c_out) of ldy
};

HostChain make_host(const ChainCase& c, std::mt19937& rng) {
  auto val = [&](float s) { return rnd_half(s * std::uniform_real_distribution<float>(-1.f, 1.f)(rng)); };
  HostChain h;
  h.m = 1LL * c.batch * c.h * c.w;
  h.ldx = c.x_c0 + c.c_in + c.x_extra;
  h.x.resize(static_cast<std::size_t>(h.m * h.ldx));
  for (float& v : h.x) v = val(1.f);
  int ci = c.c_in;
  for (std::size_t i = 0; i < c.links.size(); ++i) {
    const LinkSpec& l = c.links[i];
    const int fan_in = i == 0 && c.dw_k ? c.dw_k * c.dw_k : ci;  // a depthwise link 0: (c, 1, k, k)
    const float scale = 1.f / std::sqrt(static_cast<float>(fan_in));
    std::vector<float> w(static_cast<std::size_t>(l.c_out) * fan_in), b(static_cast<std::size_t>(l.c_out)), g;
    for (float& v : w) v = val(2.f * scale);
    for (float& v : b) v = val(0.5f);
    if (l.gamma) {
      g.resize(static_cast<std::size_t>(l.c_out));
      for (float& v : g) v = val(1.f);
    }
    h.w.push_back(w);
    h.bias.push_back(b);
    h.gamma.push_back(g);
    const int ldr = l.mem_residual ? l.c_out + 16 : 0;
    std::vector<float> r(static_cast<std::size_t>(h.m * ldr));
    for (float& v : r) v = val(1.f);
    h.res.push_back(r);
    h.ldr.push_back(ldr);
    h.y_c0.push_back(l.c_out % 16 == 0 ? 16 : 8);
    h.ldy.push_back(l.c_out + 32);
    ci = l.c_out;
  }
  return h;
}

// The links one by one in double, each link's output rounded to half: (m, c_out) per link.
std::vector<std::vector<double>> reference(const ChainCase& c, const HostChain& h) {
  std::vector<std::vector<double>> y(c.links.size());
  int ci = c.c_in;
  for (std::size_t i = 0; i < c.links.size(); ++i) {
    const LinkSpec& l = c.links[i];
    y[i].resize(static_cast<std::size_t>(h.m * l.c_out));
    for (long long r = 0; r < h.m; ++r)
      for (int n = 0; n < l.c_out; ++n) {
        double acc = 0;
        if (i == 0 && c.dw_k) {  // depthwise: channel n's taps, zero outside the map
          const long long hw = 1LL * c.h * c.w, b = r / hw;
          const int y0 = static_cast<int>(r - b * hw) / c.w, x0 = static_cast<int>(r - b * hw) % c.w, k = c.dw_k;
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int yy = y0 + ky - k / 2, xx = x0 + kx - k / 2;
              if (yy < 0 || yy >= c.h || xx < 0 || xx >= c.w) continue;
              acc += static_cast<double>(h.x[static_cast<std::size_t>(((b * c.h + yy) * c.w + xx) * h.ldx + c.x_c0 + n)]) *
                     h.w[0][(static_cast<std::size_t>(n) * k + ky) * k + kx];
            }
        } else {
          for (int k = 0; k < ci; ++k) {
            const double a = i == 0 ? h.x[static_cast<std::size_t>(r * h.ldx + c.x_c0 + k)]
                                    : y[i - 1][static_cast<std::size_t>(r * ci + k)];
            acc += a * h.w[i][static_cast<std::size_t>(n) * ci + k];
          }
        }
        double v = acc + h.bias[i][static_cast<std::size_t>(n)];
        if (l.silu) v = v / (1.0 + std::exp(-v));
        if (l.gamma) v *= h.gamma[i][static_cast<std::size_t>(n)];
        if (l.residual_link >= 0) v += y[static_cast<std::size_t>(l.residual_link)][static_cast<std::size_t>(r * l.c_out + n)];
        if (l.mem_residual) v += h.res[i][static_cast<std::size_t>(r * h.ldr[i] + n)];
        y[i][static_cast<std::size_t>(r * l.c_out + n)] = rnd_half(static_cast<float>(v));
      }
    ci = l.c_out;
  }
  return y;
}

DeviceBuffer upload_halves(const std::vector<float>& v) {
  std::vector<std::uint16_t> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = std::isnan(v[i]) ? kNaNHalf : float_to_half(v[i]);
  DeviceBuffer d(std::max<std::size_t>(h.size(), 8) * 2);
  YOLO12_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}
DeviceBuffer upload_floats(const std::vector<float>& v) {
  DeviceBuffer d(std::max<std::size_t>(v.size(), 4) * 4);
  if (!v.empty()) YOLO12_CUDA_CHECK(cudaMemcpy(d.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  return d;
}
std::vector<float> download_halves(const DeviceBuffer& d, std::size_t n) {
  std::vector<std::uint16_t> h(n);
  YOLO12_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = half_to_float(h[i]);
  return f;
}

// The device side of a case: buffers and the kernel's params (layout unset).
struct DeviceChain {
  DeviceBuffer x;
  std::vector<DeviceBuffer> w, bias, gamma, res, y;
  ConvChainParams p;
  std::vector<ConvParams<__half>> convs;  // the links as plain convs, for conv2d_forward
};

ConvShape link_shape(const ChainCase& c, int ci, int co, int dw_k = 0) {
  ConvShape s;
  s.c_in = ci;
  s.c_out = co;
  s.k = dw_k ? dw_k : 1;
  s.stride = 1;
  s.pad = dw_k / 2;
  s.groups = dw_k ? ci : 1;
  s.batch = c.batch;
  s.h = c.h;
  s.w_in = c.w;
  s.ho = c.h;
  s.wo = c.w;
  return s;
}

void make_device(const ChainCase& c, const HostChain& h, DeviceChain& d) {
  d.x = upload_halves(h.x);
  ConvChainParams& p = d.p;
  p.links = static_cast<int>(c.links.size());
  p.batch = c.batch;
  p.h = c.h;
  p.w = c.w;
  p.dw_k = c.dw_k;
  p.c[0] = c.c_in;
  p.x = d.x.as<__half>() + c.x_c0;
  p.ldx = h.ldx;
  int ci = c.c_in;
  for (std::size_t i = 0; i < c.links.size(); ++i) {
    const LinkSpec& l = c.links[i];
    const bool stored = l.stored || i + 1 == c.links.size();
    const bool dw = i == 0 && c.dw_k;
    const ConvShape s = link_shape(c, ci, l.c_out, dw ? c.dw_k : 0);
    std::vector<std::uint16_t> packed(conv_packed_weight_elems(s));
    conv_pack_weights<__half>(s, h.w[i].data(), reinterpret_cast<__half*>(packed.data()));
    DeviceBuffer wd(packed.size() * 2);
    YOLO12_CUDA_CHECK(cudaMemcpy(wd.get(), packed.data(), packed.size() * 2, cudaMemcpyHostToDevice));
    d.w.push_back(std::move(wd));
    d.bias.push_back(upload_floats(h.bias[i]));
    d.gamma.push_back(upload_floats(h.gamma[i]));
    d.res.push_back(upload_halves(h.res[i]));
    d.y.push_back(upload_halves(std::vector<float>(static_cast<std::size_t>((h.m + kGuardRows) * h.ldy[i]), NAN)));
    p.c[i + 1] = l.c_out;
    p.residual_link[i] = l.residual_link;
    p.stored[i] = stored;
    ChainLinkParams& k = p.link[i];
    k.w = d.w.back().as<__half>();
    k.k_pad = dw ? static_cast<int>(packed.size()) / (c.dw_k * c.dw_k) : static_cast<int>(packed.size()) / l.c_out;
    k.bias = d.bias.back().as<float>();
    k.gamma = l.gamma ? d.gamma.back().as<float>() : nullptr;
    k.silu = l.silu;
    k.residual = l.mem_residual ? d.res.back().as<__half>() : nullptr;
    k.ldr = h.ldr[i];
    k.y = stored ? d.y.back().as<__half>() + h.y_c0[i] : nullptr;
    k.ldy = h.ldy[i];
    // The plain conv of this link: it writes every link's output (scratch ones too) into y[i].
    ConvParams<__half> q;
    static_cast<ConvShape&>(q) = s;
    q.act = l.silu ? graph::Act::SiLU : graph::Act::None;
    q.x = i == 0 ? p.x : d.convs[i - 1].y;
    q.ldx = i == 0 ? h.ldx : h.ldy[i - 1];
    q.w = k.w;
    q.bias = k.bias;
    q.gamma = k.gamma;
    q.residual = l.residual_link >= 0 ? d.convs[static_cast<std::size_t>(l.residual_link)].y : k.residual;
    q.ldr = l.residual_link >= 0 ? h.ldy[static_cast<std::size_t>(l.residual_link)] : k.ldr;
    q.y = d.y.back().as<__half>() + h.y_c0[i];
    q.ldy = h.ldy[i];
    d.convs.push_back(q);
    ci = l.c_out;
  }
}

struct Error2 {
  double rel_l2 = 0, max_excess = 0;  // max over elements of |got - ref| / (|ref| + 1)
  long long bad_guards = 0;
};

// Compares the stored slices of every link with `want` (per link (m, c_out); links not stored: every element NaN).
Error2 compare(const ChainCase& c, const HostChain& h, const DeviceChain& d,
               const std::vector<std::vector<double>>& want) {
  Error2 e;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < c.links.size(); ++i) {
    const LinkSpec& l = c.links[i];
    const bool stored = l.stored || i + 1 == c.links.size();
    const std::vector<float> got =
        download_halves(d.y[i], static_cast<std::size_t>((h.m + kGuardRows) * h.ldy[i]));
    for (long long r = 0; r < h.m + kGuardRows; ++r)
      for (int ch_ = 0; ch_ < h.ldy[i]; ++ch_) {
        const float g = got[static_cast<std::size_t>(r * h.ldy[i] + ch_)];
        const int n = ch_ - h.y_c0[i];
        if (!stored || n < 0 || n >= l.c_out || r >= h.m) {
          e.bad_guards += std::isnan(g) ? 0 : 1;
          continue;
        }
        const double ref = want[i][static_cast<std::size_t>(r * l.c_out + n)];
        if (std::isnan(g)) {
          e.max_excess = INFINITY;
          continue;
        }
        num += (g - ref) * (g - ref);
        den += ref * ref;
        e.max_excess = std::max(e.max_excess, std::fabs(g - ref) / (std::fabs(ref) + 1.0));
      }
  }
  e.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
  return e;
}

// The plain convs' outputs of every link, as `want` for compare(): (m, c_out) per link.
std::vector<std::vector<double>> run_links(const ChainCase& c, const HostChain& h, const DeviceChain& d) {
  for (const ConvParams<__half>& q : d.convs) conv2d_forward<__half>(q, nullptr);
  YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::vector<double>> out(c.links.size());
  for (std::size_t i = 0; i < c.links.size(); ++i) {
    const std::vector<float> got = download_halves(d.y[i], static_cast<std::size_t>(h.m * h.ldy[i]));
    const int co = c.links[i].c_out;
    out[i].resize(static_cast<std::size_t>(h.m * co));
    for (long long r = 0; r < h.m; ++r)
      for (int n = 0; n < co; ++n)
        out[i][static_cast<std::size_t>(r * co + n)] = got[static_cast<std::size_t>(r * h.ldy[i] + h.y_c0[i] + n)];
  }
  return out;
}

void reset_outputs(const HostChain& h, DeviceChain& d) {
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    std::vector<std::uint16_t> nan(static_cast<std::size_t>((h.m + kGuardRows) * h.ldy[i]), kNaNHalf);
    YOLO12_CUDA_CHECK(cudaMemcpy(d.y[i].get(), nan.data(), nan.size() * 2, cudaMemcpyHostToDevice));
  }
}

struct Config {
  int bm, warps;
};
constexpr Config kConfigs[] = {{128, 8}, {64, 4}, {32, 4}, {16, 4}, {16, 8}};  // conv_chain.cu's kChainConfigs

// Runs the case with every tile and stage count that fits; returns how many ran.
int check_case(const ChainCase& c, std::uint64_t seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  const HostChain h = make_host(c, rng);
  DeviceChain d;
  make_device(c, h, d);
  const std::vector<std::vector<double>> want = reference(c, h);
  // The links one by one on conv2d_forward; only the stored links are compared below.
  const std::vector<std::vector<double>> plain = run_links(c, h, d);
  const ch::ChainShape shape = chain_shape(d.p);
  int ran = 0;
  for (const Config& cfg : kConfigs)
    for (int stages = ch::kMinStages; stages <= ch::kMaxStages; ++stages) {
      ch::ChainLayout l;
      if (!ch::chain_layout(shape, cfg.bm, cfg.warps, stages, static_cast<int>(device_info().smem_per_block_optin), l))
        continue;
      reset_outputs(h, d);
      ConvChainParams p = d.p;
      p.layout = l;
      conv2d_chain_f16(p, nullptr);
      YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
      INFO(c.describe() << " seed " << seed << " bm " << cfg.bm << " warps " << cfg.warps << " stages " << stages);
      const Error2 vs_ref = compare(c, h, d, want);
      const Error2 vs_plain = compare(c, h, d, plain);
      INFO("vs reference: rel L2 " << vs_ref.rel_l2 << ", max " << vs_ref.max_excess << "; vs conv2d_forward: rel L2 "
                                   << vs_plain.rel_l2 << ", max " << vs_plain.max_excess);
      CHECK(vs_ref.bad_guards == 0);
      CHECK(vs_ref.rel_l2 < 4e-3);
      CHECK(vs_ref.max_excess < 3e-2);
      CHECK(vs_plain.rel_l2 < 4e-3);
      CHECK(vs_plain.max_excess < 3e-2);
      ++ran;
    }
  return ran;
}

LinkSpec link(int c_out, int residual_link = -1, bool mem_residual = false, bool stored = false, bool silu = true,
              bool gamma = false) {
  LinkSpec l;
  l.c_out = c_out;
  l.residual_link = residual_link;
  l.mem_residual = mem_residual;
  l.stored = stored;
  l.silu = silu;
  l.gamma = gamma;
  return l;
}

// yolo12n's A2C2f chain (attn.proj + the block input, mlp.0, mlp.1 + proj's output, the next qkv) at c channels.
ChainCase ablock(int batch, int hw, int c) {
  ChainCase cc;
  cc.batch = batch;
  cc.h = hw;
  cc.w = hw;
  cc.c_in = c;
  cc.links = {link(c, -1, true), link(2 * c), link(c, 0, false, true), link(3 * c)};
  return cc;
}

}  // namespace

TEST_CASE("conv2d_chain_f16 matches the links one by one: yolo12n's chains, every tile and stage count", "[chain]") {
  int ran = 0;
  ran += check_case(ablock(1, 40, 64), 1);
  ran += check_case(ablock(2, 20, 128), 2);
  ran += check_case(ablock(1, 13, 64), 3);  // 169 rows: partial tiles everywhere
  ChainCase head;                            // a Detect cls branch's end: 80 -> 80, then 80 -> 80 without act
  head.batch = 3;
  head.h = 9;
  head.w = 7;
  head.c_in = 80;
  head.links = {link(80), link(80, -1, false, false, false)};
  ran += check_case(head, 4);
  ChainCase pe = ablock(2, 20, 64);  // the ABlock with its pe: dw 7x7 (+ the attention output) before proj
  pe.dw_k = 7;
  pe.links.insert(pe.links.begin(), link(64, -1, true, false, false));
  pe.links[1].residual_link = -1;  // proj adds the block input (memory), mlp.1 proj's output (now link 1)
  pe.links[3].residual_link = 1;
  ran += check_case(pe, 6);
  ChainCase cls;  // Detect's class branch: dw 3x3 -> 1x1 -> 1x1 (no act), partial tiles
  cls.batch = 3;
  cls.h = 13;
  cls.w = 11;
  cls.c_in = 80;
  cls.dw_k = 3;
  cls.x_c0 = 16;
  cls.links = {link(80), link(80), link(80, -1, false, false, false)};
  ran += check_case(cls, 7);
  ChainCase sliced = ablock(2, 11, 64);  // x a slice of a wider buffer, gamma, a stored middle link
  sliced.x_c0 = 16;
  sliced.x_extra = 24;
  sliced.links[1].gamma = true;
  sliced.links[1].stored = true;
  ran += check_case(sliced, 5);
  REQUIRE(ran >= 40);
}

TEST_CASE("conv2d_chain_f16 matches the links one by one: random chains", "[chain]") {
  static const int kWidths[] = {16, 32, 48, 64, 96, 128, 192, 256};
  std::mt19937 rng(2026);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int ran = 0;
  for (int n = 0; n < 24; ++n) {
    ChainCase c;
    c.batch = pick(1, 3);
    c.h = pick(1, 19);
    c.w = pick(1, 23);
    c.c_in = kWidths[pick(0, 7)];
    c.x_c0 = 8 * pick(0, 2);
    c.x_extra = 8 * pick(0, 2);
    const int links = pick(2, ch::kMaxLinks);
    int prev = c.c_in;
    if (n % 3 == 0) c.dw_k = 2 * pick(1, 3) + 1;  // a depthwise link 0 (as wide as its input)
    for (int i = 0; i < links; ++i) {
      LinkSpec l = link(i == 0 && c.dw_k ? c.c_in : kWidths[pick(0, 7)]);
      l.silu = pick(0, 3) != 0;
      l.gamma = pick(0, 3) == 0;
      l.stored = pick(0, 2) == 0;
      const int kind = pick(0, 2);
      if (kind == 1) l.mem_residual = true;
      if (kind == 2 && i > 0) {  // as wide as the link before, and adds its output
        l.c_out = prev;
        l.residual_link = i - 1;
      }
      c.links.push_back(l);
      prev = l.c_out;
    }
    ran += check_case(c, 100 + static_cast<std::uint64_t>(n));
  }
  REQUIRE(ran >= 100);
}

TEST_CASE("chain_plan: tiles by grid size, refusals for views the kernel cannot take", "[chain]") {
  std::mt19937 rng(9);
  ChainCase c = ablock(1, 40, 64);
  const HostChain h = make_host(c, rng);
  DeviceChain d;
  make_device(c, h, d);
  ch::ChainLayout l;
  REQUIRE(chain_plan(d.p, l));
  CHECK(l.bm == 16);  // batch 1 at 40x40: 100 blocks of 16 rows, the most, on 8 warps
  CHECK(l.warps == 8);
  ConvChainParams big = d.p;
  big.batch = 32;
  REQUIRE(chain_plan(big, l));
  CHECK(l.bm == 128);  // 400 blocks of 128 rows: 3 per SM
  ConvChainParams bad = d.p;
  bad.x = d.p.x + 3;  // not 16-byte aligned
  CHECK_FALSE(chain_plan(bad, l));
  bad = d.p;
  bad.link[2].y = bad.link[2].y + 4;
  CHECK_FALSE(chain_plan(bad, l));
  bad = d.p;
  bad.link[3].y = nullptr;  // the last link must be stored
  CHECK_FALSE(chain_plan(bad, l));
  bad = d.p;
  bad.c[2] = 72;  // not a multiple of 16
  CHECK_FALSE(chain_plan(bad, l));
}

namespace {

// The conv variant conv_chain for the life of this object.
struct ChainVariant {
  bool was;
  explicit ChainVariant(bool on) : was(conv_detail::conv_variants().conv_chain) { conv_detail::conv_variants().conv_chain = on; }
  ~ChainVariant() { conv_detail::conv_variants().conv_chain = was; }
};

using ChainFixture = test::ModelFixture;
// The whole-model fixtures the chain cases run: yolo12n at 640, the narrow yolo12l at 320.
int for_each_chain_fixture(const std::function<void(const ChainFixture&)>& f) {
  return test::for_each_model_fixture({"yolo12n_rand_bus_640", "yolo12l_narrow_rand_bus_320"}, f);
}

}  // namespace

TEST_CASE("conv chains in the whole model: the fp16 executor fuses them and stays within the fp16 bound",
          "[chain][model]") {
  for_each_chain_fixture([](const ChainFixture& c) {
    const int H = c.h, W = c.w;
    std::vector<float> plain, chained;
    {
      ChainVariant off(false);
      Detector d(c.model, c.options);
      plain = d.forward_raw(c.x.data.data(), 1, H, W, nullptr, nullptr);
    }
    {
      ChainVariant on(true);
      Detector d(c.model, c.options);
      chained = d.forward_raw(c.x.data.data(), 1, H, W, nullptr, nullptr);
      CHECK(d.forward_raw(c.x.data.data(), 1, H, W, nullptr, nullptr) == chained);  // deterministic
    }
    REQUIRE(chained.size() == c.ref.data.size());
    const double e_plain = test::rel_l2(plain.data(), c.ref.data.data(), c.ref.data.size());
    const double e_chain = test::rel_l2(chained.data(), c.ref.data.data(), c.ref.data.size());
    std::printf("[chain] %-28s fp16 vs Ultralytics: links one by one %.2e, chains %.2e (bound %.2e)\n", c.name.c_str(),
                e_plain, e_chain, c.bound16);
    CHECK(e_chain < c.bound16);

    // The executor's steps: chains made and run on conv2d_chain_f16 (the label says which).
    ChainVariant on(true);
    const std::vector<std::string> labels = test::fp16_step_labels(c);
    const int chains = test::count_containing(labels, "conv chain");
    const int fused = test::count_containing(labels, "chain_f16]");  // [chain_f16] or [dw + chain_f16]
    INFO("chains " << chains << ", on conv2d_chain_f16 " << fused);
    CHECK(chains >= 8);  // the A2C2f blocks' chains at least
    CHECK(fused == chains);
  });
}

// Apart from the case above, so that a sanitizer run can take one without the other: under racecheck this one's
// process has ended without a message (fifteenth and sixteenth sessions; docs/kernels-conv.md).
TEST_CASE("conv chains in the whole model with kernel tuning: each chain timed fused against its links, within the "
          "fp16 bound",
          "[chain][model][tune]") {
  for_each_chain_fixture([](const ChainFixture& c) {
    ChainVariant on(true);
    DetectorOptions t = c.options;
    t.tune_kernels = true;
    Detector d(c.model, t);
    const std::vector<float> tuned = d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr);
    CHECK(d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr) == tuned);
    REQUIRE(tuned.size() == c.ref.data.size());
    CHECK(test::rel_l2(tuned.data(), c.ref.data.data(), c.ref.data.size()) < c.bound16);
  });
}
