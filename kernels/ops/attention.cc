// Fused attention (see attention.h).
#include "kernels/ops/attention.h"

#include "kernels/arith/simplify.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/lanes.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

// Columns of a register tile: one f32 zmm.
constexpr int64_t kColumns = 16;

std::vector<KnobSpec> attention_knobs() {
  return {{"tile_m", {4, 6, 8}, 8}, {"parallel", {0, 1}, 1}};
}

struct Stages {
  TensorRef scores;                 // Q Kt, accumulated in [tile_m, 16] register tiles
  TensorRef logits;                 // scale * scores + mask, per block of rows
  TensorRef exps;                   // exp(logits - row max)
  TensorRef product;                // exps @ V, in [tile_m, 16] register tiles
  TensorRef out;                    // product / row sum
  LaneStages lanes;                 // the row max's and the row sum's
  std::vector<TensorRef> combined;  // the row max and the row sum
};

// A product stage computed at a [tile_m, 16] tile: its reduction outermost, the rows
// unrolled and the columns one vector, so the tile's accumulators stay in registers.
void register_tile(te::Stage& stage) {
  const size_t rank = stage.num_axes();
  std::vector<te::IterVarRef> order{stage.reduce_axis(0)};
  for (size_t d = 0; d < rank; ++d) order.push_back(stage.axis(d));
  stage.reorder(order);
  stage.unroll(stage.axis(rank - 2));
  stage.vectorize(stage.axis(rank - 1));
}

te::Schedule attention_schedule(const Stages& st, const std::vector<KnobSpec>& specs,
                                const KnobValues& knobs) {
  const int64_t tile_m = knob_value(specs, knobs, "tile_m");
  const bool parallel = knob_value(specs, knobs, "parallel") != 0;
  if (tile_m <= 0) user_error("attention: tile_m must be > 0");
  te::Schedule s = te::create_schedule({st.out});
  te::Stage& y = s[st.out];
  const size_t rank = y.num_axes();
  const std::vector<arith::Expr>& shape = st.out->shape();
  std::vector<te::IterVarRef> outer;
  std::vector<arith::Expr> extents;
  for (size_t d = 0; d + 2 < rank; ++d) {
    outer.push_back(y.axis(d));
    extents.push_back(shape[d]);
  }
  // Y: (blocks of rows and the batch dims, column tiles, rows of the block, columns). With
  // every extent constant the blocks fuse with the batch dims into one parallel loop.
  // Otherwise the blocks run in parallel outermost with the batch dims inside them: fused,
  // a symbolic extent would have to be divided out of the index (fuse_while_constant), and
  // with the batch dims outside, each (batch, head) was a parallel loop of its own, too
  // short to share (a [4, 4, 250, 16] attention: 724 us at 2 threads, against 597 static).
  auto [block, row] = y.split(y.axis(rank - 2), tile_m);
  auto [column_tile, column] = y.split(y.axis(rank - 1), kColumns);
  const arith::Expr blocks = arith::floordiv(shape[rank - 2] + (tile_m - 1), tile_m);
  bool static_extents = arith::simplify(blocks).is_int_imm();
  for (const arith::Expr& e : extents) static_extents = static_extents && e.is_int_imm();
  te::IterVarRef rows = block;
  if (static_extents) {
    y.reorder({block, column_tile, row, column});
    rows = fuse_while_constant(y, outer, extents, block, blocks);
    if (parallel) y.parallel(rows);
  } else {
    std::vector<te::IterVarRef> order{block};
    order.insert(order.end(), outer.begin(), outer.end());
    order.insert(order.end(), {column_tile, row, column});
    y.reorder(order);
    if (!outer.empty()) rows = outer.back();
    if (parallel) y.parallel(block);
  }
  y.vectorize(column);
  y.unroll(row);

  // The product's tile at Y's column tile: the keys outermost, the rows unrolled, the
  // columns one vector.
  te::Stage& p = s[st.product];
  p.compute_at(y, column_tile);
  register_tile(p);

  // The block's logits, exps and lane reductions at the block loop.
  te::Stage& z = s[st.logits];
  z.compute_at(y, rows);
  auto [key_tile, key] = z.split(z.axis(rank - 1), kColumns);
  z.reorder({key_tile, z.axis(rank - 2), key});
  z.vectorize(key);
  z.unroll(z.axis(rank - 2));
  te::Stage& q = s[st.scores];
  q.compute_at(z, key_tile);
  register_tile(q);
  te::Stage& e = s[st.exps];
  e.compute_at(y, rows);
  e.vectorize(e.split(e.axis(rank - 1), kColumns).second);
  for (const TensorRef& t : st.lanes.partials) {
    s[t].compute_at(y, rows);
    schedule_lanes(s, t, false);
  }
  for (const TensorRef& t : st.lanes.scalars) s[t].compute_at(y, rows);
  for (const TensorRef& t : st.combined) s[t].compute_at(y, rows);
  return s;
}

}  // namespace

