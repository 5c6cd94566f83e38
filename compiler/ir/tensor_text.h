// The text form of a constant tensor, shared by the printer (constants) and attributes
// (tensor-valued ONNX attributes such as ConstantOfShape's value):
//   const(f32[2], [1.5, -2])    numbers: floats with enough digits to read back exactly
//   const(bool[2], [true, false])
//   const(f16[2], hex"003c00bc")  dtypes without a decimal form: the bytes
//   const(f32[80, 64], ...5120 values)   past `max_elements`: for reading only
#pragma once

#include <cstddef>
#include <string>

#include "vm/tensor.h"

namespace dynvm::compiler {

std::string tensor_text(const vm::Tensor& t, size_t max_elements = SIZE_MAX);

}  // namespace dynvm::compiler
