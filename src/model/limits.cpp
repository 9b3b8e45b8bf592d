// model/limits.cpp - the layer-field table and check_layer_limits() (see limits.hpp).
#include "model/limits.hpp"

#include <nlohmann/json.hpp>

#include "model/json_field.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::model {
namespace {

using nlohmann::json;
namespace L = limits;

// Integer fields of a layer entry, by name, whatever the module type (docs/model-format.md, "Layers").
struct IntField {
  const char* key;
  long long lo, hi;
};
constexpr IntField kIntFields[] = {
    {"c1", 1, L::kChannels},   {"c2", 1, L::kChannels}, {"c3", 1, L::kChannels},
    {"k", 1, L::kKernel},      {"s", 1, L::kConvStride}, {"p", 0, L::kPad},
    {"g", 1, L::kChannels},    {"d", 1, L::kDilation},  {"n", 0, L::kRepeats},
    {"area", -1, L::kArea},    {"pe_k", 1, L::kKernel}, {"nc", 1, L::kClasses},
    {"reg_max", 1, L::kRegMax}, {"dim", -4, 3},         {"scale", 1, L::kUpsample},
};
// Ratio fields: finite numbers in (0, hi].
struct RatioField {
  const char* key;
  double hi;
};
constexpr RatioField kRatioFields[] = {{"e", L::kRatio}, {"mlp_ratio", L::kMlpRatio}};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ModelError(path + ": " + what + "; re-export the model with exporter/export.py");
}

}  // namespace

void check_layer_limits(const std::string& path, const json& header) {
  const json& layers = header.at("layers");
  if (layers.empty() || layers.size() > L::kLayers)
    fail(path, "layers: expected 1 to " + std::to_string(L::kLayers) + " layers, got " + std::to_string(layers.size()));
  long long total_repeats = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& layer = layers[i];
    std::string where = "layer " + std::to_string(i);
    if (!layer.is_object()) fail(path, where + ": expected an object, got " + brief(layer));
    if (layer.contains("type") && layer["type"].is_string()) where += " (" + brief(layer["type"], 32) + ")";
    long long v = 0;
    if (layer.contains("index") && (!exact_int(layer["index"], static_cast<long long>(i), static_cast<long long>(i), &v)))
      fail(path, where + " field 'index': expected " + std::to_string(i) + ", got " + brief(layer["index"]));
    for (const IntField& f : kIntFields) {
      if (!layer.contains(f.key)) continue;
      if (!exact_int(layer[f.key], f.lo, f.hi, &v))
        fail(path, where + " field '" + f.key + "': expected an integer in " + std::to_string(f.lo) + ".." +
                       std::to_string(f.hi) + ", got " + brief(layer[f.key]));
      if (std::string(f.key) == "n") total_repeats += v;
    }
    for (const RatioField& f : kRatioFields) {
      double d = 0;
      if (layer.contains(f.key) && (!finite_number(layer[f.key], 0.0, f.hi, &d) || d <= 0.0))
        fail(path, where + " field '" + f.key + "': expected a number in (0, " + brief(json(f.hi)) + "], got " +
                       brief(layer[f.key]));
    }
    // "from": an integer or a list of integers, each -1 (the input) or an earlier layer.
    if (layer.contains("from")) {
      const json& from = layer["from"];
      const bool list = from.is_array();
      if ((list && (from.empty() || from.size() > L::kLayerInputs)))
        fail(path, where + " field 'from': expected 1 to " + std::to_string(L::kLayerInputs) + " inputs, got " +
                       brief(from));
      for (const json& x : list ? from : json::array({from}))
        if (!exact_int(x, -1, static_cast<long long>(i) - 1, &v))
          fail(path, where + " field 'from': expected -1 (the input image) or an earlier layer (below " +
                         std::to_string(i) + "), got " + brief(from));
    }
    // "ch": the channels of each input of a head.
    if (layer.contains("ch")) {
      const json& ch = layer["ch"];
      if (!ch.is_array() || ch.empty() || ch.size() > L::kStrides)
        fail(path, where + " field 'ch': expected a list of 1 to " + std::to_string(L::kStrides) +
                       " channel counts, got " + brief(ch));
      for (const json& x : ch)
        if (!exact_int(x, 1, L::kChannels, &v))
          fail(path, where + " field 'ch': expected channel counts in 1.." + std::to_string(L::kChannels) +
                         ", got " + brief(ch));
    }
  }
  if (total_repeats > L::kTotalRepeats)
    fail(path, "layers: the repeats n add up to " + std::to_string(total_repeats) + ", expected at most " +
                   std::to_string(L::kTotalRepeats));
}

}  // namespace yolo12::model