OpInstance attention(const TensorType& q, const TensorType& kt, const TensorType& v,
                     const std::optional<TensorType>& mask, double scale) {
  const char* op = "attention";
  check_float_input(q, op, "Q");
  const size_t rank = q.shape.size();
  if (rank < 2 || kt.shape.size() != rank || v.shape.size() != rank) {
    user_error(op, ": Q, Kt and V must have one rank >= 2, got ", rank, ", ", kt.shape.size(),
               " and ", v.shape.size());
  }
  if (kt.dtype != q.dtype || v.dtype != q.dtype || (mask && mask->dtype != q.dtype)) {
    user_error(op, ": Q, Kt, V and the mask must have one dtype");
  }
  if (mask && mask->shape.size() > rank) user_error(op, ": the mask has a higher rank than Q");
  const arith::Expr lq = q.shape[rank - 2], d = q.shape[rank - 1];
  const arith::Expr lk = kt.shape[rank - 1], dv = v.shape[rank - 1];
  if (!arith::structural_equal(d, kt.shape[rank - 2])) user_error(op, ": Q's and Kt's D differ");
  if (!arith::structural_equal(lk, v.shape[rank - 2])) user_error(op, ": Kt's and V's Lk differ");
  auto batch_of = [&](const TensorType& t) {
    return std::vector<arith::Expr>(t.shape.begin(), t.shape.end() - 2);
  };
  const std::vector<arith::Expr> batch = broadcast_shape({batch_of(q), batch_of(kt), batch_of(v)});
  const size_t nb = batch.size();
  std::vector<arith::Expr> scores_shape = batch, out_shape = batch;
  scores_shape.insert(scores_shape.end(), {lq, lk});
  out_shape.insert(out_shape.end(), {lq, dv});

  TensorRef Q = te::placeholder("Q", q.shape, q.dtype);
  TensorRef K = te::placeholder("Kt", kt.shape, kt.dtype);
  TensorRef V = te::placeholder("V", v.shape, v.dtype);
  std::optional<TensorRef> M;
  if (mask) M = te::placeholder("Mask", mask->shape, mask->dtype);
  // Indices into t of `rank` dims: its batch dims broadcast from `i`'s, then a and b.
  auto at = [&](const TensorType& t, const Indices& i, arith::Expr a, arith::Expr b) {
    Indices batch_i(i.begin(), i.begin() + static_cast<long>(nb));
    std::vector<arith::Expr> idx = broadcast_indices(batch_of(t), batch_i, batch);
    idx.push_back(std::move(a));
    idx.push_back(std::move(b));
    return idx;
  };

  Stages st;
  st.scores = te::compute("QK", scores_shape, [&](const Indices& i) {
    te::IterVar r = te::reduce_axis(d, "d");
    return te::sum(te::read(Q, at(q, i, i[nb], r.var)) * te::read(K, at(kt, i, r.var, i[nb + 1])),
                   {r});
  });
  st.logits = te::compute("Z", scores_shape, [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    tir::Expr s = te::read(st.scores, idx);
    tir::Expr z = s * tir::make_const(s.type(), scale);
    if (M) z = z + te::read(*M, broadcast_indices(mask->shape, i, scores_shape));
    return z;
  });
  std::vector<arith::Expr> kept = scores_shape;
  kept.back() = arith::make_int(1);
  auto row_of = [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    idx.back() = arith::make_int(0);
    return idx;
  };
  auto element = [](const TensorRef& t) {
    return [t](const Indices& row, const arith::Expr& j) {
      std::vector<arith::Expr> idx(row.begin(), row.end());
      idx.back() = j;
      return te::read(t, idx);
    };
  };
  TensorRef row_max = lane_reduce("M", true, kept, lk, kLanes, element(st.logits), &st.lanes);
  st.exps = te::compute("E", scores_shape, [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return tir::call(tir::Intrinsic::kExp, te::read(st.logits, idx) - te::read(row_max, row_of(i)));
  });
  TensorRef row_sum = lane_reduce("S", false, kept, lk, kLanes, element(st.exps), &st.lanes);
  st.combined = {row_max, row_sum};
  st.product = te::compute("EV", out_shape, [&](const Indices& i) {
    te::IterVar r = te::reduce_axis(lk, "j");
    std::vector<arith::Expr> ie(i.begin(), i.begin() + static_cast<long>(nb));
    ie.push_back(i[nb]);
    ie.push_back(r.var);
    return te::sum(te::read(st.exps, ie) * te::read(V, at(v, i, r.var, i[nb + 1])), {r});
  });
  st.out = te::compute("Y", out_shape, [&](const Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return te::read(st.product, idx) / te::read(row_sum, row_of(i));
  });

  OpInstance inst;
  inst.name = "attention_" + std::string(vm::dtype_name(q.dtype)) + (mask ? "_masked" : "");
  inst.inputs = {Q, K, V};
  if (M) inst.inputs.push_back(*M);
  inst.outputs = {st.out};
  inst.knobs = attention_knobs();
  inst.schedule = [st, specs = inst.knobs](const KnobValues& knobs) {
    return attention_schedule(st, specs, knobs);
  };
  if (lq.kind() == arith::ExprKind::kVar) inst.preferred_multiples.emplace_back(arith::Var(lq), 8);
  return inst;
}

}  // namespace dynvm::ops
