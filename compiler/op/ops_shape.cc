// Type relations of the shape, indexing and data-movement operators, with value
// propagation for shape arithmetic (registry.h): Shape, Size, Gather, Concat, Slice,
// Squeeze and Unsqueeze carry small integer values; Reshape, Expand, ConstantOfShape,
// Tile, Pad and Range take their output dims from such values.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "compiler/op/families.h"
#include "kernels/arith/evaluate.h"
#include "kernels/ops/transform.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

// Slice bounds beyond this are clamped before symbolic arithmetic (INT64_MAX "to the end"
// must not overflow `d - start`).
constexpr int64_t kBoundCap = int64_t{1} << 48;

Dim min_dim(const OpContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_any() || b.is_any()) return Dim::any();
  return ctx.simplify(arith::min(a.expr(), b.expr()));
}
Dim max_dim(const OpContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_any() || b.is_any()) return Dim::any();
  return ctx.simplify(arith::max(a.expr(), b.expr()));
}

// The value of input i (an integer vector) as dims, or UserError naming `what` when it is
// not known at compile time.
std::vector<Dim> value_dims(OpContext& ctx, size_t i, const char* what) {
  std::optional<std::vector<Dim>> v = ctx.values(i);
  if (!v) {
    ctx.fail(what,
             " is computed at run time from a tensor that is not a small integer vector "
             "(i64 or i32, at most ",
             kMaxTrackedElements, " elements)");
  }
  return *v;
}

// Not provably a size (>= 0): a value read at run time, which may be 0 or -1 where that
// means something (Reshape) or negative where it is an error.
bool maybe_negative(const OpContext& ctx, const Dim& d) {
  return !d.is_any() && !d.is_const() && !ctx.is_known_size(d) &&
         !ctx.provable(arith::ge(d.expr(), 0));
}

// p / q (both > 0) with a * q == b * p for every value in range, when there is such a
// constant: the ratio is read off one evaluation (every variable at a prime, so that no tile
// size divides it) and the equality then proved, so the answer is exact.
std::optional<std::pair<int64_t, int64_t>> constant_ratio(const OpContext& ctx,
                                                          const arith::Expr& a,
                                                          const arith::Expr& b) {
  arith::VarValues probe;
  std::function<void(const arith::Expr&)> collect = [&](const arith::Expr& x) {
    if (x.kind() == arith::ExprKind::kVar) probe[x->var_id] = 997;
    for (int i = 0; i < arith::kind_arity(x.kind()); ++i) collect(x.operand(i));
  };
  collect(a);
  collect(b);
  int64_t at_a = 0, at_b = 0;
  try {
    at_a = arith::evaluate(a, probe);
    at_b = arith::evaluate(b, probe);
  } catch (const UserError&) {
    return std::nullopt;  // a division by zero or an overflow at the probe: no answer
  }
  if (at_a <= 0 || at_b <= 0) return std::nullopt;
  const int64_t g = std::gcd(at_a, at_b);
  const int64_t p = at_a / g, q = at_b / g;
  if (!ctx.provable(arith::eq(a * q, b * p))) return std::nullopt;
  return std::make_pair(p, q);
}

// Whether target entry `e` is, up to a positive constant factor, a product of some of the
// input's dims: what a Reshape merging or splitting them asks for ([t', 4b, 36] -> [t'b,
// 144]). Such an entry is a size (>= 0) whatever the bounds of its variables say, since the
// input exists.
bool is_product_of_dims(const OpContext& ctx, const Dim& e, const std::vector<Dim>& in) {
  if (e.is_any() || e.is_const()) return false;
  std::vector<const Dim*> symbolic;
  for (const Dim& d : in) {
    if (d.is_any()) return false;
    if (!d.is_const()) symbolic.push_back(&d);
  }
  if (symbolic.empty() || symbolic.size() > 8) return false;
  for (uint32_t mask = 1; mask < (1u << symbolic.size()); ++mask) {
    arith::Expr product = 1;
    for (size_t k = 0; k < symbolic.size(); ++k) {
      if (mask & (1u << k)) product = product * symbolic[k]->expr();
    }
    if (constant_ratio(ctx, e.expr(), product)) return true;
  }
  return false;
}

std::vector<int64_t> const_list(const OpContext& ctx, size_t i, const char* what) {
  std::optional<std::vector<int64_t>> v = ctx.const_ints(i);
  if (!v) ctx.fail(what, " must be a constant");
  return *v;
}

Dim product(const OpContext& ctx, const std::vector<Dim>& dims, size_t begin, size_t end) {
  Dim p(1);
  for (size_t k = begin; k < end; ++k) p = ctx.mul(p, dims[k]);
  return p;
}

// Row-major strides of static dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return strides;
}

// Calls f(out_index, coords) for every element of static dims, in row-major order.
void for_each_index(const std::vector<int64_t>& dims,
                    const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> coords(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, coords);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++coords[k] < dims[k]) break;
      coords[k] = 0;
    }
  }
}

