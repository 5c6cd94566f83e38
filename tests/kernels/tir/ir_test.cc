// The IR itself: builders (type rules, broadcasting, constant folding, invariant checks),
// buffers, the printer, substitution and free-variable collection.
#include <gtest/gtest.h>

#include "kernels/arith/printer.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/printer.h"
#include "tests/kernels/tir/tir_test_util.h"
#include "vm/error.h"

namespace dynvm::tir::test {
namespace {

TEST(TirExpr, DataTypeNames) {
  EXPECT_EQ(to_string(f32()), "f32");
  EXPECT_EQ(to_string(f32(16)), "f32x16");
  EXPECT_EQ(to_string(i64(4)), "i64x4");
  EXPECT_EQ(to_string(boolean()), "bool");
  EXPECT_TRUE(i32().is_signed_int());
  EXPECT_TRUE((DataType{DType::kUInt8, 1}).is_unsigned_int());
  EXPECT_FALSE(f32().is_signed_int());
}

TEST(TirExpr, BinaryBroadcastsScalarOperandToVectorLanes) {
  auto A = buf("A", {64});
  Expr v = vector_buffer_load(A, 0, 1, 16);
  Expr sum = v + f32c(1.0);
  EXPECT_EQ(sum.type(), f32(16));
  EXPECT_EQ(sum->operands[1].kind(), ExprKind::kBroadcast);
  Expr cmp = compare(CompareOp::kLt, f32c(0), v);
  EXPECT_EQ(cmp.type(), boolean(16));
  Expr sel = select(cmp, v, f32c(0));
  EXPECT_EQ(sel.type(), f32(16));
}

TEST(TirExpr, FoldsConstantBinariesInTheElementType) {
  Expr s = f32c(1.5) + f32c(2.25);
  ASSERT_EQ(s.kind(), ExprKind::kConst);
  EXPECT_EQ(s->fvalue, 3.75);
  // i32 wraps like the machine would.
  Expr w = make_const_int(i32(), 2147483647) + make_const_int(i32(), 1);
  ASSERT_EQ(w.kind(), ExprKind::kConst);
  EXPECT_EQ(w->ivalue, -2147483648LL);
  // Integer division is floor division.
  Expr d = binary(BinaryOp::kDiv, make_const_int(i64(), -7), make_const_int(i64(), 2));
  EXPECT_EQ(d->ivalue, -4);
  // Division by zero is left for run time.
  Expr z = binary(BinaryOp::kDiv, make_const_int(i64(), 1), make_const_int(i64(), 0));
  EXPECT_EQ(z.kind(), ExprKind::kBinary);
  // f32 folding rounds to float.
  Expr third = f32c(1) / f32c(3);
  EXPECT_EQ(third->fvalue, static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(compare(CompareOp::kLt, f32c(1), f32c(2))->ivalue, 1);
  EXPECT_EQ(cast(i32(), f32c(-2.75))->ivalue, -2);
  EXPECT_EQ(select(make_const_int(boolean(), 0), f32c(1), f32c(2))->fvalue, 2.0);
}

TEST(TirExpr, BuildersRejectTypeMismatches) {
  auto A = buf("A", {8});
  EXPECT_THROW(f32c(1) + make_const_int(i32(), 1), InternalError);
  EXPECT_THROW(vector_buffer_load(A, 0, 1, 4) + vector_buffer_load(A, 0, 1, 8), InternalError);
  EXPECT_THROW(select(f32c(1), f32c(1), f32c(2)), InternalError);
  EXPECT_THROW(make_store(A, {0}, make_const_int(i32(), 1)), InternalError);
  EXPECT_THROW(make_store(A, {0, 1}, f32c(1)), InternalError);  // rank 1, two indices
  EXPECT_THROW(buffer_load(A, {arith::lt(Var("x"), 3)}), InternalError);
  EXPECT_THROW(call(Intrinsic::kExp, make_const_int(i32(), 1)), InternalError);
  EXPECT_THROW(make_if(Var("x"), make_nop()), InternalError);
  EXPECT_THROW(make_allocate(A, make_nop()), InternalError);  // A is global
  EXPECT_THROW(let_index(Var("x"), f32c(1), f32c(1)), InternalError);
}

TEST(TirStmt, SeqFlattensAndDropsNops) {
  auto A = buf("A", {4});
  Stmt s1 = make_store(A, {0}, f32c(1)), s2 = make_store(A, {1}, f32c(2));
  Stmt seq = make_seq({make_nop(), make_seq({s1, make_nop()}), s2});
  ASSERT_EQ(seq.kind(), StmtKind::kSeq);
  EXPECT_EQ(seq->seq.size(), 2u);
  EXPECT_EQ(make_seq({make_nop()}).kind(), StmtKind::kNop);
  EXPECT_EQ(make_seq({s1}).get(), s1.get());
}

TEST(TirStmt, BufferStridesAndNumelAreRowMajor) {
  Var n("n"), m("m");
  Buffer b("B", DType::kFloat32, {n, m, 4});
  auto strides = b.strides();
  ASSERT_EQ(strides.size(), 3u);
  EXPECT_EQ(arith::to_string(strides[2]), "1");
  EXPECT_EQ(arith::to_string(strides[1]), "4");
  EXPECT_EQ(arith::to_string(strides[0]), "m*4");
  EXPECT_EQ(arith::to_string(b.numel()), "n*m*4");
}

TEST(TirPrinter, PrintsLoopsStoresAndVectorAccesses) {
  PrimFunc f = add_split(16, ForKind::kVectorized, ForKind::kParallel);
  std::string text = to_string(f);
  EXPECT_NE(text.find("def add_split(A: f32[n], B: f32[n], out C: f32[n]):"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  for (io, 0, (n + 15) floordiv 16) parallel:"), std::string::npos) << text;
  EXPECT_NE(text.find("    for (ii, 0, 16) vectorized:"), std::string::npos) << text;
  EXPECT_NE(text.find("      if (io*16 + ii < n):"), std::string::npos) << text;
  EXPECT_NE(text.find("        C[io*16 + ii] = (A[io*16 + ii] + B[io*16 + ii])"), std::string::npos)
      << text;
  auto A = buf("A", {64}), B = buf("B", {64});
  Var x("x");
  Stmt vs = make_vector_store(B, x * 16, 1, vector_buffer_load(A, x * 32, 2, 16) * f32c(2));
  EXPECT_EQ(to_string(vs), "B[ramp(x*16, 1, 16)] = (A[ramp(x*32, 2, 16)] * broadcast(2.0f, 16))\n");
}

TEST(TirFunctor, SubstituteReplacesVarsInEveryIndexExpression) {
  PrimFunc f = add_split();
  Var n(f.params[0]->shape()[0]);
  Stmt s = substitute(f.body, VarMap{{n.id(), arith::make_int(40)}});
  std::string text = to_string(s);
  EXPECT_EQ(text.find("n"), std::string::npos) << text;
  EXPECT_NE(text.find("(40 + 15) floordiv 16"), std::string::npos) << text;
  EXPECT_NE(text.find("io*16 + ii < 40"), std::string::npos) << text;
}

TEST(TirFunctor, FreeVarsExcludeBindersAndAllocatedBuffers) {
  PrimFunc f = row_sum();
  const Stmt& outer = f.body;  // for i: allocate acc: ...
  FreeVars fv = free_vars(outer->body);
  ASSERT_EQ(fv.vars.size(), 2u);  // k (loop r's extent) and i, in first-use order
  EXPECT_EQ(fv.vars[0]->name, "k");
  EXPECT_EQ(fv.vars[1]->name, "i");
  ASSERT_EQ(fv.buffers.size(), 2u);  // A and S, not acc
  EXPECT_EQ(fv.buffers[0]->name(), "A");
  EXPECT_EQ(fv.buffers[1]->name(), "S");
  FreeVars whole = free_vars(f.body);
  ASSERT_EQ(whole.vars.size(), 2u);
  EXPECT_EQ(whole.vars[0]->name, "m");
  EXPECT_EQ(whole.vars[1]->name, "k");
}

TEST(TirFunctor, MutatorSharesUnchangedSubtrees) {
  PrimFunc f = transpose();
  StmtMutator identity;
  EXPECT_EQ(identity.mutate_stmt(f.body).get(), f.body.get());
}

TEST(TirEval, ComputesKnownValuesAndCatchesOutOfBounds) {
  PrimFunc f = add_split(4);
  vm::Tensor a = random_tensor({10}, DType::kFloat32, 1);
  vm::Tensor b = random_tensor({10}, DType::kFloat32, 2);
  auto out = run(f, {a, b});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(out[0].data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]);
  }
  // Without the guard the last split iteration writes past the end.
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  PrimFunc bad{
      "bad", {A, C}, 1, make_for(i, 0, n + 1, ForKind::kSerial, make_store(C, {i}, load(A, {i})))};
  EXPECT_THROW(run(bad, {a}), testing::EvalError);
}

TEST(TirEval, RowSumUsesTheLocalAccumulator) {
  PrimFunc f = row_sum();
  vm::Tensor a = random_tensor({5, 7});
  auto out = run(f, {a});
  for (int r = 0; r < 5; ++r) {
    float want = 0;
    for (int c = 0; c < 7; ++c) want += a.data_as<float>()[r * 7 + c];
    EXPECT_EQ(out[0].data_as<float>()[r], want);
  }
}

TEST(TirEval, IntegerArithmeticWrapsToTheElementType) {
  Var n("n"), i("i");
  auto A = buf("A", {n}, DType::kInt32), C = buf("C", {n}, DType::kInt32);
  Expr big = make_const_int(i32(), 2147483647);
  PrimFunc f{"wrap",
             {A, C},
             1,
             make_for(i, 0, n, ForKind::kSerial, make_store(C, {i}, load(A, {i}) + big))};
  vm::Tensor a = vm::Tensor::from_vector<int32_t>({1, 2, -5}, {3}, DType::kInt32);
  auto out = run(f, {a});
  EXPECT_EQ(out[0].data_as<int32_t>()[0], -2147483647 - 1);
  EXPECT_EQ(out[0].data_as<int32_t>()[1], -2147483647);
  EXPECT_EQ(out[0].data_as<int32_t>()[2], 2147483642);
}

}  // namespace
}  // namespace dynvm::tir::test
