// Det (see det.h): LU elimination with partial pivoting as one scatter pass.
#include "kernels/ops/det.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

enum Phase : int64_t { kPivot, kSaveRow, kPivotRowUp, kRowDown, kSign, kEliminate, kPhases };

}  // namespace

OpInstance det(const TensorType& x) {
  const size_t rank = x.shape.size();
  if (rank < 2) user_error("det: the input must have rank >= 2, got ", rank);
  if (x.dtype != vm::DType::kFloat32 && x.dtype != vm::DType::kFloat64) {
    user_error("det: the input must be f32 or f64, got ", dtype_suffix(x.dtype));
  }
  const arith::Expr m = x.shape[rank - 1];
  if (!arith::structural_equal(m, x.shape[rank - 2])) {
    user_error("det: the matrices must be square");
  }
  const tir::DataType t{x.dtype, 1};
  auto c = [&](double v) { return tir::make_const(t, v); };
  auto flag = [](const arith::Expr& e) { return tir::index_value(e, tir::boolean()); };
  const std::vector<arith::Expr> batch(x.shape.begin(), x.shape.end() - 2);
  const size_t b = batch.size();
  // Working rows: 0..M-1 the matrix, M the spare row, M+1 holds [pivot, ..., sign].
  const arith::Expr spare = m, info = m + arith::Expr(1);
  std::vector<arith::Expr> work_shape = batch;
  work_shape.push_back(m + arith::Expr(2));
  work_shape.push_back(m + arith::Expr(1));
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  auto at = [&](const te::Indices& lead, const arith::Expr& r, const arith::Expr& col) {
    std::vector<arith::Expr> v(lead.begin(), lead.begin() + static_cast<int64_t>(b));
    v.push_back(r);
    v.push_back(col);
    return v;
  };
  auto in_range = [&](const arith::Expr& e) {
    return arith::max(arith::min(e, m - arith::Expr(1)), arith::Expr(0));
  };
  std::vector<arith::Expr> domain = batch;
  for (const arith::Expr& e : {m, arith::Expr(kPhases), m, m}) domain.push_back(e);
  te::TensorRef work = te::scatter(
      "LU", work_shape,
      [&](const te::Indices& i) {
        const arith::Var &r = i[b], &col = i[b + 1];
        tir::Expr sign_cell = flag(arith::logical_and(arith::eq(r, info), arith::eq(col, m)));
        return tir::select(flag(arith::logical_and(arith::lt(r, m), arith::lt(col, m))),
                           te::read(in, at(i, in_range(r), in_range(col))),
                           tir::select(sign_cell, c(1), c(0)));
      },
      domain,
      [&](const te::Indices& j, const te::TensorRef& self) {
        const arith::Var &k = j[b], &phase = j[b + 1], &i = j[b + 2], &col = j[b + 3];
        te::ScatterUpdate u;
        arith::Var p("pivot");
        u.lets.emplace_back(p, tir::cast(tir::i64(), te::read(self, at(j, info, arith::Expr(0)))));
        const arith::Expr piv = in_range(p);
        auto read = [&](const arith::Expr& r, const arith::Expr& cc) {
          return te::read(self, at(j, r, cc));
        };
        auto is_phase = [&](Phase ph) { return arith::eq(phase, ph); };
        auto abs = [](const tir::Expr& e) { return tir::call(tir::Intrinsic::kAbs, e); };
        // Each phase writes one element per (i, col) where it applies; the rest are masked.
        const arith::Expr first = arith::eq(i, 0);
        const tir::Expr pivot_value = read(k, k);
        const tir::Expr factor = tir::select(
            tir::compare(tir::CompareOp::kEq, pivot_value, c(0)), c(0),
            read(i, k) / tir::select(tir::compare(tir::CompareOp::kEq, pivot_value, c(0)), c(1),
                                     pivot_value));
        // Pivot search: the running best row over i >= k (the first of equal ones).
        const tir::Expr better =
            tir::logical_or(flag(arith::eq(i, k)),
                            tir::compare(tir::CompareOp::kGt, abs(read(i, k)), abs(read(piv, k))));
        u.when = flag(arith::logical_or(
            arith::logical_or(
                arith::logical_and(is_phase(kPivot),
                                   arith::logical_and(arith::eq(col, 0), arith::ge(i, k))),
                arith::logical_and(
                    arith::logical_or(is_phase(kSaveRow),
                                      arith::logical_or(is_phase(kPivotRowUp), is_phase(kRowDown))),
                    first)),
            arith::logical_or(
                arith::logical_and(
                    is_phase(kSign),
                    arith::logical_and(first,
                                       arith::logical_and(arith::eq(col, 0), arith::ne(piv, k)))),
                arith::logical_and(is_phase(kEliminate),
                                   arith::logical_and(arith::gt(i, k), arith::gt(col, k))))));
        const arith::Expr row = arith::select(
            is_phase(kPivot), info,
            arith::select(is_phase(kSaveRow), spare,
                          arith::select(is_phase(kPivotRowUp), k,
                                        arith::select(is_phase(kRowDown), piv,
                                                      arith::select(is_phase(kSign), info, i)))));
        const arith::Expr column =
            arith::select(is_phase(kPivot), arith::Expr(0), arith::select(is_phase(kSign), m, col));
        u.at = at(j, row, column);
        u.value = tir::select(
            flag(is_phase(kPivot)),
            tir::select(better, tir::index_value(i, t), read(info, arith::Expr(0))),
            tir::select(
                flag(is_phase(kSaveRow)), read(k, col),
                tir::select(flag(is_phase(kPivotRowUp)), read(piv, col),
                            tir::select(flag(is_phase(kRowDown)), read(spare, col),
                                        tir::select(flag(is_phase(kSign)), c(0) - read(info, m),
                                                    read(i, col) - factor * read(k, col))))));
        return u;
      });
  te::TensorRef diagonal = te::compute("diagonal", batch, [&](const te::Indices& i) {
    te::IterVar r = te::reduce_axis(m, "r");
    return te::prod(te::read(work, at(i, r.var, r.var)), {r});
  });
  te::TensorRef out = te::compute("Y", batch, [&](const te::Indices& i) {
    return te::read(work, at(i, info, m)) * te::read(diagonal, {i.begin(), i.end()});
  });
  return injective_op("det_" + dtype_suffix(x.dtype), {in}, out);
}

}  // namespace dynvm::ops
