// core/host_device.hpp - YOLO12_HOST_DEVICE marks inline functions of shared host headers (the op
// table's attributes, the letterbox blend) that CUDA kernels call too. YOLO12_UNROLL, before a loop of such a
// function, asks nvcc to unroll it (where a kernel's register array is indexed by the loop); a host compiler
// sees nothing.
#pragma once

#if defined(__CUDACC__)
#define YOLO12_HOST_DEVICE __host__ __device__
#define YOLO12_UNROLL _Pragma("unroll")
#else
#define YOLO12_HOST_DEVICE
#define YOLO12_UNROLL
#endif
