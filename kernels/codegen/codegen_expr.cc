// Expressions: arith::Expr index arithmetic as i64 (floor division and modulo, made cheap
// when the divisor is a power of two or the dividend is provably non-negative) and typed
// tir::Expr values, scalar or vector: loads (contiguous, broadcast, gather), arithmetic
// with numpy-like integer semantics, comparisons, casts, selects and intrinsics.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Metadata.h>

#include <bit>

#include "kernels/codegen/codegen_llvm.h"
#include "kernels/codegen/intrinsics.h"
#include "vm/error.h"

namespace dynvm::codegen {

using llvm::Value;
using tir::DataType;

// ---- Index expressions. ----

Value* CodeGenLLVM::emit_index(const arith::Expr& e) {
  using arith::ExprKind;
  llvm::IRBuilder<>& b = *b_;
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return b.getInt64(static_cast<uint64_t>(e->value));
    case ExprKind::kBoolImm:
      return b.getInt1(e->value != 0);
    case ExprKind::kVar: {
      auto it = fs_.vars.find(e->var_id);
      DYNVM_INTERNAL_CHECK(it != fs_.vars.end(), "variable ", e->name, " (id ", e->var_id,
                           ") is used outside the scope that binds it in kernel ",
                           lowered_->func.name);
      return it->second;
    }
    case ExprKind::kFloorDiv:
      return emit_floordiv(e.operand(0), e.operand(1), false);
    case ExprKind::kFloorMod:
      return emit_floordiv(e.operand(0), e.operand(1), true);
    case ExprKind::kSelect:
      return b.CreateSelect(emit_index(e.operand(0)), emit_index(e.operand(1)),
                            emit_index(e.operand(2)));
    case ExprKind::kNot:
      return b.CreateNot(emit_index(e.operand(0)));
    default:
      break;
  }
  Value* x = emit_index(e.operand(0));
  Value* y = emit_index(e.operand(1));
  switch (e.kind()) {
    // Index arithmetic never wraps in a valid kernel; nsw lets LLVM reason about it.
    case ExprKind::kAdd:
      return b.CreateNSWAdd(x, y);
    case ExprKind::kSub:
      return b.CreateNSWSub(x, y);
    case ExprKind::kMul:
      return b.CreateNSWMul(x, y);
    case ExprKind::kMin:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
    case ExprKind::kMax:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
    case ExprKind::kEq:
      return b.CreateICmpEQ(x, y);
    case ExprKind::kNe:
      return b.CreateICmpNE(x, y);
    case ExprKind::kLt:
      return b.CreateICmpSLT(x, y);
    case ExprKind::kLe:
      return b.CreateICmpSLE(x, y);
    case ExprKind::kGt:
      return b.CreateICmpSGT(x, y);
    case ExprKind::kGe:
      return b.CreateICmpSGE(x, y);
    case ExprKind::kAnd:
      return b.CreateAnd(x, y);
    case ExprKind::kOr:
      return b.CreateOr(x, y);
    default:
      break;
  }
  internal_error(__FILE__, __LINE__, str_cat("unexpected arith node ", arith::kind_name(e.kind())));
}

