// Unique (see unique.h).
#include "kernels/ops/unique.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

const tir::DataType kI64{vm::DType::kInt64, 1};

tir::Expr i64(int64_t v) { return tir::make_const_int(kI64, v); }
tir::Expr one_if(const tir::Expr& c) { return tir::select(c, i64(1), i64(0)); }
tir::Expr index_true(const arith::Expr& c) { return tir::index_value(c, tir::boolean()); }

arith::Expr product(const std::vector<arith::Expr>& dims, size_t begin, size_t end) {
  arith::Expr p(1);
  for (size_t d = begin; d < end; ++d) p = p * dims[d];
  return p;
}

// x seen as n elements of m values each: element i, value t.
struct Elements {
  te::TensorRef x;
  size_t axis = 0;  // with an axis: x = [outer..., n, inner...]
  bool flat = true;
  arith::Expr n, m, inner;

  std::vector<arith::Expr> at(const arith::Expr& i, const arith::Expr& t) const {
    const auto& shape = x->shape();
    std::vector<arith::Expr> idx(shape.size());
    if (flat) {
      arith::Expr rest = i;
      for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = d == 0 ? rest : arith::floormod(rest, shape[d]);
        rest = arith::floordiv(rest, shape[d]);
      }
      return idx;
    }
    arith::Expr o = arith::floordiv(t, inner), r = arith::floormod(t, inner);
    for (size_t d = shape.size(); d-- > axis + 1;) {
      idx[d] = d == axis + 1 ? r : arith::floormod(r, shape[d]);
      r = arith::floordiv(r, shape[d]);
    }
    idx[axis] = i;
    for (size_t d = axis; d-- > 0;) {
      idx[d] = d == 0 ? o : arith::floormod(o, shape[d]);
      o = arith::floordiv(o, shape[d]);
    }
    return idx;
  }
  tir::Expr value(const arith::Expr& i, const arith::Expr& t) const {
    return te::read(x, at(i, t));
  }
};

struct Comparison {
  Elements e;
  te::TensorRef first_difference;  // [n, n]: the first t where i and j differ, m if none

  tir::Expr same(const arith::Expr& i, const arith::Expr& j) const {
    if (e.flat) return tir::compare(tir::CompareOp::kEq, e.value(i, 0), e.value(j, 0));
    return tir::compare(tir::CompareOp::kEq, te::read(first_difference, {i, j}),
                        tir::index_value(e.m, kI64));
  }
  // Whether element j's value (slice) sorts before element i's.
  tir::Expr smaller(const arith::Expr& j, const arith::Expr& i) const {
    if (e.flat) return tir::compare(tir::CompareOp::kLt, e.value(j, 0), e.value(i, 0));
    arith::Var f("f");
    arith::Expr t = arith::min(f, e.m - arith::Expr(1));
    tir::Expr less =
        tir::logical_and(index_true(arith::lt(f, e.m)),
                         tir::compare(tir::CompareOp::kLt, e.value(j, t), e.value(i, t)));
    return tir::let_index(f, te::read(first_difference, {i, j}), less);
  }
};

Comparison compare_elements(const TensorType& x, const UniqueAttrs& attrs, te::TensorRef in) {
  Comparison c;
  c.e.x = in;
  c.e.flat = !attrs.has_axis;
  if (c.e.flat) {
    c.e.n = product(x.shape, 0, x.shape.size());
    c.e.m = 1;
    return c;
  }
  if (x.shape.empty()) user_error("unique: a scalar has no axis");
  c.e.axis = normalize_axis("unique", attrs.axis, x.shape.size());
  c.e.n = x.shape[c.e.axis];
  c.e.inner = product(x.shape, c.e.axis + 1, x.shape.size());
  c.e.m = product(x.shape, 0, c.e.axis) * c.e.inner;
  const Elements& e = c.e;
  c.first_difference = te::compute("first_difference", {e.n, e.n}, [&](const te::Indices& ij) {
    te::IterVar t = te::reduce_axis(e.m, "t");
    tir::Expr differs =
        tir::compare(tir::CompareOp::kNe, e.value(ij[0], t.var), e.value(ij[1], t.var));
    return te::min_reduce(
        tir::select(differs, tir::index_value(t.var, kI64), tir::index_value(e.m, kI64)), {t});
  });
  return c;
}

struct Ranked {
  Comparison c;
  te::TensorRef is_first, rank, counts;  // [n] each
  std::vector<te::TensorRef> stages;
};

