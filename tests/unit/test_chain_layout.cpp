// tests/unit/test_chain_layout.cpp - conv2d_chain_f16's plan (src/backends/cuda/chain_layout.hpp) replayed on the CPU.
//
// 1. The layout: over many chains (a third with a depthwise link 0), tile sizes and stage counts, tiles alive in the
//    same link step never share a byte, every offset is 16-byte aligned, the weight stages lie above every tile and
//    within smem_bytes, and the chunks cover each link's output channels in order.
// 2. The schedule: one byte array stands for a block's shared memory, and the replay runs the kernel's loop over it
//    in the kernel's order (the input tile and chunks t < stages - 1 copied first, a depthwise link 0's output tile
//    computed from memory; per chunk t: the stored output of
//    the link before, then chunk t + stages - 1's copies into its stage, then every warp's tile of chunk t and its
//    epilogue), each copy landing when it is issued. A tile or stage placed over one still in use would hand a later
//    read the wrong numbers. Each warp's MMAs are emulated lane by lane: ldmatrix from the 32 lanes' row addresses
//    (mma_layout.hpp, the kernel's; .x2 for the one n8 block of 16 rows on 8 warps), mma.sync m16n8k16 rebuilt from
//    all lanes' fragments, and the epilogue at the
//    accumulator positions the kernel uses (chain_layout.hpp: acc_row, acc_col). The stored outputs must equal, bit
//    for bit, the links computed one by one (fp32 sums in the same order, every link's output rounded to half), with
//    every output element written once per block, no row past M stored and no channel outside the view written.
// test_conv_chain and the op suite's ConvChain cases run the kernel itself on a GPU.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/chain_layout.hpp"
#include "backends/cuda/mma_layout.hpp"
#include "catch.hpp"
#include "core/half.hpp"

namespace ch = yolo12::cuda::chain;
namespace cd = yolo12::cuda::conv_detail;
using yolo12::float_to_half;
using yolo12::half_to_float;