Value* CodeGenLLVM::emit_floordiv(const arith::Expr& ea, const arith::Expr& eb, bool mod) {
  llvm::IRBuilder<>& b = *b_;
  Value* a = emit_index(ea);
  auto nonneg = [&](const arith::Expr& x) { return fs_.analyzer.const_bounds(x).min >= 0; };
  if (eb.is_int_imm()) {
    int64_t c = eb.int_value();
    DYNVM_INTERNAL_CHECK(c != 0, "index division by zero in kernel ", lowered_->func.name);
    if (c > 0 && std::has_single_bit(static_cast<uint64_t>(c))) {
      // An arithmetic shift and a mask are floor division and modulo for either sign.
      int k = std::countr_zero(static_cast<uint64_t>(c));
      return mod ? b.CreateAnd(a, b.getInt64(static_cast<uint64_t>(c - 1)))
                 : b.CreateAShr(a, static_cast<uint64_t>(k));
    }
    if (c > 0 && nonneg(ea)) {
      return mod ? b.CreateURem(a, b.getInt64(static_cast<uint64_t>(c)))
                 : b.CreateUDiv(a, b.getInt64(static_cast<uint64_t>(c)));
    }
  }
  Value* d = emit_index(eb);
  bool positive_divisor = fs_.analyzer.const_bounds(eb).min > 0;
  if (positive_divisor && nonneg(ea)) return mod ? b.CreateURem(a, d) : b.CreateUDiv(a, d);
  // A select may evaluate a division its condition was meant to guard: never divide by 0.
  if (!positive_divisor) d = b.CreateSelect(b.CreateICmpEQ(d, b.getInt64(0)), b.getInt64(1), d);
  Value* q = b.CreateSDiv(a, d);
  Value* r = b.CreateSRem(a, d);
  Value* adjust = b.CreateAnd(b.CreateICmpNE(r, b.getInt64(0)),
                              b.CreateICmpSLT(b.CreateXor(r, d), b.getInt64(0)));
  if (mod) return b.CreateAdd(r, b.CreateSelect(adjust, d, b.getInt64(0)));
  return b.CreateSub(q, b.CreateZExt(adjust, b.getInt64Ty()));
}

// ---- Typed values. ----

Value* CodeGenLLVM::emit_expr(const tir::Expr& e) {
  using tir::ExprKind;
  llvm::IRBuilder<>& b = *b_;
  DataType t = e.type();
  switch (e.kind()) {
    case ExprKind::kConst: {
      llvm::Type* type = value_type(t);
      if (t.is_float()) {
        Value* c = llvm::ConstantFP::get(type, e->fvalue);
        if (t.elem == vm::DType::kFloat16) c = emit_f16_to_f32(emit_f32_to_f16(c));
        if (t.elem == vm::DType::kBFloat16) c = emit_bf16_to_f32(emit_f32_to_bf16(c));
        return c;
      }
      return llvm::ConstantInt::get(type, static_cast<uint64_t>(e->ivalue), true);
    }
    case ExprKind::kIndexValue:
      return emit_index_value(e);
    case ExprKind::kBufferLoad:
      return emit_load(e);
    case ExprKind::kBinary:
      return emit_binary(e);
    case ExprKind::kCompare:
      return emit_compare(e);
    case ExprKind::kLogical: {
      Value* x = emit_expr(e->operands[0]);
      if (e->logical_op == tir::LogicalOp::kNot) return b.CreateNot(x);
      Value* y = emit_expr(e->operands[1]);
      return e->logical_op == tir::LogicalOp::kAnd ? b.CreateAnd(x, y) : b.CreateOr(x, y);
    }
    case ExprKind::kCall: {
      const tir::Expr& x = e->operands[0];
      IntrinsicContext ctx{b, *math_};
      return intrinsic_info(e->intrinsic).emit(ctx, emit_expr(x), x.type());
    }
    case ExprKind::kCast:
      return emit_cast(emit_expr(e->operands[0]), e->operands[0].type(), t);
    case ExprKind::kSelect:
      return b.CreateSelect(emit_expr(e->operands[0]), emit_expr(e->operands[1]),
                            emit_expr(e->operands[2]));
    case ExprKind::kBroadcast:
      return b.CreateVectorSplat(static_cast<unsigned>(t.lanes), emit_expr(e->operands[0]));
    case ExprKind::kLetIndex: {
      const tir::Expr& value = e->operands[0];
      bind_var(e->let_var, emit_cast(emit_expr(value), value.type(), tir::i64()));
      Value* body = emit_expr(e->operands[1]);
      unbind_var(e->let_var);
      return body;
    }
    case ExprKind::kTensorRead:
    case ExprKind::kReduce:
      break;
  }
  internal_error(__FILE__, __LINE__,
                 str_cat("TE node in TIR given to code generation (kernel ", lowered_->func.name,
                         "): lower it first"));
}

