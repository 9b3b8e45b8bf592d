// tests/ops/op_suite.hpp - one test suite for every op of the op table (src/graph/ops.hpp), run on
// every backend, as ggml's test-backend-ops does.
//
// A case (OpCase) is a one-op graph: its values (channel slices of them are the op's operands, so a
// case can read and write slices of one value, as a concat buffer is), the op, its weights, the
// batch and a seed. A head case has no op and runs the graph's head (the Detect decode) instead.
// op_cases.cpp holds, per op, ONE naive reference in double precision and the generator of its
// cases (many shapes, odd sizes, channel offsets); it is the only file of the suite that knows an
// op. The backends' runners (test_ops_cpu.cpp, test_ops_gpu.cu) execute a case through the entry
// point their executor uses (cpu::bind / cuda::bind<T> from the op table, and the head's bind),
// in the backend's own layout, and hand back what every value holds afterwards; check() compares
// that with the reference.
//
// Inputs are random, seeded per case, and exactly representable in fp16, so the reference is the
// same for every backend and precision. What check() demands:
//   - the written slices: every element written (they start as NaN), within the op's tolerance for
//     the precision (fp32: relative L2 error; fp16: a multiple of the error of the reference merely
//     rounded to fp16, i.e. of a naive fp16 implementation, or where larger a bound the case measured on
//     an emulation of its fp16 path (a conv chain rounds every link); data movement: exact in both);
//   - every other element of every value unchanged, bit for bit, except the op's scratch values (ops.hpp,
//     scratch(): their contents are undefined after the op), and the guard elements around each value in the
//     backend's buffer untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.hpp"

