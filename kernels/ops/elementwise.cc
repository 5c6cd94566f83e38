// Elementwise operators (see elementwise.h): the math of each op as a tir::Expr function of
// its operands, wrapped in a broadcasting TE compute and the injective schedule.
#include "kernels/ops/elementwise.h"

#include <cmath>
#include <functional>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;
using tir::Intrinsic;

Expr c(const Expr& like, double v) { return tir::make_const(like.type(), v); }
Expr fn(Intrinsic f, const Expr& x) { return tir::call(f, x); }
Expr cmp(tir::CompareOp op, const Expr& a, const Expr& b) { return tir::compare(op, a, b); }

void require_float(const char* op, const TensorType& x) {
  if (!vm::is_floating(x.dtype)) {
    user_error(op, " needs a floating-point input, got ", dtype_suffix(x.dtype));
  }
}

}  // namespace

namespace {

using ElementMath = std::function<Expr(const std::vector<Expr>&)>;

OpInstance elementwise_map_with(std::string name, const std::vector<TensorType>& ins,
                                const ElementMath& math, const FusedEpilogue* epilogue) {
  std::vector<std::vector<arith::Expr>> shapes;
  for (const TensorType& t : ins) shapes.push_back(t.shape);
  std::vector<arith::Expr> shape = broadcast_shape(shapes);
  static const char* kNames[] = {"A", "B", "C"};
  std::vector<te::TensorRef> inputs;
  for (size_t k = 0; k < ins.size(); ++k) {
    inputs.push_back(te::placeholder(k < 3 ? kNames[k] : "X", ins[k].shape, ins[k].dtype));
  }
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<Expr> values;
    for (const te::TensorRef& in : inputs) {
      values.push_back(te::read(in, broadcast_indices(in->shape(), i, shape)));
    }
    Expr y = math(values);
    return epilogue != nullptr ? epilogue->apply(y, i) : y;
  });
  if (epilogue != nullptr) {
    name += epilogue->name;
    inputs.insert(inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  }
  return injective_op(std::move(name), std::move(inputs), out);
}

}  // namespace

OpInstance elementwise_map(std::string name, std::vector<TensorType> ins,
                           const std::function<Expr(const std::vector<Expr>&)>& math) {
  OpInstance op = with_epilogue_builder([name, ins, math](const FusedEpilogue* e) {
    return elementwise_map_with(name, ins, math, e);
  });
  op.elementwise = math;
  return op;
}

