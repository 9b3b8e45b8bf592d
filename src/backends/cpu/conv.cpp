// cpu/conv.cpp - see conv.hpp.
#include "backends/cpu/conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/gemm_tile.hpp"
#include "backends/cpu/ops.hpp"
#include "backends/cpu/simd.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "graph/fuse_chains.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {
namespace {

constexpr int MR = kConvMR;
constexpr int NR = kConvNR;
static_assert(MR == kGemmMR && NR == kGemmNR, "conv packs for the GEMM tile kernel");

// Shape of one conv call: the op's attributes and the sizes of the views, checked once.
struct ConvShape : graph::ConvAttrs {
  int batch, h, w, ho, wo;
  int cin_g, cout_g, K;  // K = cin_g * k * k
  std::ptrdiff_t N;      // ho * wo
};

ConvShape check_shape(const ConvParams& p) {
  ConvShape s;
  static_cast<graph::ConvAttrs&>(s) = p;
  s.batch = p.batch;
  s.h = p.x.h;
  s.w = p.x.w;
  s.ho = p.y.h;
  s.wo = p.y.w;
  auto bad = [&](const std::string& what) { throw InputError("conv2d: " + what); };
  if (!p.x.valid() || !p.y.valid() || !p.weight || !p.bias) bad("missing input, output, weight or bias");
  if (p.x.c != s.c_in || p.y.c != s.c_out)
    bad("views of " + std::to_string(p.x.c) + " -> " + std::to_string(p.y.c) + " channels for a conv of " +
        std::to_string(s.c_in) + " -> " + std::to_string(s.c_out));
  if (s.batch < 1 || s.k < 1 || s.stride < 1 || s.dilation < 1 || s.pad < 0 || s.groups < 1)
    bad("impossible batch/kernel/stride/dilation/pad/groups");
  if (s.c_in % s.groups || s.c_out % s.groups) bad("channels not divisible by groups");
  const long long ho = s.out_size(s.h), wo = s.out_size(s.w);
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

// y[j] = act(acc[j] + bias) * gamma + residual[j] for one output row segment of channel o;
// acc is scratch (overwritten). Separate simple loops so each one vectorizes.
YOLO12_CPU_INLINE void epilogue_row(const ConvParams& p, int b, int o, std::ptrdiff_t n0, int cols, float* acc) {
  float* y = p.y.at(b, o) + n0;
  const float bias = p.bias[o];
  for (int j = 0; j < cols; ++j) acc[j] += bias;
  if (p.silu())
    for (int j = 0; j < cols; ++j) acc[j] = acc[j] / (1.f + exp_approx(-acc[j]));
  if (p.gamma) {
    const float gamma = p.gamma[o];
    for (int j = 0; j < cols; ++j) acc[j] *= gamma;
  }
  if (p.residual.valid()) {
    const float* r = p.residual.at(b, o) + n0;
    for (int j = 0; j < cols; ++j) y[j] = acc[j] + r[j];
  } else {
    for (int j = 0; j < cols; ++j) y[j] = acc[j];
  }
}

// The same for a whole MR x NR GEMM tile (output channels o0 .. o0 + rows, columns n0 .. n0 +
// cols): fixed-size loops over the full tile (columns past `cols` are computed and dropped), which
// the compiler unrolls and vectorizes; a 16-wide row at a time would be mostly loop overhead.
YOLO12_CPU_INLINE void epilogue_tile(const ConvParams& p, int b, int o0, int rows, std::ptrdiff_t n0, int cols,
                                     float* tile) {  // (MR, NR)
  for (int i = 0; i < MR; ++i) {
    const float bias = i < rows ? p.bias[o0 + i] : 0.f;
    for (int j = 0; j < NR; ++j) tile[i * NR + j] += bias;
  }
  if (p.silu())
    for (int j = 0; j < MR * NR; ++j) tile[j] = tile[j] / (1.f + exp_approx(-tile[j]));
  if (p.gamma)
    for (int i = 0; i < rows; ++i) {
      const float gamma = p.gamma[o0 + i];
      for (int j = 0; j < NR; ++j) tile[i * NR + j] *= gamma;
    }
  for (int i = 0; i < rows; ++i) {
    float* y = p.y.at(b, o0 + i) + n0;
    const float* t = tile + i * NR;
    if (p.residual.valid()) {
      const float* r = p.residual.at(b, o0 + i) + n0;
      if (cols == NR)
        for (int j = 0; j < NR; ++j) y[j] = t[j] + r[j];
      else
        for (int j = 0; j < cols; ++j) y[j] = t[j] + r[j];
    } else {
      if (cols == NR)
        for (int j = 0; j < NR; ++j) y[j] = t[j];
      else
        for (int j = 0; j < cols; ++j) y[j] = t[j];
    }
  }
}

using TileKernel = GemmTileFn;

// d[i] = src[i * stride] for i < n; the restrict pointers and the fixed strides let the compiler
// vectorize (stride 2 with two loads and a shuffle).
YOLO12_CPU_INLINE void copy_strided(float* __restrict d, const float* __restrict src, int n, int stride) {
  if (stride == 1) {
    for (int i = 0; i < n; ++i) d[i] = src[i];
  } else if (stride == 2) {
    for (int i = 0; i < n; ++i) d[i] = src[2 * i];
  } else {
    for (int i = 0; i < n; ++i) d[i] = src[static_cast<std::ptrdiff_t>(i) * stride];
  }
}

// Gathers the im2col columns [n0, n0 + nstrips * NR) of image b, group g into NR-wide strips:
// strip s holds dst[(s * K + kk) * NR + j] = X_col[kk, n0 + s * NR + j] (zero past N).
YOLO12_CPU_INLINE void pack_columns(const ConvParams& p, const ConvShape& s, int b, int g, std::ptrdiff_t n0,
                                    int nstrips, float* dst) {
  const bool pointwise = s.k == 1 && s.stride == 1 && s.pad == 0;
  if (pointwise) {
    // A plain copy. Channel-major order, so each input plane is read as one sequential run (the
    // strip-major order touches cin_g planes per 16 columns and waits on memory).
    for (int ci = 0; ci < s.cin_g; ++ci) {
      const float* src = p.x.at(b, g * s.cin_g + ci) + n0;
      for (int st = 0; st < nstrips; ++st) {
        const std::ptrdiff_t nb = static_cast<std::ptrdiff_t>(st) * NR;
        const int cols = static_cast<int>(std::min<std::ptrdiff_t>(NR, s.N - n0 - nb));
        float* d = dst + (static_cast<std::ptrdiff_t>(st) * s.K + ci) * NR;
        copy_strided(d, src + nb, cols, 1);
        for (int j = cols; j < NR; ++j) d[j] = 0.f;
      }
    }
    return;
  }
  // General kxk: one tap (ci, ky, kx) at a time over all the task's columns. The columns are cut
  // into runs that share an output row; per run one bounds check on the input row and one
  // (strided) copy into a row buffer, which is then dealt out to the NR-wide strips. Per-tap work
  // is thus amortized over the whole block rather than 16 columns.
  const int total = static_cast<int>(std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(nstrips) * NR, s.N - n0));
  thread_local std::vector<float> rowbuf;
  thread_local std::vector<int> run_j0, run_len, run_oy, run_ox0;
  rowbuf.assign(static_cast<std::size_t>(nstrips) * NR, 0.f);  // columns past `total` stay zero
  run_j0.clear(), run_len.clear(), run_oy.clear(), run_ox0.clear();
  for (int j = 0; j < total;) {
    const int oy = static_cast<int>((n0 + j) / s.wo), ox = static_cast<int>((n0 + j) % s.wo);
    const int len = std::min(total - j, s.wo - ox);
    run_j0.push_back(j), run_len.push_back(len), run_oy.push_back(oy), run_ox0.push_back(ox);
    j += len;
  }
  const int runs = static_cast<int>(run_j0.size());
  int kk = 0;
  for (int ci = 0; ci < s.cin_g; ++ci) {
    const float* plane = p.x.at(b, g * s.cin_g + ci);
    for (int ky = 0; ky < s.k; ++ky) {
      for (int kx = 0; kx < s.k; ++kx, ++kk) {
        const int dy = ky * s.dilation - s.pad, dx = kx * s.dilation - s.pad;
        for (int r = 0; r < runs; ++r) {
          float* dr = rowbuf.data() + run_j0[r];
          const int len = run_len[r];
          const int iy = run_oy[r] * s.stride + dy;
          if (iy < 0 || iy >= s.h) {
            for (int i = 0; i < len; ++i) dr[i] = 0.f;
            continue;
          }
          const float* row = plane + static_cast<std::ptrdiff_t>(iy) * s.w;
          const int ix0 = run_ox0[r] * s.stride + dx;  // input column of the run's first output
          // valid i: 0 <= ix0 + i * stride < w
          int lo = 0, hi = len;
          if (ix0 < 0) lo = std::min(len, (-ix0 + s.stride - 1) / s.stride);
          if (hi > lo && ix0 + (hi - 1) * s.stride >= s.w)
            hi = s.w - 1 - ix0 < 0 ? lo : std::max(lo, std::min(hi, (s.w - 1 - ix0) / s.stride + 1));
          for (int i = 0; i < lo; ++i) dr[i] = 0.f;
          if (hi > lo) copy_strided(dr + lo, row + ix0 + lo * s.stride, hi - lo, s.stride);
          for (int i = hi; i < len; ++i) dr[i] = 0.f;
        }
        for (int st = 0; st < nstrips; ++st)
          copy_strided(dst + (static_cast<std::ptrdiff_t>(st) * s.K + kk) * NR, rowbuf.data() + st * NR, NR, 1);
      }
    }
  }
}

// How conv2d_im2col_gemm cuts its work into tasks.
struct GemmPlan {
  const float* packed;  // pack_conv_weight() layout
  int mstrips;          // MR-row strips of output channels per group
  std::ptrdiff_t nc;    // columns per task
  std::ptrdiff_t nblocks;
  int mchunks;          // output channel ranges per column block
  TileKernel kernel;
};

// One task: column block x output-channel range of one (image, group).
YOLO12_CPU_INLINE void gemm_task_impl(const ConvParams& p, const ConvShape& s, const GemmPlan& plan,
                                      std::ptrdiff_t t) {
  const int mc = static_cast<int>(t % plan.mchunks);
  std::ptrdiff_t r = t / plan.mchunks;
  const std::ptrdiff_t nbk = r % plan.nblocks;
  r /= plan.nblocks;
  const int g = static_cast<int>(r % s.groups);
  const int b = static_cast<int>(r / s.groups);
  const std::ptrdiff_t n0 = nbk * plan.nc;
  const int nstrips = static_cast<int>((std::min(plan.nc, s.N - n0) + NR - 1) / NR);
  thread_local std::vector<float> cols;
  const std::size_t need = static_cast<std::size_t>(nstrips) * s.K * NR;
  if (cols.size() < need) cols.resize(need);
  pack_columns(p, s, b, g, n0, nstrips, cols.data());
  const int ms0 = mc * plan.mstrips / plan.mchunks, ms1 = (mc + 1) * plan.mstrips / plan.mchunks;
  const float* gw = plan.packed + static_cast<std::ptrdiff_t>(g) * plan.mstrips * MR * s.K;
  float tile[MR * NR];
  for (int st = 0; st < nstrips; ++st) {
    const std::ptrdiff_t nb = n0 + static_cast<std::ptrdiff_t>(st) * NR;
    const int ncols = static_cast<int>(std::min<std::ptrdiff_t>(NR, s.N - nb));
    const float* bstrip = cols.data() + static_cast<std::ptrdiff_t>(st) * s.K * NR;
    for (int ms = ms0; ms < ms1; ++ms) {
      plan.kernel(s.K, gw + static_cast<std::ptrdiff_t>(ms) * MR * s.K, bstrip, tile);
      epilogue_tile(p, b, g * s.cout_g + ms * MR, std::min(MR, s.cout_g - ms * MR), nb, ncols, tile);
    }
  }
}
YOLO12_CPU_AVX2 void gemm_task_avx2(const ConvParams& p, const ConvShape& s, const GemmPlan& plan, std::ptrdiff_t t) {
  gemm_task_impl(p, s, plan, t);
}
void gemm_task_generic(const ConvParams& p, const ConvShape& s, const GemmPlan& plan, std::ptrdiff_t t) {
  gemm_task_impl(p, s, plan, t);
}

void conv2d_im2col_gemm(const ConvParams& p, const ConvShape& s, ThreadPool& pool) {
  static const TileKernel kernel = gemm_tile_kernel();
  std::vector<float> local_packed;
  GemmPlan plan;
  plan.kernel = kernel;
  plan.packed = p.packed;
  if (!plan.packed) {
    local_packed = pack_conv_weight(p.weight, s.c_out, s.c_in, s.k, s.groups);
    plan.packed = local_packed.data();
  }
  plan.mstrips = (s.cout_g + MR - 1) / MR;
  // Columns per task: keep the packed strips (K x nc floats) within about 256 KiB of L2, and at
  // least 4 strips so the weights streamed per strip are reused.
  const int nc_strips = std::max(4, std::min(16, 65536 / std::max(1, s.K) / NR));
  plan.nc = static_cast<std::ptrdiff_t>(nc_strips) * NR;
  plan.nblocks = (s.N + plan.nc - 1) / plan.nc;
  // Split the output channels too when there are few column blocks (small late feature maps).
  plan.mchunks = 1;
  const std::ptrdiff_t base_tasks = static_cast<std::ptrdiff_t>(s.batch) * s.groups * plan.nblocks;
  while (base_tasks * plan.mchunks < 4 * pool.size() && plan.mstrips / (plan.mchunks * 2) >= 2) plan.mchunks *= 2;
  const auto task = cpu_has_avx2() ? gemm_task_avx2 : gemm_task_generic;
  pool.parallel_for(base_tasks * plan.mchunks, [&](std::ptrdiff_t t, int) { task(p, s, plan, t); });
}

// One task: one channel of one image.
YOLO12_CPU_INLINE void depthwise_task_impl(const ConvParams& p, const ConvShape& s, std::ptrdiff_t t) {
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
    float* a = acc.data();
    for (int ox = 0; ox < s.wo; ++ox) a[ox] = 0.f;
    for (int ky = 0; ky < s.k; ++ky) {
      const int iy = oy * s.stride + ky * s.dilation - s.pad;
      if (iy < 0 || iy >= s.h) continue;
      const float* row = in + static_cast<std::ptrdiff_t>(iy) * s.w;
      for (int kx = 0; kx < s.k; ++kx) {
        const float wv = wc[ky * s.k + kx];
        const int dx = kx * s.dilation - s.pad;
        if (s.stride == 1) {
          const float* src = row + dx;
          for (int ox = lo[kx]; ox <= hi[kx]; ++ox) a[ox] += wv * src[ox];
        } else {
          for (int ox = lo[kx]; ox <= hi[kx]; ++ox) a[ox] += wv * row[ox * s.stride + dx];
        }
      }
    }
    epilogue_row(p, b, c, static_cast<std::ptrdiff_t>(oy) * s.wo, s.wo, a);
  }
}
YOLO12_CPU_AVX2 void depthwise_task_avx2(const ConvParams& p, const ConvShape& s, std::ptrdiff_t t) {
  depthwise_task_impl(p, s, t);
}
void depthwise_task_generic(const ConvParams& p, const ConvShape& s, std::ptrdiff_t t) { depthwise_task_impl(p, s, t); }

