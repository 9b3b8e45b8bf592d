// graph/builder.cpp - expands the module-level `layers` of a model header into primitive ops.
//
// The rules follow docs/model-format.md ("Layers"). The builder runs three passes over the layers
// (graph/builder.hpp) and asks the module table (graph/modules/module.hpp) for each layer's shape
// and expansion; it knows no module type by name. This file holds the passes and the toolkit the
// modules use: the checked field readers, values, params and the conv emitter.
#include "graph/builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "graph/modules/module.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::graph {
namespace {

std::string shape_str(int c, int h, int w) {
  std::ostringstream s;
  s << "(" << c << ", " << h << ", " << w << ")";
  return s.str();
}

}  // namespace

std::string Builder::LayerCtx::prefix() const {
  std::ostringstream s;
  s << "model layer " << index << " (" << type << "): ";
  return s.str();
}

Builder::Builder(const json& header, int input_h, int input_w, bool check_input_size)
    : header_(header), check_input_size_(check_input_size) {
  g_.input_h = input_h;
  g_.input_w = input_w;
}

// ---- errors and field access ----------------------------------------------------------------------

void Builder::fail(const std::string& what) const {
  throw ModelError(ctx_.prefix() + what +
                   "; re-export the model with exporter/export.py from a supported Ultralytics checkpoint");
}

const Builder::json& Builder::field(const json& layer, const char* key) const {
  if (!layer.is_object() || !layer.contains(key)) fail(std::string("missing field '") + key + "'");
  return layer.at(key);
}

int Builder::to_int(const json& v, const std::string& what) const {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxInt)) return static_cast<int>(v.get<std::uint64_t>());
  } else if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    if (i >= -kMaxInt && i <= kMaxInt) return static_cast<int>(i);
  } else if (v.is_number_float() && std::isfinite(v.get<double>())) {
    const double d = v.get<double>();
    if (std::floor(d) != d) fail(what + " must be an integer, got " + v.dump());
    if (std::fabs(d) <= static_cast<double>(kMaxInt)) return static_cast<int>(d);
  } else {
    fail(what + " must be an integer, got " + v.dump());
  }
  fail(what + " is out of range (at most " + std::to_string(kMaxInt) + " in magnitude), got " + v.dump());
}

int Builder::get_int(const json& layer, const char* key) const {
  return to_int(field(layer, key), std::string("field '") + key + "'");
}

int Builder::get_int_or(const json& layer, const char* key, int dflt) const {
  if (!layer.contains(key) || layer.at(key).is_null()) return dflt;
  return get_int(layer, key);
}

double Builder::get_num(const json& layer, const char* key) const {
  const json& v = field(layer, key);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail(std::string("field '") + key + "' must be a finite number, got " + v.dump());
  return v.get<double>();
}

