// src/backends/cuda/device.cu - device_info() (common.cuh).
#include <map>
#include <mutex>
#include <utility>

#include "common.cuh"

namespace yolo12::cuda {

const DeviceInfo& device_info() {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;  // per device ordinal; nodes never move: the references stay valid
  static const DeviceInfo no_device;       // the H200's facts (DeviceInfo's defaults)
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();  // no device here: leave no error behind for a later check
    return no_device;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  DeviceInfo d;
  int sm = 0, optin = 0, per_sm = 0, reserved = 0, major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();  // a runtime without a usable device: as above, not cached
    return no_device;
  }
  d.sm_count = sm;
  d.smem_per_block_optin = static_cast<std::size_t>(optin);
  d.smem_per_sm = static_cast<std::size_t>(per_sm);
  d.smem_reserved_per_block = static_cast<std::size_t>(reserved);
  d.cc_major = major;
  d.cc_minor = minor;
  return known.emplace(device, d).first->second;
}

cudaError_t allow_dynamic_smem(const void* kernel, int bytes) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, int> raised;  // (kernel, device) -> limit set
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> lock(mutex);
  int& limit = raised[{kernel, device}];
  if (bytes <= limit) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess) limit = bytes;
  return err;
}

}  // namespace yolo12::cuda
