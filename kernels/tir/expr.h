// Typed value expressions of the kernel IR, shared by TE (kernels/te) and TIR.
//
// Two expression families, on purpose:
//   * arith::Expr (kernels/arith): integer index arithmetic and conditions on indices —
//     loop extents, buffer indices, shape dims. Everything the simplifier and the bounds /
//     divisibility analyses reason about.
//   * tir::Expr (this file): the typed values a kernel computes — f32 additions, loads,
//     exp(), casts, selects — scalar or vector (lanes > 1).
// An index enters the value world through IndexValue (e.g. iota, or `i < n` as a mask);
// a value enters the index world through LetIndex (e.g. gather: the index is loaded from
// an indices tensor), which binds a fresh arith::Var that index expressions may use.
//
// TE-only nodes (TensorRead, Reduce) are removed by lowering (kernels/te/lower_te.cc);
// TIR-only nodes (BufferLoad with lanes/stride) appear after it. tir/verifier.cc checks
// which nodes may appear where.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/arith/expr.h"
#include "vm/dtype.h"

namespace dynvm::te {
class Tensor;
}

namespace dynvm::tir {

// Element type and vector width of a value.
struct DataType {
  vm::DType elem = vm::DType::kFloat32;
  int lanes = 1;
  bool operator==(const DataType&) const = default;
  DataType with_lanes(int n) const { return DataType{elem, n}; }
  bool is_float() const { return vm::is_floating(elem); }
  bool is_bool() const { return elem == vm::DType::kBool; }
  bool is_signed_int() const;
  bool is_unsigned_int() const;
};
std::string to_string(DataType t);  // "f32", "f32x16"

inline DataType f32(int lanes = 1) { return {vm::DType::kFloat32, lanes}; }
inline DataType f64(int lanes = 1) { return {vm::DType::kFloat64, lanes}; }
inline DataType i32(int lanes = 1) { return {vm::DType::kInt32, lanes}; }
inline DataType i64(int lanes = 1) { return {vm::DType::kInt64, lanes}; }
inline DataType boolean(int lanes = 1) { return {vm::DType::kBool, lanes}; }

class Buffer;

enum class ExprKind : uint8_t {
  kConst,       // a number of type `type` (double `fvalue` for floats, int64 `ivalue` else)
  kIndexValue,  // arith `index` converted to `type` (lanes > 1: index + lane * stride)
  kTensorRead,  // TE only: tensor(indices...)
  kBufferLoad,  // buffer[indices...]; lanes > 1: lane l reads index + l * stride
  kBinary,      // a <op> b, same type
  kCompare,     // a <cmp> b -> bool with a's lanes
  kLogical,     // and / or (two bools), not (one)
  kCall,        // pure math intrinsic on one or two operands (exp, log, tanh, ...)
  kCast,        // a converted to `type`
  kSelect,      // cond ? a : b, cond is bool (scalar or same lanes)
  kBroadcast,   // scalar a repeated `type.lanes` times
  kReduce,      // TE only: combiner over reduce axes of `source`
  kLetIndex,    // let var = int64(value) in body (index world may use var)
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kPow };
// kDiv on integers is floor division and kMod floor modulo, as in arith; on floats, IEEE
// division and fmod-style floor modulo (Python semantics: sign of the divisor).
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class LogicalOp : uint8_t { kAnd, kOr, kNot };
enum class Intrinsic : uint8_t {
  kExp, kLog, kTanh, kErf, kSigmoid, kSqrt, kRsqrt, kAbs, kNeg, kFloor, kCeil, kRound,
  kSin, kCos, kLog1p, kExpm1, kIsNan, kIsInf, kSign, kReciprocal, kAtan,
};
// kArgMax / kArgMin: the index of the first extreme; the *Last forms the last one (ONNX
// select_last_index=1).
enum class ReduceOp : uint8_t {
  kSum, kProd, kMax, kMin, kArgMax, kArgMin, kArgMaxLast, kArgMinLast,
};

const char* binary_op_name(BinaryOp op);
const char* compare_op_name(CompareOp op);
const char* intrinsic_name(Intrinsic op);
const char* reduce_op_name(ReduceOp op);
// argmax / argmin in either tie order: the result is an int64 index, not a combined value.
bool is_arg_reduce(ReduceOp op);

struct ExprNode;

// A handle to an immutable typed expression node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }
  const ExprNode* get() const { return node_.get(); }
  ExprKind kind() const;
  DataType type() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

// A reduction axis: `var` runs over [0, extent).
struct IterVar {
  arith::Var var;
  arith::Expr extent;
};

struct ExprNode {
  ExprKind kind;
  DataType type;
  // kConst
  double fvalue = 0;
  int64_t ivalue = 0;
  // kIndexValue (index, stride), kBufferLoad (indices, stride), kTensorRead (indices)
  arith::Expr index;
  arith::Expr stride;  // lanes > 1: per-lane step of the (flattened) index
  // kBufferLoad with lanes > 1: only lanes [0, active) read memory (the others are
  // unspecified); undefined: every lane. The masked remainder of a vectorized loop.
  arith::Expr active;
  std::vector<arith::Expr> indices;
  std::shared_ptr<const Buffer> buffer;         // kBufferLoad
  std::shared_ptr<const te::Tensor> tensor;     // kTensorRead
  // operators
  BinaryOp binary_op = BinaryOp::kAdd;
  CompareOp compare_op = CompareOp::kEq;
  LogicalOp logical_op = LogicalOp::kAnd;
  Intrinsic intrinsic = Intrinsic::kExp;
  ReduceOp reduce_op = ReduceOp::kSum;
  std::vector<Expr> operands;  // a, b, (cond, a, b) for select, value + body for LetIndex
  // kReduce: source = operands[0], init = operands[1] (may be undefined: identity)
  std::vector<IterVar> reduce_axes;
  // kLetIndex: a kVar arith expression, bound to int64(operands[0]) inside operands[1]
  arith::Expr let_var;
};

// ---- Builders. Each checks its invariants (operand types agree, lanes match) and throws
// InternalError on misuse. Binary builders broadcast a scalar operand to the other's lanes
// and fold constants.
Expr make_const(DataType type, double value);
Expr make_const_int(DataType type, int64_t value);
Expr index_value(arith::Expr index, DataType type = i64());
Expr vector_index_value(arith::Expr base, arith::Expr stride, DataType type);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr compare(CompareOp op, Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr call(Intrinsic fn, Expr a);
Expr cast(DataType type, Expr a);
Expr select(Expr cond, Expr a, Expr b);
Expr broadcast(Expr scalar, int lanes);
Expr buffer_load(std::shared_ptr<const Buffer> buffer, std::vector<arith::Expr> indices);
// `active` (optional): the number of lanes that read memory (ExprNode::active).
Expr vector_buffer_load(std::shared_ptr<const Buffer> buffer, arith::Expr flat_base,
                        arith::Expr stride, int lanes, arith::Expr active = arith::Expr());
Expr let_index(arith::Var var, Expr value, Expr body);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

// Calls f on every node of e, children first.
void visit(const Expr& e, const std::function<void(const Expr&)>& f);

}  // namespace dynvm::tir
