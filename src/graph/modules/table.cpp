// graph/modules/table.cpp - the module table: one row per module type a layer may name.
//
// A plain list, not self-registration from static initialisers (which a static library drops).
#include <string>
#include <vector>

#include "graph/modules/module.hpp"

namespace yolo12::graph {

const std::vector<Module>& module_table() {
  static const std::vector<Module> table = {
      conv_module(),  c2f_module(),      c3k2_module(),   a2c2f_module(), sppf_module(),
      c2psa_module(), upsample_module(), concat_module(), detect_module(),
  };
  return table;
}

const Module* find_module(const std::string& type) {
  for (const Module& m : module_table())
    if (type == m.type) return &m;
  return nullptr;
}

std::string module_types(bool heads_only, const char* separator) {
  std::string out;
  for (const Module& m : module_table()) {
    if (heads_only && !m.head) continue;
    if (!out.empty()) out += separator;
    out += m.type;
  }
  return out;
}

}  // namespace yolo12::graph
