// The ONNX importer: a ModelProto (opset-versioned, with If / Loop / Scan subgraphs and
// symbolic dims) becomes a compiler::Module whose calls are ONNX operators by name in
// their newest form (normalize.h), ready for the compiler's op registry.
//
//   Module m = import_onnx_file("silero_vad_v5.onnx", {.dims = {{"input_1", {1, 16000}}}});
//
// Graph mapping:
//   graph inputs (not initializers)  -> parameters of @main; dims: dim_value -> constant,
//                                       dim_param -> a module dim symbol of that name
//                                       (characters other than [A-Za-z0-9_] become `_`),
//                                       unnamed -> a fresh symbol `<input>_<axis>`
//   initializers, Constant nodes     -> constants
//   a node                           -> a call, bound to a let per output; several outputs
//                                       -> a tuple and get_items; an omitted optional input
//                                       ("") -> the empty tuple `()`
//   If                               -> if (branches return their outputs, a tuple if > 1)
//   Loop                             -> loop (body: iteration, cond, carried values)
//   Scan                             -> loop over the scan axis with Gather in the body
//   graph outputs                    -> @main returns them as a tuple
// Subgraphs may use values of enclosing graphs by name, as ONNX allows.
// Errors (not an ONNX model, an unsupported operator, opset or domain, a malformed graph)
// are one UserError line naming the node: "node 'Conv_3' (Conv, opset 16): ...".
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace dynvm::frontends::onnx_import {

struct DimRange {
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct ImportOptions {
  // Ranges for symbolic dims, by the model's name or the sanitized one (vmc --dim).
  // A name that matches no dim is a UserError.
  std::map<std::string, DimRange> dims;
  // Dims that are the same size though the model names them apart (vmc --dim A=B): dim A
  // becomes dim B. ONNX models often leave a batch dim unnamed in each input
  // (silero's `input_0` and `state_1`), and shapes only line up once they are one symbol.
  std::map<std::string, std::string> same_dims;
};

compiler::Module import_onnx_file(const std::string& path, const ImportOptions& options = {});
// `name` is used in messages.
compiler::Module import_onnx_bytes(std::string_view bytes, const std::string& name,
                                   const ImportOptions& options = {});

}  // namespace dynvm::frontends::onnx_import
