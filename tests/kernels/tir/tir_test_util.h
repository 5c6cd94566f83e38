// Shared by the TIR tests: the hand-built kernels that the passes are tested on (the shapes
// TE lowering produces: split loops with guards, transposes, reductions into a local
// accumulator, strided vector loads, unrolled and parallel loops), and the check that two
// versions of a kernel compute the same outputs on the reference evaluator, with outputs
// poisoned (NaN) beforehand so that an element nobody writes fails the test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/arith/evaluate.h"
#include "kernels/arith/printer.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/printer.h"
#include "kernels/tir/stmt.h"
#include "tests/kernels/support/tir_eval.h"
#include "vm/tensor.h"

namespace dynvm::tir::test {

using arith::Var;
using vm::DType;

inline BufferRef buf(const std::string& name, std::vector<arith::Expr> shape,
                     DType dtype = DType::kFloat32, BufferScope scope = BufferScope::kGlobal) {
  return std::make_shared<const Buffer>(name, dtype, std::move(shape), scope);
}

inline Expr load(const BufferRef& b, std::vector<arith::Expr> idx) {
  return buffer_load(b, std::move(idx));
}

inline Expr f32c(double v) { return make_const(f32(), v); }

// A tensor of deterministic pseudo-random values (small integers for int types, so that
// sums are exact in every order).
inline vm::Tensor random_tensor(vm::Shape shape, DType dtype = DType::kFloat32, uint32_t seed = 1) {
  vm::Tensor t = vm::Tensor::empty(std::move(shape), dtype);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-50, 50);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int v = dist(rng);
    switch (dtype) {
      case DType::kFloat32:
        t.data_as<float>()[i] = static_cast<float>(v) * 0.25f;
        break;
      case DType::kFloat64:
        t.data_as<double>()[i] = v * 0.25;
        break;
      case DType::kInt32:
        t.data_as<int32_t>()[i] = v;
        break;
      case DType::kInt64:
        t.data_as<int64_t>()[i] = v;
        break;
      default:
        ADD_FAILURE() << "random_tensor: unsupported dtype";
    }
  }
  return t;
}

// NaN for floats, a sentinel for ints: never a value a kernel under test computes.
inline vm::Tensor poisoned(vm::Shape shape, DType dtype) {
  vm::Tensor t = vm::Tensor::empty(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::kFloat32:
        t.data_as<float>()[i] = NAN;
        break;
      case DType::kFloat64:
        t.data_as<double>()[i] = NAN;
        break;
      case DType::kInt32:
        t.data_as<int32_t>()[i] = -123456789;
        break;
      case DType::kInt64:
        t.data_as<int64_t>()[i] = -123456789;
        break;
      default:
        std::memset(t.data(), 0x7f, t.nbytes());
    }
  }
  return t;
}

inline bool is_poison(const vm::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return std::isnan(t.data_as<float>()[i]);
    case DType::kFloat64:
      return std::isnan(t.data_as<double>()[i]);
    case DType::kInt32:
      return t.data_as<int32_t>()[i] == -123456789;
    case DType::kInt64:
      return t.data_as<int64_t>()[i] == -123456789;
    default:
      return false;
  }
}

// The outputs' shapes for these inputs: symbolic dims bound from the inputs' shapes.
inline std::vector<vm::Shape> output_shapes(const PrimFunc& f,
                                            const std::vector<vm::Tensor>& inputs) {
  arith::VarValues vars;
  for (size_t p = 0; p < inputs.size(); ++p) {
    for (size_t d = 0; d < f.params[p]->shape().size(); ++d) {
      const auto& dim = f.params[p]->shape()[d];
      if (dim.kind() == arith::ExprKind::kVar) vars[dim->var_id] = inputs[p].dim(d);
    }
  }
  std::vector<vm::Shape> shapes;
  for (size_t p = inputs.size(); p < f.params.size(); ++p) {
    vm::Shape s;
    for (const auto& dim : f.params[p]->shape()) s.push_back(arith::evaluate(dim, vars));
    shapes.push_back(s);
  }
  return shapes;
}

// Runs f on the inputs with fresh poisoned outputs; returns the outputs.
template <typename Func>
std::vector<vm::Tensor> run(const Func& f, const PrimFunc& sig,
                            const std::vector<vm::Tensor>& inputs) {
  std::vector<vm::Tensor> args = inputs;
  std::vector<vm::Tensor> outputs;
  std::vector<vm::Shape> shapes = output_shapes(sig, inputs);
  for (size_t o = 0; o < shapes.size(); ++o) {
    outputs.push_back(poisoned(shapes[o], sig.params[inputs.size() + o]->dtype()));
    args.push_back(outputs.back());
  }
  testing::evaluate(f, args);
  return outputs;
}

inline std::vector<vm::Tensor> run(const PrimFunc& f, const std::vector<vm::Tensor>& inputs) {
  return run(f, f, inputs);
}
inline std::vector<vm::Tensor> run(const LoweredFunc& f, const std::vector<vm::Tensor>& inputs) {
  return run(f, f.func, inputs);
}

// Every output element written, and bit-identical between `want` and `got`.
inline void expect_same_outputs(const std::vector<vm::Tensor>& want,
                                const std::vector<vm::Tensor>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].shape(), got[o].shape()) << what;
    size_t elem = vm::dtype_size(want[o].dtype());
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      ASSERT_FALSE(is_poison(want[o], i))
          << what << ": output " << o << " element " << i << " never written (reference)";
      ASSERT_FALSE(is_poison(got[o], i))
          << what << ": output " << o << " element " << i << " never written";
      ASSERT_EQ(0, std::memcmp(static_cast<char*>(want[o].data()) + i * elem,
                               static_cast<char*>(got[o].data()) + i * elem, elem))
          << what << ": output " << o << " differs at element " << i;
    }
  }
}

