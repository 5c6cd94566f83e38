// Type relations of Einsum (the equation parsed as the kernel parses it,
// kernels/ops/einsum.h: each letter's extent from the inputs, constant 1s broadcast) and
// Det ([..., M, M] -> [...]).
#include "compiler/op/families.h"
#include "kernels/ops/einsum.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

Facts einsum_op(OpContext& ctx) {
  const std::string equation = ctx.attr_string("equation", "");
  if (equation.empty()) ctx.fail("needs its equation");
  const vm::DType dtype = ctx.dtype(0);
  if (dtype == vm::DType::kBool) ctx.fail("does not take bool");
  std::vector<size_t> ranks;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.dtype(k) != dtype) ctx.fail("the inputs' dtypes differ");
    ranks.push_back(ctx.rank(k));
  }
  ops::EinsumLabels labels;
  try {
    labels = ops::parse_einsum(equation, ranks);
  } catch (const UserError& e) {
    const std::string message = e.what();
    const std::string prefix = "einsum: ";  // the node's name says which op it is
    ctx.fail(message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message);
  }
  std::vector<std::optional<Dim>> extent(static_cast<size_t>(labels.num_labels));
  for (size_t k = 0; k < ranks.size(); ++k) {
    for (size_t d = 0; d < ranks[k]; ++d) {
      std::optional<Dim>& e = extent[static_cast<size_t>(labels.inputs[k][d])];
      const Dim& dim = ctx.dims(k)[d];
      const bool one = dim.is_const() && dim.value() == 1;
      if (!e || (e->is_const() && e->value() == 1 && !one)) {
        e = dim;
      } else if (!one && !e->same_as(dim)) {
        if (e->is_const() && dim.is_const()) {
          ctx.fail("a letter of \"", equation, "\" has extents ", e->value(), " and ", dim.value());
        }
        if (!e->is_any() && !dim.is_any()) {
          ctx.require(arith::eq(e->expr(), dim.expr()), "a letter of \"", equation,
                      "\" has extents ", to_string(*e), " and ", to_string(dim));
        }
      }
    }
  }
  std::vector<Dim> dims;
  for (int l : labels.output) dims.push_back(*extent[static_cast<size_t>(l)]);
  return {tensor_facts(dtype, dims)};
}

Facts det_op(OpContext& ctx) {
  if (ctx.dtype(0) != vm::DType::kFloat32 && ctx.dtype(0) != vm::DType::kFloat64) {
    ctx.fail("needs an f32 or f64 input, got ", vm::dtype_name(ctx.dtype(0)));
  }
  const std::vector<Dim>& x = ctx.dims(0);
  if (x.size() < 2) ctx.fail("needs an input of rank 2 or more ([..., M, M])");
  const Dim &rows = x[x.size() - 2], &cols = x.back();
  if (!rows.same_as(cols)) {
    if (rows.is_const() && cols.is_const()) ctx.fail("the matrices must be square");
    ctx.fail("the matrices must be square (", to_string(rows), " x ", to_string(cols), ")");
  }
  return {tensor_facts(ctx.dtype(0), {x.begin(), x.end() - 2})};
}

}  // namespace

void register_linalg_ops() {
  register_op({"Einsum", ShapeRule::kFromInputDims, 1, 64, einsum_op});
  register_op({"Det", ShapeRule::kFromInputDims, 1, 1, det_op});
}

}  // namespace dynvm::compiler