namespace {

constexpr int kSmemLimit = 227 * 1024;
constexpr std::uint16_t kNaNHalf = 0x7e00;

struct Config {
  int bm, warps;
};
constexpr Config kConfigs[] = {{128, 8}, {64, 4}, {32, 4}, {16, 4}, {16, 8}};  // conv_chain.cu's kChainConfigs
constexpr int kConfigCount = static_cast<int>(sizeof(kConfigs) / sizeof(kConfigs[0]));

struct Chain {
  ch::ChainShape shape;
  bool stored[ch::kMaxLinks] = {};
  bool mem_residual[ch::kMaxLinks] = {};  // a residual from memory (residual_link -1)
  bool silu[ch::kMaxLinks] = {};
  bool gamma[ch::kMaxLinks] = {};
  int batch = 1, h = 1, w = 1;
  long long m() const { return 1LL * batch * h * w; }
  std::string describe() const {
    std::string s = std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + ": " +
                    (shape.dw_k ? "dw" + std::to_string(shape.dw_k) + " " : "") + std::to_string(shape.c[0]);
    for (int i = 0; i < shape.links; ++i) {
      s += " -> " + std::to_string(shape.c[i + 1]);
      if (shape.residual_link[i] >= 0) s += " +link" + std::to_string(shape.residual_link[i]);
      if (mem_residual[i]) s += " +mem";
      if (stored[i]) s += " (stored)";
    }
    return s;
  }
};

Chain random_chain(std::mt19937& rng) {
  static const int kWidths[] = {16, 32, 48, 64, 80, 96, 128, 192, 256, 384};
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Chain c;
  c.shape.links = pick(2, ch::kMaxLinks);
  for (int i = 0; i <= c.shape.links; ++i) c.shape.c[i] = kWidths[pick(0, 9)];
  for (int j = 0; j < c.shape.links; ++j) {
    c.silu[j] = pick(0, 3) != 0;
    c.gamma[j] = pick(0, 3) == 0;
    c.stored[j] = j + 1 == c.shape.links || pick(0, 2) == 0;
    const int kind = pick(0, 2);
    if (kind == 1) c.mem_residual[j] = true;
    if (kind == 2) {
      for (int i = 0; i < j; ++i)  // an earlier link of the same width, often
        if (c.shape.c[i + 1] == c.shape.c[j + 1] && pick(0, 1)) c.shape.residual_link[j] = i;
      if (j >= 1 && c.shape.residual_link[j] < 0 && pick(0, 1)) {  // make one: this link as wide as link j - 1
        c.shape.c[j + 1] = c.shape.c[j];
        c.shape.residual_link[j] = j - 1;
      }
    }
  }
  // Widths changed above may break earlier links' residual links; drop those.
  for (int j = 0; j < c.shape.links; ++j) {
    const int r = c.shape.residual_link[j];
    if (r >= 0 && c.shape.c[r + 1] != c.shape.c[j + 1]) c.shape.residual_link[j] = -1;
  }
  if (pick(0, 2) == 0) {  // a depthwise link 0 (as wide as its input; no residual link can point before it)
    c.shape.dw_k = 2 * pick(1, 3) + 1;
    c.shape.c[1] = c.shape.c[0];
    for (int j = 1; j < c.shape.links; ++j) {
      const int r = c.shape.residual_link[j];
      if (r >= 0 && c.shape.c[r + 1] != c.shape.c[j + 1]) c.shape.residual_link[j] = -1;
    }
  }
  c.batch = pick(1, 3);
  c.h = pick(1, 13);
  c.w = pick(1, 13);
  return c;
}

void check_layout(const ch::ChainShape& s, const ch::ChainLayout& l) {
  const int n = s.links + 1;
  std::vector<int> off(n), bytes(n), first(n), last(n);
  off[0] = l.in_off;
  bytes[0] = s.dw_k ? 0 : ch::tile_bytes(l.bm, s.c[0]);  // a depthwise link 0 reads memory: no input tile
  first[0] = last[0] = 0;
  for (int i = 0; i < s.links; ++i) {
    off[1 + i] = l.out_off[i];
    bytes[1 + i] = ch::tile_bytes(l.bm, s.c[i + 1]);
    first[1 + i] = i;
    last[1 + i] = ch::out_last_step(s, i);
    REQUIRE(last[1 + i] >= (i + 1 < s.links ? i + 1 : i));
    for (int j = i + 1; j < s.links; ++j)
      if (s.residual_link[j] == i) REQUIRE(last[1 + i] >= j);
  }
  int max_cin = 0;  // over the links with weight chunks
  for (int i = ch::first_chunked_link(s.dw_k); i < s.links; ++i) max_cin = std::max(max_cin, s.c[i]);
  for (int t = 0; t < n; ++t) {
    REQUIRE(off[t] % 16 == 0);
    REQUIRE(off[t] + bytes[t] <= l.w_off);
    for (int u = 0; u < t; ++u) {
      const bool alive = first[u] <= last[t] && first[t] <= last[u];
      const bool share = off[u] < off[t] + bytes[t] && off[t] < off[u] + bytes[u];
      INFO("tiles " << u << " and " << t);
      REQUIRE(!(alive && share));
    }
  }
  REQUIRE(l.w_off % 16 == 0);
  REQUIRE(l.w_stage_bytes == ch::kChunkN * ch::row_halves(max_cin) * 2);
  REQUIRE(l.w_stage_bytes % 16 == 0);
  REQUIRE(l.smem_bytes == l.w_off + l.stages * l.w_stage_bytes);
  REQUIRE(l.first_chunk[0] == 0);
  for (int i = 0; i < s.links; ++i) {
    REQUIRE(l.first_chunk[i + 1] - l.first_chunk[i] == (i == 0 && s.dw_k ? 0 : ch::link_chunks(s.c[i + 1])));
    for (int t = l.first_chunk[i]; t < l.first_chunk[i + 1]; ++t) REQUIRE(ch::chunk_link(l, s.links, t) == i);
    if (s.dw_k) REQUIRE(ch::chunk_link(l, s.links, 0) == 1);
  }
}

// One register set of a warp: 4 32-bit registers per lane (two halves each, low half first), or 4 fp32 accumulators.
struct Frag {
  float v[32][4] = {};  // halves as floats (A, B), or accumulators (D)
  float lo[32][4] = {}, hi[32][4] = {};
};

// ldmatrix.x4 (matrices = 4) and .x2 (2) as mma.cuh describes them: lanes 8j..8j+7 give the row addresses (in
// halves) of matrix j, and lane t receives in register j the halves (t / 4, 2 (t % 4)) and (t / 4, 2 (t % 4) + 1) of
// matrix j.
template <typename At>
void ldmatrix(At& at, const int (&off)[32], Frag& f, int matrices) {
  for (int t = 0; t < 32; ++t)
    for (int j = 0; j < matrices; ++j) {
      const int row = off[8 * j + t / 4] * 2 + 4 * (t % 4);
      f.lo[t][j] = half_to_float(at(row));
      f.hi[t][j] = half_to_float(at(row + 2));
    }
}

// mma.sync m16n8k16 .row.col as mma.cuh lays out its fragments: A from a's 4 registers, B from b's registers b0, b0 + 1,
// D += A B^T into d, each product added in K order (as the replay's reference sums).
void mma(Frag& d, const Frag& a, const Frag& b, int b0) {
  float A[16][16], B[8][16];
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    A[g][2 * c] = a.lo[t][0], A[g][2 * c + 1] = a.hi[t][0];
    A[g + 8][2 * c] = a.lo[t][1], A[g + 8][2 * c + 1] = a.hi[t][1];
    A[g][2 * c + 8] = a.lo[t][2], A[g][2 * c + 9] = a.hi[t][2];
    A[g + 8][2 * c + 8] = a.lo[t][3], A[g + 8][2 * c + 9] = a.hi[t][3];
    B[g][2 * c] = b.lo[t][b0], B[g][2 * c + 1] = b.hi[t][b0];
    B[g][2 * c + 8] = b.lo[t][b0 + 1], B[g][2 * c + 9] = b.hi[t][b0 + 1];
  }
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, c = t % 4;
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e / 2), col = 2 * c + e % 2;
      float s = d.v[t][e];
      for (int k = 0; k < 16; ++k) s += A[row][k] * B[col][k];
      d.v[t][e] = s;
    }
  }
}

