// Typed value expressions: the builders that every producer of TIR (TE lowering, the passes,
// tests) goes through. They are the single place where the typing rules of the IR are
// enforced, so that passes and code generation can rely on them without re-checking.
#include "kernels/tir/expr.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "kernels/arith/int_math.h"
#include "kernels/tir/stmt.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

Expr finish(ExprNode node) { return Expr(std::make_shared<const ExprNode>(std::move(node))); }

void check_index(const arith::Expr& e, const char* what) {
  DYNVM_INTERNAL_CHECK(e.defined(), "undefined ", what);
  DYNVM_INTERNAL_CHECK(!e.is_boolean(), what, " must be an integer expression");
}

bool is_scalar_const(const Expr& e) { return e.kind() == ExprKind::kConst && e.type().lanes == 1; }

// The value of a scalar constant of any type, as the type's arithmetic sees it.
double const_as_double(const Expr& e) {
  return e.type().is_float() ? e->fvalue : static_cast<double>(e->ivalue);
}

// Wraps an int64 to the value range of an integer element type (two's complement), the way
// a store of that type would.
int64_t wrap_int(vm::DType t, int64_t v) {
  switch (t) {
    case vm::DType::kInt8:
      return static_cast<int8_t>(v);
    case vm::DType::kInt16:
      return static_cast<int16_t>(v);
    case vm::DType::kInt32:
      return static_cast<int32_t>(v);
    case vm::DType::kUInt8:
      return static_cast<uint8_t>(v);
    case vm::DType::kUInt16:
      return static_cast<uint16_t>(v);
    case vm::DType::kUInt32:
      return static_cast<uint32_t>(v);
    case vm::DType::kBool:
      return v != 0;
    default:
      return v;
  }
}

// Constants of the storage-only float types are not folded: their rounding is not ours to
// guess here.
bool foldable(DataType t) {
  if (t.is_float()) return t.elem == vm::DType::kFloat32 || t.elem == vm::DType::kFloat64;
  return vm::is_integer(t.elem) || t.is_bool();
}

double round_float(vm::DType t, double v) {
  return t == vm::DType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// Makes a and b the same lanes by broadcasting a scalar side.
void unify_lanes(Expr& a, Expr& b, const char* what) {
  DYNVM_INTERNAL_CHECK(a.defined() && b.defined(), "undefined operand of ", what);
  if (a.type().lanes == b.type().lanes) return;
  if (a.type().lanes == 1) {
    a = broadcast(a, b.type().lanes);
  } else if (b.type().lanes == 1) {
    b = broadcast(b, a.type().lanes);
  } else {
    DYNVM_INTERNAL_CHECK(false, what, ": lanes differ: ", to_string(a.type()), " vs ",
                         to_string(b.type()));
  }
}

// Folds a binary op of two scalar constants; undefined Expr when it cannot (division by
// zero, an unsigned 64-bit value, a storage-only float type).
Expr fold_binary(BinaryOp op, const Expr& a, const Expr& b) {
  DataType t = a.type();
  if (!foldable(t) || t.elem == vm::DType::kUInt64) return Expr();
  if (t.is_float()) {
    double x = a->fvalue, y = b->fvalue, r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        r = x + y;
        break;
      case BinaryOp::kSub:
        r = x - y;
        break;
      case BinaryOp::kMul:
        r = x * y;
        break;
      case BinaryOp::kDiv:
        r = x / y;
        break;
      case BinaryOp::kMod:
        r = y == 0 ? NAN : x - std::floor(x / y) * y;
        break;
      case BinaryOp::kMin:
        r = std::fmin(x, y);
        break;
      case BinaryOp::kMax:
        r = std::fmax(x, y);
        break;
      case BinaryOp::kPow:
        return Expr();  // libm's pow and the target's may differ
    }
    return make_const(t, round_float(t.elem, r));
  }
  int64_t x = a->ivalue, y = b->ivalue;
  std::optional<int64_t> r;
  switch (op) {
    case BinaryOp::kAdd:
      r = arith::checked_add(x, y);
      break;
    case BinaryOp::kSub:
      r = arith::checked_sub(x, y);
      break;
    case BinaryOp::kMul:
      r = arith::checked_mul(x, y);
      break;
    case BinaryOp::kDiv:
      r = arith::checked_floordiv(x, y);
      break;
    case BinaryOp::kMod:
      r = arith::checked_floormod(x, y);
      break;
    case BinaryOp::kMin:
      r = std::min(x, y);
      break;
    case BinaryOp::kMax:
      r = std::max(x, y);
      break;
    case BinaryOp::kPow:
      return Expr();
  }
  if (!r) return Expr();
  return make_const_int(t, wrap_int(t.elem, *r));
}