std::optional<std::vector<int64_t>> static_of(const std::vector<Dim>& dims) {
  std::vector<int64_t> out;
  for (const Dim& d : dims) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

// The number of elements ONNX Slice takes from a dim of extent d.
Dim slice_extent(const OpContext& ctx, const Dim& d, int64_t start, int64_t end, int64_t step) {
  start = std::clamp(start, -kBoundCap, kBoundCap);
  end = std::clamp(end, -kBoundCap, kBoundCap);
  auto norm = [&](int64_t v) { return v < 0 ? ctx.add(d, Dim(v)) : Dim(v); };
  if (step > 0) {
    // Bounds at the cap mean "from the start" / "to the end" (no min with a huge number
    // that the simplifier cannot drop for an unbounded dim).
    Dim s = start <= -kBoundCap ? Dim(0) : min_dim(ctx, max_dim(ctx, norm(start), Dim(0)), d);
    Dim e = end >= kBoundCap ? d : min_dim(ctx, max_dim(ctx, norm(end), Dim(0)), d);
    return max_dim(ctx, ctx.floordiv(ctx.add(ctx.sub(e, s), Dim(step - 1)), Dim(step)), Dim(0));
  }
  Dim last = ctx.sub(d, Dim(1));
  Dim s = start >= kBoundCap ? last : min_dim(ctx, max_dim(ctx, norm(start), Dim(-1)), last);
  Dim e = end <= -kBoundCap ? Dim(-1) : min_dim(ctx, max_dim(ctx, norm(end), Dim(-1)), last);
  return max_dim(ctx, ctx.floordiv(ctx.add(ctx.sub(s, e), Dim(-step - 1)), Dim(-step)), Dim(0));
}

Facts shape_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  std::vector<Dim> value(dims.begin() + start, dims.begin() + std::max(start, end));
  return {tensor_facts(vm::DType::kInt64, {Dim(static_cast<int64_t>(value.size()))}, value)};
}

Facts gather_op(OpContext& ctx) {
  const std::vector<Dim>& data = ctx.dims(0);
  const std::vector<Dim>& indices = ctx.dims(1);
  size_t axis = ctx.axis(ctx.attr_int("axis", 0), data.size());
  std::vector<Dim> out(data.begin(), data.begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + static_cast<int64_t>(axis) + 1, data.end());
  std::optional<std::vector<Dim>> value;
  auto picks = ctx.const_ints(1);
  const auto& source = ctx.input(0).value;
  if (source && picks && data.size() == 1 && out.size() <= 1) {
    value.emplace();
    const auto n = static_cast<int64_t>(source->size());
    for (int64_t p : *picks) {
      if (p < -n || p >= n) ctx.fail("index ", p, " is out of range for ", n, " elements");
      value->push_back((*source)[static_cast<size_t>(p < 0 ? p + n : p)]);
    }
  }
  return {tensor_facts(ctx.dtype(0), out, value)};
}

Facts concat_op(OpContext& ctx) {
  const size_t rank = ctx.rank(0);
  size_t axis = ctx.axis(ctx.attr_int("axis", 0), rank);
  std::vector<Dim> out = ctx.dims(0);
  bool values = ctx.input(0).value.has_value();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.rank(i) != rank) ctx.fail("input ", i, " has rank ", ctx.rank(i), ", expected ", rank);
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("input ", i, " has another dtype");
    for (size_t d = 0; d < rank; ++d) {
      const Dim &x = ctx.dims(0)[d], &y = ctx.dims(i)[d];
      if (d == axis || x.is_any() || y.is_any() || x.same_as(y)) continue;
      ctx.require(arith::eq(x.expr(), y.expr()), "dim ", d, " of input ", i, " (", to_string(y),
                  ") differs from input 0's (", to_string(x), ")");
    }
    out[axis] = ctx.add(out[axis], ctx.dims(i)[axis]);
    values = values && ctx.input(i).value.has_value();
  }
  // Known inputs concatenate their values: row-major, each input's slab per outer index.
  std::optional<std::vector<Dim>> value;
  std::optional<std::vector<int64_t>> out_static = static_of(out);
  if (values && out_static) {
    value.emplace();
    int64_t outer = 1;
    for (size_t k = 0; k < axis; ++k) outer *= (*out_static)[k];
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const std::vector<Dim>& v = *ctx.input(i).value;
        const int64_t slab = static_cast<int64_t>(v.size()) / std::max<int64_t>(outer, 1);
        value->insert(value->end(), v.begin() + o * slab, v.begin() + (o + 1) * slab);
      }
    }
  }
  return {tensor_facts(ctx.dtype(0), out, value)};
}

// dims[index] for an index known at run time (a select over the candidates).
arith::Expr pick(const std::vector<Dim>& dims, const arith::Expr& index) {
  arith::Expr out = dims.empty() ? arith::Expr(0) : dims.back().expr();
  for (size_t k = dims.size(); k-- > 1;) {
    out = arith::select(arith::eq(index, static_cast<int64_t>(k - 1)), dims[k - 1].expr(), out);
  }
  return out;
}

