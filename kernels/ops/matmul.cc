// Matrix-product builders and their shared register-tiled schedule template (matmul.h).
#include "kernels/ops/matmul.h"

#include <algorithm>
#include <utility>

#include "kernels/arith/simplify.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

bool is_one(const arith::Expr& e) { return e.is_int_imm() && e.int_value() == 1; }

void check_float(const TensorType& t, const char* op, const char* what) {
  if (t.dtype != vm::DType::kFloat32 && t.dtype != vm::DType::kFloat64) {
    user_error(op, ": ", what, " must be f32 or f64, got ", vm::dtype_name(t.dtype));
  }
}

void check_same_dim(const arith::Expr& x, const arith::Expr& y, const char* op, const char* what) {
  if (!arith::structural_equal(x, y)) user_error(op, ": ", what, " dims differ");
}

std::vector<KnobSpec> matmul_knobs() {
  // Defaults for AVX-512 f32: 8 rows x 2 zmm = 16 accumulators, 1 broadcast, 2 B vectors.
  return {{"tile_m", {1, 2, 4, 6, 8, 12, 16}, 8},
          {"tile_n", {16, 32, 48, 64}, 32},
          {"tile_k", {1, 2, 4, 8, 16}, 4},
          {"parallel", {0, 1}, 1}};
}

// A tile's column loop as vectors: one, or (panel > 0) one per panel, unrolled.
void vectorize_columns(te::Stage& st, const te::IterVarRef& columns, int64_t panel) {
  if (panel <= 0) {
    st.vectorize(columns);
    return;
  }
  auto [outer, inner] = st.split(columns, panel);
  st.unroll(outer);
  st.vectorize(inner);
}

// The template. `out` is the kernel's output over (batch..., m, n); `acc` the reduction
// producing it, or null to make one with cache_write. batch_axes: leading dims of out.
// panel > 0: B is packed in panels of that many columns (matmul_packed_b), and the tile's
// columns are vectors of one panel each, so that every B load is contiguous.
// row_axes (non-empty): acc is [rows, N] (batch_axes 0) and out [..., N] reads it at the
// flat index of its axes row_axes (in order; out's other axes besides N have extent 1):
// those loops fuse into one, tiled like M.
void apply_tiles(te::Schedule& s, const TensorRef& out, TensorRef acc, size_t batch_axes,
                 int64_t panel, const std::vector<size_t>& row_axes, const std::string& op,
                 int64_t tile_m, int64_t tile_n, int64_t tile_k, bool parallel) {
  if (tile_m <= 0 || tile_n <= 0 || tile_k <= 0) user_error(op, ": tiles must be > 0");
  if (!acc) acc = s.cache_write(out, "local");
  te::Stage& so = s[out];
  const size_t m_axis = batch_axes, n_axis = batch_axes + 1;
  if (panel > 0 && tile_n % panel != 0) {
    user_error(op, ": tile_n (", tile_n, ") must be a multiple of the panel (", panel, ")");
  }
  const bool flat_rows = !row_axes.empty();
  te::IterVarRef rows = so.axis(m_axis);
  te::IterVarRef columns = so.axis(n_axis);
  if (flat_rows) {
    // The extent-1 axes outermost, then the row axes fused (adjacent once reordered).
    const size_t rank = out->shape().size();
    std::vector<te::IterVarRef> order;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (std::find(row_axes.begin(), row_axes.end(), d) == row_axes.end()) {
        order.push_back(so.axis(d));
      }
    }
    for (size_t d : row_axes) order.push_back(so.axis(d));
    order.push_back(so.axis(rank - 1));
    so.reorder(order);
    rows = so.axis(row_axes[0]);
    for (size_t k = 1; k < row_axes.size(); ++k) rows = so.fuse(rows, so.axis(row_axes[k]));
    columns = so.axis(rank - 1);
  }
  auto [mo, no, mi, ni] = so.tile(rows, columns, tile_m, tile_n);
  vectorize_columns(so, ni, panel);
  so.unroll(mi);
  if (parallel) {
    // Fusing the batch loops with a symbolic row-tile loop decomposes the fused index by a
    // symbolic extent, and bound inference then cannot keep the accumulator tile in
    // registers (measured 2.8x slower on PP-OCR's [n, (w+3)/8, 120] x [120, 6625]): with a
    // symbolic M only the row tiles run in parallel, inside serial batch loops.
    te::IterVarRef outer = mo;
    if (!flat_rows && out->shape()[m_axis].is_int_imm()) {
      for (size_t b = batch_axes; b-- > 0;) outer = so.fuse(so.axis(b), outer);
    }
    so.parallel(outer);
  }

  te::Stage& sa = s[acc];
  sa.compute_at(so, no);
  auto [ko, ki] = sa.split(sa.reduce_axis(0), tile_k);
  std::vector<te::IterVarRef> order{ko, ki};
  for (size_t d = 0; d < sa.num_axes(); ++d) order.push_back(sa.axis(d));
  sa.reorder(order);
  vectorize_columns(sa, sa.axis(n_axis), panel);
  sa.unroll(sa.axis(m_axis));
  sa.unroll(ki);
}

