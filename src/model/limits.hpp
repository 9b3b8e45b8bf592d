// model/limits.hpp - what a model file may ask for, checked before anything is built.
//
// Every number here is derived from the real model family with a margin: Ultralytics' yaml files
// for YOLOv8, YOLO11 and YOLO12 at scales n..x (and YOLOv8's P6 variant), built with Ultralytics
// 8.4 (tools/hostile/README.md says how they were measured). The largest real value is given after
// each limit. docs/model-format.md ("Limits") lists them; change both together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace yolo12::model::limits {

constexpr std::uint64_t kFileBytes = 4ull << 30;      // whole file; largest real: ~390 MB (YOLOv8x6, f32)
constexpr std::uint64_t kHeaderBytes = 16ull << 20;   // header JSON; real: ~100 KB
constexpr int kJsonDepth = 8;                         // nesting levels; real: 4 (header / layers / layer / from)
constexpr std::size_t kJsonValues = 1u << 20;         // values in the header; real: ~10,000
constexpr long long kClasses = 16384;                 // nc and the names; real datasets: 1,203 (LVIS)
constexpr std::size_t kClassNameBytes = 256;          // one class name (not empty, no control characters); real: ~40
constexpr std::size_t kScaleBytes = 16;               // the scale letter (may be empty); real: 1
constexpr std::size_t kStrides = 8;                   // detection levels; real: 4 (P6 models)
constexpr long long kStride = 256;                    // one stride; real: 64
constexpr long long kImageSide = 4096;                // imgsz, each side; real export sizes: 320..1280
constexpr long long kRegMax = 64;                     // real: 16
constexpr std::size_t kLayers = 256;                  // layers; real: 31 (YOLOv8-P6)
constexpr std::size_t kLayerInputs = 16;              // entries of one layer's "from"; real: 4
constexpr long long kRepeats = 32;                    // n of one block; real: 6 (YOLOv8l/x C2f)
constexpr long long kTotalRepeats = 256;              // sum of n over the layers; real: 30 (YOLOv8l/x)
constexpr long long kChannels = 16384;                // any channel count; real: 2,560 (YOLOv8x concat)
constexpr long long kKernel = 15;                     // conv / pool / pe kernel; real: 7
constexpr long long kConvStride = 8;                  // real: 2
constexpr long long kDilation = 8;                    // real: 1
constexpr long long kPad = 64;                        // real: 3
constexpr long long kArea = 64;                       // A2C2f area; real: 4
constexpr long long kUpsample = 8;                    // Upsample scale; real: 2
constexpr double kRatio = 4.0;                        // e (hidden-channel ratio) in (0, kRatio]; real: 0.25..0.5
constexpr double kMlpRatio = 8.0;                     // A2C2f mlp_ratio in (0, kMlpRatio]; real: 1.2..2.0
constexpr std::size_t kTensors = 16384;               // tensor table entries; real: ~430 (YOLO12x)

}  // namespace yolo12::model::limits

namespace yolo12::model {

// Checks every field of every entry of header["layers"] that the table in limits.cpp knows: each
// integer field exact and within its limit, each ratio finite and within its limit, the layer count
// and the sum of the repeats. Throws ModelError "<path>: layer I (Type) field 'k': expected ...".
// Fields the table does not know, and how fields relate to each other, are the graph builder's.
void check_layer_limits(const std::string& path, const nlohmann::json& header);

}  // namespace yolo12::model