// Slice with starts / ends / axes / steps read at run time: each output dim is the
// kernel's window (ops::slice_axis) over the entries' values.
Facts slice_at_run_time(OpContext& ctx) {
  std::vector<Dim> dims = ctx.dims(0);
  const auto rank = static_cast<int64_t>(dims.size());
  std::vector<Dim> starts = value_dims(ctx, 1, "Slice's starts");
  std::vector<Dim> ends = value_dims(ctx, 2, "Slice's ends");
  const size_t n = starts.size();
  std::vector<Dim> axes, steps(n, Dim(1));
  for (size_t k = 0; k < n; ++k) axes.emplace_back(static_cast<int64_t>(k));
  if (ctx.has_input(3)) axes = value_dims(ctx, 3, "Slice's axes");
  if (ctx.has_input(4)) steps = value_dims(ctx, 4, "Slice's steps");
  if (ends.size() != n || axes.size() != n || steps.size() != n) {
    ctx.fail("starts, ends, axes and steps differ in length");
  }
  run_time_axes(ctx, axes, rank);
  std::vector<ops::SliceEntry> entries;
  for (size_t k = 0; k < n; ++k) {
    for (const Dim* d : {&starts[k], &ends[k], &steps[k]}) {
      if (d->is_any()) ctx.fail("entry ", k, " is not known");
    }
    ctx.require(arith::ne(steps[k].expr(), 0), "step ", k, " is 0");
    entries.push_back({starts[k].expr(), ends[k].expr(), axes[k].expr(), steps[k].expr()});
  }
  for (int64_t a = 0; a < rank; ++a) {
    Dim& d = dims[static_cast<size_t>(a)];
    if (d.is_any()) ctx.fail("dim ", a, " of the input is not known");
    d = ctx.simplify(ops::slice_axis(d.expr(), entries, a, rank).count);
  }
  return {tensor_facts(ctx.dtype(0), dims)};
}

Facts slice_op(OpContext& ctx) {
  for (size_t i = 1; i < 5; ++i) {
    if (ctx.has_input(i) && !ctx.const_ints(i) && ctx.values(i)) return slice_at_run_time(ctx);
  }
  std::vector<Dim> dims = ctx.dims(0);
  std::vector<int64_t> starts = const_list(ctx, 1, "Slice starts");
  std::vector<int64_t> ends = const_list(ctx, 2, "Slice ends");
  if (starts.size() != ends.size()) ctx.fail("starts and ends differ in length");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (ctx.has_input(3)) {
    axes = const_list(ctx, 3, "Slice axes");
  } else {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (ctx.has_input(4)) steps = const_list(ctx, 4, "Slice steps");
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.fail("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> first(dims.size(), 0), stride(dims.size(), 1);
  std::optional<std::vector<int64_t>> in_static = static_of(dims);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t a = ctx.axis(axes[k], dims.size());
    if (steps[k] == 0) ctx.fail("a step is 0");
    if (in_static) {  // where a known value's slice starts along this axis
      const int64_t n = (*in_static)[a];
      int64_t s = std::clamp(starts[k], -kBoundCap, kBoundCap);
      s = s < 0 ? s + n : s;
      first[a] = steps[k] > 0 ? std::clamp<int64_t>(s, 0, n) : std::clamp<int64_t>(s, -1, n - 1);
      stride[a] = steps[k];
    }
    dims[a] = slice_extent(ctx, dims[a], starts[k], ends[k], steps[k]);
  }
  std::optional<std::vector<Dim>> value;
  std::optional<std::vector<int64_t>> out_static = static_of(dims);
  const auto& source = ctx.input(0).value;
  if (source && in_static && out_static) {
    std::vector<int64_t> in_strides = strides_of(*in_static);
    value.emplace();
    for_each_index(*out_static, [&](int64_t, const std::vector<int64_t>& c) {
      int64_t at = 0;
      for (size_t k = 0; k < c.size(); ++k) at += (first[k] + c[k] * stride[k]) * in_strides[k];
      value->push_back((*source)[static_cast<size_t>(at)]);
    });
  }
  return {tensor_facts(ctx.dtype(0), dims, value)};
}

// Unsqueeze with axes read at run time: output dim j is 1 where j is an axis, else the
// input dim j minus the number of axes before j.
std::vector<Dim> unsqueeze_at_run_time(OpContext& ctx, const std::vector<Dim>& in,
                                       const std::vector<Dim>& axes) {
  const auto rank = static_cast<int64_t>(in.size() + axes.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d].is_any()) ctx.fail("dim ", d, " of the input is not known");
  }
  std::vector<arith::Expr> at = run_time_axes(ctx, axes, rank);
  std::vector<Dim> out;
  arith::Expr before = 0;
  for (int64_t j = 0; j < rank; ++j) {
    arith::Expr inserted = is_one_of(at, j);
    out.push_back(ctx.simplify(arith::select(inserted, 1, pick(in, j - before))));
    before = before + arith::select(inserted, 1, 0);
  }
  return out;
}

