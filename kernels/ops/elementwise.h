// Elementwise operators: unary math and activations, binary arithmetic / comparison /
// logic with numpy (ONNX multidirectional) broadcasting, where(), cast, and ONNX BitShift,
// IsInf, IsNaN and Shrink. Every builder returns an OpInstance scheduled with the injective
// template (schedules.h): knobs `vector_width` and `parallel`. Dtype rules follow ONNX:
// binary operands share a dtype (pow's exponent may differ and is cast), comparisons give
// bool, logic takes bool.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// clang-format off
#define DYNVM_UNARY_OPS(X)       \
  X(Neg, "neg")                  \
  X(Abs, "abs")                  \
  X(Exp, "exp")                  \
  X(Log, "log")                  \
  X(Sqrt, "sqrt")                \
  X(Reciprocal, "reciprocal")    \
  X(Tanh, "tanh")                \
  X(Sigmoid, "sigmoid")          \
  X(Erf, "erf")                  \
  X(Relu, "relu")                \
  X(LeakyRelu, "leaky_relu")     \
  X(Elu, "elu")                  \
  X(Selu, "selu")                \
  X(Gelu, "gelu")                \
  X(Softplus, "softplus")        \
  X(HardSigmoid, "hard_sigmoid") \
  X(Floor, "floor")              \
  X(Ceil, "ceil")                \
  X(Round, "round")              \
  X(Sign, "sign")                \
  X(Not, "not")                  \
  X(Clip, "clip")                \
  X(Tan, "tan")                  \
  X(Sinh, "sinh")                \
  X(Cosh, "cosh")                \
  X(Asinh, "asinh")              \
  X(Acosh, "acosh")              \
  X(Atanh, "atanh")              \
  X(Softsign, "softsign")        \
  X(Atan, "atan")                \
  X(Asin, "asin")                \
  X(Acos, "acos")                \
  X(ThresholdedRelu, "thresholded_relu")
// clang-format on

enum class UnaryOp : uint8_t {
#define DYNVM_ENUM(name, str) k##name,
  DYNVM_UNARY_OPS(DYNVM_ENUM)
#undef DYNVM_ENUM
};
const char* unary_op_name(UnaryOp op);

// Attributes of the parameterised unary ops; unset ones take ONNX's defaults
// (leaky_relu alpha 0.01, elu alpha 1, selu alpha/gamma 1.6733/1.0507, hard_sigmoid alpha
// 0.2 beta 0.5, clip min/max -inf/+inf: for clip, alpha is min and beta is max).
struct UnaryParams {
  std::optional<double> alpha = std::nullopt;
  std::optional<double> beta = std::nullopt;
  std::optional<double> gamma = std::nullopt;
};

OpInstance unary(UnaryOp op, const TensorType& x, const UnaryParams& params = {});
OpInstance cast(const TensorType& x, vm::DType to);

// clang-format off
#define DYNVM_BINARY_OPS(X)        \
  X(Add, "add")                    \
  X(Sub, "sub")                    \
  X(Mul, "mul")                    \
  X(Div, "div")                    \
  X(Pow, "pow")                    \
  X(Min, "min")                    \
  X(Max, "max")                    \
  X(Mod, "mod")                    \
  X(FMod, "fmod")                  \
  X(Equal, "equal")                \
  X(Less, "less")                  \
  X(LessEqual, "less_equal")       \
  X(Greater, "greater")            \
  X(GreaterEqual, "greater_equal") \
  X(And, "and")                    \
  X(Or, "or")                      \
  X(Xor, "xor")
// clang-format on

enum class BinaryOp : uint8_t {
#define DYNVM_ENUM(name, str) k##name,
  DYNVM_BINARY_OPS(DYNVM_ENUM)
#undef DYNVM_ENUM
};
const char* binary_op_name(BinaryOp op);

// Integer div truncates toward zero (ONNX); mod is floor modulo (sign of the divisor,
// ONNX fmod=0), fmod truncated (sign of the dividend, ONNX fmod=1).
OpInstance binary(BinaryOp op, const TensorType& a, const TensorType& b);
// The value of one binary op on two scalars of the same type: for builders that combine
// several inputs (variadic Max / Min / Sum).
tir::Expr binary_math(BinaryOp op, const tir::Expr& a, const tir::Expr& b);
// cond ? a : b with three-way broadcasting.
OpInstance where(const TensorType& cond, const TensorType& a, const TensorType& b);

// One output of the inputs' broadcast shape, each element `math` of the inputs read with
// numpy broadcasting; the injective template. The builder behind unary, binary, where and
// the activations.
OpInstance elementwise_map(std::string name, std::vector<TensorType> ins,
                           const std::function<tir::Expr(const std::vector<tir::Expr>&)>& math);

// The broadcast shape of `shapes` (numpy rules). Two different symbolic dims broadcast to
// `select(a == 1, b, a)`: which one is 1 (or that they are equal) is decided at run time,
// the compiler having checked before the kernel runs that one of those holds. UserError
// for two different constants.
std::vector<arith::Expr> broadcast_shape(const std::vector<std::vector<arith::Expr>>& shapes);
// The indices into a tensor of `shape` for output indices `out` of the broadcast shape
// `out_shape`: a dim of constant 1 reads index 0, a symbolic dim other than the output's
// (one that may be 1 at run time) reads `d == 1 ? 0 : i`. Without `out_shape`, every
// symbolic dim is taken to be the output's.
std::vector<arith::Expr> broadcast_indices(const std::vector<arith::Expr>& shape,
                                           const te::Indices& out,
                                           const std::vector<arith::Expr>& out_shape = {});

// ONNX BitShift on unsigned integers (u8/u16/u32/u64), a and b broadcast: a << b (left)
// or a >> b. TIR has no shift: a << b is a * 2^b and a >> b is a / 2^b with the power
// wrapping modulo 2^bits, so a shift by the bit width or more gives 0 (numpy's result).
OpInstance bit_shift(const TensorType& a, const TensorType& b, bool left);
// ONNX IsInf (which infinities count: detect_negative / detect_positive) and IsNaN: bool
// of x's shape; float inputs.
OpInstance is_inf(const TensorType& x, bool detect_negative = true, bool detect_positive = true);
OpInstance is_nan(const TensorType& x);
// ONNX Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0), any numeric dtype.
OpInstance shrink(const TensorType& x, double lambd, double bias);

}  // namespace dynvm::ops
