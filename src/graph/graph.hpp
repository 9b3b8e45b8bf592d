// graph/graph.hpp - the static graph every backend executes.
//
// build_graph() expands the model file's module-level architecture (docs/model-format.md, "Layers";
// graph/builder.cpp and its module table, graph/modules/) into a flat list of primitive ops in
// execution order (the op table in graph/ops.hpp), for one input size, followed by a head. Values are per-image feature maps
// (C, H, W); the batch is the executor's business, and so is the memory layout (the CPU backend
// stores NCHW, the CUDA backend NHWC). An op reads and writes *channel slices* of values (ValueRef),
// so a Concat costs nothing: producers write straight into their slice of the concat buffer, and a
// split is a view. Residual adds, layer-scale and activations are fused into the Conv.
//
// The network ends at its outputs: the maps the head reads. The head (HeadSpec) carries its own
// metadata and says what the outputs mean; the pipeline and each backend implement it (Detect now;
// a Segment or Pose head is one more HeadKind, see docs/architecture.md, "Adding a head").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/ops.hpp"

namespace yolo12::graph {

// One feature map of the graph (per image).
struct Value {
  std::string name;  // for logs and errors, e.g. "model.6.m.0.0.attn.qkv"
  int c = 0, h = 0, w = 0;
};

// ---- heads ------------------------------------------------------------------------------------------

enum class HeadKind { Detect };

struct DetectAttrs {
  int nc = 80;       // classes
  int reg_max = 16;  // DFL bins per box side
};

// Ultralytics Detect after its last convs: per level l (stride s_l, an H_l x W_l grid) the box map
// (4 * reg_max, H_l, W_l) and the class map (nc, H_l, W_l). Its raw output per image is (4 + nc, A),
// A = sum_l H_l * W_l anchors (P3 first, cells row-major): DFL-decoded cx, cy, w, h in input pixels,
// then the sigmoid class scores.
struct DetectHead {
  DetectAttrs attrs;
  std::vector<int> strides;   // per level
  std::vector<ValueRef> box;  // per level (4 * reg_max, H_l, W_l)
  std::vector<ValueRef> cls;  // per level (nc, H_l, W_l)
  int anchors = 0;            // A
};

struct HeadSpec {
  HeadKind kind = HeadKind::Detect;
  DetectHead detect;  // kind == Detect
  // The raw head output per image: channels x anchors (float32).
  int raw_channels() const { return 4 + detect.attrs.nc; }
  int raw_anchors() const { return detect.anchors; }
  // Every value slice the head reads.
  std::vector<ValueRef> inputs() const;
};

// A tensor the architecture requires the model file to hold.
struct ParamSpec {
  std::string name;
  std::vector<long long> shape;
};

struct Graph {
  static constexpr int kInputValue = 0;  // values[0] is the input image (3, H, W)
  std::vector<Value> values;
  std::vector<Op> ops;                   // execution order
  std::vector<ValueRef> outputs;         // what the head reads (head.inputs()), alive after the last op
  HeadSpec head;
  std::vector<ParamSpec> params;         // every tensor the ops reference, in first-use order
  int input_h = 0, input_w = 0;
};

// Expands `header["layers"]` (plus nc, reg_max, strides) for an input of input_h x input_w
// (multiples of the largest stride). Throws yolo12::ModelError naming the layer for an unknown
// module type or inconsistent fields.
Graph build_graph(const nlohmann::json& header, int input_h, int input_w);

// The tensors the architecture requires (names and shapes), independent of input size.
std::vector<ParamSpec> required_params(const nlohmann::json& header);

}  // namespace yolo12::graph
