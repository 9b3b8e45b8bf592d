// engine_link.cpp - completes the link of the engine's CPU kernel files without the CPU executor.
//
// src/backends/cpu/{conv,attention}.cpp also hold the graph ops' bind() entry points
// (backends/cpu/ops.hpp), which look their weights up through BindContext::tensor, defined with the
// executor in executor.cpp (which brings the model file, JSON and the graph builder with it). The
// operators call the kernels (conv2d, area_attention, detect_decode) directly and never bind a graph
// op, so this definition only resolves the reference (Python loads an extension with every symbol
// resolved); reaching it would be a bug of this package. Likewise graph::check_conv_chain, which the conv chain's
// bind calls (it lives with the graph pass, graph/fuse_chains.cpp, which the package does not compile).
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/ops.hpp"
#include "graph/fuse_chains.hpp"

namespace yolo12::cpu {

const std::vector<float>& BindContext::tensor(const std::string& name, std::size_t) const {
  throw std::logic_error("yolo12_torch: the engine asked for graph tensor '" + name +
                         "', but the operators bind no graph ops");
}

}  // namespace yolo12::cpu

namespace yolo12::graph {

void check_conv_chain(const Graph&, const ConvChainOp&, const std::string& op_name) {
  throw std::logic_error("yolo12_torch: the engine asked to bind the conv chain '" + op_name +
                         "', but the operators bind no graph ops");
}

}  // namespace yolo12::graph
