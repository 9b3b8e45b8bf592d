// graph/builder.hpp - the graph builder and the toolkit its modules use.
//
// build_graph() (graph.hpp) runs a Builder over `header["layers"]` in three passes (builder.cpp):
//   1. each layer's inputs and output shape: its module's `shape`;
//   2. each layer's home (the value its output lives in; concat inputs live in the concat's buffer);
//   3. each layer's ops: its module's `expand`.
// Which module a layer is comes from its "type" and the module table (graph/modules/module.hpp);
// the builder itself knows no type names. Everything a module needs to read its fields and emit ops
// is public here; the passes and their state are private.
//
// Hardening: every integer field and every channel count or map size derived from them lies within
// +-kMaxInt (2^24): the checked readers (to_int, get_int) and dim() reject anything else, so no shape
// arithmetic (done in 64 bits) can overflow and no float-to-int conversion is out of range. Every
// failure is a ModelError naming the layer being built.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.hpp"

namespace yolo12::graph {

constexpr long long kMaxInt = 1LL << 24;
// Most repeats (n) of a block: Ultralytics' largest scales use 6; this bounds the graph's size.
constexpr int kMaxRepeats = 256;

struct LayerShape {
  int c = 0, h = 0, w = 0;
};

// The layer being built: its entry of header["layers"] and the layers it reads (-1: the input image).
struct Layer {
  int index;
  const nlohmann::json& fields;
  const std::vector<int>& from;
  std::string path() const { return "model." + std::to_string(index); }  // its ops' and tensors' prefix
};

// A conv for Builder::conv.
struct ConvSpec {
  int c_out = 0, k = 1, stride = 1, pad = -1, groups = 1, dilation = 1;  // pad -1: d * (k - 1) / 2
  Act act = Act::SiLU;
  bool plain = false;     // nn.Conv2d at `path` (P.weight) rather than an Ultralytics Conv (P.conv.weight)
  ValueRef residual;      // optional
  std::string gamma;      // optional layer-scale tensor
};

class Builder {
 public:
  using json = nlohmann::json;

  Builder(const json& header, int input_h, int input_w, bool check_input_size);
  Graph build();

  // ---- errors and field access (the messages name the layer being built) ------------------------
  [[noreturn]] void fail(const std::string& what) const;
  const json& field(const json& layer, const char* key) const;
  // The checked integer reader: an integral, finite number within +-kMaxInt (1.0 counts as 1), else
  // ModelError naming `what`.
  int to_int(const json& v, const std::string& what) const;
  int get_int(const json& layer, const char* key) const;
  int get_int_or(const json& layer, const char* key, int dflt) const;  // dflt when absent or null
  double get_num(const json& layer, const char* key) const;            // a finite number
  bool get_bool(const json& layer, const char* key) const;
  std::string get_str(const json& layer, const char* key) const;
  void require_positive(int v, const char* what) const;
  // A channel count or map size computed (in 64 bits) from checked fields: within 0..kMaxInt.
  int dim(long long v, const std::string& what) const;
  // int(c * ratio) as Ultralytics computes it (truncation), for a finite ratio.
  int scaled(int c, double ratio, const std::string& what) const;
  // False for required_params(): no check that depends on the input size.
  bool check_input_size() const { return check_input_size_; }

  // ---- the header ----------------------------------------------------------------------------------
  int nc() const { return nc_; }
  int reg_max() const { return reg_max_; }
  const std::vector<int>& strides() const { return strides_; }
  int input_h() const { return g_.input_h; }
  int input_w() const { return g_.input_w; }

  // ---- shapes (pass 1) -----------------------------------------------------------------------------
  LayerShape in_shape(int from) const;  // a layer's output (-1: the input image)
  void single_input(const Layer& l) const;  // the layer reads exactly one layer
  void check_c1(const Layer& l) const;      // its field c1 is its input's channel count
  // A block from one input to c2 channels at the input's map size (C2f, C3k2, A2C2f, SPPF, C2PSA).
  LayerShape block_shape(const Layer& l) const;

  // ---- values, params and ops (pass 3) -------------------------------------------------------------
  ValueRef input(const Layer& l, std::size_t k = 0) const;  // where the layer's k-th input lives
  ValueRef output(const Layer& l) const;                    // where its output goes (its home)
  int new_value(const std::string& name, int c, int h, int w);
  ValueRef whole(int value) const { return ValueRef{value, 0, g_.values[value].c}; }
  ValueRef temp(const std::string& name, int c, const ValueRef& like);  // a new value of like's size
  static ValueRef slice(const ValueRef& r, int c0, int c) { return ValueRef{r.value, r.c0 + c0, c}; }
  int H(const ValueRef& r) const { return g_.values[r.value].h; }
  int W(const ValueRef& r) const { return g_.values[r.value].w; }
  void add_param(const std::string& name, std::vector<long long> shape);  // each tensor once
  void emit(const std::string& name, OpVariant op) { g_.ops.push_back(Op{name, std::move(op)}); }
  // A conv from `in` at module path `path`. Writes into `out` when it is valid (its shape must
  // match), else into a new value named after the path. Returns the output ref.
  ValueRef conv(const std::string& path, const ValueRef& in, const ConvSpec& s, ValueRef out = {});
  // Shorthand: an Ultralytics Conv(k, stride 1, autopad) with the given activation.
  ValueRef conv1(const std::string& path, const ValueRef& in, int c_out, int k, Act act, ValueRef out = {},
                 ValueRef residual = {}, int groups = 1);
  void copy(const std::string& name, const ValueRef& in, const ValueRef& out) { emit(name, CopyOp{in, out}); }
  // The network's head: the graph's outputs become what it reads.
  void set_head(const HeadSpec& head);

 private:
  // The layer being built, for error messages.
  struct LayerCtx {
    int index = -1;
    std::string type;
    std::string prefix() const;
  };

  const json& header_;
  bool check_input_size_;
  Graph g_;
  int nc_ = 0, reg_max_ = 16;
  std::vector<int> strides_;
  std::set<std::string> param_names_;
  LayerCtx ctx_;
  std::vector<LayerShape> shapes_;  // per layer output
  std::vector<ValueRef> home_;      // where each layer's output lives
  std::vector<std::vector<int>> from_;

  std::vector<int> parse_from(const json& L, int index);
};

}  // namespace yolo12::graph
