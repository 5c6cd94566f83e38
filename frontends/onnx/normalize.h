// Opset-versioned conversion of one node to its operator's newest form, so that the rest
// of the compiler knows one signature per operator. Where an older opset carried as an
// attribute what a newer one takes as an input (Squeeze/Unsqueeze axes before 13, Slice
// starts/ends/axes before 10, Clip min/max and Pad pads before 11, Split before 13,
// ReduceSum axes before 13 and the other reductions before 18), the attribute becomes a
// constant input; Softmax / LogSoftmax / Hardmax before 13 (which flatten to 2-D at
// `axis`) get `coerce_to_2d=1`; Resize 10 gets its `roi` input; Upsample (7 to 9) becomes
// that Resize.
//
// Also the table of supported operators: the ONNX ops dynvm compiles, each from the first
// opset whose semantics we implement. An op outside it is refused at import with its name,
// opset and node, never imported to fail later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"

namespace dynvm::frontends::onnx_import {

struct NodeForm {
  std::string op;
  std::vector<compiler::Expr> inputs;
  compiler::Attrs attrs;
};

// UserError (naming `where`) when op / opset is not supported.
void check_supported(const std::string& op, int64_t opset, const std::string& where);
// Rewrites `node` (as imported at `opset`) into the newest form.
void normalize(NodeForm& node, int64_t opset, const std::string& where);

// The empty tuple: an omitted optional input.
compiler::Expr absent_input();

}  // namespace dynvm::frontends::onnx_import