void conv2d_depthwise_direct(const ConvParams& p, const ConvShape& s, ThreadPool& pool) {
  const auto task = cpu_has_avx2() ? depthwise_task_avx2 : depthwise_task_generic;
  pool.parallel_for(static_cast<std::ptrdiff_t>(s.batch) * s.c_out, [&](std::ptrdiff_t t, int) { task(p, s, t); });
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

Step bind(const graph::ConvOp& op, const BindContext& ctx) {
  const graph::ConvAttrs& a = op.attrs;
  if (op.widened())  // graph::pad_channels is the CUDA backend's; the CPU kernels read the stored tensors as attrs
    throw Error("CPU backend: op '" + ctx.op_name + "' was widened by graph::pad_channels (a CUDA-only pass)");
  if (a.groups < 1 || a.c_in % a.groups || a.c_out % a.groups)
    throw ModelError("CPU backend: op '" + ctx.op_name + "': channels " + std::to_string(a.c_in) + " -> " +
                     std::to_string(a.c_out) + " are not divisible by groups " + std::to_string(a.groups));
  ConvParams p;
  static_cast<graph::ConvAttrs&>(p) = a;
  const std::size_t c_out = static_cast<std::size_t>(a.c_out);
  p.weight = ctx.tensor(op.weight, c_out * static_cast<std::size_t>(a.c_in / a.groups) * a.k * a.k).data();
  p.bias = ctx.tensor(op.bias, c_out).data();
  if (!op.gamma.empty()) p.gamma = ctx.tensor(op.gamma, c_out).data();
  std::shared_ptr<const std::vector<float>> packed;
  if (!conv_is_depthwise(a.c_in, a.c_out, a.groups)) {
    packed = std::make_shared<const std::vector<float>>(pack_conv_weight(p.weight, a.c_out, a.c_in, a.k, a.groups));
    p.packed = packed->data();
  }
  const graph::ValueRef in = op.in, out = op.out, residual = op.residual;
  Step step;
  step.run = [p, packed, in, out, residual](const ValueViews& v, int batch, ThreadPool& pool) {
    ConvParams q = p;
    q.x = v.view(in);
    q.y = v.view(out);
    q.residual = v.view(residual);
    q.batch = batch;
    conv2d(q, pool);
  };
  step.label = ctx.op_name + " conv " + std::to_string(a.k) + "x" + std::to_string(a.k) + "/" +
               std::to_string(a.stride) + " " + std::to_string(a.c_in) + "->" + std::to_string(a.c_out) + " g" +
               std::to_string(a.groups);
  return step;
}

// Each link bound as the plain conv it was and run in order, every link writing its own output (its scratch
// value where it is not stored): the same arithmetic as the unfused graph, so the same bits.
Step bind(const graph::ConvChainOp& op, const BindContext& ctx) {
  graph::check_conv_chain(ctx.graph, op, ctx.op_name);
  std::vector<Step> links;
  std::string widths = std::to_string(op.links[0].attrs.c_in);
  int scratch = 0;
  for (std::size_t i = 0; i < op.links.size(); ++i) {
    const std::string name = ctx.op_name + " (link " + std::to_string(i) + ")";
    links.push_back(bind(op.links[i], BindContext{ctx.graph, ctx.weights, name}));
    widths += "->" + std::to_string(op.links[i].attrs.c_out);
    scratch += !op.attrs.stored[i];
  }
  Step step;
  step.run = [links](const ValueViews& v, int batch, ThreadPool& pool) {
    for (const Step& link : links) link.run(v, batch, pool);
  };
  const char* kind = graph::chain_stride2_pair(op)   ? " conv pair 3x3/2 "
                     : graph::chain_stride1_pair(op) ? " conv pair 3x3/1 "
                     : graph::chain_dw_branch(op)    ? " conv branch dw3x3 "
                                                     : " conv chain 1x1 ";
  step.label = ctx.op_name + kind + widths + " (" + std::to_string(scratch) + " scratch)";
  return step;
}

}  // namespace yolo12::cpu
