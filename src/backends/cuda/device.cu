// src/backends/cuda/device.cu - device_info() (common.cuh).
#include <map>
#include <mutex>

#include "common.cuh"

namespace yolo12::cuda {

const DeviceInfo& device_info() {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;  // nodes never move: the references stay valid
  int device = 0;
  YOLO12_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  DeviceInfo d;
  int v = 0;
  YOLO12_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, device));
  d.sm_count = v;
  YOLO12_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  d.smem_per_block_optin = static_cast<std::size_t>(v);
  YOLO12_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  d.smem_per_sm = static_cast<std::size_t>(v);
  YOLO12_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  YOLO12_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  return known.emplace(device, d).first->second;
}

}  // namespace yolo12::cuda