te::Schedule tiled_schedule(const TensorRef& out, TensorRef acc, size_t batch_axes, int64_t panel,
                            const std::vector<size_t>& row_axes, const OpInstance& op,
                            const KnobValues& knobs) {
  te::Schedule s = te::create_schedule({out});
  apply_tiles(s, out, std::move(acc), batch_axes, panel, row_axes, op.name,
              knob(op, knobs, "tile_m"), knob(op, knobs, "tile_n"), knob(op, knobs, "tile_k"),
              knob(op, knobs, "parallel") != 0);
  return s;
}

OpInstance make_instance(std::string name, std::vector<TensorRef> inputs, TensorRef out,
                         TensorRef acc, size_t batch_axes, const arith::Expr& m, int64_t panel = 0,
                         std::vector<size_t> row_axes = {}) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.knobs = matmul_knobs();
  // The schedule captures a copy of the knob table (op itself may move).
  OpInstance knob_table;
  knob_table.name = op.name;
  knob_table.knobs = op.knobs;
  op.schedule = [out, acc, batch_axes, panel, row_axes, knob_table](const KnobValues& knobs) {
    return tiled_schedule(out, acc, batch_axes, panel, row_axes, knob_table, knobs);
  };
  if (m.kind() == arith::ExprKind::kVar) {
    for (const KnobSpec& spec : op.knobs) {
      if (spec.name == "tile_m")
        op.preferred_multiples.emplace_back(arith::Var(m), spec.default_value);
    }
  }
  return op;
}

std::string dtype_suffix(vm::DType t) { return std::string(vm::dtype_name(t)); }

