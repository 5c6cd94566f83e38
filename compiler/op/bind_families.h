// The binding families' registration functions (binding.cc calls each once) and the
// helpers they share: attribute and type readers that make a binding's `key`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/op/binding.h"

namespace dynvm::compiler {

void register_elementwise_bindings();  // bind_elementwise.cc: math, logic, compare, Cast, Clip
void register_shape_bindings();        // bind_shape.cc: views, aliases, host values, data movement
void register_nn_bindings();           // bind_nn.cc: matmul, conv, pooling, norms, reductions

// The dtypes of a call's kernel arguments as text ("f32,i64"): part of every kernel key.
std::string arg_dtypes(const BindContext& ctx, const std::vector<size_t>& args);
// "name=value" for the attributes a binding uses, in the order given; absent ones print as
// their fallback so that equal computations get equal keys.
std::string key_int(const BindContext& ctx, const char* name, int64_t fallback);
std::string key_float(const BindContext& ctx, const char* name, double fallback);
std::string key_string(const BindContext& ctx, const char* name, const std::string& fallback);
std::string key_ints(const std::vector<int64_t>& values);
std::string key_floats(const std::vector<double>& values);

// A kernel binding over `args` whose key is op|parts|dtypes.
KernelBinding kernel_binding(
    const BindContext& ctx, const std::string& op, const std::string& parts,
    std::vector<size_t> args,
    std::function<ops::OpInstance(const std::vector<ops::TensorType>&)> build);
KernelBinding view_binding(LoweringKind kind);

// The call's input indices that are present, from `first` on.
std::vector<size_t> present_inputs(const BindContext& ctx, size_t first = 0);

}  // namespace dynvm::compiler