// Squeeze with axes read at run time: output dim j is the j-th input dim that is not an
// axis; every axis must be a dim of 1.
std::vector<Dim> squeeze_at_run_time(OpContext& ctx, const std::vector<Dim>& in,
                                     const std::vector<Dim>& axes) {
  const auto rank = static_cast<int64_t>(in.size());
  if (axes.size() > in.size()) ctx.fail(axes.size(), " axes for rank ", rank);
  std::vector<arith::Expr> at = run_time_axes(ctx, axes, rank);
  std::vector<Dim> out(in.size() - axes.size(), Dim(0));
  arith::Expr kept = 0;  // input dims kept before d
  for (int64_t d = 0; d < rank; ++d) {
    if (in[static_cast<size_t>(d)].is_any()) ctx.fail("dim ", d, " of the input is not known");
    const arith::Expr& dim = in[static_cast<size_t>(d)].expr();
    arith::Expr removed = is_one_of(at, d);
    ctx.require(arith::logical_or(arith::make_not(removed), arith::eq(dim, 1)), "dim ", d, " (",
                to_string(in[static_cast<size_t>(d)]), ") is squeezed but is not 1");
    for (size_t j = 0; j < out.size(); ++j) {
      out[j] = Dim(out[j].expr() +
                   arith::select(arith::logical_and(arith::make_not(removed),
                                                    arith::eq(kept, static_cast<int64_t>(j))),
                                 dim, 0));
    }
    kept = kept + arith::select(removed, 0, 1);
  }
  for (Dim& d : out) d = ctx.simplify(d);
  return out;
}

// An axes input whose elements are known, but not all as constants (read at run time).
bool run_time_list(OpContext& ctx, size_t i) {
  if (ctx.const_ints(i)) return false;
  std::optional<std::vector<Dim>> v = ctx.values(i);
  return v.has_value();
}

Facts unsqueeze_op(OpContext& ctx) {
  if (run_time_list(ctx, 1)) {
    return {tensor_facts(ctx.dtype(0), unsqueeze_at_run_time(ctx, ctx.dims(0), *ctx.values(1)),
                         ctx.input(0).value)};
  }
  std::vector<int64_t> axes = const_list(ctx, 1, "Unsqueeze axes");
  const size_t rank = ctx.rank(0) + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    size_t k = ctx.axis(a, rank);
    if (inserted[k]) ctx.fail("axis ", a, " appears twice");
    inserted[k] = true;
  }
  std::vector<Dim> out;
  size_t next = 0;
  for (size_t k = 0; k < rank; ++k) out.push_back(inserted[k] ? Dim(1) : ctx.dims(0)[next++]);
  return {tensor_facts(ctx.dtype(0), out, ctx.input(0).value)};  // same elements, same order
}

Facts squeeze_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  std::vector<bool> removed(dims.size(), false);
  if (ctx.has_input(1) && run_time_list(ctx, 1)) {
    return {tensor_facts(ctx.dtype(0), squeeze_at_run_time(ctx, dims, *ctx.values(1)),
                         ctx.input(0).value)};
  }
  if (ctx.has_input(1)) {
    for (int64_t a : const_list(ctx, 1, "Squeeze axes")) {
      size_t k = ctx.axis(a, dims.size());
      if (dims[k].is_const() && dims[k].value() != 1) {
        ctx.fail("cannot squeeze axis ", a, " of extent ", dims[k].value());
      }
      removed[k] = true;
    }
  } else {
    for (size_t k = 0; k < dims.size(); ++k) {
      if (!dims[k].is_const()) {
        ctx.fail("Squeeze without axes on a symbolic dim (", to_string(dims[k]), ")");
      }
      removed[k] = dims[k].value() == 1;
    }
  }
  std::vector<Dim> out;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (!removed[k]) out.push_back(dims[k]);
  }
  return {tensor_facts(ctx.dtype(0), out, ctx.input(0).value)};  // same elements, same order
}

// Reshape to a target some of whose entries are read at run time, so that which one is 0
// (copy the input's dim) or -1 (inferred) is decided then: every entry is a select, and the
// VM checks the result before the view is made.
std::vector<Dim> reshape_at_run_time(OpContext& ctx, const std::vector<Dim>& in,
                                     const std::vector<Dim>& target, bool allowzero) {
  arith::Expr numel = 1;
  for (const Dim& d : in) {
    if (d.is_any()) ctx.fail("the input's shape is not known");
    numel = numel * d.expr();
  }
  std::vector<arith::Expr> entries;
  arith::Expr known = 1, inferred = 0;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k].is_any()) ctx.fail("shape entry ", k, " is not known");
    arith::Expr e = target[k].expr();
    if (!allowzero && k < in.size()) e = arith::select(arith::eq(e, 0), in[k].expr(), e);
    entries.push_back(e);
    known = known * arith::select(arith::eq(e, -1), 1, e);
    inferred = inferred + arith::select(arith::eq(e, -1), 1, 0);
  }
  ctx.require(arith::le(inferred, 1), "the shape has more than one -1");
  ctx.require(arith::logical_or(arith::eq(inferred, 0), arith::ne(known, 0)),
              "cannot infer a -1 entry next to a 0 entry");
  std::vector<Dim> out;
  arith::Expr product = 1;
  for (const arith::Expr& e : entries) {
    // max(known, 1): never a division by zero on the host; the check above names the node.
    Dim d = ctx.simplify(
        arith::select(arith::eq(e, -1), arith::floordiv(numel, arith::max(known, 1)), e));
    out.push_back(d);
    product = product * d.expr();
  }
  ctx.require(arith::eq(product, numel), "the shape does not hold the input's elements");
  return out;
}