// The instance whose output is the reduction `c` itself, or, with an epilogue, a stage
// storing epilogue(c) while c is computed at its tiles.
OpInstance reduction_output(std::string name, std::vector<TensorRef> inputs, const TensorRef& c,
                            size_t batch_axes, const arith::Expr& m, const FusedEpilogue* epilogue,
                            int64_t panel = 0) {
  if (epilogue == nullptr) {
    return make_instance(std::move(name), inputs, c, nullptr, batch_axes, m, panel);
  }
  TensorRef y = te::compute("Y", c->shape(), [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return epilogue->apply(te::read(c, idx), i);
  });
  inputs.insert(inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  return make_instance(name + epilogue->name, inputs, y, c, batch_axes, m, panel);
}

OpInstance matmul_with(const TensorType& a, const TensorType& b, const FusedEpilogue* epilogue) {
  check_float(a, "matmul", "A");
  if (a.shape.size() != 2 || b.shape.size() != 2) user_error("matmul: A and B must be 2-D");
  if (a.dtype != b.dtype) user_error("matmul: A and B dtypes differ");
  check_same_dim(a.shape[1], b.shape[0], "matmul", "A's K and B's K");
  arith::Expr m = a.shape[0], k = a.shape[1], n = b.shape[1];
  auto A = te::placeholder("A", a.shape, a.dtype);
  auto B = te::placeholder("B", b.shape, b.dtype);
  auto r = te::reduce_axis(k, "k");
  auto C = te::compute("C", {m, n}, [&](const Indices& i) {
    return te::sum(te::read(A, {i[0], r.var}) * te::read(B, {r.var, i[1]}), {r});
  });
  return reduction_output("matmul_" + dtype_suffix(a.dtype), {A, B}, C, 0, m, epilogue, kPackedPanel);
}

OpInstance batch_matmul_with(const TensorType& a, const TensorType& b,
                             const FusedEpilogue* epilogue) {
  check_float(a, "batch_matmul", "A");
  if (a.dtype != b.dtype) user_error("batch_matmul: A and B dtypes differ");
  if (a.shape.size() < 2 || b.shape.size() < 2) {
    user_error("batch_matmul: A and B must have rank >= 2 ([..., M, K] and [..., K, N])");
  }
  const size_t ra = a.shape.size(), rb = b.shape.size();
  check_same_dim(a.shape[ra - 1], b.shape[rb - 2], "batch_matmul", "A's K and B's K");
  const arith::Expr m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  // Batch dims broadcast as numpy's (a literal 1, or run-time selects between two symbolic
  // dims: kernels/dispatch then adds the variant where they are equal).
  const std::vector<arith::Expr> batch_a(a.shape.begin(), a.shape.end() - 2);
  const std::vector<arith::Expr> batch_b(b.shape.begin(), b.shape.end() - 2);
  std::vector<arith::Expr> out = broadcast_shape({batch_a, batch_b});
  const size_t nb = out.size();
  out.push_back(m);
  out.push_back(n);
  auto A = te::placeholder("A", a.shape, a.dtype);
  auto B = te::placeholder("B", b.shape, b.dtype);
  auto r = te::reduce_axis(k, "k");
  const std::vector<arith::Expr> batch(out.begin(), out.begin() + static_cast<long>(nb));
  auto C = te::compute("C", out, [&](const Indices& i) {
    Indices batch_i(i.begin(), i.begin() + static_cast<long>(nb));
    std::vector<arith::Expr> ia = broadcast_indices(batch_a, batch_i, batch);
    std::vector<arith::Expr> ib = broadcast_indices(batch_b, batch_i, batch);
    ia.push_back(i[nb]);
    ia.push_back(r.var);
    ib.push_back(r.var);
    ib.push_back(i[nb + 1]);
    return te::sum(te::read(A, ia) * te::read(B, ib), {r});
  });
  return reduction_output("batch_matmul_" + dtype_suffix(a.dtype), {A, B}, C, nb, m, epilogue, kPackedPanel);
}

OpInstance matmul_packed_b_with(const TensorType& a, const TensorType& bp, int64_t n,
                                const FusedEpilogue* epilogue) {
  const char* op = "matmul_packed_b";
  check_float(a, op, "A");
  if (a.dtype != bp.dtype) user_error(op, ": A and B dtypes differ");
  if (a.shape.size() < 2) user_error(op, ": A must be [..., M, K]");
  if (bp.shape.size() != 3) user_error(op, ": packed B must be [panels, K, ", kPackedPanel, "]");
  const std::vector<int64_t> pd = constant_dims(bp, 0, op, "packed B's dims");
  if (n < 1 || pd[0] != (n + kPackedPanel - 1) / kPackedPanel || pd[2] != kPackedPanel) {
    user_error(op, ": packed B is [", pd[0], ", ", pd[1], ", ", pd[2], "], not N=", n,
               " columns in panels of ", kPackedPanel);
  }
  check_same_dim(a.shape.back(), bp.shape[1], op, "A's K and B's K");
  auto A = te::placeholder("A", a.shape, a.dtype);
  auto B = te::placeholder("B", bp.shape, bp.dtype);
  auto r = te::reduce_axis(bp.shape[1], "k");
  // A [..., M, K] is one matrix of rows (A is contiguous): C over the flat rows, read back
  // as [..., M, N]. Per batch, a [L, n, E] activation (torch's MultiheadAttention projects
  // its [L, n, E] transpose) ran L products of n rows, at n = 1 one row per tile of 8 (a
  // ViT's [197, 1, 96] x [96, 288]: 2x slower than one product); a channels-last [n, h, w,
  // C] (ConvNeXt's pointwise MLP) ran n*h products of w rows, each too short to share
  // among threads. Dims of literally 1 stay out of the rows: fused with an extent-1 loop, a
  // static M's tail tile read C back past M rows and bound inference sized C for all of
  // them (a [1, 197, 96] x [96, 192] ran 45x slower). With M the only row dim left, the
  // product is the plain one.
  const size_t rank = a.shape.size();
  std::vector<size_t> row_axes;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (!is_one(a.shape[d])) row_axes.push_back(d);
  }
  const bool flat = !row_axes.empty() && !(row_axes.size() == 1 && row_axes[0] == rank - 2);
  const arith::Expr m = a.shape[rank - 2];
  arith::Expr rows = arith::make_int(1);
  for (size_t d : row_axes) rows = rows * a.shape[d];
  rows = arith::simplify(rows);
  std::vector<arith::Expr> c_shape = {rows, arith::make_int(n)};
  if (!flat) {
    c_shape.assign(a.shape.begin(), a.shape.end() - 1);
    c_shape.push_back(arith::make_int(n));
  }
  auto C = te::compute("C", c_shape, [&](const Indices& i) {
    std::vector<arith::Expr> ia(i.begin(), i.end() - 1);
    if (flat) {
      // The flat row decomposed over the row dims, the last fastest.
      ia.assign(rank - 1, arith::make_int(0));
      arith::Expr rest = i[0];
      for (size_t k = row_axes.size(); k-- > 1;) {
        ia[row_axes[k]] = arith::floormod(rest, a.shape[row_axes[k]]);
        rest = arith::floordiv(rest, a.shape[row_axes[k]]);
      }
      ia[row_axes[0]] = rest;
    }
    ia.push_back(r.var);
    const arith::Var& j = i.back();
    tir::Expr bv =
        te::read(B, {arith::floordiv(j, kPackedPanel), r.var, arith::floormod(j, kPackedPanel)});
    return te::sum(te::read(A, ia) * bv, {r});
  });
  const std::string name = std::string(op) + "_" + dtype_suffix(a.dtype);
  if (!flat) return reduction_output(name, {A, B}, C, rank - 2, m, epilogue, kPackedPanel);
  std::vector<arith::Expr> y_shape(a.shape.begin(), a.shape.end() - 1);
  y_shape.push_back(arith::make_int(n));
  auto Y = te::compute("Y", y_shape, [&](const Indices& i) {
    arith::Expr row = i[row_axes[0]];
    for (size_t k = 1; k < row_axes.size(); ++k) {
      row = row * a.shape[row_axes[k]] + i[row_axes[k]];
    }
    tir::Expr y = te::read(C, {row, i.back()});
    return epilogue != nullptr ? epilogue->apply(y, i) : y;
  });
  std::vector<TensorRef> inputs{A, B};
  if (epilogue != nullptr) {
    inputs.insert(inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  }
  return make_instance(name + (epilogue != nullptr ? epilogue->name : ""), inputs, Y, C, 0, rows,
                       kPackedPanel, row_axes);
}

OpInstance gemm_with(const TensorType& a, const TensorType& b, const std::optional<TensorType>& c,
                     const GemmAttrs& attrs, const FusedEpilogue* epilogue) {
  check_float(a, "gemm", "A");
  if (a.shape.size() != 2 || b.shape.size() != 2) user_error("gemm: A and B must be 2-D");
  if (a.dtype != b.dtype) user_error("gemm: A and B dtypes differ");
  arith::Expr m = attrs.trans_a ? a.shape[1] : a.shape[0];
  arith::Expr k = attrs.trans_a ? a.shape[0] : a.shape[1];
  arith::Expr kb = attrs.trans_b ? b.shape[1] : b.shape[0];
  arith::Expr n = attrs.trans_b ? b.shape[0] : b.shape[1];
  check_same_dim(k, kb, "gemm", "A's K and B's K");
  auto A = te::placeholder("A", a.shape, a.dtype);
  auto B = te::placeholder("B", b.shape, b.dtype);
  std::vector<TensorRef> inputs{A, B};
  TensorRef Cb;
  if (c) {
    if (c->dtype != a.dtype) user_error("gemm: C's dtype differs from A's");
    if (c->shape.size() > 2) user_error("gemm: C must have rank <= 2");
    Cb = te::placeholder("C", c->shape, c->dtype);
    inputs.push_back(Cb);
  }
  auto r = te::reduce_axis(k, "k");
  auto P = te::compute("P", {m, n}, [&](const Indices& i) {
    tir::Expr av = attrs.trans_a ? te::read(A, {r.var, i[0]}) : te::read(A, {i[0], r.var});
    tir::Expr bv = attrs.trans_b ? te::read(B, {i[1], r.var}) : te::read(B, {r.var, i[1]});
    return te::sum(av * bv, {r});
  });
  const tir::DataType type{a.dtype, 1};
  auto Y = te::compute("Y", {m, n}, [&](const Indices& i) {
    tir::Expr y = te::read(P, {i[0], i[1]});
    if (attrs.alpha != 1.0) y = tir::make_const(type, attrs.alpha) * y;
    if (Cb) {
      // Right-aligned numpy broadcast of C's dims against (m, n).
      std::vector<arith::Expr> idx;
      const std::vector<arith::Expr>& cs = Cb->shape();
      for (size_t d = 0; d < cs.size(); ++d) {
        const arith::Var& v = i[2 - cs.size() + d];
        idx.push_back(is_one(cs[d]) ? arith::Expr(0) : arith::Expr(v));
      }
      tir::Expr cv = te::read(Cb, idx);
      if (attrs.beta != 1.0) cv = tir::make_const(type, attrs.beta) * cv;
      y = y + cv;
    }
    if (attrs.epilogue == Epilogue::kRelu) y = tir::max(y, tir::make_const(type, 0.0));
    return epilogue != nullptr ? epilogue->apply(y, i) : y;
  });
  std::string name = "gemm_" + dtype_suffix(a.dtype);
  if (epilogue != nullptr) {
    name += epilogue->name;
    inputs.insert(inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  }
  return make_instance(name, inputs, Y, P, 0, m, kPackedPanel);
}

}  // namespace

void schedule_product_tiles(te::Schedule& s, const te::TensorRef& out, const te::TensorRef& acc,
                            const std::string& op, int64_t tile_m, int64_t tile_n, int64_t tile_k) {
  apply_tiles(s, out, acc, 0, 0, {}, op, tile_m, tile_n, tile_k, false);
}

OpInstance matmul(const TensorType& a, const TensorType& b) {
  return with_epilogue_builder([a, b](const FusedEpilogue* e) { return matmul_with(a, b, e); });
}

OpInstance batch_matmul(const TensorType& a, const TensorType& b) {
  return with_epilogue_builder(
      [a, b](const FusedEpilogue* e) { return batch_matmul_with(a, b, e); });
}

OpInstance matmul_packed_b(const TensorType& a, const TensorType& bp, int64_t n) {
  return with_epilogue_builder(
      [a, bp, n](const FusedEpilogue* e) { return matmul_packed_b_with(a, bp, n, e); });
}

OpInstance gemm(const TensorType& a, const TensorType& b, const std::optional<TensorType>& c,
                const GemmAttrs& attrs) {
  return with_epilogue_builder(
      [a, b, c, attrs](const FusedEpilogue* e) { return gemm_with(a, b, c, attrs, e); });
}

}  // namespace dynvm::ops