Value* CodeGenLLVM::emit_index_value(const tir::Expr& e) {
  DataType t = e.type();
  Value* base = emit_index(e->index);
  if (t.lanes == 1) {
    if (e->index.is_boolean()) return base;  // a condition as bool
    return emit_cast(base, tir::i64(), t);
  }
  Value* lanes = lane_indices(base, emit_index(e->stride), t.lanes);
  return emit_cast(lanes, tir::i64(t.lanes), t);
}

Value* CodeGenLLVM::emit_load(const tir::Expr& e) {
  llvm::IRBuilder<>& b = *b_;
  const tir::Buffer& buffer = *e->buffer;
  DataType t = e.type();
  DYNVM_INTERNAL_CHECK(e->indices.size() == 1 || (e->indices.empty() && buffer.shape().empty()),
                       "load from ", buffer.name(), " is not flattened (", e->indices.size(),
                       " indices)");
  Value* index = e->indices.empty() ? b.getInt64(0) : emit_index(e->indices[0]);
  llvm::Type* mem = memory_type(buffer.dtype());
  llvm::Align align = element_align(buffer.dtype());
  if (t.lanes == 1) {
    return from_memory(b.CreateAlignedLoad(mem, element_address(buffer, index), align),
                       buffer.dtype());
  }
  auto lanes = static_cast<unsigned>(t.lanes);
  auto* vec = llvm::FixedVectorType::get(mem, lanes);
  // A masked load reads only its active lanes; in a stack slot that holds all of them it
  // reads them all (the inactive ones are unspecified either way).
  const bool masked =
      e->active.defined() && !in_stack_slot(buffer, e->indices[0], e->stride, t.lanes);
  Value* mask = masked ? active_mask(e->active, t.lanes) : nullptr;
  Value* v = nullptr;
  if (e->stride.is_int_imm() && e->stride.int_value() == 0) {
    v = b.CreateVectorSplat(lanes, b.CreateAlignedLoad(mem, element_address(buffer, index), align));
  } else if (e->stride.is_int_imm() && e->stride.int_value() == 1) {
    Value* ptr = element_address(buffer, index);
    if (masked) {
      v = b.CreateMaskedLoad(vec, ptr, align, mask, llvm::Constant::getNullValue(vec));
    } else {
      v = b.CreateAlignedLoad(vec, ptr, align);
    }
  } else if (int64_t s = wide_stride(e->stride, t.lanes)) {
    // One contiguous (masked) load of s * lanes elements, and every s-th of them.
    auto* wide = llvm::FixedVectorType::get(mem, static_cast<unsigned>(s * t.lanes));
    Value* all =
        b.CreateMaskedLoad(wide, element_address(buffer, index), align,
                           wide_mask(s, t.lanes, masked ? e->active : arith::Expr(), false),
                           llvm::Constant::getNullValue(wide));
    std::vector<int> pick;
    for (int l = 0; l < t.lanes; ++l) pick.push_back(static_cast<int>(l * s));
    v = b.CreateShuffleVector(all, pick);
  } else {
    Value* ptrs = element_address(buffer, lane_indices(index, emit_index(e->stride), t.lanes));
    v = b.CreateMaskedGather(vec, ptrs, align, mask,
                             masked ? llvm::Constant::getNullValue(vec) : nullptr);
  }
  return from_memory(v, buffer.dtype());
}