bool compare_values(CompareOp op, double x, double y) {
  switch (op) {
    case CompareOp::kEq:
      return x == y;
    case CompareOp::kNe:
      return x != y;
    case CompareOp::kLt:
      return x < y;
    case CompareOp::kLe:
      return x <= y;
    case CompareOp::kGt:
      return x > y;
    case CompareOp::kGe:
      return x >= y;
  }
  return false;
}

bool compare_values(CompareOp op, int64_t x, int64_t y) {
  switch (op) {
    case CompareOp::kEq:
      return x == y;
    case CompareOp::kNe:
      return x != y;
    case CompareOp::kLt:
      return x < y;
    case CompareOp::kLe:
      return x <= y;
    case CompareOp::kGt:
      return x > y;
    case CompareOp::kGe:
      return x >= y;
  }
  return false;
}

bool intrinsic_needs_float(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::kAbs:
    case Intrinsic::kNeg:
    case Intrinsic::kSign:
      return false;
    default:
      return true;
  }
}

}  // namespace

bool DataType::is_signed_int() const {
  switch (elem) {
    case vm::DType::kInt8:
    case vm::DType::kInt16:
    case vm::DType::kInt32:
    case vm::DType::kInt64:
      return true;
    default:
      return false;
  }
}

bool DataType::is_unsigned_int() const {
  switch (elem) {
    case vm::DType::kUInt8:
    case vm::DType::kUInt16:
    case vm::DType::kUInt32:
    case vm::DType::kUInt64:
      return true;
    default:
      return false;
  }
}

std::string to_string(DataType t) {
  std::string s(vm::dtype_name(t.elem));
  if (t.lanes != 1) s += str_cat("x", t.lanes);
  return s;
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kMin:
      return "min";
    case BinaryOp::kMax:
      return "max";
    case BinaryOp::kPow:
      return "pow";
  }
  return "?";
}

const char* compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

const char* intrinsic_name(Intrinsic op) {
  switch (op) {
    case Intrinsic::kExp:
      return "exp";
    case Intrinsic::kLog:
      return "log";
    case Intrinsic::kTanh:
      return "tanh";
    case Intrinsic::kErf:
      return "erf";
    case Intrinsic::kSigmoid:
      return "sigmoid";
    case Intrinsic::kSqrt:
      return "sqrt";
    case Intrinsic::kRsqrt:
      return "rsqrt";
    case Intrinsic::kAbs:
      return "abs";
    case Intrinsic::kNeg:
      return "neg";
    case Intrinsic::kFloor:
      return "floor";
    case Intrinsic::kCeil:
      return "ceil";
    case Intrinsic::kRound:
      return "round";
    case Intrinsic::kSin:
      return "sin";
    case Intrinsic::kCos:
      return "cos";
    case Intrinsic::kLog1p:
      return "log1p";
    case Intrinsic::kExpm1:
      return "expm1";
    case Intrinsic::kIsNan:
      return "isnan";
    case Intrinsic::kIsInf:
      return "isinf";
    case Intrinsic::kSign:
      return "sign";
    case Intrinsic::kReciprocal:
      return "reciprocal";
    case Intrinsic::kAtan:
      return "atan";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kArgMax:
      return "argmax";
    case ReduceOp::kArgMin:
      return "argmin";
    case ReduceOp::kArgMaxLast:
      return "argmax_last";
    case ReduceOp::kArgMinLast:
      return "argmin_last";
  }
  return "?";
}

bool is_arg_reduce(ReduceOp op) {
  return op == ReduceOp::kArgMax || op == ReduceOp::kArgMin || op == ReduceOp::kArgMaxLast ||
         op == ReduceOp::kArgMinLast;
}

ExprKind Expr::kind() const {
  DYNVM_INTERNAL_CHECK(defined(), "kind() of an undefined tir::Expr");
  return node_->kind;
}

DataType Expr::type() const {
  DYNVM_INTERNAL_CHECK(defined(), "type() of an undefined tir::Expr");
  return node_->type;
}

