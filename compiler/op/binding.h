// How each operator is computed once lowered: the op registry's link to the kernels' op
// library (kernels/ops). Type relations (registry.h) say what a call produces; a binding
// says how:
//   kKernel  a generated kernel: `build` re-instantiates a kernels/ops builder for given
//            input types (the specializer, kernels/dispatch, calls it once per variant);
//            `args` are the call inputs that become kernel arguments, in the builder's
//            order (inputs read at compile time — Slice's starts, Reshape's shape, an
//            attribute-like constant — are not arguments);
//   kView    output 0 is input 0's data under the output type's shape (Reshape, Squeeze,
//            Unsqueeze, Flatten): no kernel, a zero-copy view;
//   kRowView output 0 is row i along axis 0 of input 0, i the value of input 1 (a scalar
//            integer tensor, read on the host): Gather along axis 0 with a scalar index (a
//            loop's step reading its row of a sequence) as a zero-copy view;
//   kAlias   output 0 is input 0 (Identity, Dropout at inference);
//   kHost    the value is computed on the host by bytecode from dims and known values
//            (Shape, Size, and shape arithmetic whose value type inference knows).
// Calls whose every output value is known at compile time (ValueFacts::value) are lowered
// as kHost whatever their binding says.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/op/registry.h"
#include "kernels/ops/op.h"

namespace dynvm::compiler {

enum class LoweringKind : uint8_t { kKernel, kView, kRowView, kAlias, kHost };

struct KernelBinding {
  LoweringKind kind = LoweringKind::kKernel;
  // kKernel: identifies the computation (op, attributes as used, argument dtypes); two calls
  // with equal keys and equal argument types share one kernel.
  std::string key;
  std::vector<size_t> args;
  std::function<ops::OpInstance(const std::vector<ops::TensorType>& args)> build;
};

// What a binding sees: the call's attributes, its inputs' facts (types, known values,
// constants) and its output types, all after type inference.
class BindContext {
 public:
  BindContext(std::string where, const Attrs& attrs, std::vector<ValueFacts> inputs,
              std::vector<Type> outputs)
      : where_(std::move(where)),
        attrs_(attrs),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)) {}

  const std::string& where() const { return where_; }
  const Attrs& attrs() const { return attrs_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && !inputs_[i].absent(); }
  const ValueFacts& input(size_t i) const { return inputs_.at(i); }
  const std::vector<Type>& outputs() const { return outputs_; }
  // The constant elements of input i as int64 / double (UserError naming `what` when the
  // input is not a compile-time constant).
  std::vector<int64_t> const_ints(size_t i, const char* what) const;
  std::vector<double> const_floats(size_t i, const char* what) const;

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) const {
    user_error(where_, ": ", std::forward<Args>(args)...);
  }

 private:
  std::string where_;
  const Attrs& attrs_;
  std::vector<ValueFacts> inputs_;
  std::vector<Type> outputs_;
};

using BindFn = std::function<KernelBinding(const BindContext&)>;

// A kernel argument's type: the IR type's dtype and dims (UserError naming `where` for a
// non-tensor or a dim unknown at compile time).
ops::TensorType kernel_type(const Type& t, const std::string& where);

void register_binding(const std::string& op, BindFn bind);
// nullptr when the op has no binding (lowering then reports it as not yet computable).
const BindFn* find_binding(const std::string& op);

}  // namespace dynvm::compiler