Value* CodeGenLLVM::emit_binary(const tir::Expr& e) {
  using tir::BinaryOp;
  llvm::IRBuilder<>& b = *b_;
  DataType t = e.type();
  Value* x = emit_expr(e->operands[0]);
  Value* y = emit_expr(e->operands[1]);
  if (t.is_float()) {
    switch (e->binary_op) {
      case BinaryOp::kAdd:
        return b.CreateFAdd(x, y);
      case BinaryOp::kSub:
        return b.CreateFSub(x, y);
      case BinaryOp::kMul:
        return b.CreateFMul(x, y);
      case BinaryOp::kDiv:
        return b.CreateFDiv(x, y);
      case BinaryOp::kMod:
        return math_->call(b, MathFn2::kFloorMod, x, y);
      case BinaryOp::kPow:
        return math_->call(b, MathFn2::kPow, x, y);
      // NaN-propagating, as numpy.minimum / ONNX Min. With the target's instruction,
      // y op x gives x when either is NaN and a select gives y when y is: a reduction's
      // chain (its accumulator is x, the first operand) waits for the instruction and the
      // select, not for a compare.
      case BinaryOp::kMin:
      case BinaryOp::kMax: {
        const bool is_max = e->binary_op == BinaryOp::kMax;
        if (Value* m = emit_target_minmax(b, is_max, y, x)) {
          return b.CreateSelect(b.CreateFCmpUNO(y, y), y, m);
        }
        return b.CreateSelect(
            b.CreateFCmpUNO(x, x), x,
            b.CreateSelect(is_max ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y), x, y));
      }
    }
  }
  bool is_signed = t.is_signed_int();
  switch (e->binary_op) {
    // Integer arithmetic wraps (two's complement), as numpy's does.
    case BinaryOp::kAdd:
      return b.CreateAdd(x, y);
    case BinaryOp::kSub:
      return b.CreateSub(x, y);
    case BinaryOp::kMul:
      return b.CreateMul(x, y);
    case BinaryOp::kDiv:
      return emit_int_divmod(x, y, t, false);
    case BinaryOp::kMod:
      return emit_int_divmod(x, y, t, true);
    case BinaryOp::kMin:
      return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x,
                                     y);
    case BinaryOp::kMax:
      return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x,
                                     y);
    case BinaryOp::kPow:
      return emit_int_pow(x, y, t);
  }
  internal_error(__FILE__, __LINE__, "unknown binary op");
}