bool Builder::get_bool(const json& layer, const char* key) const {
  const json& v = field(layer, key);
  if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string Builder::get_str(const json& layer, const char* key) const {
  const json& v = field(layer, key);
  if (!v.is_string()) fail(std::string("field '") + key + "' must be a string, got " + v.dump());
  return v.get<std::string>();
}

void Builder::require_positive(int v, const char* what) const {
  if (v <= 0) fail(std::string(what) + " must be positive, got " + std::to_string(v));
}

int Builder::dim(long long v, const std::string& what) const {
  if (v < 0 || v > kMaxInt) fail(what + " is " + std::to_string(v) + ", outside 0.." + std::to_string(kMaxInt));
  return static_cast<int>(v);
}

int Builder::scaled(int c, double ratio, const std::string& what) const {
  const double v = c * ratio;
  if (!(v > -1.0 && v < static_cast<double>(kMaxInt) + 1.0))
    fail(what + " int(" + std::to_string(c) + " * " + std::to_string(ratio) + ") is out of range");
  return static_cast<int>(v);
}

// ---- shapes ---------------------------------------------------------------------------------------

LayerShape Builder::in_shape(int from) const {
  if (from == -1) return LayerShape{3, g_.input_h, g_.input_w};
  return shapes_[from];
}

void Builder::single_input(const Layer& l) const {
  if (l.from.size() != 1) fail("expects one input, got " + std::to_string(l.from.size()));
}

void Builder::check_c1(const Layer& l) const {
  const int c1 = get_int(l.fields, "c1");
  const LayerShape x = in_shape(l.from[0]);
  if (c1 != x.c)
    fail("c1 is " + std::to_string(c1) + " but layer " + std::to_string(l.from[0]) + " gives " + std::to_string(x.c) +
         " channels");
}

LayerShape Builder::block_shape(const Layer& l) const {
  single_input(l);
  check_c1(l);
  const int c2 = get_int(l.fields, "c2");
  require_positive(c2, "c2");
  const LayerShape x = in_shape(l.from[0]);
  return LayerShape{c2, x.h, x.w};
}

// ---- values, params and ops -----------------------------------------------------------------------

ValueRef Builder::input(const Layer& l, std::size_t k) const {
  const int f = l.from.at(k);
  return f == -1 ? whole(Graph::kInputValue) : home_[f];
}

ValueRef Builder::output(const Layer& l) const { return home_[l.index]; }

int Builder::new_value(const std::string& name, int c, int h, int w) {
  g_.values.push_back(Value{name, c, h, w});
  return static_cast<int>(g_.values.size()) - 1;
}

ValueRef Builder::temp(const std::string& name, int c, const ValueRef& like) {
  const Value& v = g_.values[like.value];
  return whole(new_value(name, c, v.h, v.w));
}

void Builder::add_param(const std::string& name, std::vector<long long> shape) {
  if (!param_names_.insert(name).second) fail("tensor '" + name + "' would be used twice");
  g_.params.push_back(ParamSpec{name, std::move(shape)});
}

ValueRef Builder::conv(const std::string& path, const ValueRef& in, const ConvSpec& s, ValueRef out) {
  const int c_in = in.c;
  const int pad = s.pad >= 0 ? s.pad : dim(1LL * s.dilation * (s.k - 1) / 2, path + " padding");
  require_positive(s.c_out, (path + " output channels").c_str());
  if (s.k < 1 || s.stride < 1 || s.dilation < 1 || s.groups < 1 || pad < 0)
    fail(path + ": impossible conv (k " + std::to_string(s.k) + ", stride " + std::to_string(s.stride) + ", pad " +
         std::to_string(pad) + ", groups " + std::to_string(s.groups) + ", dilation " + std::to_string(s.dilation) +
         ")");
  if (c_in % s.groups != 0 || s.c_out % s.groups != 0)
    fail(path + ": channels " + std::to_string(c_in) + " -> " + std::to_string(s.c_out) +
         " are not divisible by groups " + std::to_string(s.groups));
  const ConvAttrs attrs{c_in, s.c_out, s.k, s.stride, pad, s.groups, s.dilation, s.act};
  const int ho = dim(attrs.out_size(H(in)), path + " output height");
  const int wo = dim(attrs.out_size(W(in)), path + " output width");
  if (check_input_size_ && (ho < 1 || wo < 1))
    fail(path + ": input " + shape_str(c_in, H(in), W(in)) + " is too small for a " + std::to_string(s.k) + "x" +
         std::to_string(s.k) + " conv");
  if (!out.valid()) {
    out = whole(new_value(path, s.c_out, std::max(ho, 1), std::max(wo, 1)));
  } else if (out.c != s.c_out || (check_input_size_ && (H(out) != ho || W(out) != wo))) {
    fail(path + ": output " + shape_str(s.c_out, ho, wo) + " does not fit its destination " +
         shape_str(out.c, H(out), W(out)));
  }
  ConvOp c;
  c.attrs = attrs;
  c.in = in;
  c.out = out;
  c.residual = s.residual;
  c.weight = path + (s.plain ? ".weight" : ".conv.weight");
  c.bias = path + (s.plain ? ".bias" : ".conv.bias");
  c.gamma = s.gamma;
  add_param(c.weight, {s.c_out, c_in / s.groups, s.k, s.k});
  add_param(c.bias, {s.c_out});
  emit(path, std::move(c));
  return out;
}

ValueRef Builder::conv1(const std::string& path, const ValueRef& in, int c_out, int k, Act act, ValueRef out,
                        ValueRef residual, int groups) {
  ConvSpec s;
  s.c_out = c_out;
  s.k = k;
  s.act = act;
  s.groups = groups;
  s.residual = residual;
  return conv(path, in, s, out);
}

void Builder::set_head(const HeadSpec& head) {
  g_.head = head;
  g_.outputs = g_.head.inputs();
}

// ---- the passes -----------------------------------------------------------------------------------

std::vector<int> Builder::parse_from(const json& L, int index) {
  const json& f = field(L, "from");
  std::vector<int> out;
  if (f.is_number_integer()) {
    out.push_back(to_int(f, "field 'from'"));
  } else if (f.is_array() && !f.empty()) {
    for (const json& x : f) {
      if (!x.is_number_integer()) fail("field 'from' must hold integers, got " + f.dump());
      out.push_back(to_int(x, "field 'from'"));
    }
  } else {
    fail("field 'from' must be an integer or a non-empty list, got " + f.dump());
  }
  for (int x : out) {
    if (x == -1 && index != 0) fail("from -1 (the input image) is only valid for layer 0");
    if (x < -1 || x >= index) fail("from " + std::to_string(x) + " is not an earlier layer");
  }
  if (index == 0 && (out.size() != 1 || out[0] != -1)) fail("layer 0 must read the input image (from -1)");
  return out;
}

Graph Builder::build() {
  ctx_ = LayerCtx{-1, "header"};
  auto header_int = [&](const char* key) {
    if (!header_.contains(key) || !header_.at(key).is_number_integer())
      throw ModelError(std::string("model header: missing or non-integer '") + key + "'");
    return to_int(header_.at(key), std::string("'") + key + "'");
  };
  nc_ = header_int("nc");
  reg_max_ = header_int("reg_max");
  if (!header_.contains("strides") || !header_.at("strides").is_array() || header_.at("strides").empty())
    throw ModelError("model header: missing 'strides'");
  for (const json& s : header_.at("strides")) {
    if (!s.is_number_integer()) throw ModelError("model header: 'strides' must be positive integers");
    const int v = to_int(s, "'strides'");
    if (v < 1) throw ModelError("model header: 'strides' must be positive integers");
    strides_.push_back(v);
  }
  if (!header_.contains("layers") || !header_.at("layers").is_array() || header_.at("layers").empty())
    throw ModelError("model header: missing or empty 'layers'");
  const json& layers = header_.at("layers");
  const int max_stride = *std::max_element(strides_.begin(), strides_.end());
  if (check_input_size_ && (g_.input_h <= 0 || g_.input_w <= 0 || g_.input_h % max_stride || g_.input_w % max_stride))
    throw ModelError("input size " + std::to_string(g_.input_h) + "x" + std::to_string(g_.input_w) +
                     " is not a positive multiple of the model's largest stride " + std::to_string(max_stride));

  const int n = static_cast<int>(layers.size());
  g_.values.push_back(Value{"images", 3, g_.input_h, g_.input_w});

  // Pass 1: modules, inputs and output shapes of every layer.
  std::vector<const Module*> modules(n, nullptr);
  from_.resize(n);
  shapes_.resize(n);
  int head_layer = -1;
  for (int i = 0; i < n; ++i) {
    const json& L = layers[i];
    ctx_ = LayerCtx{i, "?"};
    if (!L.is_object() || !L.contains("type") || !L.at("type").is_string()) fail("entry has no string 'type'");
    ctx_.type = L.at("type").get<std::string>();
    if (L.contains("index") && (!L.at("index").is_number_integer() || to_int(L.at("index"), "field 'index'") != i))
      fail("field 'index' is " + L.at("index").dump() + ", expected " + std::to_string(i));
    from_[i] = parse_from(L, i);
    modules[i] = find_module(ctx_.type);
    if (modules[i] == nullptr) fail("unknown module type; this engine implements " + module_types());
    shapes_[i] = modules[i]->shape(*this, Layer{i, L, from_[i]});
    if (modules[i]->head) {
      if (i != n - 1) fail(std::string(modules[i]->type) + " must be the last layer");
      head_layer = i;
    }
  }
  if (head_layer < 0) {
    ctx_ = LayerCtx{n - 1, modules[n - 1]->type};
    fail("the last layer must be " + module_types(/*heads_only=*/true, " or "));
  }

  // Pass 2: homes. A layer used by a module that hosts its inputs (Concat) lives in the first such
  // layer's buffer; the head has no value of its own.
  std::vector<int> parent(n, -1), parent_c0(n, 0);
  for (int j = 0; j < n; ++j) {
    if (!modules[j]->hosts_inputs) continue;
    int c0 = 0;
    for (int f : from_[j]) {
      if (parent[f] < 0 && !modules[f]->head) {
        parent[f] = j;
        parent_c0[f] = c0;
      }
      c0 += shapes_[f].c;
    }
  }
  home_.assign(n, ValueRef{});
  // Hosting layers come after their inputs, so resolve from the last layer backwards.
  for (int i = n - 1; i >= 0; --i) {
    if (parent[i] >= 0 || modules[i]->head) continue;
    home_[i] = whole(new_value("model." + std::to_string(i), shapes_[i].c, shapes_[i].h, shapes_[i].w));
  }
  for (int i = n - 1; i >= 0; --i) {
    if (parent[i] < 0) continue;
    // Follow the chain of parents to a layer that owns a buffer.
    int root = i, c0 = 0;
    while (parent[root] >= 0) {
      c0 += parent_c0[root];
      root = parent[root];
    }
    home_[i] = ValueRef{home_[root].value, home_[root].c0 + c0, shapes_[i].c};
  }

  // Pass 3: expand every layer in order.
  for (int i = 0; i < n; ++i) {
    ctx_ = LayerCtx{i, modules[i]->type};
    modules[i]->expand(*this, Layer{i, layers[i], from_[i]});
  }
  return std::move(g_);
}

Graph build_graph(const nlohmann::json& header, int input_h, int input_w) {
  return Builder(header, input_h, input_w, /*check_input_size=*/true).build();
}

std::vector<ParamSpec> required_params(const nlohmann::json& header) {
  // Any size works for the tensor list; use one large enough that no conv runs out of pixels.
  int max_stride = 32;
  if (header.contains("strides") && header.at("strides").is_array())
    for (const auto& s : header.at("strides"))
      if (s.is_number_integer() && s.get<std::int64_t>() > 0 && s.get<std::int64_t>() <= kMaxInt)
        max_stride = std::max(max_stride, s.get<int>());
  return Builder(header, 4 * max_stride, 4 * max_stride, /*check_input_size=*/false).build().params;
}

}  // namespace yolo12::graph