namespace {

Expr unary_math(UnaryOp op, const Expr& x, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::kNeg:
      return fn(Intrinsic::kNeg, x);
    case UnaryOp::kAbs:
      return fn(Intrinsic::kAbs, x);
    case UnaryOp::kExp:
      return fn(Intrinsic::kExp, x);
    case UnaryOp::kLog:
      return fn(Intrinsic::kLog, x);
    case UnaryOp::kSqrt:
      return fn(Intrinsic::kSqrt, x);
    case UnaryOp::kReciprocal:
      return fn(Intrinsic::kReciprocal, x);
    case UnaryOp::kTanh:
      return fn(Intrinsic::kTanh, x);
    case UnaryOp::kSigmoid:
      return fn(Intrinsic::kSigmoid, x);
    case UnaryOp::kErf:
      return fn(Intrinsic::kErf, x);
    case UnaryOp::kFloor:
      return fn(Intrinsic::kFloor, x);
    case UnaryOp::kCeil:
      return fn(Intrinsic::kCeil, x);
    case UnaryOp::kRound:
      return fn(Intrinsic::kRound, x);
    case UnaryOp::kSign:
      return fn(Intrinsic::kSign, x);
    case UnaryOp::kNot:
      return tir::logical_not(x);
    case UnaryOp::kRelu:
      return tir::max(x, c(x, 0));
    case UnaryOp::kLeakyRelu:
      return tir::select(cmp(tir::CompareOp::kLt, x, c(x, 0)), x * c(x, p.alpha.value_or(0.01)), x);
    case UnaryOp::kElu:
      return tir::select(cmp(tir::CompareOp::kLt, x, c(x, 0)),
                         c(x, p.alpha.value_or(1.0)) * fn(Intrinsic::kExpm1, x), x);
    case UnaryOp::kSelu: {
      double alpha = p.alpha.value_or(1.67326319217681884765625);
      double gamma = p.gamma.value_or(1.05070102214813232421875);
      return c(x, gamma) * tir::select(cmp(tir::CompareOp::kLe, x, c(x, 0)),
                                       c(x, alpha) * fn(Intrinsic::kExpm1, x), x);
    }
    case UnaryOp::kGelu:
      return c(x, 0.5) * x * (c(x, 1) + fn(Intrinsic::kErf, x * c(x, M_SQRT1_2)));
    case UnaryOp::kSoftplus:  // log(1 + e^x) without overflow
      return tir::max(x, c(x, 0)) +
             fn(Intrinsic::kLog1p,
                fn(Intrinsic::kExp, fn(Intrinsic::kNeg, fn(Intrinsic::kAbs, x))));
    case UnaryOp::kHardSigmoid:
      return tir::max(
          c(x, 0), tir::min(c(x, 1), c(x, p.alpha.value_or(0.2)) * x + c(x, p.beta.value_or(0.5))));
    case UnaryOp::kClip: {
      Expr y = x;
      if (p.alpha) y = tir::max(y, c(x, *p.alpha));
      if (p.beta) y = tir::min(y, c(x, *p.beta));
      return y;
    }
    case UnaryOp::kTan:
      return fn(Intrinsic::kSin, x) / fn(Intrinsic::kCos, x);
    case UnaryOp::kSinh: {  // (e^x - e^-x) / 2, as expm1 so that small x keeps its digits
      Expr a = fn(Intrinsic::kExpm1, x), b = fn(Intrinsic::kExpm1, fn(Intrinsic::kNeg, x));
      return (a - b) * c(x, 0.5);
    }
    case UnaryOp::kCosh:
      return (fn(Intrinsic::kExp, x) + fn(Intrinsic::kExp, fn(Intrinsic::kNeg, x))) * c(x, 0.5);
    case UnaryOp::kAsinh: {  // sign(x) * log(|x| + sqrt(x^2 + 1)), odd and exact near 0
      Expr a = fn(Intrinsic::kAbs, x);
      return fn(Intrinsic::kSign, x) *
             fn(Intrinsic::kLog1p, a + a * a / (c(x, 1) + fn(Intrinsic::kSqrt, a * a + c(x, 1))));
    }
    case UnaryOp::kAcosh:  // log(x + sqrt(x^2 - 1)), x >= 1
      return fn(Intrinsic::kLog, x + fn(Intrinsic::kSqrt, x * x - c(x, 1)));
    case UnaryOp::kAtanh:  // log1p(2x / (1 - x)) / 2
      return fn(Intrinsic::kLog1p, c(x, 2) * x / (c(x, 1) - x)) * c(x, 0.5);
    case UnaryOp::kSoftsign:
      return x / (c(x, 1) + fn(Intrinsic::kAbs, x));
    case UnaryOp::kThresholdedRelu:
      return tir::select(cmp(tir::CompareOp::kGt, x, c(x, p.alpha.value_or(1.0))), x, c(x, 0));
    case UnaryOp::kAtan:
      return fn(Intrinsic::kAtan, x);
    case UnaryOp::kAsin: {  // 2 atan(x / (1 + sqrt(1 - x^2))): no division by 0 at |x| = 1
      Expr root = fn(Intrinsic::kSqrt, (c(x, 1) - x) * (c(x, 1) + x));  // 1 - x^2 unrounded
      return c(x, 2) * fn(Intrinsic::kAtan, x / (c(x, 1) + root));
    }
    case UnaryOp::kAcos:  // 2 atan(sqrt((1 - x) / (1 + x))): relative accuracy near x = 1
      return c(x, 2) * fn(Intrinsic::kAtan, fn(Intrinsic::kSqrt, (c(x, 1) - x) / (c(x, 1) + x)));
  }
  DYNVM_INTERNAL_CHECK(false, "unknown unary op");
  return x;
}

bool unary_needs_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kSign:
    case UnaryOp::kRelu:
    case UnaryOp::kClip:
    case UnaryOp::kNot:
      return false;
    default:
      return true;
  }
}

Expr logical_xor(const Expr& a, const Expr& b) {
  return tir::logical_or(tir::logical_and(a, tir::logical_not(b)),
                         tir::logical_and(tir::logical_not(a), b));
}

// ONNX integer Div truncates toward zero; tir's integer kDiv floors. They differ by one
// when the remainder is non-zero and the operands' signs differ.
Expr int_trunc_div(const Expr& a, const Expr& b) {
  Expr zero = c(a, 0);
  Expr r = tir::binary(tir::BinaryOp::kMod, a, b);
  Expr fix = tir::logical_and(
      cmp(tir::CompareOp::kNe, r, zero),
      logical_xor(cmp(tir::CompareOp::kLt, a, zero), cmp(tir::CompareOp::kLt, b, zero)));
  return a / b + tir::select(fix, c(a, 1), zero);
}