Facts reshape_op(OpContext& ctx) {
  const std::vector<Dim>& in = ctx.dims(0);
  std::vector<Dim> target = value_dims(ctx, 1, "Reshape's shape");
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  // An entry that is a product of the input's dims is not negative whatever the bounds
  // say: a target read off the input's Shape is then exact, not a select per entry for 0
  // and -1, which the next Reshape nests in its own (a 2-block Conformer's output dims grew
  // to 12 MB of text, a 6-block one ran the compiler out of memory).
  if (std::any_of(target.begin(), target.end(), [&](const Dim& d) {
        return maybe_negative(ctx, d) && !is_product_of_dims(ctx, d, in);
      })) {
    return {tensor_facts(ctx.dtype(0), reshape_at_run_time(ctx, in, target, allowzero),
                         ctx.input(0).value)};
  }
  int64_t infer_at = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k].is_const() && target[k].value() == 0 && !allowzero) {
      if (k >= in.size()) ctx.fail("shape entry ", k, " is 0 but the input has rank ", in.size());
      target[k] = in[k];
    }
    if (target[k].is_const() && target[k].value() == -1) {
      if (infer_at >= 0) ctx.fail("two -1 entries in the shape");
      infer_at = static_cast<int64_t>(k);
    }
  }
  if (infer_at >= 0) {
    // -1 = numel(input) / product(other entries). Entries that are input dims cancel first
    // ([n, 3, 48, w] -> [n, -1, 16] gives w*9, not (n*w*144) floordiv (n*16), which the
    // simplifier cannot reduce without knowing n > 0).
    std::vector<bool> used(in.size(), false);
    Dim known(1);
    for (size_t k = 0; k < target.size(); ++k) {
      if (static_cast<int64_t>(k) == infer_at) continue;
      bool cancelled = false;
      for (size_t j = 0; j < in.size() && !cancelled; ++j) {
        if (!used[j] && !in[j].is_const() && in[j].same_as(target[k])) {
          used[j] = cancelled = true;
        }
      }
      if (!cancelled) known = ctx.mul(known, target[k]);
    }
    Dim rest(1);
    for (size_t j = 0; j < in.size(); ++j) {
      if (!used[j]) rest = ctx.mul(rest, in[j]);
    }
    // A constant quotient is the entry itself ([n t', 12] -> [n, t', -1] is 12, where the
    // simplifier cannot divide n t' 12 by n t' without knowing n t' > 0).
    std::optional<std::pair<int64_t, int64_t>> ratio;
    if (!rest.is_any() && !known.is_any()) ratio = constant_ratio(ctx, rest.expr(), known.expr());
    target[static_cast<size_t>(infer_at)] =
        ratio && ratio->second == 1 ? Dim(ratio->first) : ctx.floordiv(rest, known);
  }
  return {tensor_facts(ctx.dtype(0), target, ctx.input(0).value)};
}

Facts constant_of_shape_op(OpContext& ctx) {
  std::vector<Dim> dims = value_dims(ctx, 0, "ConstantOfShape's shape");
  vm::DType dtype = vm::DType::kFloat32;
  std::optional<std::vector<Dim>> value;
  auto it = ctx.attrs().find("value");
  if (it != ctx.attrs().end()) {
    const auto* t = std::get_if<vm::Tensor>(&it->second);
    if (t == nullptr || t->numel() != 1) ctx.fail("value must be a one-element tensor");
    dtype = t->dtype();
    std::optional<std::vector<int64_t>> shape = static_of(dims);
    if (dtype == vm::DType::kInt64 && shape) {
      int64_t n = 1;
      for (int64_t d : *shape) n *= d;
      if (n <= kMaxTrackedElements) {
        value = std::vector<Dim>(static_cast<size_t>(n), Dim(t->data_as<int64_t>()[0]));
      }
    }
  }
  return {tensor_facts(dtype, dims, value)};
}

Facts expand_op(OpContext& ctx) {
  std::vector<Dim> target = value_dims(ctx, 1, "Expand's shape");
  // A target entry read at run time broadcasts like any dim (checked at run time).
  return {tensor_facts(ctx.dtype(0), broadcast_dims(ctx, ctx.dims(0), target))};
}

