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
void register_elementwise_extra_bindings();  // bind_elementwise_extra.cc: BitShift, IsInf, ...
void register_normalization_bindings();      // bind_normalization.cc: Hardmax, LRN
void register_quantize_bindings();           // bind_quantize.cc: (De)QuantizeLinear
void register_linalg_bindings();             // bind_linalg.cc: Einsum, Det
void register_indexing_bindings();  // bind_indexing.cc: GatherND, DepthToSpace, EyeLike, ...
void register_signal_bindings();    // bind_signal.cc: DFT, STFT, MelWeightMatrix, TfIdfVectorizer

// The dtypes of a call's kernel arguments as text ("f32,i64"): part of every kernel key.
std::string arg_dtypes(const BindContext& ctx, const std::vector<size_t>& args);
// "name=value" for the attributes a binding uses, in the order given; absent ones print as
// their fallback so that equal computations get equal keys.
std::string key_int(const BindContext& ctx, const char* name, int64_t fallback);
std::string key_float(const BindContext& ctx, const char* name, double fallback);
std::string key_string(const BindContext& ctx, const char* name, const std::string& fallback);
std::string key_ints(const std::vector<int64_t>& values);
std::string key_floats(const std::vector<double>& values);

// The elements of a constant as T (empty for a dtype it cannot read: f16, complex).
template <typename T>
std::vector<T> tensor_elements(const vm::Tensor& t) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) {
    switch (t.dtype()) {
#define DYNVM_READ(dt, ctype)                                   \
  case vm::DType::dt:                                           \
    out.push_back(static_cast<T>(t.data_as<const ctype>()[k])); \
    break;
      DYNVM_READ(kFloat32, float)
      DYNVM_READ(kFloat64, double)
      DYNVM_READ(kInt8, int8_t)
      DYNVM_READ(kInt16, int16_t)
      DYNVM_READ(kInt32, int32_t)
      DYNVM_READ(kInt64, int64_t)
      DYNVM_READ(kUInt8, uint8_t)
      DYNVM_READ(kUInt16, uint16_t)
      DYNVM_READ(kUInt32, uint32_t)
      DYNVM_READ(kUInt64, uint64_t)
      DYNVM_READ(kBool, bool)
#undef DYNVM_READ
      default:
        return {};
    }
  }
  return out;
}

// A kernel binding over `args` whose key is op|parts|dtypes.
KernelBinding kernel_binding(
    const BindContext& ctx, const std::string& op, const std::string& parts,
    std::vector<size_t> args,
    std::function<ops::OpInstance(const std::vector<ops::TensorType>&)> build);
KernelBinding view_binding(LoweringKind kind);

// Output k's dims for a kernel that computes its shape from nothing but its output (Range,
// ConstantOfShape, Tile with run-time repeats): constants stay, every other dim becomes a
// symbol the kernel binds from the output argument. `key` gets the pattern ("[?,3]").
std::vector<arith::Expr> output_shape(const BindContext& ctx, size_t k, std::string* key);

// Dims a builder captured from the call's types (Expand's target), for the input dims a
// kernel variant is built with: specialize (kernels/dispatch) substitutes a bare input dim
// n by a constant or by factor * q, and a captured n must follow, or the variant's output
// keeps a symbol nothing binds. Each bare symbol of `original` becomes the dim at the same
// place in `variant`.
std::vector<arith::Expr> in_variant(const std::vector<arith::Expr>& dims,
                                    const std::vector<arith::Expr>& original,
                                    const std::vector<arith::Expr>& variant);

// The call's input indices that are present, from `first` on.
std::vector<size_t> present_inputs(const BindContext& ctx, size_t first = 0);

}  // namespace dynvm::compiler