float silu(float v) { return v / (1.f + std::exp(-v)); }
float rnd_half(float v) { return half_to_float(float_to_half(v)); }

struct Data {
  int ldx = 0, ldr[ch::kMaxLinks] = {}, ldy[ch::kMaxLinks] = {}, k_pad[ch::kMaxLinks] = {};
  std::vector<float> x;                                  // (M, ldx)
  std::vector<float> w[ch::kMaxLinks];                   // (c_out, k_pad), NaN past c_in
  std::vector<float> bias[ch::kMaxLinks], gamma[ch::kMaxLinks];
  std::vector<float> residual[ch::kMaxLinks];            // (M, ldr)
};

Data make_data(const Chain& c, std::mt19937& rng) {
  auto val = [&] { return rnd_half(std::uniform_real_distribution<float>(-1.f, 1.f)(rng)); };
  const long long m = c.m();
  Data d;
  d.ldx = c.shape.c[0] + 8 * std::uniform_int_distribution<int>(0, 2)(rng);
  d.x.resize(static_cast<std::size_t>(m * d.ldx));
  for (float& v : d.x) v = val();
  for (int i = 0; i < c.shape.links; ++i) {
    const int ci = c.shape.c[i], co = c.shape.c[i + 1];
    if (i == 0 && c.shape.dw_k) {  // (k * k, c_pad) as conv_pack_weights packs a depthwise conv
      const int taps = c.shape.dw_k * c.shape.dw_k;
      d.k_pad[i] = (co + 7) / 8 * 8;
      d.w[i].assign(static_cast<std::size_t>(taps) * d.k_pad[i], NAN);
      for (int t = 0; t < taps; ++t)
        for (int n = 0; n < co; ++n) d.w[i][static_cast<std::size_t>(t) * d.k_pad[i] + n] = rnd_half(val() * 0.25f);
    } else {
      d.k_pad[i] = (ci + 31) / 32 * 32;
      d.w[i].assign(static_cast<std::size_t>(co) * d.k_pad[i], NAN);
      for (int n = 0; n < co; ++n)
        for (int k = 0; k < ci; ++k) d.w[i][static_cast<std::size_t>(n) * d.k_pad[i] + k] = rnd_half(val() * 0.25f);
    }
    for (int n = 0; n < co; ++n) d.bias[i].push_back(val());
    if (c.gamma[i])
      for (int n = 0; n < co; ++n) d.gamma[i].push_back(val());
    d.ldy[i] = co + 8 * std::uniform_int_distribution<int>(0, 1)(rng);
    if (c.mem_residual[i]) {
      d.ldr[i] = co + 8 * std::uniform_int_distribution<int>(0, 1)(rng);
      d.residual[i].resize(static_cast<std::size_t>(m * d.ldr[i]));
      for (float& v : d.residual[i]) v = val();
    }
  }
  return d;
}

