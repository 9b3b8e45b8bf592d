// ops.cpp - the yolo12 operator library: schemas and the composite area_attention.
//
// Kernels: cpu_ops.cpp (CPU: the engine's CPU backend for float32 forwards, plain loops for the
// backwards and for float64), cuda_ops.cpp (CUDA: the engine's kernels and src/backends/cuda/*_backward.cu,
// plus the autocast wrappers). Autograd formulas and fake (meta) kernels are registered from Python
// (yolo12_torch/ops.py) with torch.library, so that torch.compile can trace them.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace {

// The public attention operator: the output of area_attention_fwd, whose second output (the softmax
// statistics) only the backward needs.
at::Tensor area_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t area) {
  static auto fwd = c10::Dispatcher::singleton()
                        .findSchemaOrThrow("yolo12::area_attention_fwd", "")
                        .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                  const at::Tensor&, int64_t)>();
  return std::get<0>(fwd.call(q, k, v, area));
}

}  // namespace

TORCH_LIBRARY(yolo12, m) {
  m.def(
      "conv2d(Tensor x, Tensor weight, Tensor? bias=None, Tensor? residual=None, int stride=1, int padding=0, "
      "int dilation=1, int groups=1, bool silu=False) -> Tensor");
  m.def(
      "conv2d_backward(Tensor grad_y, Tensor x, Tensor weight, Tensor? bias, int stride, int padding, int dilation, "
      "int groups, bool silu, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  m.def("area_attention(Tensor q, Tensor k, Tensor v, int area=1) -> Tensor");
  m.def("area_attention_fwd(Tensor q, Tensor k, Tensor v, int area) -> (Tensor, Tensor)");
  m.def(
      "area_attention_backward(Tensor grad_out, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, int area) "
      "-> (Tensor, Tensor, Tensor)");
  m.def("detect_decode(Tensor[] box, Tensor[] cls, int[] strides) -> Tensor");
  m.def("detect_decode_backward(Tensor grad_out, Tensor[] box, Tensor[] cls, int[] strides) -> (Tensor[], Tensor[])");
}

TORCH_LIBRARY_IMPL(yolo12, CompositeImplicitAutograd, m) { m.impl("area_attention", &area_attention); }
