// Operator attributes: a name -> value map whose values are the ONNX attribute kinds the
// ops use (int, float, string, lists of them, and tensors such as ConstantOfShape's value). Kept
// ordered so that printing and comparing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "vm/tensor.h"

namespace dynvm::compiler {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, vm::Tensor>;
using Attrs = std::map<std::string, AttrValue>;

// The attribute `name` of the expected kind, else `fallback`; UserError when it exists with
// another kind (`what` names the op for the message).
int64_t attr_int(const Attrs& attrs, const std::string& name, int64_t fallback,
                 const std::string& what);
double attr_float(const Attrs& attrs, const std::string& name, double fallback,
                  const std::string& what);
std::string attr_string(const Attrs& attrs, const std::string& name, const std::string& fallback,
                        const std::string& what);
std::vector<int64_t> attr_ints(const Attrs& attrs, const std::string& name,
                               const std::vector<int64_t>& fallback, const std::string& what);

// Text form: 3, 0.5 (always with '.', 'e', "inf" or "nan" so it reads back as a float),
// "text" (C escapes), [1, 2], [0.5, 1.0], ["a", "b"]. An empty list prints as [] and
// reads back as an int list. Tensors print as constants do (tensor_text.h).
std::string to_string(const AttrValue& v);

}  // namespace dynvm::compiler