Expr make_const(DataType type, double value) {
  DYNVM_INTERNAL_CHECK(type.lanes >= 1, "lanes must be >= 1");
  if (type.lanes > 1) return broadcast(make_const(type.with_lanes(1), value), type.lanes);
  ExprNode n;
  n.kind = ExprKind::kConst;
  n.type = type;
  if (type.is_float()) {
    n.fvalue = round_float(type.elem, value);
    n.ivalue = std::isfinite(value) && std::fabs(value) < 9.2e18 ? static_cast<int64_t>(value) : 0;
  } else {
    DYNVM_INTERNAL_CHECK(std::isfinite(value), "non-finite constant of type ", to_string(type));
    n.ivalue = wrap_int(type.elem, static_cast<int64_t>(value));
    n.fvalue = static_cast<double>(n.ivalue);
  }
  return finish(std::move(n));
}

Expr make_const_int(DataType type, int64_t value) {
  DYNVM_INTERNAL_CHECK(type.lanes >= 1, "lanes must be >= 1");
  if (type.lanes > 1) return broadcast(make_const_int(type.with_lanes(1), value), type.lanes);
  if (type.is_float()) return make_const(type, static_cast<double>(value));
  ExprNode n;
  n.kind = ExprKind::kConst;
  n.type = type;
  n.ivalue = wrap_int(type.elem, value);
  n.fvalue = static_cast<double>(n.ivalue);
  return finish(std::move(n));
}

Expr index_value(arith::Expr index, DataType type) {
  DYNVM_INTERNAL_CHECK(index.defined(), "undefined index");
  DYNVM_INTERNAL_CHECK(type.lanes == 1, "index_value is scalar; use vector_index_value");
  DYNVM_INTERNAL_CHECK(index.is_boolean() == type.is_bool(),
                       "index_value: a condition converts to bool, an integer to a number; got ",
                       to_string(type));
  DYNVM_INTERNAL_CHECK(type.is_bool() || type.is_float() || vm::is_integer(type.elem),
                       "index_value: unsupported type ", to_string(type));
  ExprNode n;
  n.kind = ExprKind::kIndexValue;
  n.type = type;
  n.index = std::move(index);
  return finish(std::move(n));
}

Expr vector_index_value(arith::Expr base, arith::Expr stride, DataType type) {
  check_index(base, "vector index base");
  check_index(stride, "vector index stride");
  DYNVM_INTERNAL_CHECK(type.lanes >= 1 && !type.is_bool(), "vector_index_value: bad type ",
                       to_string(type));
  if (type.lanes == 1) return index_value(std::move(base), type);
  ExprNode n;
  n.kind = ExprKind::kIndexValue;
  n.type = type;
  n.index = std::move(base);
  n.stride = std::move(stride);
  return finish(std::move(n));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  unify_lanes(a, b, binary_op_name(op));
  DYNVM_INTERNAL_CHECK(a.type() == b.type(), "binary ", binary_op_name(op),
                       ": types differ: ", to_string(a.type()), " vs ", to_string(b.type()));
  DYNVM_INTERNAL_CHECK(!a.type().is_bool(), "binary ", binary_op_name(op), " on bool");
  if (is_scalar_const(a) && is_scalar_const(b)) {
    if (Expr r = fold_binary(op, a, b); r.defined()) return r;
  }
  if (a.kind() == ExprKind::kBroadcast && b.kind() == ExprKind::kBroadcast &&
      is_scalar_const(a->operands[0]) && is_scalar_const(b->operands[0])) {
    if (Expr r = fold_binary(op, a->operands[0], b->operands[0]); r.defined()) {
      return broadcast(r, a.type().lanes);
    }
  }
  ExprNode n;
  n.kind = ExprKind::kBinary;
  n.type = a.type();
  n.binary_op = op;
  n.operands = {std::move(a), std::move(b)};
  return finish(std::move(n));
}

Expr compare(CompareOp op, Expr a, Expr b) {
  unify_lanes(a, b, compare_op_name(op));
  DYNVM_INTERNAL_CHECK(a.type() == b.type(), "compare ", compare_op_name(op),
                       ": types differ: ", to_string(a.type()), " vs ", to_string(b.type()));
  DataType result = boolean(a.type().lanes);
  if (is_scalar_const(a) && is_scalar_const(b) && foldable(a.type()) &&
      a.type().elem != vm::DType::kUInt64) {
    bool r = a.type().is_float() ? compare_values(op, a->fvalue, b->fvalue)
                                 : compare_values(op, a->ivalue, b->ivalue);
    return make_const_int(result, r);
  }
  ExprNode n;
  n.kind = ExprKind::kCompare;
  n.type = result;
  n.compare_op = op;
  n.operands = {std::move(a), std::move(b)};
  return finish(std::move(n));
}