// The fused epilogue as the kernel has it: bias, SiLU, gamma, then the residual, one rounding.
float epilogue(const Chain& c, const Data& d, int i, int n, float acc, float res) {
  float v = acc + d.bias[i][static_cast<std::size_t>(n)];
  if (c.silu[i]) v = silu(v);
  if (c.gamma[i]) v *= d.gamma[i][static_cast<std::size_t>(n)];
  return rnd_half(v + res);
}

// Link 0 as a depthwise conv, channel n of pixel r: the taps in row-major order, zero outside the map.
float depthwise(const Chain& c, const Data& d, long long r, int n) {
  const int k = c.shape.dw_k, pad = k / 2;
  const long long hw = 1LL * c.h * c.w, b = r / hw;
  const int y = static_cast<int>(r - b * hw) / c.w, x = static_cast<int>(r - b * hw) % c.w;
  float acc = 0.f;
  for (int ky = 0; ky < k; ++ky)
    for (int kx = 0; kx < k; ++kx) {
      const int yy = y + ky - pad, xx = x + kx - pad;
      if (yy < 0 || yy >= c.h || xx < 0 || xx >= c.w) continue;
      acc += d.x[static_cast<std::size_t>(((b * c.h + yy) * c.w + xx) * d.ldx + n)] *
             d.w[0][static_cast<std::size_t>(ky * k + kx) * d.k_pad[0] + n];
    }
  return acc;
}

// The links one by one: y[i] (M, ldy[i]) for the stored links, NaN elsewhere.
std::vector<std::vector<float>> reference(const Chain& c, const Data& d) {
  const long long m = c.m();
  std::vector<std::vector<float>> out(static_cast<std::size_t>(c.shape.links));
  std::vector<std::vector<float>> y(static_cast<std::size_t>(c.shape.links));
  for (int i = 0; i < c.shape.links; ++i) out[i].assign(static_cast<std::size_t>(m * d.ldy[i]), NAN);
  for (long long r = 0; r < m; ++r) {
    for (int i = 0; i < c.shape.links; ++i) {
      const int ci = c.shape.c[i], co = c.shape.c[i + 1];
      y[i].assign(static_cast<std::size_t>(co), 0.f);
      for (int n = 0; n < co; ++n) {
        float acc = 0.f;
        if (i == 0 && c.shape.dw_k) acc = depthwise(c, d, r, n);
        else
          for (int k = 0; k < ci; ++k) {
            const float a =
                i == 0 ? d.x[static_cast<std::size_t>(r * d.ldx + k)] : y[i - 1][static_cast<std::size_t>(k)];
            acc += a * d.w[i][static_cast<std::size_t>(n) * d.k_pad[i] + k];
          }
        float res = 0.f;
        if (c.shape.residual_link[i] >= 0) res = y[c.shape.residual_link[i]][static_cast<std::size_t>(n)];
        else if (c.mem_residual[i]) res = d.residual[i][static_cast<std::size_t>(r * d.ldr[i] + n)];
        y[i][static_cast<std::size_t>(n)] = epilogue(c, d, i, n, acc, res);
        if (c.stored[i]) out[i][static_cast<std::size_t>(r * d.ldy[i] + n)] = y[i][static_cast<std::size_t>(n)];
      }
    }
  }
  return out;
}

