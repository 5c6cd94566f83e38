// ONNX sequences and optionals (type.h: seq<...>, opt<...>): their type relations, and which
// ops lowering turns into tuple bytecode rather than kernels (lower/lower.cc). A sequence is
// a VM tuple of its elements, an optional a tuple of zero or one field.
#pragma once

#include <string>

#include "compiler/ir/type.h"

namespace dynvm::compiler {

// SequenceConstruct, SequenceEmpty, SequenceLength, SequenceAt, SequenceInsert,
// SequenceErase, Optional, OptionalHasElement, OptionalGetElement: computed on the host
// from the tuple (no kernel).
bool is_container_op(const std::string& op);

// Two sequence element types as one: equal dims stay, others become Any; different ranks
// (or an unknown one) leave only the dtype (undefined).
Type join_elements(const Type& a, const Type& b);

}  // namespace dynvm::compiler