// Per element: whether it is its value's first occurrence, its value's rank among the
// distinct values, and how often its value occurs.
Ranked rank_elements(const TensorType& x, const UniqueAttrs& attrs, te::TensorRef in) {
  Ranked r;
  r.c = compare_elements(x, attrs, in);
  const Comparison& c = r.c;
  const arith::Expr n = c.e.n;
  auto count_over_n = [&](const char* name, auto cond) {
    return te::compute(name, {n}, [&](const te::Indices& i) {
      te::IterVar j = te::reduce_axis(n, "j");
      return te::sum(one_if(cond(arith::Expr(i[0]), arith::Expr(j.var))), {j});
    });
  };
  te::TensorRef before =
      count_over_n("equal_before", [&](const arith::Expr& i, const arith::Expr& j) {
        return tir::logical_and(index_true(arith::lt(j, i)), c.same(i, j));
      });
  r.is_first = te::compute("is_first", {n}, [&](const te::Indices& i) {
    return one_if(tir::compare(tir::CompareOp::kEq, te::read(before, {i[0]}), i64(0)));
  });
  r.counts = count_over_n("counts",
                          [&](const arith::Expr& i, const arith::Expr& j) { return c.same(i, j); });
  te::TensorRef first_at;
  if (attrs.sorted) {
    r.rank = count_over_n("rank", [&](const arith::Expr& i, const arith::Expr& j) {
      return tir::logical_and(tir::compare(tir::CompareOp::kNe, te::read(r.is_first, {j}), i64(0)),
                              c.smaller(j, i));
    });
  } else {
    first_at = te::compute("first_at", {n}, [&](const te::Indices& i) {
      te::IterVar j = te::reduce_axis(n, "j");
      return te::min_reduce(tir::select(c.same(i[0], j.var), tir::index_value(j.var, kI64),
                                        tir::index_value(n, kI64)),
                            {j});
    });
    r.rank = count_over_n("rank", [&](const arith::Expr& i, const arith::Expr& j) {
      arith::Var f("f");
      return tir::logical_and(
          tir::compare(tir::CompareOp::kNe, te::read(r.is_first, {j}), i64(0)),
          tir::let_index(f, te::read(first_at, {i}), index_true(arith::lt(j, f))));
    });
  }
  for (const te::TensorRef& t :
       {c.first_difference, before, r.is_first, r.counts, first_at, r.rank}) {
    if (t) r.stages.push_back(t);
  }
  return r;
}

OpInstance instance(std::string name, te::TensorRef in, std::vector<te::TensorRef> outputs,
                    std::vector<te::TensorRef> stages) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = {in};
  op.outputs = outputs;
  op.schedule = [outputs, stages](const KnobValues&) {
    te::Schedule s = te::create_schedule(outputs);
    for (const te::TensorRef& t : stages) {
      // Only what the outputs need is in the schedule (the count needs no counts).
      if (s.find(t.get()) && t->body().kind() == tir::ExprKind::kReduce) {
        schedule_reduction(s, t, false);
      }
    }
    return s;
  };
  return op;
}

std::string key(const TensorType& x, const UniqueAttrs& attrs) {
  return dtype_suffix(x.dtype) + (attrs.has_axis ? "_axis" + std::to_string(attrs.axis) : "") +
         (attrs.sorted ? "_sorted" : "");
}

}  // namespace

OpInstance unique_count(const TensorType& x, const UniqueAttrs& attrs) {
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  Ranked r = rank_elements(x, attrs, in);
  te::TensorRef count = te::compute("N", {}, [&](const te::Indices&) {
    te::IterVar i = te::reduce_axis(r.c.e.n, "i");
    return te::sum(te::read(r.is_first, {i.var}), {i});
  });
  std::vector<te::TensorRef> stages = r.stages;
  stages.push_back(count);
  return instance("unique_count_" + key(x, attrs), in, {count}, stages);
}

OpInstance unique(const TensorType& x, const UniqueAttrs& attrs, const arith::Expr& count,
                  size_t num_outputs) {
  if (num_outputs < 1 || num_outputs > 4) user_error("unique: 1 to 4 outputs, not ", num_outputs);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  Ranked r = rank_elements(x, attrs, in);
  const Elements& e = r.c.e;
  // Each first occurrence i goes to its rank: its values (Y), i (indices), its count.
  auto place = [&](const char* name, std::vector<arith::Expr> shape, vm::DType dtype,
                   std::vector<arith::Expr> domain, auto at, auto value) {
    return te::scatter(
        name, shape,
        [&](const te::Indices&) {
          return tir::make_const(tir::DataType{dtype, 1}, 0);
        },
        domain,
        [&](const te::Indices& j, const te::TensorRef&) {
          te::ScatterUpdate u;
          arith::Var k("k");
          u.lets.emplace_back(k, te::read(r.rank, {j[0]}));
          u.when = tir::compare(tir::CompareOp::kNe, te::read(r.is_first, {j[0]}), i64(0));
          u.at = at(k, j);
          u.value = value(j);
          return u;
        });
  };
  std::vector<te::TensorRef> outputs;
  if (e.flat) {
    outputs.push_back(place(
        "Y", {count}, x.dtype, {e.n},
        [](const arith::Var& k, const te::Indices&) { return std::vector<arith::Expr>{k}; },
        [&](const te::Indices& j) { return e.value(j[0], 0); }));
  } else {
    std::vector<arith::Expr> shape = x.shape;
    shape[e.axis] = count;
    outputs.push_back(place(
        "Y", shape, x.dtype, {e.n, e.m},
        [&](const arith::Var& k, const te::Indices& j) {
          std::vector<arith::Expr> a = e.at(j[0], j[1]);
          a[e.axis] = k;
          return a;
        },
        [&](const te::Indices& j) { return e.value(j[0], j[1]); }));
  }
  auto by_rank = [](const arith::Var& k, const te::Indices&) {
    return std::vector<arith::Expr>{k};
  };
  if (num_outputs > 1) {
    outputs.push_back(place("indices", {count}, vm::DType::kInt64, {e.n}, by_rank,
                            [](const te::Indices& j) { return tir::index_value(j[0], kI64); }));
  }
  if (num_outputs > 2) {
    outputs.push_back(te::compute("inverse_indices", {e.n},
                                  [&](const te::Indices& i) { return te::read(r.rank, {i[0]}); }));
  }
  if (num_outputs > 3) {
    outputs.push_back(place("counts", {count}, vm::DType::kInt64, {e.n}, by_rank,
                            [&](const te::Indices& j) { return te::read(r.counts, {j[0]}); }));
  }
  return instance("unique" + std::to_string(num_outputs) + "_" + key(x, attrs), in, outputs,
                  r.stages);
}

}  // namespace dynvm::ops