namespace yolo12::test::ops {

enum class DType { F32, F16 };
const char* dtype_name(DType t);
float round_half(float v);  // to the nearest fp16 value, back as float

// ---- the naive references, shared with the kernel tests (tests/gpu) ---------------------------------

// A channel slice [c0, c0 + c) of a batched tensor of `channels` channels, h x w, laid out NCHW (the
// CPU backend's layout and the suite's) or NHWC (the CUDA backend's).
template <typename E>
struct Slice {
  E* data = nullptr;
  int channels = 0, c0 = 0, c = 0, h = 0, w = 0;
  bool nhwc = false;
  bool valid() const { return data != nullptr; }
  std::size_t index(int b, int ch, int y, int x) const {
    const std::size_t bb = static_cast<std::size_t>(b);
    return nhwc ? ((bb * h + y) * w + x) * channels + c0 + ch
                : ((bb * channels + c0 + ch) * h + y) * static_cast<std::size_t>(w) + x;
  }
  E& at(int b, int ch, int y, int x) const { return data[index(b, ch, y, x)]; }
};
using HostView = Slice<const float>;  // an operand
using RefOut = Slice<double>;         // where a reference writes

// y = act(conv(x, w) + bias) * (gamma ? gamma : 1) + (residual ? residual : 0), as graph::ConvOp.
// w: (c_out, c_in / groups, k, k); bias, gamma: (c_out) or nullptr; residual: invalid for none.
void conv_reference(const graph::ConvAttrs& a, const HostView& x, const float* w, const float* bias,
                    const float* gamma, const HostView& residual, int batch, const RefOut& y);
// Area attention as graph::AttentionOp; v_image invalid for none. round_p (optional) is applied to
// every softmax probability before it weights v: a naive fp16 implementation rounds them to fp16.
void attention_reference(const graph::AttentionAttrs& a, const HostView& q, const HostView& k, const HostView& v,
                         int batch, const RefOut& out, const RefOut& v_image, float (*round_p)(float) = nullptr);

// What a conv case fuses and where its operands sit: x is channels [x_c0, x_c0 + c_in) of a value of
// x_c0 + c_in + x_extra channels, likewise y and the residual. (bias off: a zero bias in the suite, no
// bias pointer in the kernel tests.)
struct ConvOptions {
  bool bias = true, gamma = false, residual = false, silu = true;
  int x_c0 = 0, x_extra = 0, y_c0 = 0, y_extra = 0, r_c0 = 0, r_extra = 0;
};
ConvOptions conv_options(bool gamma, bool residual, bool silu, int x_c0 = 0, int x_extra = 0, int y_c0 = 0,
                         int y_extra = 0, int r_c0 = 0, int r_extra = 0);
// A conv case: the op's attributes (attrs() has the activation of `silu`), the input size and the options.
struct ConvSpec : ConvOptions {
  graph::ConvAttrs a;
  int batch = 1, h = 0, w = 0;
  graph::ConvAttrs attrs() const;
  std::string describe() const;
};
// The conv shapes every conv kernel path needs and their edges (op_cases.cpp; the kernel tests run
// them too, with kernel variants switched).
const std::vector<ConvSpec>& conv_fixed_specs();
// Random convs (1x1, k x k, grouped, depthwise; odd sizes, stride 1 and 2, every fusion, slices):
// `count` of them from `seed`.
std::vector<ConvSpec> conv_random_specs(int count, std::uint64_t seed);
// Random fusions and slice placements; pick(lo, hi) draws an int, x_offsets are the 5 channel
// offsets x may take (the kernel tests pass 16-byte aligned ones for vector gathers).
void conv_random_options(ConvOptions& o, const std::function<int(int, int)>& pick, const int (&x_offsets)[5]);
extern const int kConvSliceOffsets[5];    // {0, 0, 8, 3, 16}
extern const int kConvAlignedOffsets[5];  // {0, 0, 8, 16, 16}

// ---- cases ------------------------------------------------------------------------------------------

// How check() judges one written slice.
struct Tolerance {
  bool exact = false;       // got == reference in both precisions (ops that only move or compare values)
  double rel_l2 = 1e-5;     // fp32, and outputs a backend keeps in fp32 (the raw head) in fp16 too
  double f16_factor = 0;    // fp16: rel L2 at most f16_factor x that of the reference rounded to fp16;
                            // 0: rel_l2 in fp16 too
  double f16_rel_l2 = 0;    // > 0: fp16 rel L2 at most this, or the f16_factor bound where that is larger (an
                            // op whose fp16 path rounds more than once, e.g. a conv chain's every link)
  double max_rel = 0;       // > 0: every element also within max_rel * (|reference| + 1)
};

struct Fill {
  float lo = -1.f, hi = 1.f;  // uniform, rounded to fp16
};

struct OpCase {
  std::string what;     // printed with every failure: the op, its attributes, shapes and slices
  graph::Graph graph;   // the values; ops holds the op, or nothing for a head case (graph.head)
  std::unordered_map<std::string, std::vector<float>> tensors;  // the weights, float32
  std::vector<Fill> fill;        // per value
  std::vector<Tolerance> tol;    // per written slice (op.writes(), invalid ones included), or {raw}
  int batch = 1;
  std::uint64_t seed = 0;
  // Attributes the CUDA kernels do not take (the CPU does): test_ops_gpu checks that cuda::bind_op
  // refuses them with a ModelError, as an executor is refused the model.
  bool cuda_rejects = false;
  bool head() const { return graph.ops.empty(); }
  // The slices the case writes (the op's valid writes; none for a head case, which writes `raw`).
  std::vector<graph::ValueRef> writes() const;
  // The op's valid scratch values (their contents after the op are not checked).
  std::vector<graph::ValueRef> scratch() const;
};

// Every case of every op and the head (op_cases.cpp), built once.
const std::vector<OpCase>& op_cases();
// How many cases exercise each op of the table (index: OpKind), and the head.
std::vector<int> cases_per_op(int* head_cases);

// ---- running and checking ---------------------------------------------------------------------------

// What every value of a case holds, (batch, c, h, w) NCHW per value, and for a head case the raw
// head output (batch, raw_channels, raw_anchors).
struct HostState {
  std::vector<std::vector<float>> values;
  std::vector<float> raw;
};
// The case's inputs: every value random (seeded, per its Fill, fp16-representable), the slices it
// writes (and the raw head) NaN.
HostState initial_state(const OpCase& c);

// The reference's result: the initial state with every written slice (and the raw head) computed.
struct Expected {
  std::vector<std::vector<double>> values;
  std::vector<double> raw;
};
Expected expected(const OpCase& c, const HostState& in);  // op_cases.cpp

// The contents of one case's values in one backend buffer of elements E (float, or fp16 bits as
// std::uint16_t): each value at a 256-byte aligned offset, NCHW or NHWC, the gaps between and around
// them guard elements.
struct Arena {
  std::vector<std::size_t> offset;  // per value, in elements
  std::size_t elems = 0;
  bool nhwc = false;
};
Arena plan_arena(const OpCase& c, std::size_t elem_bytes, bool nhwc);
template <typename E>
std::vector<E> pack(const OpCase& c, const Arena& a, const HostState& s);
// Back to a HostState (raw left empty); counts the guard elements that changed.
template <typename E>
HostState unpack(const OpCase& c, const Arena& a, const std::vector<E>& buf, std::size_t* guards_changed);

// The raw head output of a head case (float32 on every backend) in a buffer with kRawGuard guard
// elements on each side; unguard_raw adds the changed guards to *guards_changed.
constexpr std::size_t kRawGuard = 64;
std::vector<float> guarded_raw(const HostState& s);
std::vector<float> unguard_raw(const std::vector<float>& buf, std::size_t* guards_changed);

// A backend's outcome: the state after the run, or the exception it threw.
struct RunResult {
  HostState state;
  std::size_t guards_changed = 0;
  std::string error;  // non-empty: the run threw this
};

// The verdict on one run: ok, or what is wrong (with the numbers).
struct Verdict {
  bool ok = true;
  std::string detail;
};
Verdict check(const OpCase& c, DType dtype, const HostState& initial, const Expected& want, const RunResult& got);

}  // namespace yolo12::test::ops