// Runs both on the same inputs and compares.
template <typename After>
void expect_equivalent(const PrimFunc& before, const After& after,
                       const std::vector<vm::Tensor>& inputs, const std::string& what) {
  std::vector<vm::Tensor> want = run(before, inputs);
  std::vector<vm::Tensor> got = run(after, inputs);
  expect_same_outputs(want, got, what);
}

inline const std::vector<int64_t>& test_sizes() {
  static const std::vector<int64_t> sizes{1, 3, 7, 16, 17, 129, 1000};
  return sizes;
}

// Counts statements / expressions matching a predicate.
inline int count_stmts(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  int n = 0;
  for_each_stmt(s, [&](const Stmt& st) { n += pred(st) ? 1 : 0; });
  return n;
}
inline int count_exprs(const Stmt& s, const std::function<bool(const Expr&)>& pred) {
  int n = 0;
  for_each_expr(s, [&](const Expr& e) { n += pred(e) ? 1 : 0; });
  return n;
}
inline int count_loops(const Stmt& s, ForKind kind) {
  return count_stmts(
      s, [&](const Stmt& st) { return st.kind() == StmtKind::kFor && st->for_kind == kind; });
}
inline int count_ifs(const Stmt& s) {
  return count_stmts(s, [](const Stmt& st) { return st.kind() == StmtKind::kIf; });
}

// ---- the kernels ----

// C[i] = A[i] + B[i] over [n], split by `factor` with a guard (a non-dividing split).
inline PrimFunc add_split(int64_t factor = 16, ForKind inner = ForKind::kSerial,
                          ForKind outer = ForKind::kSerial) {
  Var n("n"), io("io"), ii("ii");
  auto A = buf("A", {n}), B = buf("B", {n}), C = buf("C", {n});
  arith::Expr i = io * factor + ii;
  Stmt store = make_store(C, {i}, load(A, {i}) + load(B, {i}));
  Stmt body = make_for(io, 0, arith::floordiv(n + (factor - 1), factor), outer,
                       make_for(ii, 0, factor, inner, make_if(arith::lt(i, n), store)));
  return PrimFunc{"add_split", {A, B, C}, 2, body};
}

// B[i, j] = A[j, i]: A is [m, n], B is [n, m].
inline PrimFunc transpose(ForKind inner = ForKind::kSerial) {
  Var m("m"), n("n"), i("i"), j("j");
  auto A = buf("A", {m, n}), B = buf("B", {n, m});
  Stmt body = make_for(i, 0, n, ForKind::kSerial,
                       make_for(j, 0, m, inner, make_store(B, {i, j}, load(A, {j, i}))));
  return PrimFunc{"transpose", {A, B}, 1, body};
}

// The same transpose tiled 8x8 with guards on both dims.
inline PrimFunc transpose_tiled() {
  Var m("m"), n("n"), io("io"), jo("jo"), ii("ii"), ji("ji");
  auto A = buf("A", {m, n}), B = buf("B", {n, m});
  arith::Expr i = io * 8 + ii, j = jo * 8 + ji;
  Stmt store = make_store(B, {i, j}, load(A, {j, i}));
  Stmt guarded = make_if(arith::logical_and(arith::lt(i, n), arith::lt(j, m)), store);
  Stmt body = make_for(io, 0, arith::floordiv(n + 7, 8), ForKind::kSerial,
                       make_for(jo, 0, arith::floordiv(m + 7, 8), ForKind::kSerial,
                                make_for(ii, 0, 8, ForKind::kSerial,
                                         make_for(ji, 0, 8, ForKind::kSerial, guarded))));
  return PrimFunc{"transpose_tiled", {A, B}, 1, body};
}

// S[i] = sum_r A[i, r], accumulated in a local buffer.
inline PrimFunc row_sum(ForKind outer = ForKind::kSerial) {
  Var m("m"), k("k"), i("i"), r("r");
  auto A = buf("A", {m, k}), S = buf("S", {m});
  auto acc = buf("acc", {1}, DType::kFloat32, BufferScope::kLocal);
  Stmt body = make_for(
      i, 0, m, outer,
      make_allocate(acc, make_seq({make_store(acc, {0}, f32c(0)),
                                   make_for(r, 0, k, ForKind::kSerial,
                                            make_store(acc, {0}, load(acc, {0}) + load(A, {i, r}))),
                                   make_store(S, {i}, load(acc, {0}))})));
  return PrimFunc{"row_sum", {A, S}, 1, body};
}

// B[i] = A[i, 0] * A[i, 1] over [n], split by 16 with a guard: stride-2 loads once flat.
inline PrimFunc pairwise_product(ForKind inner = ForKind::kVectorized) {
  Var n("n"), io("io"), ii("ii");
  auto A = buf("A", {n, 2}), B = buf("B", {n});
  arith::Expr i = io * 16 + ii;
  Stmt store = make_store(B, {i}, load(A, {i, 0}) * load(A, {i, 1}));
  Stmt body = make_for(io, 0, arith::floordiv(n + 15, 16), ForKind::kSerial,
                       make_for(ii, 0, 16, inner, make_if(arith::lt(i, n), store)));
  return PrimFunc{"pairwise_product", {A, B}, 1, body};
}

}  // namespace dynvm::tir::test
