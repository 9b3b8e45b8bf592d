// tests/ops/op_suite.cpp - the parts of the op suite that know no op: the initial state, the buffer
// layout of a backend run, and the comparison with the reference. See op_suite.hpp.
#include "ops/op_suite.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "core/half.hpp"

namespace yolo12::test::ops {

const char* dtype_name(DType t) { return t == DType::F32 ? "fp32" : "fp16"; }

float round_half(float v) { return half_to_float(float_to_half(v)); }

namespace {

// The valid refs of what refs_of(op) lists for the case's op (none for a head case).
template <typename F>
std::vector<graph::ValueRef> valid_refs(const OpCase& c, F refs_of) {
  std::vector<graph::ValueRef> out;
  if (c.head()) return out;
  for (const graph::ValueRef& r : graph::visit_op(c.graph.ops[0], refs_of))
    if (r.valid()) out.push_back(r);
  return out;
}

}  // namespace

std::vector<graph::ValueRef> OpCase::writes() const {
  return valid_refs(*this, [](const auto& op) { return op.writes(); });
}

std::vector<graph::ValueRef> OpCase::scratch() const {
  return valid_refs(*this, [](const auto& op) { return op.scratch(); });
}

std::vector<int> cases_per_op(int* head_cases) {
  std::vector<int> n(std::variant_size_v<graph::OpVariant> - 1, 0);
  *head_cases = 0;
  for (const OpCase& c : op_cases()) {
    if (c.head()) ++*head_cases;
    else ++n[static_cast<std::size_t>(c.graph.ops[0].kind())];
  }
  return n;
}

namespace {

std::size_t numel(const graph::Value& v, int batch) { return static_cast<std::size_t>(batch) * v.c * v.h * v.w; }

// Calls f(index) for every element of slice r of value v in the NCHW state.
template <typename F>
void for_slice(const graph::Value& v, const graph::ValueRef& r, int batch, F&& f) {
  const std::size_t plane = static_cast<std::size_t>(v.h) * v.w;
  for (int b = 0; b < batch; ++b)
    for (int ch = r.c0; ch < r.c0 + r.c; ++ch) {
      const std::size_t first = (static_cast<std::size_t>(b) * v.c + ch) * plane;
      for (std::size_t i = 0; i < plane; ++i) f(first + i);
    }
}

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

constexpr float kGuardValue = 777.f;  // exactly representable in fp16
constexpr std::size_t kGapBytes = 256;

template <typename E> E to_elem(float v);
template <> float to_elem<float>(float v) { return v; }
template <> std::uint16_t to_elem<std::uint16_t>(float v) { return float_to_half(v); }
float from_elem(float v) { return v; }
float from_elem(std::uint16_t v) { return half_to_float(v); }

}  // namespace

HostState initial_state(const OpCase& c) {
  std::mt19937_64 rng(c.seed);
  HostState s;
  for (std::size_t v = 0; v < c.graph.values.size(); ++v) {
    const Fill f = v < c.fill.size() ? c.fill[v] : Fill{};
    std::uniform_real_distribution<float> u(f.lo, f.hi);
    std::vector<float> data(numel(c.graph.values[v], c.batch));
    for (float& x : data) x = round_half(u(rng));
    s.values.push_back(std::move(data));
  }
  for (const graph::ValueRef& r : c.writes())
    for_slice(c.graph.values[static_cast<std::size_t>(r.value)], r, c.batch,
              [&](std::size_t i) { s.values[static_cast<std::size_t>(r.value)][i] = std::nanf(""); });
  if (c.head())
    s.raw.assign(static_cast<std::size_t>(c.batch) * c.graph.head.raw_channels() * c.graph.head.raw_anchors(),
                 std::nanf(""));
  return s;
}

Arena plan_arena(const OpCase& c, std::size_t elem_bytes, bool nhwc) {
  Arena a;
  a.nhwc = nhwc;
  const std::size_t gap = kGapBytes / elem_bytes;
  std::size_t top = gap;
  for (const graph::Value& v : c.graph.values) {
    a.offset.push_back(top);
    top = (top + numel(v, c.batch) + 2 * gap - 1) / gap * gap;  // at least one gap after, then aligned
  }
  a.elems = top;
  return a;
}

template <typename E>
std::vector<E> pack(const OpCase& c, const Arena& a, const HostState& s) {
  std::vector<E> buf(a.elems, to_elem<E>(kGuardValue));
  for (std::size_t v = 0; v < c.graph.values.size(); ++v) {
    const graph::Value& val = c.graph.values[v];
    const Slice<const float> from{s.values[v].data(), val.c, 0, val.c, val.h, val.w, false};
    const Slice<E> to{buf.data() + a.offset[v], val.c, 0, val.c, val.h, val.w, a.nhwc};
    for (int b = 0; b < c.batch; ++b)
      for (int ch = 0; ch < val.c; ++ch)
        for (int y = 0; y < val.h; ++y)
          for (int x = 0; x < val.w; ++x) to.at(b, ch, y, x) = to_elem<E>(from.at(b, ch, y, x));
  }
  return buf;
}

template <typename E>
HostState unpack(const OpCase& c, const Arena& a, const std::vector<E>& buf, std::size_t* guards_changed) {
  HostState s;
  std::vector<char> inside(buf.size(), 0);
  for (std::size_t v = 0; v < c.graph.values.size(); ++v) {
    const graph::Value& val = c.graph.values[v];
    std::vector<float> data(numel(val, c.batch));
    const Slice<const E> from{buf.data() + a.offset[v], val.c, 0, val.c, val.h, val.w, a.nhwc};
    const Slice<float> to{data.data(), val.c, 0, val.c, val.h, val.w, false};
    for (int b = 0; b < c.batch; ++b)
      for (int ch = 0; ch < val.c; ++ch)
        for (int y = 0; y < val.h; ++y)
          for (int x = 0; x < val.w; ++x) to.at(b, ch, y, x) = from_elem(from.at(b, ch, y, x));
    std::fill(inside.begin() + static_cast<std::ptrdiff_t>(a.offset[v]),
              inside.begin() + static_cast<std::ptrdiff_t>(a.offset[v] + data.size()), 1);
    s.values.push_back(std::move(data));
  }
  const E guard = to_elem<E>(kGuardValue);
  *guards_changed = 0;
  for (std::size_t i = 0; i < buf.size(); ++i)
    if (!inside[i] && std::memcmp(&buf[i], &guard, sizeof(E)) != 0) ++*guards_changed;
  return s;
}

template std::vector<float> pack<float>(const OpCase&, const Arena&, const HostState&);
template std::vector<std::uint16_t> pack<std::uint16_t>(const OpCase&, const Arena&, const HostState&);
template HostState unpack<float>(const OpCase&, const Arena&, const std::vector<float>&, std::size_t*);
template HostState unpack<std::uint16_t>(const OpCase&, const Arena&, const std::vector<std::uint16_t>&, std::size_t*);

std::vector<float> guarded_raw(const HostState& s) {
  std::vector<float> buf(s.raw.size() + 2 * kRawGuard, kGuardValue);
  std::copy(s.raw.begin(), s.raw.end(), buf.begin() + kRawGuard);
  return buf;
}

std::vector<float> unguard_raw(const std::vector<float>& buf, std::size_t* guards_changed) {
  for (std::size_t i = 0; i < kRawGuard; ++i) {
    *guards_changed += bits(buf[i]) != bits(kGuardValue);
    *guards_changed += bits(buf[buf.size() - 1 - i]) != bits(kGuardValue);
  }
  return std::vector<float>(buf.begin() + kRawGuard, buf.end() - kRawGuard);
}

namespace {

// One written slice (or the raw head): the backend's elements against the reference's.
std::string judge(const std::string& name, const std::vector<float>& got, const std::vector<double>& want,
                  const Tolerance& tol, DType dtype) {
  std::ostringstream m;
  std::size_t unwritten = 0, mismatched = 0, outside_max = 0;
  double num = 0, den = 0, round_num = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++unwritten;
      continue;
    }
    const double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
    const double r = round_half(static_cast<float>(want[i])) - want[i];
    round_num += r * r;
    if (tol.exact && got[i] != static_cast<float>(want[i])) ++mismatched;
    if (tol.max_rel > 0 && std::fabs(d) > tol.max_rel * (std::fabs(want[i]) + 1.0)) ++outside_max;
  }
  const double rms = std::sqrt(den / static_cast<double>(std::max<std::size_t>(want.size(), 1)));
  const double err = std::sqrt(num / std::max(den, 1e-300));
  const double rounding = std::sqrt(round_num / std::max(den, 1e-300));
  const bool by_rounding = dtype == DType::F16 && tol.f16_factor > 0;
  const bool f16_given = dtype == DType::F16 && tol.f16_rel_l2 > 0;
  double bound = by_rounding ? std::max(tol.f16_factor * rounding, 1e-5) : tol.rel_l2;
  if (f16_given) bound = by_rounding ? std::max(bound, tol.f16_rel_l2) : tol.f16_rel_l2;
  if (unwritten) m << name << ": " << unwritten << " of " << got.size() << " elements not written (NaN or inf); ";
  if (!(rms > 1e-2)) m << name << ": the reference is (almost) zero, rms " << rms << ": the case tests nothing; ";
  if (tol.exact && mismatched) m << name << ": " << mismatched << " elements differ from the reference (exact op); ";
  if (!tol.exact && !(err <= bound)) {
    m << name << ": rel L2 error " << err << " > " << bound;
    if (by_rounding) m << " (" << tol.f16_factor << " x " << rounding << ", the reference's own fp16 rounding";
    if (f16_given) m << (by_rounding ? ", or " : " (") << tol.f16_rel_l2 << ", the case's fp16 bound";
    if (by_rounding || f16_given) m << ")";
    m << "; ";
  }
  if (outside_max) m << name << ": " << outside_max << " elements off by more than " << tol.max_rel << " x (|ref| + 1); ";
  return m.str();
}