// The element of a one-element constant as a double.
std::optional<double> const_scalar(const ValueFacts& f) {
  if (!f.constant.defined() || f.constant.numel() != 1) return std::nullopt;
  switch (f.constant.dtype()) {
    case vm::DType::kFloat32:
      return f.constant.data_as<float>()[0];
    case vm::DType::kFloat64:
      return f.constant.data_as<double>()[0];
    default:
      return std::nullopt;
  }
}

// ceil((limit - start) / delta), at least 0, for bounds known as dims (Any when one is not).
Dim range_length(OpContext& ctx, const Dim& start, const Dim& limit, const Dim& delta) {
  Dim n = Dim::any();
  if (delta.is_const() && delta.value() != 0) {
    int64_t d = delta.value();
    Dim span = d > 0 ? ctx.sub(limit, start) : ctx.sub(start, limit);
    n = max_dim(ctx, ctx.floordiv(ctx.add(span, Dim(std::abs(d) - 1)), Dim(std::abs(d))), Dim(0));
  } else if (!start.is_any() && !limit.is_any() && !delta.is_any()) {
    // ceil((limit - start) / delta) for either sign of delta, as -floor((start - limit) / delta).
    ctx.require(arith::ne(delta.expr(), 0), "delta is 0");
    n = max_dim(ctx, ctx.sub(Dim(0), ctx.floordiv(ctx.sub(start, limit), delta)), Dim(0));
  }
  return n;
}

// Range's length for integer bounds known as values.
Dim range_length(OpContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.rank(i) != 0) ctx.fail("start, limit and delta must be scalars");
  }
  auto scalar = [&](size_t i) -> Dim {
    std::optional<std::vector<Dim>> v = ctx.values(i);
    return v && v->size() == 1 ? (*v)[0] : Dim::any();
  };
  return range_length(ctx, scalar(0), scalar(1), scalar(2));
}

// The integral value of a float constant, as a dim (Any otherwise).
Dim integral_constant(const ValueFacts& f) {
  std::optional<double> c = const_scalar(f);
  if (!c || std::abs(*c) >= 0x1p52 || *c != std::floor(*c)) return Dim::any();
  return Dim(static_cast<int64_t>(*c));
}

// dynvm.RangeCount(start, limit, delta[, uncast limit]): Range's length as an i64 scalar.
// The importer binds one next to every Range (its fourth input), so that a length only a
// kernel can compute (floating-point bounds known at run time) is a value type inference
// reads as a run-time symbol; where the length is known otherwise, nothing reads it and dce
// drops it. The fourth operand, where the importer found the limit to be a Cast, is the
// value cast: an integer whose value is known, with start and delta integral constants,
// counts exactly (an f32 limit is exact up to 2^24, a length no real sequence reaches).
Facts range_count_op(OpContext& ctx) {
  Dim n = range_length(ctx);
  if (n.is_any() && ctx.has_input(3) && vm::is_integer(ctx.dtype(3)) && ctx.rank(3) == 0) {
    std::optional<std::vector<Dim>> limit = ctx.values(3);
    if (limit && limit->size() == 1) {
      n = range_length(ctx, integral_constant(ctx.input(0)), (*limit)[0],
                       integral_constant(ctx.input(2)));
    }
  }
  if (n.is_any()) {
    auto s = const_scalar(ctx.input(0)), l = const_scalar(ctx.input(1)),
         d = const_scalar(ctx.input(2));
    if (s && l && d && *d != 0) {
      n = Dim(std::max<int64_t>(static_cast<int64_t>(std::ceil((*l - *s) / *d)), 0));
    }
  }
  return {tensor_facts(vm::DType::kInt64, {},
                       n.is_any() ? std::nullopt : std::optional(std::vector<Dim>{n}))};
}

Facts range_op(OpContext& ctx) {
  Dim n = range_length(ctx);
  if (n.is_any() && ctx.has_input(3)) {
    std::optional<std::vector<Dim>> count = ctx.values(3);
    if (count && count->size() == 1) n = (*count)[0];
  }
  return {tensor_facts(ctx.dtype(0), {n})};
}

Facts transpose_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm", {});
  if (perm.empty()) {
    for (size_t k = dims.size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  if (perm.size() != dims.size())
    ctx.fail("perm has ", perm.size(), " entries for rank ", dims.size());
  std::vector<Dim> out;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t p : perm) {
    size_t k = ctx.axis(p, dims.size(), "perm entry");
    if (seen[k]) ctx.fail("perm is not a permutation");
    seen[k] = true;
    out.push_back(dims[k]);
  }
  std::optional<std::vector<Dim>> value;
  std::optional<std::vector<int64_t>> in_static = static_of(dims), out_static = static_of(out);
  if (ctx.input(0).value && in_static) {
    std::vector<int64_t> in_strides = strides_of(*in_static);
    value.emplace();
    for_each_index(*out_static, [&](int64_t, const std::vector<int64_t>& c) {
      int64_t at = 0;
      for (size_t k = 0; k < c.size(); ++k)
        at += c[k] * in_strides[static_cast<size_t>(
                         perm[k] < 0 ? perm[k] + static_cast<int64_t>(dims.size()) : perm[k])];
      value->push_back((*ctx.input(0).value)[static_cast<size_t>(at)]);
    });
  }
  return {tensor_facts(ctx.dtype(0), out, value)};
}

