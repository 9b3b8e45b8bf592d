// tests/unit/tiny_header.hpp - a small model header for the graph tests (test_graph, test_pad_channels).
#pragma once

#include <nlohmann/json.hpp>

namespace yolo12::test {

// A small network: stem to stride 32, then `block` (layer 5, on the P5 map of 64 channels), and a
// Detect on layers 2, 3 and 5.
inline nlohmann::json tiny_header(const nlohmann::json& block, bool legacy = false) {
  nlohmann::json layers = nlohmann::json::array();
  layers.push_back({{"index", 0}, {"type", "Conv"}, {"from", {-1}}, {"c1", 3}, {"c2", 16}, {"k", 3}, {"s", 4}, {"p", 1}, {"g", 1}, {"d", 1}, {"act", "silu"}});
  layers.push_back({{"index", 1}, {"type", "Conv"}, {"from", {0}}, {"c1", 16}, {"c2", 32}, {"k", 3}, {"s", 2}, {"p", 1}, {"g", 1}, {"d", 1}, {"act", "silu"}});
  layers.push_back({{"index", 2}, {"type", "Conv"}, {"from", {1}}, {"c1", 32}, {"c2", 32}, {"k", 1}, {"s", 1}, {"p", 0}, {"g", 1}, {"d", 1}, {"act", "none"}});
  layers.push_back({{"index", 3}, {"type", "Conv"}, {"from", {2}}, {"c1", 32}, {"c2", 64}, {"k", 3}, {"s", 2}, {"p", 1}, {"g", 2}, {"d", 1}, {"act", "silu"}});
  layers.push_back({{"index", 4}, {"type", "Conv"}, {"from", {3}}, {"c1", 64}, {"c2", 64}, {"k", 3}, {"s", 2}, {"p", 1}, {"g", 1}, {"d", 1}, {"act", "silu"}});
  nlohmann::json b = block;
  b["index"] = 5;
  b["from"] = {4};
  layers.push_back(b);
  const int c5 = b.value("c2", 64);
  layers.push_back({{"index", 6}, {"type", "Detect"}, {"from", {2, 3, 5}}, {"nc", 3}, {"reg_max", 16}, {"ch", {32, 64, c5}},
                    {"legacy", legacy}, {"c2", 64}, {"c3", 32}});
  nlohmann::json h;
  h["nc"] = 3;
  h["reg_max"] = 16;
  h["strides"] = {8, 16, 32};
  h["layers"] = layers;
  return h;
}

}  // namespace yolo12::test
