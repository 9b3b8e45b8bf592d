// tests/ops/test_ops_gpu.cu - the shared op suite (op_suite.hpp) on the CUDA backend, fp32 and fp16:
// every case's weights packed and uploaded by cuda::upload_weights, the case bound with
// cuda::bind_op<T> (the CUDA executor's dispatch) or cuda::DetectHead<T> (the raw decode), run on one
// NHWC arena with guards, against the reference. Prints which kernels the conv and attention cases
// reached (the step labels). Exits 77 (skipped) where no CUDA device is visible (tests/test_main.cpp).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "catch.hpp"
#include "backends/cuda/common.cuh"
#include "backends/cuda/detect.cuh"
#include "backends/cuda/executor.cuh"
#include "backends/cuda/ops.cuh"
#include "ops/op_suite.hpp"

namespace ops = yolo12::test::ops;
namespace cuda = yolo12::cuda;

namespace {

// The kernel a step's label names ("conv ... [implicit_gemm_f16]" -> "conv implicit_gemm_f16").
std::string kernel_of(const std::string& label) {
  const std::size_t open = label.rfind('['), close = label.rfind(']');
  const std::string op = label.substr(0, label.find(' '));
  return open != std::string::npos && close > open ? op + " " + label.substr(open + 1, close - open - 1) : op;
}

template <typename T>
ops::RunResult run_cuda(const ops::OpCase& c, const ops::HostState& in, cudaStream_t stream, std::string* label) {
  using Elem = std::conditional_t<std::is_same<T, float>::value, float, std::uint16_t>;  // host copy of T
  ops::RunResult r;
  try {
    int device = 0;
    YOLO12_CUDA_CHECK(cudaGetDevice(&device));
    const ops::Arena arena = ops::plan_arena(c, sizeof(T), /*nhwc=*/true);
    const std::vector<Elem> host = ops::pack<Elem>(c, arena, in);
    cuda::DeviceBuffer dev(host.size() * sizeof(T));
    YOLO12_CUDA_CHECK(cudaMemcpy(dev.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    std::vector<std::size_t> offset_bytes;
    for (std::size_t o : arena.offset) offset_bytes.push_back(o * sizeof(T));
    const auto weights = cuda::upload_weights([&c](const std::string& name) { return c.tensors.at(name); }, c.graph,
                                              std::is_same<T, float>::value ? yolo12::Precision::Fp32
                                                                            : yolo12::Precision::Fp16,
                                              device);
    std::vector<float> raw = ops::guarded_raw(in);
    cuda::DeviceBuffer raw_dev(raw.size() * sizeof(float));
    if (c.head()) {
      YOLO12_CUDA_CHECK(cudaMemcpy(raw_dev.get(), raw.data(), raw.size() * sizeof(float), cudaMemcpyHostToDevice));
      const std::string name = "head";
      const cuda::DetectHead<T> head(c.graph.head,
                                     cuda::BindContext<T>{c.graph, dev.as<char>(), offset_bytes, *weights, c.batch, name},
                                     yolo12::post::NmsParams{});
      head.enqueue_raw(c.batch, raw_dev.as<float>() + ops::kRawGuard, stream);
      *label = "detect decode";
    } else {
      const yolo12::graph::Op& op = c.graph.ops[0];
      const cuda::Step step = cuda::bind_op<T>(
          op, cuda::BindContext<T>{c.graph, dev.as<char>(), offset_bytes, *weights, c.batch, op.name});
      step.run(c.batch, stream);
      *label = step.label;
    }
    YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<Elem> after(host.size());
    YOLO12_CUDA_CHECK(cudaMemcpy(after.data(), dev.get(), after.size() * sizeof(T), cudaMemcpyDeviceToHost));
    r.state = ops::unpack<Elem>(c, arena, after, &r.guards_changed);
    if (c.head()) {
      YOLO12_CUDA_CHECK(cudaMemcpy(raw.data(), raw_dev.get(), raw.size() * sizeof(float), cudaMemcpyDeviceToHost));
      r.state.raw = ops::unguard_raw(raw, &r.guards_changed);
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

template <typename T>
void run_suite(ops::DType dtype) {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  std::map<std::string, int> kernels;
  int failed = 0;
  for (const ops::OpCase& c : ops::op_cases()) {
    const ops::HostState in = ops::initial_state(c);
    std::string label;
    const ops::RunResult got = run_cuda<T>(c, in, stream, &label);
    ops::Verdict v;
    if (c.cuda_rejects) {  // bind must refuse the op, naming it
      v.ok = got.error.find("not supported by the CUDA kernels") != std::string::npos;
      if (!v.ok) v.detail = "cuda::bind_op should refuse these attributes; " + (got.error.empty() ? "it ran" : got.error);
      label = "refused";
    } else {
      v = ops::check(c, dtype, in, ops::expected(c, in), got);
    }
    INFO("cuda " << ops::dtype_name(dtype) << ": " << c.what << " (seed " << c.seed << ") [" << label << "]: " << v.detail);
    CHECK(v.ok);
    failed += !v.ok;
    ++kernels[kernel_of(label)];
  }
  cudaStreamDestroy(stream);
  std::printf("test_ops_gpu %s: %zu cases, %d failed; kernels reached:\n", ops::dtype_name(dtype),
              ops::op_cases().size(), failed);
  for (const auto& k : kernels) std::printf("  %-40s %d\n", k.first.c_str(), k.second);
}

}  // namespace

TEST_CASE("every op of the table matches its reference on the CUDA backend, fp32", "[ops][gpu]") {
  run_suite<float>(ops::DType::F32);
}

TEST_CASE("every op of the table matches its reference on the CUDA backend, fp16", "[ops][gpu]") {
  run_suite<__half>(ops::DType::F16);
}

// The conv chains run one of three ways per batch (conv_chain.cu): forced one at a time (YOLO12_CHAIN_RUN), each
// must match the reference, and the label must name the way where the case allows it.
TEST_CASE("conv chains match their reference run every way: fused, a depthwise link 0 apart, links one by one",
          "[ops][gpu][chain]") {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  for (const char* way : {"fused", "split", "links"}) {
    setenv("YOLO12_CHAIN_RUN", way, 1);
    int ran = 0, as_named = 0;
    for (const ops::OpCase& c : ops::op_cases()) {
      if (c.head() || c.graph.ops[0].kind() != yolo12::graph::OpKind::ConvChain) continue;
      const ops::HostState in = ops::initial_state(c);
      std::string label;
      const ops::RunResult got = run_cuda<__half>(c, in, stream, &label);
      const ops::Verdict v = ops::check(c, ops::DType::F16, in, ops::expected(c, in), got);
      INFO("YOLO12_CHAIN_RUN=" << way << ": " << c.what << " (seed " << c.seed << ") [" << label << "]: " << v.detail);
      CHECK(v.ok);
      const std::string want = std::string(way) == "fused"   ? "[chain_f16]"
                               : std::string(way) == "split" ? "[dw + chain_f16]"
                                                             : "[links one by one]";
      // Whether the kernel takes the case that way: channels multiples of 16 (chain_layout.hpp), every slice on
      // 8-channel (16-byte) boundaries of a value of a multiple of 8 channels; split needs a depthwise link 0 and two
      // links after it.
      const auto& chain = c.graph.ops[0].get<yolo12::graph::ConvChainOp>();
      auto aligned = [&](const yolo12::graph::ValueRef& r) {
        return !r.valid() || (r.c0 % 8 == 0 && c.graph.values[static_cast<std::size_t>(r.value)].c % 8 == 0);
      };
      bool takes = aligned(chain.links[0].in);
      for (const yolo12::graph::ConvOp& l : chain.links)
        takes = takes && l.attrs.c_in % 16 == 0 && l.attrs.c_out % 16 == 0 && aligned(l.out) && aligned(l.residual);
      if (std::string(way) == "split")  // and two links at least after it
        takes = takes && yolo12::graph::chain_depthwise(chain.links[0].attrs) && chain.links.size() >= 3;
      if (std::string(way) == "links") takes = true;
      CHECK(takes == (label.find(want) != std::string::npos));
      as_named += takes ? 1 : 0;
      ++ran;
    }
    std::printf("conv chains, YOLO12_CHAIN_RUN=%s: %d cases, %d run that way\n", way, ran, as_named);
    CHECK(ran >= 40);
    CHECK(as_named >= (std::string(way) == "split" ? 1 : 25));  // split: the cases with a depthwise link 0
  }
  unsetenv("YOLO12_CHAIN_RUN");
  cudaStreamDestroy(stream);
}
