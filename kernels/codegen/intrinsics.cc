// The intrinsic table. f16/bf16 operands arrive as f32 registers (see codegen_llvm.h), so
// every float row sees f32 or f64; integer rows (abs, neg, sign) see any integer width.
#include "kernels/codegen/intrinsics.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <array>
#include <cmath>

#include "vm/error.h"

namespace dynvm::codegen {
namespace {

using llvm::Value;
using tir::DataType;
using tir::Intrinsic;

Value* fconst(Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }
Value* iconst(Value* like, int64_t v) {
  return llvm::ConstantInt::get(like->getType(), static_cast<uint64_t>(v), true);
}

template <MathFn fn>
Value* math_row(IntrinsicContext& c, Value* x, DataType) {
  return c.math.call(c.b, fn, x);
}

Value* sqrt_row(IntrinsicContext& c, Value* x, DataType) {
  return c.b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
}

Value* rsqrt_row(IntrinsicContext& c, Value* x, DataType) {
  // Exactly 1/sqrt(x), not the 12-bit rsqrt estimate.
  return c.b.CreateFDiv(fconst(x, 1), c.b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
}

Value* reciprocal_row(IntrinsicContext& c, Value* x, DataType) {
  return c.b.CreateFDiv(fconst(x, 1), x);
}

Value* abs_row(IntrinsicContext& c, Value* x, DataType t) {
  if (t.is_float()) return c.b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  if (t.is_unsigned_int()) return x;
  // INT_MIN stays INT_MIN (two's complement wrap), as in numpy.
  return c.b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, c.b.getFalse());
}

Value* neg_row(IntrinsicContext& c, Value* x, DataType t) {
  if (t.is_float()) return c.b.CreateFNeg(x);
  return c.b.CreateSub(iconst(x, 0), x);
}

Value* sign_row(IntrinsicContext& c, Value* x, DataType t) {
  llvm::IRBuilder<>& b = c.b;
  if (t.is_float()) {
    // -1, +1, or x itself for +-0 and NaN.
    Value* r = b.CreateSelect(b.CreateFCmpOGT(x, fconst(x, 0)), fconst(x, 1), x);
    return b.CreateSelect(b.CreateFCmpOLT(x, fconst(x, 0)), fconst(x, -1), r);
  }
  Value* zero = iconst(x, 0);
  Value* pos = b.CreateZExt(
      t.is_unsigned_int() ? b.CreateICmpUGT(x, zero) : b.CreateICmpSGT(x, zero), x->getType());
  if (t.is_unsigned_int()) return pos;
  Value* neg = b.CreateZExt(b.CreateICmpSLT(x, zero), x->getType());
  return b.CreateSub(pos, neg);
}

Value* isnan_row(IntrinsicContext& c, Value* x, DataType) { return c.b.CreateFCmpUNO(x, x); }

Value* isinf_row(IntrinsicContext& c, Value* x, DataType) {
  return c.b.CreateFCmpOEQ(c.b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), fconst(x, INFINITY));
}

// Indexed by the enum's value; checked against the enum below.
constexpr std::array<IntrinsicInfo, 21> kTable = {{
    {Intrinsic::kExp, math_row<MathFn::kExp>},
    {Intrinsic::kLog, math_row<MathFn::kLog>},
    {Intrinsic::kTanh, math_row<MathFn::kTanh>},
    {Intrinsic::kErf, math_row<MathFn::kErf>},
    {Intrinsic::kSigmoid, math_row<MathFn::kSigmoid>},
    {Intrinsic::kSqrt, sqrt_row},
    {Intrinsic::kRsqrt, rsqrt_row},
    {Intrinsic::kAbs, abs_row},
    {Intrinsic::kNeg, neg_row},
    {Intrinsic::kFloor, math_row<MathFn::kFloor>},
    {Intrinsic::kCeil, math_row<MathFn::kCeil>},
    // Round half to even, as ONNX Round and numpy.round.
    {Intrinsic::kRound, math_row<MathFn::kRoundEven>},
    {Intrinsic::kSin, math_row<MathFn::kSin>},
    {Intrinsic::kCos, math_row<MathFn::kCos>},
    {Intrinsic::kLog1p, math_row<MathFn::kLog1p>},
    {Intrinsic::kExpm1, math_row<MathFn::kExpm1>},
    {Intrinsic::kIsNan, isnan_row},
    {Intrinsic::kIsInf, isinf_row},
    {Intrinsic::kSign, sign_row},
    {Intrinsic::kReciprocal, reciprocal_row},
    {Intrinsic::kAtan, math_row<MathFn::kAtan>},
}};

constexpr bool table_is_in_enum_order() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].op) != i) return false;
  }
  return true;
}
static_assert(table_is_in_enum_order(), "kTable rows must follow tir::Intrinsic's order");
static_assert(kTable.size() == static_cast<size_t>(Intrinsic::kAtan) + 1,
              "every tir::Intrinsic needs a row");

}  // namespace

const IntrinsicInfo& intrinsic_info(tir::Intrinsic op) {
  size_t i = static_cast<size_t>(op);
  DYNVM_INTERNAL_CHECK(i < kTable.size(), "unknown intrinsic ", i);
  return kTable[i];
}

}  // namespace dynvm::codegen
