// Loop extents, axis values, guards and bound inference for compute_at (see bound.h).
#include "kernels/te/bound.h"

#include <functional>
#include <unordered_set>

#include "kernels/arith/simplify.h"
#include "kernels/te/expr_rewrite.h"
#include "vm/error.h"

namespace dynvm::te {
namespace {

using arith::Expr;

Expr ceil_div(const Expr& a, const Expr& b) { return arith::floordiv(a + b - Expr(1), b); }

// An inclusive symbolic interval [lo, hi].
struct Range {
  Expr lo;
  Expr hi;
};
// nullopt: the variable's range is not known (a let-bound data-dependent index).
using VarRanges = std::unordered_map<arith::VarId, std::optional<Range>>;

bool is_point(const Range& r) {
  return r.lo.get() == r.hi.get() || arith::structural_equal(r.lo, r.hi);
}

Range point(const Expr& e) { return {e, e}; }

// The interval of e when its variables range over `vars` (variables not listed are fixed).
std::optional<Range> eval_range(const Expr& e, const VarRanges& vars,
                                const arith::Analyzer& analyzer) {
  using K = arith::ExprKind;
  switch (e.kind()) {
    case K::kIntImm:
      return point(e);
    case K::kVar: {
      auto it = vars.find(e->var_id);
      if (it == vars.end()) return point(e);
      return it->second;
    }
    case K::kAdd:
    case K::kSub: {
      auto a = eval_range(e.operand(0), vars, analyzer);
      auto b = eval_range(e.operand(1), vars, analyzer);
      if (!a || !b) return std::nullopt;
      if (e.kind() == K::kAdd) return Range{a->lo + b->lo, a->hi + b->hi};
      return Range{a->lo - b->hi, a->hi - b->lo};
    }
    case K::kMul: {
      auto a = eval_range(e.operand(0), vars, analyzer);
      auto b = eval_range(e.operand(1), vars, analyzer);
      if (!a || !b) return std::nullopt;
      if (is_point(*a) && is_point(*b)) return point(a->lo * b->lo);
      if (!is_point(*a) && !is_point(*b)) return std::nullopt;  // a product of two ranges
      const Expr& c = is_point(*a) ? a->lo : b->lo;
      const Range& r = is_point(*a) ? *b : *a;
      if (analyzer.can_prove(arith::ge(c, Expr(0)))) return Range{c * r.lo, c * r.hi};
      if (analyzer.can_prove(arith::le(c, Expr(0)))) return Range{c * r.hi, c * r.lo};
      return std::nullopt;
    }
    case K::kFloorDiv:
    case K::kFloorMod: {
      auto a = eval_range(e.operand(0), vars, analyzer);
      auto b = eval_range(e.operand(1), vars, analyzer);
      if (!a || !b || !is_point(*b)) return std::nullopt;
      if (!analyzer.can_prove(arith::gt(b->lo, Expr(0)))) return std::nullopt;
      if (is_point(*a))
        return point(e.kind() == K::kFloorDiv ? arith::floordiv(a->lo, b->lo)
                                              : arith::floormod(a->lo, b->lo));
      if (e.kind() == K::kFloorDiv) {
        return Range{arith::floordiv(a->lo, b->lo), arith::floordiv(a->hi, b->lo)};
      }
      if (analyzer.can_prove(
              arith::logical_and(arith::ge(a->lo, Expr(0)), arith::lt(a->hi, b->lo)))) {
        return a;
      }
      return Range{Expr(0), b->lo - Expr(1)};
    }
    case K::kMin:
    case K::kMax: {
      auto a = eval_range(e.operand(0), vars, analyzer);
      auto b = eval_range(e.operand(1), vars, analyzer);
      if (!a || !b) return std::nullopt;
      if (e.kind() == K::kMin) return Range{arith::min(a->lo, b->lo), arith::min(a->hi, b->hi)};
      return Range{arith::max(a->lo, b->lo), arith::max(a->hi, b->hi)};
    }
    case K::kSelect: {
      auto a = eval_range(e.operand(1), vars, analyzer);
      auto b = eval_range(e.operand(2), vars, analyzer);
      if (!a || !b) return std::nullopt;
      return Range{arith::min(a->lo, b->lo), arith::max(a->hi, b->hi)};
    }
    default:
      return std::nullopt;
  }
}

// a + b or a - b, for a and b already min / max trees (see distribute_min_max).
std::optional<Expr> combine_distributed(arith::ExprKind op, const Expr& a, const Expr& b,
                                        int& budget) {
  using K = arith::ExprKind;
  auto is_mm = [](const Expr& x) { return x.kind() == K::kMin || x.kind() == K::kMax; };
  auto rebuild = [](K kind, const Expr& x, const Expr& y) {
    return kind == K::kMin ? arith::min(x, y) : arith::max(x, y);
  };
  if (--budget < 0) return std::nullopt;
  if (is_mm(a)) {
    auto x = combine_distributed(op, a.operand(0), b, budget);
    auto y = combine_distributed(op, a.operand(1), b, budget);
    if (!x || !y) return std::nullopt;
    return rebuild(a.kind(), *x, *y);
  }
  if (is_mm(b)) {
    auto x = combine_distributed(op, a, b.operand(0), budget);
    auto y = combine_distributed(op, a, b.operand(1), budget);
    if (!x || !y) return std::nullopt;
    // Subtracting a min is a max of the differences, and vice versa.
    K kind = op == K::kAdd ? b.kind() : (b.kind() == K::kMin ? K::kMax : K::kMin);
    return rebuild(kind, *x, *y);
  }
  return op == K::kAdd ? a + b : a - b;
}

// f(a) for a min / max tree a and f = (* c) or (floordiv c) with a constant c > 0, which
// does not decrease: f(min(x, y)) == min(f(x), f(y)), and the same for max.
std::optional<Expr> apply_monotonic(arith::ExprKind op, const Expr& a, const Expr& c, int& budget) {
  using K = arith::ExprKind;
  if (--budget < 0) return std::nullopt;
  if (a.kind() == K::kMin || a.kind() == K::kMax) {
    auto x = apply_monotonic(op, a.operand(0), c, budget);
    auto y = apply_monotonic(op, a.operand(1), c, budget);
    if (!x || !y) return std::nullopt;
    return a.kind() == K::kMin ? arith::min(*x, *y) : arith::max(*x, *y);
  }
  return op == K::kMul ? a * c : arith::floordiv(a, c);
}

// e rewritten as a tree of min / max whose leaves contain none, by pushing + and - into
// them: min(a, b) + c == min(a + c, b + c), c - min(a, b) == max(c - a, c - b) (and
// products and floor quotients by positive constants, apply_monotonic). Region
// extents come out as hi - lo with hi a min of candidates; distributed, each candidate
// minus lo simplifies on its own (t*8 + 7 - t*8 + 1 == 8) and interval analysis sees the
// constant bound that the correlated form hides. nullopt past a size limit.
std::optional<Expr> distribute_min_max(const Expr& e, int& budget) {
  using K = arith::ExprKind;
  if (--budget < 0) return std::nullopt;
  switch (e.kind()) {
    case K::kMin:
    case K::kMax:
    case K::kAdd:
    case K::kSub: {
      auto a = distribute_min_max(e.operand(0), budget);
      auto b = distribute_min_max(e.operand(1), budget);
      if (!a || !b) return std::nullopt;
      if (e.kind() == K::kMin) return arith::min(*a, *b);
      if (e.kind() == K::kMax) return arith::max(*a, *b);
      return combine_distributed(e.kind(), *a, *b, budget);
    }
    case K::kMul:
    case K::kFloorDiv: {
      const Expr& c = e.operand(1);
      if (!c.is_int_imm() || c.int_value() <= 0) return e;
      auto a = distribute_min_max(e.operand(0), budget);
      if (!a) return std::nullopt;
      return apply_monotonic(e.kind(), *a, c, budget);
    }
    default:
      return e;
  }
}

Expr region_extent(const Expr& hi, const Expr& lo, const arith::Analyzer& analyzer) {
  Expr extent = hi - lo + Expr(1);
  int budget = 256;
  if (auto distributed = distribute_min_max(extent, budget)) extent = *distributed;
  return analyzer.simplify(extent);
}

}  // namespace

void infer_extents(StageLoops& loops, const arith::Analyzer& analyzer) {
  const Stage& stage = *loops.stage;
  loops.extent.clear();
  for (size_t i = 0; i < stage.root_axes().size(); ++i) {
    loops.extent[stage.root_axes()[i].get()] = loops.root_loop_extent[i];
  }
  for (const AxisRelation& rel : stage.relations()) {
    if (rel.kind == AxisRelation::Kind::kSplit) {
      const Expr& parent = loops.extent.at(rel.parent.get());
      Expr outer, inner;
      if (rel.factor > 0) {
        outer = ceil_div(parent, Expr(rel.factor));
        inner = Expr(rel.factor);
      } else {
        outer = Expr(rel.nparts);
        inner = ceil_div(parent, Expr(rel.nparts));
      }
      loops.extent[rel.outer.get()] = analyzer.simplify(outer);
      loops.extent[rel.inner.get()] = analyzer.simplify(inner);
    } else {
      loops.extent[rel.fused.get()] =
          analyzer.simplify(loops.extent.at(rel.outer.get()) * loops.extent.at(rel.inner.get()));
    }
  }
}

AxisExprMap axis_values(const StageLoops& loops, const AxisExprMap& leaf_values) {
  AxisExprMap values = leaf_values;
  const auto& rels = loops.stage->relations();
  // Newest relation first: its results are leaves or inputs of even newer relations.
  for (auto it = rels.rbegin(); it != rels.rend(); ++it) {
    const AxisRelation& rel = *it;
    if (rel.kind == AxisRelation::Kind::kSplit) {
      auto outer = values.find(rel.outer.get());
      auto inner = values.find(rel.inner.get());
      if (outer == values.end() || inner == values.end()) continue;
      values[rel.parent.get()] = outer->second * loops.extent.at(rel.inner.get()) + inner->second;
    } else {
      auto fused = values.find(rel.fused.get());
      if (fused == values.end()) continue;
      const Expr& inner_extent = loops.extent.at(rel.inner.get());
      Expr f = fused->second;
      values[rel.outer.get()] = arith::floordiv(f, inner_extent);
      values[rel.inner.get()] = arith::floormod(f, inner_extent);
    }
  }
  return values;
}

std::vector<Expr> iteration_guards(const StageLoops& loops, const AxisExprMap& values,
                                   const arith::Analyzer& analyzer) {
  std::vector<Expr> guards;
  std::function<void(const Expr&, const Expr&)> add = [&](const Expr& value, const Expr& extent) {
    // value < min(a, b) is two conditions, of which one is often provable (a tile's bound).
    if (extent.kind() == arith::ExprKind::kMin) {
      add(value, extent.operand(0));
      add(value, extent.operand(1));
      return;
    }
    Expr cond = analyzer.simplify(arith::lt(value, extent));
    if (cond.kind() == arith::ExprKind::kBoolImm && cond->value == 1) return;
    if (analyzer.can_prove(cond)) return;
    guards.push_back(cond);
  };
  const Stage& stage = *loops.stage;
  for (const AxisRelation& rel : stage.relations()) {
    if (rel.kind != AxisRelation::Kind::kSplit) continue;
    auto value = values.find(rel.parent.get());
    if (value == values.end()) continue;
    const Expr& extent = loops.extent.at(rel.parent.get());
    int64_t factor = rel.factor > 0 ? rel.factor : rel.nparts;
    if (analyzer.provably_divisible(extent, factor)) continue;
    add(value->second, extent);
  }
  for (size_t i = 0; i < stage.root_axes().size(); ++i) {
    if (arith::structural_equal(loops.root_loop_extent[i], loops.root_extent[i])) continue;
    auto value = values.find(stage.root_axes()[i].get());
    if (value == values.end()) continue;
    add(value->second, loops.root_extent[i]);
  }
  return guards;
}

Region infer_region(const StageLoops& consumer, const tir::Expr& consumer_body, size_t attach_pos,
                    const Tensor* producer, const std::vector<arith::Expr>& shape,
                    const arith::Analyzer& analyzer) {
  const Stage& stage = *consumer.stage;
  // Loops outside and at the attach point are fixed; the ones inside run fully.
  std::unordered_map<const AxisNode*, Range> ranges;
  const auto& leaves = stage.leaf_axes();
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (attach_pos != kNoFixedLoops && i <= attach_pos) {
      ranges[leaves[i].get()] = point(leaves[i]->var);
    } else {
      ranges[leaves[i].get()] = Range{Expr(0), consumer.extent.at(leaves[i].get()) - Expr(1)};
    }
  }
  const auto& rels = stage.relations();
  for (auto it = rels.rbegin(); it != rels.rend(); ++it) {
    const AxisRelation& rel = *it;
    if (rel.kind == AxisRelation::Kind::kSplit) {
      const Range& o = ranges.at(rel.outer.get());
      const Range& i = ranges.at(rel.inner.get());
      const Expr& f = consumer.extent.at(rel.inner.get());
      Expr last = consumer.extent.at(rel.parent.get()) - Expr(1);
      // Iterations past the parent's extent are guarded off, so they read nothing.
      ranges[rel.parent.get()] = Range{analyzer.simplify(o.lo * f + i.lo),
                                       analyzer.simplify(arith::min(o.hi * f + i.hi, last))};
    } else {
      const Range& f = ranges.at(rel.fused.get());
      const Expr& ie = consumer.extent.at(rel.inner.get());
      if (is_point(f)) {
        ranges[rel.outer.get()] = point(analyzer.simplify(arith::floordiv(f.lo, ie)));
        ranges[rel.inner.get()] = point(analyzer.simplify(arith::floormod(f.lo, ie)));
      } else {
        ranges[rel.outer.get()] = Range{analyzer.simplify(arith::floordiv(f.lo, ie)),
                                        analyzer.simplify(arith::floordiv(f.hi, ie))};
        ranges[rel.inner.get()] = Range{Expr(0), ie - Expr(1)};
      }
    }
  }
  // The consumer's tensor axes and reduce variables, as the body names them.
  VarRanges vars;
  const auto& roots = stage.root_axes();
  for (size_t d = 0; d < stage.num_axes(); ++d) {
    const Range& r = ranges.at(roots[d].get());
    Expr hi = arith::min(r.hi, consumer.root_extent[d] - Expr(1));
    vars[stage.op_axis()[d].id()] = Range{analyzer.simplify(consumer.root_min[d] + r.lo),
                                          analyzer.simplify(consumer.root_min[d] + hi)};
  }
  if (stage.is_reduction()) {
    const auto& reduce_axes = root_reduction(stage.body())->reduce_axes;
    for (size_t j = 0; j < reduce_axes.size(); ++j) {
      size_t root = stage.num_axes() + j;
      const Range& r = ranges.at(roots[root].get());
      vars[reduce_axes[j].var.id()] =
          Range{r.lo, analyzer.simplify(arith::min(r.hi, consumer.root_extent[root] - Expr(1)))};
    }
  }
  tir::visit(consumer_body, [&](const tir::Expr& e) {
    if (e.kind() == tir::ExprKind::kLetIndex) vars[e->let_var->var_id] = std::nullopt;
  });