// x ** y by square-and-multiply: exact modulo 2^bits (wrapping like numpy). A loop that
// runs while any lane has exponent bits left (at most `bits` trips), not unrolled: int pow
// is rare and 64 unrolled steps cost more compile time than they ever save. A negative
// exponent truncates 1 / x^|y| toward zero: 1 for x == 1, +-1 for x == -1, else 0.
Value* CodeGenLLVM::emit_int_pow(Value* x, Value* y, DataType t) {
  llvm::IRBuilder<>& b = *b_;
  llvm::Type* type = x->getType();
  auto k = [&](int64_t v) {
    return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), /*isSigned=*/true);
  };
  llvm::BasicBlock* before = b.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(context_, "ipow", fs_.fn);
  auto* done = llvm::BasicBlock::Create(context_, "ipow_done", fs_.fn);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* result = b.CreatePHI(type, 2, "ipow_result");
  llvm::PHINode* base = b.CreatePHI(type, 2, "ipow_base");
  llvm::PHINode* e = b.CreatePHI(type, 2, "ipow_exp");
  result->addIncoming(k(1), before);
  base->addIncoming(x, before);
  e->addIncoming(y, before);
  Value* bit = b.CreateICmpNE(b.CreateAnd(e, k(1)), k(0));
  Value* next_result = b.CreateSelect(bit, b.CreateMul(result, base), result);
  Value* next_e = b.CreateLShr(e, 1);
  Value* more = b.CreateICmpNE(next_e, k(0));
  if (t.lanes > 1) more = b.CreateOrReduce(more);
  result->addIncoming(next_result, loop);
  base->addIncoming(b.CreateMul(base, base), loop);
  e->addIncoming(next_e, loop);
  llvm::BranchInst* back = b.CreateCondBr(more, loop, done);
  llvm::MDNode* id = llvm::MDNode::getDistinct(
      context_,
      {nullptr,
       llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.disable")})});
  id->replaceOperandWith(0, id);
  back->setMetadata(llvm::LLVMContext::MD_loop, id);
  b.SetInsertPoint(done);
  if (!t.is_signed_int()) return next_result;
  Value* odd = b.CreateICmpNE(b.CreateAnd(y, k(1)), k(0));
  Value* negative_exponent = b.CreateSelect(
      b.CreateICmpEQ(x, k(1)), k(1),
      b.CreateSelect(b.CreateICmpEQ(x, k(-1)), b.CreateSelect(odd, k(-1), k(1)), k(0)));
  return b.CreateSelect(b.CreateICmpSLT(y, k(0)), negative_exponent, next_result);
}

// Floor division / modulo on integer values. Division by zero gives 0 (no trap: a select
// may evaluate the division it guards), and INT_MIN / -1 wraps.
Value* CodeGenLLVM::emit_int_divmod(Value* x, Value* y, DataType t, bool mod) {
  llvm::IRBuilder<>& b = *b_;
  llvm::Type* type = x->getType();
  auto k = [&](int64_t v) {
    return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), /*isSigned=*/true);
  };
  Value* zero = k(0);
  Value* y_zero = b.CreateICmpEQ(y, zero);
  if (!t.is_signed_int()) {
    Value* d = b.CreateSelect(y_zero, k(1), y);
    Value* r = mod ? b.CreateURem(x, d) : b.CreateUDiv(x, d);
    return b.CreateSelect(y_zero, zero, r);
  }
  Value* y_minus1 = b.CreateICmpEQ(y, k(-1));
  Value* bad = b.CreateOr(y_zero, y_minus1);
  Value* d = b.CreateSelect(bad, k(1), y);
  Value* q = b.CreateSDiv(x, d);
  Value* r = b.CreateSRem(x, d);
  Value* adjust = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, d), zero));
  if (mod) {
    r = b.CreateAdd(r, b.CreateSelect(adjust, d, zero));
    return b.CreateSelect(bad, zero, r);
  }
  q = b.CreateSub(q, b.CreateZExt(adjust, type));
  q = b.CreateSelect(y_minus1, b.CreateSub(zero, x), q);
  return b.CreateSelect(y_zero, zero, q);
}

Value* CodeGenLLVM::emit_compare(const tir::Expr& e) {
  using tir::CompareOp;
  llvm::IRBuilder<>& b = *b_;
  DataType t = e->operands[0].type();
  Value* x = emit_expr(e->operands[0]);
  Value* y = emit_expr(e->operands[1]);
  if (t.is_float()) {
    switch (e->compare_op) {
      case CompareOp::kEq:
        return b.CreateFCmpOEQ(x, y);
      case CompareOp::kNe:
        return b.CreateFCmpUNE(x, y);
      case CompareOp::kLt:
        return b.CreateFCmpOLT(x, y);
      case CompareOp::kLe:
        return b.CreateFCmpOLE(x, y);
      case CompareOp::kGt:
        return b.CreateFCmpOGT(x, y);
      case CompareOp::kGe:
        return b.CreateFCmpOGE(x, y);
    }
  }
  bool s = t.is_signed_int();  // bools compare as unsigned: false < true
  switch (e->compare_op) {
    case CompareOp::kEq:
      return b.CreateICmpEQ(x, y);
    case CompareOp::kNe:
      return b.CreateICmpNE(x, y);
    case CompareOp::kLt:
      return s ? b.CreateICmpSLT(x, y) : b.CreateICmpULT(x, y);
    case CompareOp::kLe:
      return s ? b.CreateICmpSLE(x, y) : b.CreateICmpULE(x, y);
    case CompareOp::kGt:
      return s ? b.CreateICmpSGT(x, y) : b.CreateICmpUGT(x, y);
    case CompareOp::kGe:
      return s ? b.CreateICmpSGE(x, y) : b.CreateICmpUGE(x, y);
  }
  internal_error(__FILE__, __LINE__, "unknown compare op");
}

}  // namespace dynvm::codegen