// The kernel's loop over every block, on one shared-memory image per block.
std::vector<std::vector<float>> replay(const Chain& c, const Data& d, const ch::ChainLayout& l) {
  const ch::ChainShape& s = c.shape;
  const long long m = c.m();
  std::vector<std::vector<float>> out(static_cast<std::size_t>(s.links));
  for (int i = 0; i < s.links; ++i) out[i].assign(static_cast<std::size_t>(m * d.ldy[i]), NAN);
  std::vector<std::uint16_t> smem(static_cast<std::size_t>(l.smem_bytes) / 2);
  bool inside = true;  // every access within the block's shared memory (checked once at the end: hot loop)
  std::uint16_t outside = 0;
  auto at = [&](int byte) -> std::uint16_t& {
    if (byte % 2 != 0 || byte < 0 || byte >= l.smem_bytes) {
      inside = false;
      return outside;
    }
    return smem[static_cast<std::size_t>(byte / 2)];
  };
  const int chunks = ch::total_chunks(l, s.links), ahead = l.stages - 1;
  for (long long m0 = 0; m0 < m; m0 += l.bm) {
    std::fill(smem.begin(), smem.end(), kNaNHalf);
    std::vector<std::vector<int>> written(static_cast<std::size_t>(s.links));
    for (int i = 0; i < s.links; ++i) written[i].assign(static_cast<std::size_t>(l.bm * s.c[i + 1]), 0);
    // load_tile (not for a depthwise link 0, which reads memory itself)
    for (int q = 0; q < (s.dw_k ? 0 : ch::tile_copies(l.bm, s.c[0])); ++q) {
      const ch::TileCopy tc = ch::tile_copy(q, s.c[0]);
      for (int e = 0; e < 8; ++e)
        at(ch::tile_byte(l.in_off, s.c[0], tc.row, tc.col8) + 2 * e) =
            m0 + tc.row < m ? float_to_half(d.x[static_cast<std::size_t>((m0 + tc.row) * d.ldx + 8 * tc.col8 + e)]) : 0;
    }
    auto load_chunk = [&](int t) {
      const int i = ch::chunk_link(l, s.links, t), j = t - l.first_chunk[i], ci = s.c[i];
      const int off = ch::stage_offset(l, t);
      for (int q = 0; q < ch::tile_copies(ch::chunk_rows(s.c[i + 1], j), ci); ++q) {
        const ch::TileCopy tc = ch::tile_copy(q, ci);
        for (int e = 0; e < 8; ++e)
          at(ch::tile_byte(off, ci, tc.row, tc.col8) + 2 * e) = float_to_half(
              d.w[i][static_cast<std::size_t>(j * ch::kChunkN + tc.row) * d.k_pad[i] + 8 * tc.col8 + e]);
      }
    };
    auto store_tile = [&](int i) {
      const int co = s.c[i + 1];
      for (int q = 0; q < ch::tile_copies(l.bm, co); ++q) {
        const ch::TileCopy tc = ch::tile_copy(q, co);
        if (m0 + tc.row >= m) continue;
        for (int e = 0; e < 8; ++e)
          out[i][static_cast<std::size_t>((m0 + tc.row) * d.ldy[i] + 8 * tc.col8 + e)] =
              half_to_float(at(ch::tile_byte(l.out_off[i], co, tc.row, tc.col8) + 2 * e));
      }
    };
    for (int t = 0; t < ahead && t < chunks; ++t) load_chunk(t);
    if (s.dw_k)  // depthwise_link0: items of 8 channels of one row of link 0's output tile
      for (int q = 0; q < ch::tile_copies(l.bm, s.c[0]); ++q) {
        const ch::TileCopy tc = ch::tile_copy(q, s.c[0]);
        for (int e = 0; e < 8; ++e) {
          const int n = 8 * tc.col8 + e;
          float v = 0.f;
          if (m0 + tc.row < m) {
            const float res =
                c.mem_residual[0] ? d.residual[0][static_cast<std::size_t>((m0 + tc.row) * d.ldr[0] + n)] : 0.f;
            v = epilogue(c, d, 0, n, depthwise(c, d, m0 + tc.row, n), res);
          }
          at(ch::tile_byte(l.out_off[0], s.c[0], tc.row, tc.col8) + 2 * e) = float_to_half(v);
          ++written[0][static_cast<std::size_t>(tc.row * s.c[1] + n)];
        }
      }
    int i = ch::first_chunked_link(s.dw_k), j = 0;
    for (int t = 0; t < chunks; ++t) {
      if (j == 0 && i > 0 && c.stored[i - 1]) store_tile(i - 1);
      if (t + ahead < chunks) load_chunk(t + ahead);
      const int ci = s.c[i], co = s.c[i + 1], n_base = j * ch::kChunkN, cols = std::min(ch::kChunkN, co - n_base);
      const int a_off = i == 0 ? l.in_off : l.out_off[i - 1], b_off = ch::stage_offset(l, t);
      const int r_link = s.residual_link[i];
      for (int warp = 0; warp < l.warps; ++warp) {
        const ch::WarpTile wt = ch::warp_tile(l.bm, l.warps, warp);
        REQUIRE((wt.row0 + 16 <= l.bm && wt.col0 + wt.warp_cols <= ch::kChunkN));
        const int ni = wt.warp_cols / 8;
        std::vector<Frag> acc(static_cast<std::size_t>(ni));
        for (int k0 = 0; k0 < ci; k0 += 16) {  // the kernel's K loop, lane by lane
          const int rh = ch::row_halves(ci);
          Frag a;
          int off[32];
          for (int t = 0; t < 32; ++t) off[t] = a_off / 2 + cd::a_frag_lane_offset(rh, wt.row0, k0, t);
          ldmatrix(at, off, a, 4);
          if (ni == 1) {  // 16 rows on 8 warps: one n8 block, load_b_frag (ldmatrix.x2)
            if (wt.col0 >= cols) continue;
            Frag b;
            for (int t = 0; t < 32; ++t) off[t] = b_off / 2 + cd::b_single_lane_offset(rh, wt.col0, k0, t);
            ldmatrix(at, off, b, 2);
            mma(acc[0], a, b, 0);
            continue;
          }
          for (int q = 0; q < ni; q += 2) {
            if (wt.col0 + 8 * q >= cols) continue;
            Frag b;  // registers 0, 1: n8 block q; 2, 3: block q + 1
            for (int t = 0; t < 32; ++t) off[t] = b_off / 2 + cd::b_pair_lane_offset(rh, wt.col0 + 8 * q, k0, t);
            ldmatrix(at, off, b, 4);
            mma(acc[static_cast<std::size_t>(q)], a, b, 0);
            mma(acc[static_cast<std::size_t>(q + 1)], a, b, 2);
          }
        }
        for (int q = 0; q < ni; ++q) {  // the epilogue at the kernel's accumulator positions
          if (wt.col0 + 8 * q >= cols) continue;
          for (int t = 0; t < 32; ++t)
            for (int e = 0; e < 4; ++e) {
              const int r = ch::acc_row(wt, t, e), n = n_base + ch::acc_col(wt, q, t, e);
              float res = 0.f;
              if (r_link >= 0) res = half_to_float(at(ch::tile_byte(l.out_off[r_link], co, r, 0) + 2 * n));
              else if (c.mem_residual[i] && m0 + r < m)
                res = d.residual[i][static_cast<std::size_t>((m0 + r) * d.ldr[i] + n)];
              const float v = epilogue(c, d, i, n, acc[static_cast<std::size_t>(q)].v[t][e], res);
              at(ch::tile_byte(l.out_off[i], co, r, 0) + 2 * n) = float_to_half(v);
              ++written[i][static_cast<std::size_t>(r * co + n)];
            }
        }
      }
      if (++j == l.first_chunk[i + 1] - l.first_chunk[i]) {
        j = 0;
        ++i;
      }
    }
    store_tile(s.links - 1);
    bool once = true;
    for (int k = 0; k < s.links; ++k)
      for (int v : written[k]) once = once && v == 1;
    REQUIRE(once);
  }
  REQUIRE(inside);
  return out;
}