  // The same indices written in the leaf loop variables (through the relations, and
  // simplified) keep what the per-axis ranges lose: the correlation of the axes a fuse
  // made one loop. Y[y, x] with (y, x) fused and split by 16 reads A[y*w + x] as
  // A[f.outer*16 + f.inner], 16 elements, where the axes' ranges span whole rows.
  AxisExprMap leaf_values;
  VarRanges leaf_vars;
  for (size_t i = 0; i < leaves.size(); ++i) {
    leaf_values[leaves[i].get()] = leaves[i]->var;
    leaf_vars[leaves[i]->var.id()] = ranges.at(leaves[i].get());
  }
  const AxisExprMap root_values = axis_values(consumer, leaf_values);
  IndexMap in_leaves;
  for (size_t d = 0; d < stage.num_axes(); ++d) {
    auto v = root_values.find(roots[d].get());
    if (v != root_values.end()) {
      in_leaves[stage.op_axis()[d].id()] = consumer.root_min[d] + v->second;
    }
  }
  if (stage.is_reduction()) {
    const auto& reduce_axes = root_reduction(stage.body())->reduce_axes;
    for (size_t j = 0; j < reduce_axes.size(); ++j) {
      auto v = root_values.find(roots[stage.num_axes() + j].get());
      if (v != root_values.end()) in_leaves[reduce_axes[j].var.id()] = v->second;
    }
  }
  tir::visit(consumer_body, [&](const tir::Expr& e) {
    if (e.kind() == tir::ExprKind::kLetIndex) leaf_vars[e->let_var->var_id] = std::nullopt;
  });
  // Taken where it gives a constant extent and the per-axis range does not (so every
  // region the per-axis ranges already bound stays as it was).
  auto tighter = [&](const Range& r, const arith::Expr& index) {
    auto constant_extent = [&](const Range& x) {
      return analyzer.simplify(x.hi - x.lo).is_int_imm();
    };
    if (constant_extent(r)) return r;
    auto exact =
        eval_range(analyzer.simplify(substitute_index(index, in_leaves)), leaf_vars, analyzer);
    return exact && constant_extent(*exact) ? *exact : r;
  };

