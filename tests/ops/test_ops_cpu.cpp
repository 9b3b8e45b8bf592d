// tests/ops/test_ops_cpu.cpp - the shared op suite (op_suite.hpp) on the CPU backend: every case
// bound with cpu::bind_op (the CPU executor's dispatch) or cpu::bind_head, run on NCHW float32
// buffers with guards, against the reference.
#include <cstdio>
#include <exception>
#include <vector>

#include "catch.hpp"
#include "backends/cpu/executor.hpp"
#include "backends/cpu/ops.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "ops/op_suite.hpp"

namespace ops = yolo12::test::ops;
namespace cpu = yolo12::cpu;

namespace {

// The values of a case in one float32 arena, as the CPU executor's ValueViews give them.
class ArenaViews final : public cpu::ValueViews {
 public:
  ArenaViews(const ops::OpCase& c, const ops::Arena& a, std::vector<float>& buf) : c_(c), a_(a), buf_(buf) {}
  cpu::TensorView view(const yolo12::graph::ValueRef& r) const override {
    if (!r.valid()) return cpu::TensorView{};
    const yolo12::graph::Value& v = c_.graph.values[static_cast<std::size_t>(r.value)];
    return cpu::TensorView{buf_.data() + a_.offset[static_cast<std::size_t>(r.value)], v.c, r.c0, r.c, v.h, v.w};
  }

 private:
  const ops::OpCase& c_;
  const ops::Arena& a_;
  std::vector<float>& buf_;
};

ops::RunResult run_cpu(const ops::OpCase& c, const ops::HostState& in, cpu::ThreadPool& pool) {
  ops::RunResult r;
  const ops::Arena arena = ops::plan_arena(c, sizeof(float), /*nhwc=*/false);
  std::vector<float> buf = ops::pack<float>(c, arena, in);
  std::vector<float> raw = ops::guarded_raw(in);
  const ArenaViews views(c, arena, buf);
  cpu::CpuWeights weights;
  weights.tensors = c.tensors;
  try {
    if (c.head()) {
      const std::string name = "head";
      const cpu::HeadStep head = cpu::bind_head(c.graph.head, cpu::BindContext{c.graph, weights, name});
      head(views, c.batch, raw.data() + ops::kRawGuard, pool);
    } else {
      const yolo12::graph::Op& op = c.graph.ops[0];
      const cpu::Step step = cpu::bind_op(op, cpu::BindContext{c.graph, weights, op.name});
      step.run(views, c.batch, pool);
    }
  } catch (const std::exception& e) {
    r.error = e.what();
    return r;
  }
  r.state = ops::unpack<float>(c, arena, buf, &r.guards_changed);
  if (c.head()) r.state.raw = ops::unguard_raw(raw, &r.guards_changed);
  return r;
}

}  // namespace

TEST_CASE("the shared op cases cover every op of the table and the head", "[ops][cpu]") {
  int head = 0;
  const std::vector<int> per_op = ops::cases_per_op(&head);
  for (std::size_t k = 0; k < per_op.size(); ++k) {
    INFO(yolo12::graph::op_kind_name(static_cast<yolo12::graph::OpKind>(k)) << ": " << per_op[k] << " cases");
    CHECK(per_op[k] >= 10);
  }
  CHECK(head >= 5);
}

TEST_CASE("every op of the table matches its reference on the CPU backend", "[ops][cpu]") {
  cpu::ThreadPool pool(3);
  int failed = 0;
  for (const ops::OpCase& c : ops::op_cases()) {
    const ops::HostState in = ops::initial_state(c);
    const ops::Verdict v = ops::check(c, ops::DType::F32, in, ops::expected(c, in), run_cpu(c, in, pool));
    INFO("cpu fp32: " << c.what << " (seed " << c.seed << "): " << v.detail);
    CHECK(v.ok);
    failed += !v.ok;
  }
  std::printf("test_ops_cpu: %zu cases, %d failed\n", ops::op_cases().size(), failed);
}