bool same_bits(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("chain layout: live tiles never share bytes, stages above them", "[chain]") {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int n = 0; n < 400; ++n) {
    const Chain c = random_chain(rng);
    for (const Config& cfg : kConfigs)
      for (int stages = ch::kMinStages; stages <= ch::kMaxStages; ++stages) {
        ch::ChainLayout l;
        if (!ch::chain_layout(c.shape, cfg.bm, cfg.warps, stages, kSmemLimit, l)) {
          REQUIRE(l.smem_bytes > kSmemLimit);  // a valid shape is refused for its size only
          continue;
        }
        INFO(c.describe() << " bm " << cfg.bm << " stages " << stages);
        check_layout(c.shape, l);
        ++checked;
      }
  }
  REQUIRE(checked > 1000);
}

TEST_CASE("chain layout: shapes the kernel does not take are refused", "[chain]") {
  ch::ChainShape s;
  s.links = 2;
  s.c[0] = 64;
  s.c[1] = 64;
  s.c[2] = 64;
  ch::ChainLayout l;
  REQUIRE(ch::chain_layout(s, 64, 4, 3, kSmemLimit, l));
  ch::ChainShape bad = s;
  bad.c[1] = 72;  // not a multiple of 16
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  bad = s;
  bad.links = 1;
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  bad = s;
  bad.residual_link[1] = 1;  // not an earlier link
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  bad = s;
  bad.c[1] = 32;
  bad.residual_link[1] = 0;  // link 0's output is narrower than link 1's
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  bad = s;
  bad.dw_k = 3;
  REQUIRE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));  // a depthwise link 0: no input tile, no chunks of its own
  REQUIRE(l.first_chunk[1] == 0);
  bad.c[1] = 32;  // a depthwise conv keeps its channels
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  bad = s;
  bad.dw_k = 4;  // odd sizes only
  REQUIRE_FALSE(ch::chain_layout(bad, 64, 4, 3, kSmemLimit, l));
  REQUIRE_FALSE(ch::chain_layout(s, 64, 4, 5, kSmemLimit, l));
  REQUIRE_FALSE(ch::chain_layout(s, 64, 4, 3, 1024, l));
}

