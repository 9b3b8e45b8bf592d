// graph/graph.cpp - the small out-of-line parts of graph.hpp and ops.hpp.
#include "graph/graph.hpp"

namespace yolo12::graph {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
#define YOLO12_OP_NAME(Name) \
  case OpKind::Name:         \
    return #Name;
    YOLO12_GRAPH_OPS(YOLO12_OP_NAME)
#undef YOLO12_OP_NAME
  }
  return "?";
}

std::vector<ValueRef> HeadSpec::inputs() const {
  std::vector<ValueRef> r = detect.box;
  r.insert(r.end(), detect.cls.begin(), detect.cls.end());
  return r;
}

}  // namespace yolo12::graph
