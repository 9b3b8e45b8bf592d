// module.cpp - the Python module yolo12_torch._C: importing it loads the library, whose static
// initialisers register the operators under torch.ops.yolo12 (ops.cpp, cpu_ops.cpp, cuda_ops.cpp).
#include <pybind11/pybind11.h>

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "yolo12 operators (registered under torch.ops.yolo12 on import)";
#ifdef YOLO12_TORCH_WITH_CUDA
  m.attr("with_cuda") = true;
#else
  m.attr("with_cuda") = false;
#endif
}
