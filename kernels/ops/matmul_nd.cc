// General-rank matmul (see matmul_nd.h).
#include "kernels/ops/matmul_nd.h"

#include "kernels/arith/analyzer.h"
#include "kernels/arith/printer.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance matmul_nd(const TensorType& a, const TensorType& b) {
  if (a.shape.empty() || b.shape.empty()) user_error("matmul_nd: operands must have rank >= 1");
  if (a.dtype != b.dtype) user_error("matmul_nd: operands have different dtypes");
  const bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
  // Promoted shapes: [..., M, K] and [..., K, N].
  std::vector<arith::Expr> pa = a.shape, pb = b.shape;
  if (a_vec) pa.insert(pa.begin(), arith::make_int(1));
  if (b_vec) pb.push_back(arith::make_int(1));
  const arith::Expr k = pa[pa.size() - 1];
  arith::Analyzer analyzer;
  if (!analyzer.provably_equal(k, pb[pb.size() - 2])) {
    user_error("matmul_nd: inner dims ", arith::to_string(k), " and ",
               arith::to_string(pb[pb.size() - 2]), " are not provably equal");
  }
  std::vector<arith::Expr> batch_a(pa.begin(), pa.end() - 2), batch_b(pb.begin(), pb.end() - 2);
  std::vector<arith::Expr> batch = broadcast_shape({batch_a, batch_b});
  std::vector<arith::Expr> out = batch;
  if (!a_vec) out.push_back(pa[pa.size() - 2]);
  if (!b_vec) out.push_back(pb.back());

  te::TensorRef A = te::placeholder("A", a.shape, a.dtype);
  te::TensorRef B = te::placeholder("B", b.shape, b.dtype);
  const size_t nb = batch.size();
  te::TensorRef C = te::compute("C", out, [&](const te::Indices& i) {
    te::IterVar r = te::reduce_axis(k, "k");
    te::Indices batch_i(i.begin(), i.begin() + static_cast<int64_t>(nb));
    std::vector<arith::Expr> ia = broadcast_indices(batch_a, batch_i, batch);
    std::vector<arith::Expr> ib = broadcast_indices(batch_b, batch_i, batch);
    size_t next = nb;
    if (!a_vec) ia.push_back(i[next++]);
    ia.push_back(r.var);
    ib.push_back(r.var);
    if (!b_vec) ib.push_back(i[next]);
    return te::sum(te::read(A, ia) * te::read(B, ib), {r});
  });
  OpInstance op;
  op.name = "matmul_nd_" + std::string(vm::dtype_name(a.dtype));
  op.inputs = {A, B};
  op.outputs = {C};
  op.knobs = reduction_knobs(out);
  std::vector<KnobSpec> specs = op.knobs;
  op.schedule = [specs, C](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({C});
    schedule_reduction(s, C, knob_value(specs, knobs, "parallel") != 0,
                       knob_value(specs, knobs, "unroll"));
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