TEST_CASE("chain layout: a residual link keeps its tile alive", "[chain]") {
  // yolo12n's A2C2f chain at 20x20: proj 128->128 +res, mlp.0 128->256, mlp.1 256->128 + proj's output, qkv 128->384.
  ch::ChainShape s;
  s.links = 4;
  const int c[] = {128, 128, 256, 128, 384};
  for (int i = 0; i < 5; ++i) s.c[i] = c[i];
  s.residual_link[2] = 0;
  REQUIRE(ch::out_last_step(s, 0) == 2);
  REQUIRE(ch::out_last_step(s, 1) == 2);
  REQUIRE(ch::out_last_step(s, 3) == 3);
  ch::ChainLayout l;
  REQUIRE(ch::chain_layout(s, 64, 4, 3, kSmemLimit, l));
  check_layout(s, l);
  // Link 0's output (alive in steps 0..2) and link 2's (2..3) are distinct, and some tile reuses another's bytes.
  REQUIRE(l.out_off[0] != l.out_off[2]);
  int all = ch::tile_bytes(64, s.c[0]);
  for (int i = 0; i < s.links; ++i) all += ch::tile_bytes(64, s.c[i + 1]);
  REQUIRE(l.w_off < all);
}

TEST_CASE("chain replay: the kernel's schedule equals the links one by one", "[chain]") {
  std::mt19937 rng(77);
  int replayed = 0, depthwise = 0;
  for (int n = 0; n < 50; ++n) {
    Chain c = random_chain(rng);
    const Data d = make_data(c, rng);
    const std::vector<std::vector<float>> want = reference(c, d);
    const Config& cfg = kConfigs[n % kConfigCount];
    const int stages = ch::kMinStages + n % (ch::kMaxStages - ch::kMinStages + 1);
    ch::ChainLayout l;
    if (!ch::chain_layout(c.shape, cfg.bm, cfg.warps, stages, kSmemLimit, l)) continue;
    INFO(c.describe() << " bm " << cfg.bm << " warps " << cfg.warps << " stages " << stages);
    const std::vector<std::vector<float>> got = replay(c, d, l);
    for (int i = 0; i < c.shape.links; ++i) {
      INFO("link " << i);
      REQUIRE(got[i].size() == want[i].size());
      std::size_t bad = 0;
      for (std::size_t e = 0; e < got[i].size(); ++e) bad += same_bits(got[i][e], want[i][e]) ? 0 : 1;
      REQUIRE(bad == 0);
    }
    ++replayed;
    depthwise += c.shape.dw_k ? 1 : 0;
  }
  REQUIRE(replayed >= 38);
  REQUIRE(depthwise >= 5);  // chains with a depthwise link 0 among them
}

TEST_CASE("chain copies: CopyCursor steps through tile_copy's copies of each thread", "[chain]") {
  int checked = 0;
  for (int c = ch::kChannelStep; c <= 512; c += ch::kChannelStep)
    for (const int threads : {128, 256})
      for (const int rows : {1, 7, 16, 64, 128})
        for (int first = 0; first < threads; first += 5) {
          int q = first;
          for (ch::CopyCursor k(first, threads, c); k.row < rows; k.next(), q += threads) {
            const ch::TileCopy want = ch::tile_copy(q, c);
            REQUIRE(k.row == want.row);
            REQUIRE(k.col8 == want.col8);
          }
          REQUIRE(q >= ch::tile_copies(rows, c));  // it stopped at the first copy past the tile
          REQUIRE(q - threads < ch::tile_copies(rows, c));
          ++checked;
        }
  REQUIRE(checked > 10000);
}