Facts flatten_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  int64_t axis = ctx.attr_int("axis", 1);
  const auto rank = static_cast<int64_t>(dims.size());
  if (axis < -rank || axis > rank) ctx.fail("axis ", axis, " out of range");
  auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  return {
      tensor_facts(ctx.dtype(0), {product(ctx, dims, 0, a), product(ctx, dims, a, dims.size())})};
}

Facts tile_op(OpContext& ctx) {
  std::vector<Dim> repeats = value_dims(ctx, 1, "Tile's repeats");
  std::vector<Dim> dims = ctx.dims(0);
  if (repeats.size() != dims.size())
    ctx.fail("repeats has ", repeats.size(), " entries for rank ", dims.size());
  for (size_t k = 0; k < dims.size(); ++k) dims[k] = ctx.mul(dims[k], repeats[k]);
  return {tensor_facts(ctx.dtype(0), dims)};
}

Facts pad_op(OpContext& ctx) {
  std::vector<Dim> pads = value_dims(ctx, 1, "Pad's pads");
  std::vector<Dim> dims = ctx.dims(0);
  std::vector<size_t> axes;
  if (ctx.has_input(3)) {
    for (int64_t a : const_list(ctx, 3, "Pad axes")) axes.push_back(ctx.axis(a, dims.size()));
  } else {
    for (size_t k = 0; k < dims.size(); ++k) axes.push_back(k);
  }
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has ", pads.size(), " entries, expected ", 2 * axes.size());
  const std::string mode = ctx.attr_string("mode", "constant");
  for (size_t k = 0; k < axes.size(); ++k) {
    const Dim& d = dims[axes[k]];
    const Dim& begin = pads[k];
    const Dim& end = pads[k + axes.size()];
    if (!d.is_any() && !begin.is_any() && !end.is_any() &&
        (maybe_negative(ctx, begin) || maybe_negative(ctx, end))) {
      // Pads read at run time: what the kernel cannot pad is refused before it runs.
      const arith::Expr pads_out =
          arith::logical_and(arith::le(begin.expr(), 0), arith::le(end.expr(), 0));
      ctx.require(arith::logical_or(arith::gt(d.expr(), 0), pads_out), "cannot pad dim ", axes[k],
                  " when it is empty");
      if (mode == "reflect") {
        ctx.require(
            arith::logical_and(arith::lt(begin.expr(), d.expr()), arith::lt(end.expr(), d.expr())),
            "reflect pads must be smaller than dim ", axes[k]);
      }
    }
    dims[axes[k]] = ctx.add(ctx.add(d, begin), end);
  }
  return {tensor_facts(ctx.dtype(0), dims)};
}

Facts split_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  size_t axis = ctx.axis(ctx.attr_int("axis", 0), dims.size());
  int64_t outputs = ctx.attr_int("num_outputs", 1);
  std::vector<Dim> sizes;
  if (ctx.has_input(1)) {
    sizes = value_dims(ctx, 1, "Split's sizes");
    if (static_cast<int64_t>(sizes.size()) != outputs) {
      ctx.fail("split has ", sizes.size(), " sizes for ", outputs, " outputs");
    }
    if (!dims[axis].is_any() &&
        std::none_of(sizes.begin(), sizes.end(), [](const Dim& d) { return d.is_any(); })) {
      arith::Expr total = 0;
      for (const Dim& d : sizes) total = total + d.expr();
      ctx.require(arith::eq(total, dims[axis].expr()), "the sizes do not add up to dim ", axis,
                  " (", to_string(dims[axis]), ")");
    }
  } else {
    if (outputs < 1) ctx.fail("num_outputs must be positive");
    // Equal parts, the last one smaller when the dim does not divide (opset 18).
    Dim part = ctx.floordiv(ctx.add(dims[axis], Dim(outputs - 1)), Dim(outputs));
    for (int64_t k = 0; k + 1 < outputs; ++k) sizes.push_back(part);
    sizes.push_back(ctx.sub(dims[axis], ctx.mul(part, Dim(outputs - 1))));
  }
  Facts out;
  for (const Dim& s : sizes) {
    std::vector<Dim> d = dims;
    d[axis] = s;
    out.push_back(tensor_facts(ctx.dtype(0), d));
  }
  return out;
}

Facts size_op(OpContext& ctx) {
  const std::vector<Dim>& dims = ctx.dims(0);
  return {
      tensor_facts(vm::DType::kInt64, {}, std::vector<Dim>{product(ctx, dims, 0, dims.size())})};
}