  size_t ndim = shape.size();
  std::vector<std::optional<Range>> region(ndim);
  std::vector<bool> whole(ndim, false);
  bool read_at_all = false;
  tir::visit(consumer_body, [&](const tir::Expr& e) {
    if (e.kind() != tir::ExprKind::kTensorRead || e->tensor.get() != producer) return;
    read_at_all = true;
    for (size_t d = 0; d < ndim; ++d) {
      if (whole[d]) continue;
      auto r = eval_range(e->indices[d], vars, analyzer);
      if (!r) {
        whole[d] = true;
        continue;
      }
      if (!is_point(*r)) r = tighter(*r, e->indices[d]);
      if (!region[d]) {
        region[d] = r;
      } else {
        region[d] = Range{arith::min(region[d]->lo, r->lo), arith::max(region[d]->hi, r->hi)};
      }
    }
  });
  DYNVM_INTERNAL_CHECK(read_at_all, "infer_region: ", stage.name(), " does not read ",
                       producer->name());
  Region out;
  for (size_t d = 0; d < ndim; ++d) {
    Expr lo = Expr(0), hi = shape[d] - Expr(1);
    if (!whole[d]) {
      // Reads outside the producer's shape would be a bug of the program, not ours to
      // compute: the region never leaves the tensor.
      lo = arith::max(region[d]->lo, Expr(0));
      hi = arith::min(region[d]->hi, hi);
    }
    lo = analyzer.simplify(lo);
    out.min.push_back(lo);
    out.extent.push_back(region_extent(analyzer.simplify(hi), lo, analyzer));
  }
  return out;
}