namespace {

Expr logical_binary(LogicalOp op, Expr a, Expr b) {
  const char* what = op == LogicalOp::kAnd ? "&&" : "||";
  unify_lanes(a, b, what);
  DYNVM_INTERNAL_CHECK(a.type().is_bool() && b.type().is_bool(), what, " needs bools, got ",
                       to_string(a.type()), ", ", to_string(b.type()));
  if (is_scalar_const(a) && is_scalar_const(b)) {
    bool r = op == LogicalOp::kAnd ? (a->ivalue && b->ivalue) : (a->ivalue || b->ivalue);
    return make_const_int(a.type(), r);
  }
  ExprNode n;
  n.kind = ExprKind::kLogical;
  n.type = a.type();
  n.logical_op = op;
  n.operands = {std::move(a), std::move(b)};
  return finish(std::move(n));
}

}  // namespace

Expr logical_and(Expr a, Expr b) { return logical_binary(LogicalOp::kAnd, a, b); }
Expr logical_or(Expr a, Expr b) { return logical_binary(LogicalOp::kOr, a, b); }

Expr logical_not(Expr a) {
  DYNVM_INTERNAL_CHECK(a.defined() && a.type().is_bool(), "! needs a bool");
  if (is_scalar_const(a)) return make_const_int(a.type(), !a->ivalue);
  ExprNode n;
  n.kind = ExprKind::kLogical;
  n.type = a.type();
  n.logical_op = LogicalOp::kNot;
  n.operands = {std::move(a)};
  return finish(std::move(n));
}

Expr call(Intrinsic fn, Expr a) {
  DYNVM_INTERNAL_CHECK(a.defined(), "undefined operand of ", intrinsic_name(fn));
  DataType t = a.type();
  DYNVM_INTERNAL_CHECK(!t.is_bool(), intrinsic_name(fn), " on bool");
  DYNVM_INTERNAL_CHECK(!intrinsic_needs_float(fn) || t.is_float(), intrinsic_name(fn),
                       " needs a float operand, got ", to_string(t));
  DataType result = (fn == Intrinsic::kIsNan || fn == Intrinsic::kIsInf) ? boolean(t.lanes) : t;
  ExprNode n;
  n.kind = ExprKind::kCall;
  n.type = result;
  n.intrinsic = fn;
  n.operands = {std::move(a)};
  return finish(std::move(n));
}

Expr cast(DataType type, Expr a) {
  DYNVM_INTERNAL_CHECK(a.defined(), "undefined operand of cast");
  if (a.type().lanes == 1 && type.lanes > 1) a = broadcast(a, type.lanes);
  DYNVM_INTERNAL_CHECK(a.type().lanes == type.lanes, "cast changes lanes: ", to_string(a.type()),
                       " -> ", to_string(type));
  if (a.type() == type) return a;
  if (is_scalar_const(a) && foldable(a.type()) && foldable(type) &&
      a.type().elem != vm::DType::kUInt64 && type.elem != vm::DType::kUInt64) {
    if (type.is_bool()) return make_const_int(type, const_as_double(a) != 0);
    if (type.is_float()) return make_const(type, const_as_double(a));
    if (!a.type().is_float()) return make_const_int(type, a->ivalue);
    // float -> int truncates; out-of-range conversions are left to the target.
    double v = std::trunc(a->fvalue);
    if (std::isfinite(v) && std::fabs(v) < 9.2e18) {
      return make_const_int(type, static_cast<int64_t>(v));
    }
  }
  ExprNode n;
  n.kind = ExprKind::kCast;
  n.type = type;
  n.operands = {std::move(a)};
  return finish(std::move(n));
}

