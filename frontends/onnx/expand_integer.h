// The integer and quantized linear operators as compositions of operators dynvm already
// compiles, all in integers until the requantization: MatMulInteger / ConvInteger are
// MatMul / Conv over int32 operands with their zero points subtracted (exact, as ONNX
// Runtime's int32 accumulation; subtracting first makes Conv's zero padding the input's
// zero point), QLinearMatMul / QLinearConv add the f32 requantization
// QuantizeLinear(acc * (a_scale * b_scale), y_scale, y_zero_point) (per-row / per-column /
// per-channel scales and zero points broadcast by reshaping them to the right axis).
#pragma once

#include <string>

#include "frontends/onnx/decompose.h"
#include "frontends/onnx/normalize.h"

namespace dynvm::frontends::onnx_import {

bool is_integer_linear_op(const std::string& op);

// Each step is bound through `emit`. Returns the node's value.
compiler::Expr expand_integer_linear(const NodeForm& node, const Emit& emit,
                                     const std::string& where);

}  // namespace dynvm::frontends::onnx_import
