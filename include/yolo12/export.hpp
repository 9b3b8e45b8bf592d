// yolo12/export.hpp - YOLO12_API marks what a shared libyolo12 exports: the public API of these
// headers. The library is compiled with hidden visibility, so nothing else (internal classes, the
// kernels) is visible outside it, and its typed exceptions keep one identity across the boundary.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define YOLO12_API __attribute__((visibility("default")))
#else
#define YOLO12_API
#endif