Expr select(Expr cond, Expr a, Expr b) {
  DYNVM_INTERNAL_CHECK(cond.defined() && cond.type().is_bool(), "select needs a bool condition");
  unify_lanes(a, b, "select");
  if (cond.type().lanes == 1 && a.type().lanes > 1) {
    // A scalar condition picks whole vectors; keep it scalar.
  } else if (a.type().lanes == 1 && cond.type().lanes > 1) {
    a = broadcast(a, cond.type().lanes);
    b = broadcast(b, cond.type().lanes);
  }
  DYNVM_INTERNAL_CHECK(a.type() == b.type(), "select: types differ: ", to_string(a.type()), " vs ",
                       to_string(b.type()));
  DYNVM_INTERNAL_CHECK(cond.type().lanes == 1 || cond.type().lanes == a.type().lanes,
                       "select: condition lanes ", cond.type().lanes, " vs ", a.type().lanes);
  if (is_scalar_const(cond)) return cond->ivalue ? a : b;
  if (cond.kind() == ExprKind::kBroadcast && is_scalar_const(cond->operands[0])) {
    return cond->operands[0]->ivalue ? a : b;
  }
  DataType t = a.type();
  ExprNode n;
  n.kind = ExprKind::kSelect;
  n.type = t;
  n.operands = {std::move(cond), std::move(a), std::move(b)};
  return finish(std::move(n));
}

Expr broadcast(Expr scalar, int lanes) {
  DYNVM_INTERNAL_CHECK(scalar.defined(), "broadcast of an undefined expr");
  DYNVM_INTERNAL_CHECK(lanes >= 1, "broadcast to ", lanes, " lanes");
  if (scalar.type().lanes == lanes) return scalar;
  DYNVM_INTERNAL_CHECK(scalar.type().lanes == 1, "broadcast of a vector ", to_string(scalar.type()),
                       " to ", lanes, " lanes");
  DataType t = scalar.type().with_lanes(lanes);
  ExprNode n;
  n.kind = ExprKind::kBroadcast;
  n.type = t;
  n.operands = {std::move(scalar)};
  return finish(std::move(n));
}

Expr buffer_load(std::shared_ptr<const Buffer> buffer, std::vector<arith::Expr> indices) {
  DYNVM_INTERNAL_CHECK(buffer != nullptr, "load from a null buffer");
  DYNVM_INTERNAL_CHECK(indices.size() == buffer->shape().size() || indices.size() == 1,
                       "load from ", buffer->name(), " with ", indices.size(), " indices, rank is ",
                       buffer->shape().size());
  for (const auto& i : indices) check_index(i, "load index");
  DataType t{buffer->dtype(), 1};
  ExprNode n;
  n.kind = ExprKind::kBufferLoad;
  n.type = t;
  n.indices = std::move(indices);
  n.buffer = std::move(buffer);
  return finish(std::move(n));
}

Expr vector_buffer_load(std::shared_ptr<const Buffer> buffer, arith::Expr flat_base,
                        arith::Expr stride, int lanes, arith::Expr active) {
  DYNVM_INTERNAL_CHECK(buffer != nullptr, "load from a null buffer");
  check_index(flat_base, "vector load base");
  check_index(stride, "vector load stride");
  if (active.defined()) check_index(active, "vector load's active lanes");
  DYNVM_INTERNAL_CHECK(lanes >= 1, "vector load with ", lanes, " lanes");
  if (lanes == 1) return buffer_load(std::move(buffer), {std::move(flat_base)});
  DataType t{buffer->dtype(), lanes};
  ExprNode n;
  n.kind = ExprKind::kBufferLoad;
  n.type = t;
  n.stride = std::move(stride);
  n.active = std::move(active);
  n.indices = {std::move(flat_base)};
  n.buffer = std::move(buffer);
  return finish(std::move(n));
}

Expr let_index(arith::Var var, Expr value, Expr body) {
  DYNVM_INTERNAL_CHECK(value.defined() && body.defined(), "let_index with an undefined part");
  DYNVM_INTERNAL_CHECK(value.type().lanes == 1 && vm::is_integer(value.type().elem),
                       "let_index value must be a scalar integer, got ", to_string(value.type()));
  DataType t = body.type();
  ExprNode n;
  n.kind = ExprKind::kLetIndex;
  n.type = t;
  n.operands = {std::move(value), std::move(body)};
  n.let_var = var.expr();
  return finish(std::move(n));
}

Expr operator+(Expr a, Expr b) { return binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(BinaryOp::kMax, std::move(a), std::move(b)); }

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (!e.defined()) return;
  for (const Expr& op : e->operands) visit(op, f);
  f(e);
}

}  // namespace dynvm::tir
