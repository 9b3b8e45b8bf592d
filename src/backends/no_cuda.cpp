// backends/no_cuda.cpp - what a build without the CUDA toolkit offers in place of src/backends/cuda/backend.cu.
#ifndef YOLO12_HAVE_CUDA
#include "core/executor.hpp"

namespace yolo12 {

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const model::ModelFile>, int, Precision, int, int) {
  throw OptionError("device cuda: this build of libyolo12 has no CUDA backend (rebuild with the CUDA toolkit), use device cpu");
}

bool cuda_device_available() { return false; }

bool in_cuda_device_memory(const void*) { return false; }

}  // namespace yolo12
#endif