// Truncated modulo: a - b * trunc(a / b), the sign of the dividend.
Expr trunc_mod(const Expr& a, const Expr& b) {
  if (!a.type().is_float()) return a - b * int_trunc_div(a, b);
  Expr r = tir::binary(tir::BinaryOp::kMod, a, b);  // floor modulo: the sign of b
  Expr zero = c(a, 0);
  Expr fix = tir::logical_and(
      cmp(tir::CompareOp::kNe, r, zero),
      logical_xor(cmp(tir::CompareOp::kLt, a, zero), cmp(tir::CompareOp::kLt, b, zero)));
  return tir::select(fix, r - b, r);
}

}  // namespace

Expr binary_math(BinaryOp op, const Expr& a, const Expr& b) {
  using tir::CompareOp;
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a.type().is_float() ? a / b : int_trunc_div(a, b);
    case BinaryOp::kPow:
      // A constant exponent of 1 or 2 (a squared deviation in a decomposed layer norm) is
      // the base or one product: the correctly rounded pow, without exp and log.
      if (b.kind() == tir::ExprKind::kConst && b.type().lanes == 1 && a.type().is_float()) {
        const double e = b.type().is_float() ? b->fvalue : static_cast<double>(b->ivalue);
        if (e == 1) return a;
        if (e == 2) return a * a;
      }
      return tir::binary(tir::BinaryOp::kPow, a, b.type() == a.type() ? b : tir::cast(a.type(), b));
    case BinaryOp::kMin:
      return tir::min(a, b);
    case BinaryOp::kMax:
      return tir::max(a, b);
    case BinaryOp::kMod:
      return tir::binary(tir::BinaryOp::kMod, a, b);
    case BinaryOp::kFMod:
      return trunc_mod(a, b);
    case BinaryOp::kEqual:
      return cmp(CompareOp::kEq, a, b);
    case BinaryOp::kLess:
      return cmp(CompareOp::kLt, a, b);
    case BinaryOp::kLessEqual:
      return cmp(CompareOp::kLe, a, b);
    case BinaryOp::kGreater:
      return cmp(CompareOp::kGt, a, b);
    case BinaryOp::kGreaterEqual:
      return cmp(CompareOp::kGe, a, b);
    case BinaryOp::kAnd:
      return tir::logical_and(a, b);
    case BinaryOp::kOr:
      return tir::logical_or(a, b);
    case BinaryOp::kXor:
      return logical_xor(a, b);
  }
  DYNVM_INTERNAL_CHECK(false, "unknown binary op");
  return a;
}

namespace {

bool is_logic(BinaryOp op) {
  return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}

}  // namespace

const char* unary_op_name(UnaryOp op) {
  switch (op) {
#define DYNVM_CASE(name, str) \
  case UnaryOp::k##name:      \
    return str;
    DYNVM_UNARY_OPS(DYNVM_CASE)
#undef DYNVM_CASE
  }
  return "?";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
#define DYNVM_CASE(name, str) \
  case BinaryOp::k##name:     \
    return str;
    DYNVM_BINARY_OPS(DYNVM_CASE)
#undef DYNVM_CASE
  }
  return "?";
}

std::vector<arith::Expr> broadcast_shape(const std::vector<std::vector<arith::Expr>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<arith::Expr> out(rank, arith::make_int(1));
  for (const auto& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      arith::Expr& o = out[rank - s.size() + k];
      const arith::Expr& d = s[k];
      if (d.is_int_imm() && d.int_value() == 1) continue;
      if (o.is_int_imm() && o.int_value() == 1) {
        o = d;
      } else if (!arith::structural_equal(o, d)) {
        if (o.is_int_imm() && d.is_int_imm()) {
          user_error("cannot broadcast dims ", o.int_value(), " and ", d.int_value());
        }
        o = arith::select(arith::eq(o, 1), d, o);  // decided at run time
      }
    }
  }
  return out;
}

std::vector<arith::Expr> broadcast_indices(const std::vector<arith::Expr>& shape,
                                           const te::Indices& out,
                                           const std::vector<arith::Expr>& out_shape) {
  std::vector<arith::Expr> idx;
  size_t offset = out.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    const arith::Expr& d = shape[k];
    arith::Expr i = out[offset + k];
    if (d.is_int_imm() && d.int_value() == 1) {
      idx.push_back(arith::make_int(0));
    } else if (!d.is_int_imm() && !out_shape.empty() &&
               !arith::structural_equal(d, out_shape[offset + k])) {
      idx.push_back(arith::select(arith::eq(d, 1), 0, i));
    } else {
      idx.push_back(i);
    }
  }
  return idx;
}

