// ONNX TensorProto -> host vm::Tensor: the dtype mapping, raw_data or the typed repeated
// fields, and every size checked against the declared dims before a byte is copied.
#pragma once

#include <string>

#include "vm/tensor.h"

namespace onnx {
class TensorProto;
}

namespace dynvm::frontends::onnx_import {

// `where` names the tensor in messages ("initializer conv1.weight"). UserError for an
// unsupported dtype (string), external data, negative dims, or data that does not match
// the dims.
vm::Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& where);

}  // namespace dynvm::frontends::onnx_import