// `e` with the dim variable named `name` replaced by `value`.
arith::Expr substitute(const arith::Expr& e, const std::string& name, int64_t value) {
  if (e.kind() == arith::ExprKind::kVar) return e->name == name ? arith::make_int(value) : e;
  const int arity = arith::kind_arity(e.kind());
  if (arity == 0) return e;
  if (arity == 1) return arith::make_not(substitute(e.operand(0), name, value));
  if (arity == 3) {
    return arith::make_select(substitute(e.operand(0), name, value),
                              substitute(e.operand(1), name, value),
                              substitute(e.operand(2), name, value));
  }
  return arith::make_binary(e.kind(), substitute(e.operand(0), name, value),
                            substitute(e.operand(1), name, value));
}

// dynvm.Refine {dim, value} (compiler/passes/version_entry.h): the input itself, typed
// with dim `dim` replaced by `value` (lowering checks it at run time).
Facts refine_op(OpContext& ctx) {
  const std::string name = ctx.attr_string("dim", "");
  if (name.empty()) ctx.fail("the attribute dim is required");
  const int64_t value = ctx.attr_int("value", -1);
  if (value < 0) ctx.fail("the attribute value must be a size (>= 0)");
  auto refine = [&](const std::vector<Dim>& dims) {
    std::vector<Dim> out;
    for (const Dim& d : dims)
      out.push_back(d.is_any() ? d : ctx.simplify(substitute(d.expr(), name, value)));
    return out;
  };
  std::optional<std::vector<Dim>> known;
  if (ctx.input(0).value) known = refine(*ctx.input(0).value);
  ValueFacts f = tensor_facts(ctx.dtype(0), refine(ctx.dims(0)), known);
  f.constant = ctx.input(0).constant;
  return {f};
}

}  // namespace

// Axes read at run time, normalized into [0, rank) and checked to be there and distinct.
std::vector<arith::Expr> run_time_axes(OpContext& ctx, const std::vector<Dim>& axes, int64_t rank) {
  std::vector<arith::Expr> out;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k].is_any()) ctx.fail("axis ", k, " is not known");
    arith::Expr a = axes[k].expr();
    arith::Expr n = ctx.simplify(arith::select(arith::lt(a, 0), a + rank, a)).expr();
    ctx.require(arith::logical_and(arith::ge(n, 0), arith::lt(n, rank)), "axis ", k, " (",
                to_string(axes[k]), ") is out of range for rank ", rank);
    for (const arith::Expr& m : out) {
      ctx.require(arith::ne(m, n), "axis ", k, " (", to_string(axes[k]), ") appears twice");
    }
    out.push_back(n);
  }
  return out;
}

// 1 when `axis` is one of `axes` (a boolean expression).
arith::Expr is_one_of(const std::vector<arith::Expr>& axes, int64_t axis) {
  arith::Expr any = arith::make_bool(false);
  for (const arith::Expr& a : axes) any = arith::logical_or(any, arith::eq(a, axis));
  return any;
}

void register_shape_ops() {
  register_op({"dynvm.Refine", ShapeRule::kFromInputDims, 1, 1, refine_op});
  register_op({"Shape", ShapeRule::kFromInputDims, 1, 1, shape_op});
  register_op({"Size", ShapeRule::kFromInputDims, 1, 1, size_op});
  register_op({"Gather", ShapeRule::kFromInputDims, 2, 2, gather_op});
  register_op({"GatherElements", ShapeRule::kFromInputDims, 2, 2,
               [](OpContext& ctx) { return Facts{tensor_facts(ctx.dtype(0), ctx.dims(1))}; }});
  register_op({"Concat", ShapeRule::kFromInputDims, 1, 1024, concat_op});
  register_op({"Slice", ShapeRule::kFromInputValues, 3, 5, slice_op});
  register_op({"Unsqueeze", ShapeRule::kFromInputValues, 2, 2, unsqueeze_op});
  register_op({"Squeeze", ShapeRule::kFromInputValues, 1, 2, squeeze_op});
  register_op({"Reshape", ShapeRule::kFromInputValues, 2, 2, reshape_op});
  register_op({"ConstantOfShape", ShapeRule::kFromInputValues, 1, 1, constant_of_shape_op});
  register_op({"Expand", ShapeRule::kFromInputValues, 2, 2, expand_op});
  register_op({"Range", ShapeRule::kFromInputValues, 3, 4, range_op});
  register_op({"dynvm.RangeCount", ShapeRule::kFromInputValues, 3, 4, range_count_op});
  register_op({"Transpose", ShapeRule::kFromInputDims, 1, 1, transpose_op});
  register_op({"Flatten", ShapeRule::kFromInputDims, 1, 1, flatten_op});
  register_op({"Tile", ShapeRule::kFromInputValues, 2, 2, tile_op});
  register_op({"Pad", ShapeRule::kFromInputValues, 2, 4, pad_op});
  register_op({"Split", ShapeRule::kFromInputValues, 1, 2, split_op});
  register_op({"Trilu", ShapeRule::kFromInputDims, 1, 2, [](OpContext& ctx) {
                 if (ctx.dims(0).size() < 2) ctx.fail("needs an input of rank 2 or more");
                 return Facts{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
}

}  // namespace dynvm::compiler