std::string slice_name(const graph::ValueRef& r, const graph::Value& v) {
  return "value " + std::to_string(r.value) + " channels [" + std::to_string(r.c0) + ", " +
         std::to_string(r.c0 + r.c) + ") of " + std::to_string(v.c);
}

}  // namespace

Verdict check(const OpCase& c, DType dtype, const HostState& initial, const Expected& want, const RunResult& got) {
  Verdict verdict;
  std::ostringstream m;
  if (!got.error.empty()) {
    verdict.ok = false;
    verdict.detail = "the run threw: " + got.error;
    return verdict;
  }
  if (got.guards_changed) m << got.guards_changed << " guard elements around the values changed; ";
  // Everything the case does not write keeps its initial bits (scratch may hold anything).
  std::vector<std::vector<char>> written(c.graph.values.size());
  for (std::size_t v = 0; v < written.size(); ++v) written[v].assign(initial.values[v].size(), 0);
  std::vector<graph::ValueRef> may_change = c.writes();
  for (const graph::ValueRef& r : c.scratch()) may_change.push_back(r);
  for (const graph::ValueRef& r : may_change)
    for_slice(c.graph.values[static_cast<std::size_t>(r.value)], r, c.batch,
              [&](std::size_t i) { written[static_cast<std::size_t>(r.value)][i] = 1; });
  for (std::size_t v = 0; v < written.size(); ++v) {
    std::size_t changed = 0;
    for (std::size_t i = 0; i < written[v].size(); ++i)
      if (!written[v][i] && bits(got.state.values[v][i]) != bits(initial.values[v][i])) ++changed;
    if (changed) m << "value " << v << ": " << changed << " elements outside the written slices changed; ";
  }
  // Each written slice against the reference.
  if (c.head()) {
    m << judge("raw head", got.state.raw, want.raw, c.tol.at(0), dtype);
  } else {
    const std::vector<graph::ValueRef> all =
        graph::visit_op(c.graph.ops[0], [](const auto& op) { return op.writes(); });
    for (std::size_t j = 0; j < all.size(); ++j) {
      const graph::ValueRef& r = all[j];
      if (!r.valid()) continue;
      const graph::Value& v = c.graph.values[static_cast<std::size_t>(r.value)];
      std::vector<float> g;
      std::vector<double> w;
      for_slice(v, r, c.batch, [&](std::size_t i) {
        g.push_back(got.state.values[static_cast<std::size_t>(r.value)][i]);
        w.push_back(want.values[static_cast<std::size_t>(r.value)][i]);
      });
      m << judge("write " + std::to_string(j) + " (" + slice_name(r, v) + ")", g, w, c.tol.at(j), dtype);
    }
  }
  verdict.detail = m.str();
  verdict.ok = verdict.detail.empty();
  return verdict;
}

}  // namespace yolo12::test::ops
