// graph/modules/module.hpp - the module table: every Ultralytics module type a model's layers may
// name, and how each one is built.
//
// Each module family lives in its own file here and says how to parse its fields (docs/model-format.md,
// "Layers"), shape its output and expand itself into primitive ops (graph/ops.hpp), with the
// toolkit of graph/builder.hpp. The semantics of every block were read from the Ultralytics module
// definitions (block.py, head.py, tasks.py) and re-expressed as ops:
//
//   conv.cpp      Conv
//   c2f.cpp       C2f, C3k2 (and their sub-blocks C3k, Bottleneck)
//   a2c2f.cpp     A2C2f (ABlock, AAttn; the turbo variant)
//   sppf.cpp      SPPF
//   c2psa.cpp     C2PSA (PSABlock)
//   upsample.cpp  Upsample
//   concat.cpp    Concat
//   detect.cpp    Detect
//   table.cpp     the table: one row per module type
//
// How values are laid out:
//  - Every layer writes its output into one ValueRef, its "home" (Builder::output). A layer consumed
//    by a module that `hosts_inputs` (Concat) lives inside that layer's buffer (the first one that
//    uses it), so the Concat itself costs nothing; a second use of the same layer by another Concat
//    is served by a Copy op.
//  - Blocks with an internal concat (C2f, C3k2, C3k, A2C2f, SPPF, C2PSA) allocate one buffer for it
//    and let each producer write its slice; chunk/split are slices (views) of that buffer.
//  - Residual adds, the A2C2f layer-scale and activations are carried by the ConvOp that produces
//    the value they apply to.
//
// `shape` reads only the fields the output shape needs; `expand` parses the rest into the family's
// typed arguments and emits the ops. required_params() runs the same expansion without the checks
// that depend on the input size, so the tensor list can never drift from what the ops reference.
//
// Adding a module: one file here with its parse, shape and expand and a `Module xxx_module()`, its
// declaration below, one row in table.cpp; docs/architecture.md, "A module", lists the rest.
#pragma once

#include <string>
#include <vector>

#include "graph/builder.hpp"

namespace yolo12::graph {

struct Module {
  const char* type;  // the layer's "type" in the model header
  // Pass 1: the output shape from the layer's fields and its inputs' shapes (Builder::in_shape).
  LayerShape (*shape)(Builder& b, const Layer& l);
  // Pass 3: the ops, reading Builder::input(l, k) and writing Builder::output(l).
  void (*expand)(Builder& b, const Layer& l);
  bool head = false;          // the network's head: the last layer, with no value of its own
  bool hosts_inputs = false;  // its inputs live in its output buffer, one channel slice each (Concat)
};

// Every module type, in the order error messages list them.
const std::vector<Module>& module_table();
// The module of that type, or nullptr.
const Module* find_module(const std::string& type);
// The types of the table ("Conv, C2f, ...") or of its heads only ("Detect"), joined by `separator`.
std::string module_types(bool heads_only = false, const char* separator = ", ");

// The table's rows, one per module type (each defined in its family's file).
Module conv_module();
Module c2f_module();
Module c3k2_module();
Module a2c2f_module();
Module sppf_module();
Module c2psa_module();
Module upsample_module();
Module concat_module();
Module detect_module();

// Sub-blocks that more than one family uses.
// Ultralytics C3k(c1, c2, n, shortcut, g, e=0.5, k=3) from `in` into `out` (c2f.cpp; A2C2f uses it
// where a2 is false).
void c3k(Builder& b, const std::string& p, const ValueRef& in, const ValueRef& out, int n, bool shortcut, int g);
// The tail shared by AAttn and PSA's Attention (a2c2f.cpp): the AttentionOp `a` (q, k, v and attrs
// set), then x = attn_out + pe(v) (depthwise pe_k x pe_k) and proj(x) (1x1) into `out`, plus
// `proj_residual` when valid.
void attention_tail(Builder& b, const std::string& p, AttentionOp a, const ValueRef& like, int dim, int pe_k,
                    const ValueRef& proj_residual, const ValueRef& out);

}  // namespace yolo12::graph
