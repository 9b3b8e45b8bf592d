// core/host_device.hpp - YOLO12_HOST_DEVICE marks inline functions of shared host headers (the op
// table's attributes, the letterbox blend) that CUDA kernels call too.
#pragma once

#if defined(__CUDACC__)
#define YOLO12_HOST_DEVICE __host__ __device__
#else
#define YOLO12_HOST_DEVICE
#endif