OpInstance unary(UnaryOp op, const TensorType& x, const UnaryParams& params) {
  if (unary_needs_float(op)) require_float(unary_op_name(op), x);
  if (op == UnaryOp::kNot && x.dtype != vm::DType::kBool) user_error("not needs a bool input");
  return elementwise_map(
      std::string(unary_op_name(op)) + "_" + dtype_suffix(x.dtype), {x},
      [op, params](const std::vector<Expr>& v) { return unary_math(op, v[0], params); });
}

OpInstance cast(const TensorType& x, vm::DType to) {
  return elementwise_map("cast_" + dtype_suffix(x.dtype) + "_" + dtype_suffix(to), {x},
                         [to](const std::vector<Expr>& v) {
                           return tir::cast(tir::DataType{to, v[0].type().lanes}, v[0]);
                         });
}

OpInstance binary(BinaryOp op, const TensorType& a, const TensorType& b) {
  if (op != BinaryOp::kPow && a.dtype != b.dtype) {
    user_error(binary_op_name(op), ": operand dtypes differ (", dtype_suffix(a.dtype), " and ",
               dtype_suffix(b.dtype), ")");
  }
  if (is_logic(op) && a.dtype != vm::DType::kBool) {
    user_error(binary_op_name(op), " needs bool operands");
  }
  if (!is_logic(op) && a.dtype == vm::DType::kBool) {
    user_error(binary_op_name(op), " does not take bool operands");
  }
  return elementwise_map(std::string(binary_op_name(op)) + "_" + dtype_suffix(a.dtype), {a, b},
                         [op](const std::vector<Expr>& v) { return binary_math(op, v[0], v[1]); });
}

OpInstance where(const TensorType& cond, const TensorType& a, const TensorType& b) {
  if (cond.dtype != vm::DType::kBool) user_error("where: the condition must be bool");
  if (a.dtype != b.dtype) user_error("where: the two branches' dtypes differ");
  return elementwise_map("where_" + dtype_suffix(a.dtype), {cond, a, b},
                         [](const std::vector<Expr>& v) { return tir::select(v[0], v[1], v[2]); });
}

OpInstance bit_shift(const TensorType& a, const TensorType& b, bool left) {
  if (a.dtype != b.dtype) user_error("bit_shift: operand dtypes differ");
  if (!tir::DataType{a.dtype, 1}.is_unsigned_int() || a.dtype == vm::DType::kBool) {
    user_error("bit_shift needs unsigned integer operands, got ", dtype_suffix(a.dtype));
  }
  return elementwise_map(std::string(left ? "shift_left_" : "shift_right_") + dtype_suffix(a.dtype),
                         {a, b}, [left](const std::vector<Expr>& v) {
                           // 2^b, 0 once b reaches the bit width (the product wraps).
                           Expr power = tir::binary(tir::BinaryOp::kPow, c(v[0], 2), v[1]);
                           if (left) return v[0] * power;
                           Expr zero = c(v[0], 0);
                           return tir::select(cmp(tir::CompareOp::kEq, power, zero), zero,
                                              v[0] / tir::max(power, c(v[0], 1)));
                         });
}

OpInstance is_inf(const TensorType& x, bool detect_negative, bool detect_positive) {
  require_float("is_inf", x);
  std::string name = "is_inf_";
  name += detect_negative ? "n" : "";
  name += detect_positive ? "p" : "";
  return elementwise_map(name + "_" + dtype_suffix(x.dtype), {x},
                         [detect_negative, detect_positive](const std::vector<Expr>& v) {
                           Expr inf = fn(Intrinsic::kIsInf, v[0]);
                           if (detect_negative && detect_positive) return inf;
                           if (!detect_negative && !detect_positive) {
                             return tir::make_const(tir::boolean(v[0].type().lanes), 0);
                           }
                           tir::CompareOp side =
                               detect_negative ? tir::CompareOp::kLt : tir::CompareOp::kGt;
                           return tir::logical_and(inf, cmp(side, v[0], c(v[0], 0)));
                         });
}

OpInstance is_nan(const TensorType& x) {
  require_float("is_nan", x);
  return elementwise_map("is_nan_" + dtype_suffix(x.dtype), {x},
                         [](const std::vector<Expr>& v) { return fn(Intrinsic::kIsNan, v[0]); });
}

OpInstance shrink(const TensorType& x, double lambd, double bias) {
  if (x.dtype == vm::DType::kBool) user_error("shrink does not take bool");
  return elementwise_map(
      "shrink_" + dtype_suffix(x.dtype), {x}, [lambd, bias](const std::vector<Expr>& v) {
        const Expr& y = v[0];
        return tir::select(
            cmp(tir::CompareOp::kLt, y, c(y, -lambd)), y + c(y, bias),
            tir::select(cmp(tir::CompareOp::kGt, y, c(y, lambd)), y - c(y, bias), c(y, 0)));
      });
}

}  // namespace dynvm::ops