Region relax_region(const Region& r, const StageLoops& consumer, size_t outer, size_t inner,
                    const std::vector<arith::Expr>& shape, const arith::Analyzer& analyzer) {
  if (outer != kNoFixedLoops && inner <= outer) return r;
  VarRanges vars;
  const auto& leaves = consumer.stage->leaf_axes();
  for (size_t i = outer == kNoFixedLoops ? 0 : outer + 1; i <= inner && i < leaves.size(); ++i) {
    vars[leaves[i]->var.id()] = Range{Expr(0), consumer.extent.at(leaves[i].get()) - Expr(1)};
  }
  Region out;
  for (size_t d = 0; d < r.min.size(); ++d) {
    auto lo = eval_range(r.min[d], vars, analyzer);
    auto hi = eval_range(r.min[d] + r.extent[d] - Expr(1), vars, analyzer);
    Expr first = Expr(0), last = shape[d] - Expr(1);
    if (lo && hi) {
      first = analyzer.simplify(arith::max(lo->lo, Expr(0)));
      last = analyzer.simplify(arith::min(hi->hi, last));
    }
    out.min.push_back(first);
    out.extent.push_back(region_extent(last, first, analyzer));
  }
  return out;
}

Region region_union(const Region& a, const Region& b, const arith::Analyzer& analyzer) {
  Region out;
  for (size_t d = 0; d < a.min.size(); ++d) {
    Expr lo = analyzer.simplify(arith::min(a.min[d], b.min[d]));
    Expr hi = analyzer.simplify(
        arith::max(a.min[d] + a.extent[d] - Expr(1), b.min[d] + b.extent[d] - Expr(1)));
    out.min.push_back(lo);
    out.extent.push_back(region_extent(hi, lo, analyzer));
  }
  return out;
}

}  // namespace dynvm::te
