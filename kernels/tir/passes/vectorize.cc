// vectorize: turns each kVectorized loop into vector code. For a loop `v` of constant extent
// L (<= kMaxLanes) whose body is a sequence of stores (possibly under ifs and lets that do
// not depend on v) whose indices are affine in v:
//   * a load or store whose flat index is `c*v + r` becomes a vector access of L lanes,
//     base (r + c*min) and stride c; a load with c == 0 stays scalar (and is broadcast);
//   * an index value affine in v becomes vector_index_value; conditions over indices become
//     vector compares;
//   * scalar operands are broadcast by the builders.
// A loop with a non-constant (or larger) extent is first split: `floordiv(extent, W)` vector
// iterations of W = kDefaultLanes lanes, then the remainder as one masked vector iteration
// (`if (rem >= 1)`, loads and stores of lanes [0, rem) only: tir ExprNode::active). A
// symbolic extent the loop bounds show to be at most W (the remainder of a split, which
// loop_partition leaves as `m - io*16`) is that masked iteration alone, of the fewest
// power-of-two lanes that cover it. So a symbolic tail runs as vector code: a register
// tile's remainder columns (which the codegen keeps in registers) and an elementwise row's
// last elements. A body whose inactive lanes could trap (an integer division by a value it
// computes) keeps a scalar remainder loop instead.
//
// When the body cannot be vectorized — an inner loop or allocation, a condition or let value
// that depends on v, an index that is not affine, a store whose index does not move with v
// (a reduction), or a buffer that is written and also accessed at a different index in the
// body (a possible dependence between iterations) — the loop becomes a serial loop: correct,
// just not vectorized. Buffers are assumed not to alias one another.
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/arith/simplify.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/loop_bounds.h"
#include "kernels/tir/passes/passes.h"

namespace dynvm::tir {
namespace {

constexpr int64_t kMaxLanes = 64;
constexpr int64_t kDefaultLanes = 16;

// The access's row-major flat index (what vector accesses address).
arith::Expr flat_index(const Buffer& b, const std::vector<arith::Expr>& indices) {
  if (indices.size() == 1) return indices[0];
  std::vector<arith::Expr> strides = b.strides();
  arith::Expr flat = arith::make_int(0);
  for (size_t d = 0; d < indices.size(); ++d) flat = flat + indices[d] * strides[d];
  return arith::simplify(flat);
}

struct Access {
  arith::Expr flat;
  bool is_store;
};

// Collects every buffer access of a body, by buffer.
class AccessCollector {
 public:
  std::unordered_map<const Buffer*, std::vector<Access>> accesses;

  void stmt(const Stmt& s) {
    for_each_stmt(s, [&](const Stmt& st) {
      if (st.kind() == StmtKind::kStore) {
        accesses[st->buffer.get()].push_back({flat_index(*st->buffer, st->indices), true});
      }
      if (st->value.defined()) {
        visit(st->value, [&](const Expr& e) {
          if (e.kind() == ExprKind::kBufferLoad) {
            accesses[e->buffer.get()].push_back({flat_index(*e->buffer, e->indices), false});
          }
        });
      }
    });
  }
};

// Vectorizes one loop body over `v` in [min, min + lanes); `ok` turns false on anything it
// cannot express.
class BodyVectorizer : public StmtMutator {
 public:
  // `active` (optional): the lanes [0, active) that touch memory (a masked remainder).
  BodyVectorizer(arith::Var v, arith::Expr min, int lanes, arith::Expr active)
      : v_(std::move(v)), min_(std::move(min)), lanes_(lanes), active_(std::move(active)) {}

  bool ok = true;

  // The access at flat index `flat` as (base, stride), stride undefined when it does not
  // move with v; nullopt when not affine.
  std::optional<std::pair<arith::Expr, arith::Expr>> ramp(const arith::Expr& flat) {
    if (!arith::uses_var(flat, v_.id())) return std::make_pair(flat, arith::Expr());
    std::optional<AffineForm> f = affine_in(flat, v_.id());
    if (!f) return std::nullopt;
    arith::Expr base = arith::simplify(f->rest + f->coeff * min_);
    if (f->coeff.is_int_imm() && f->coeff.int_value() == 0) {
      return std::make_pair(base, arith::Expr());
    }
    return std::make_pair(base, f->coeff);
  }

 protected:
  // ---- statements ----
  Stmt visit_for(const Stmt& s) override { return fail(s); }
  Stmt visit_allocate(const Stmt& s) override { return fail(s); }
  Stmt visit_parallel_call(const Stmt& s) override { return fail(s); }

  Stmt visit_if(const Stmt& s) override {
    if (arith::uses_var(s->condition, v_.id())) return fail(s);
    return StmtMutator::visit_if(s);
  }

  Stmt visit_let_stmt(const Stmt& s) override {
    Expr value = mutate_expr(s->value);
    if (!ok || value.type().lanes != 1) return fail(s);
    return make_let_index(arith::Var(s->let_var), value, mutate_stmt(s->body));
  }

  Stmt visit_store(const Stmt& s) override {
    Expr value = mutate_expr(s->value);
    auto r = ramp(flat_index(*s->buffer, s->indices));
    if (!ok || !r) return fail(s);
    auto [base, stride] = *r;
    // A store that does not move with v is executed once per iteration: only a constant
    // stride != 0 keeps the iterations' stores apart.
    if (!stride.defined() || !stride.is_int_imm()) return fail(s);
    return make_vector_store(s->buffer, base, stride, broadcast(value, lanes_), active_);
  }

  // ---- expressions ----
  Expr visit_index_value(const Expr& e) override {
    if (!arith::uses_var(e->index, v_.id())) return e;
    if (e.type().lanes != 1) return fail(e);
    if (e->index.is_boolean()) return condition(e->index);
    auto r = ramp(e->index);
    if (!r) return fail(e);
    if (!r->second.defined()) return index_value(r->first, e.type());
    return vector_index_value(r->first, r->second, e.type().with_lanes(lanes_));
  }

  Expr visit_buffer_load(const Expr& e) override {
    if (e.type().lanes != 1) return fail(e);
    arith::Expr flat = flat_index(*e->buffer, e->indices);
    if (!arith::uses_var(flat, v_.id())) return e;
    auto r = ramp(flat);
    if (!r) return fail(e);
    if (!r->second.defined()) return buffer_load(e->buffer, {r->first});
    return vector_buffer_load(e->buffer, r->first, r->second, lanes_, active_);
  }

  Expr visit_cast(const Expr& e) override {
    Expr a = mutate_expr(e->operands[0]);
    if (!ok) return e;
    return cast(e.type().with_lanes(a.type().lanes), a);
  }

  Expr visit_broadcast(const Expr& e) override { return fail(e); }
  Expr visit_tensor_read(const Expr& e) override { return fail(e); }
  Expr visit_reduce(const Expr& e) override { return fail(e); }

  Expr visit_let_expr(const Expr& e) override {
    Expr value = mutate_expr(e->operands[0]);
    if (!ok || value.type().lanes != 1) return fail(e);
    return let_index(arith::Var(e->let_var), value, mutate_expr(e->operands[1]));
  }

 private:
  Stmt fail(const Stmt& s) {
    ok = false;
    return s;
  }
  Expr fail(const Expr& e) {
    ok = false;
    return e;
  }

  // A boolean index expression that mentions v, as a vector of bools.
  Expr condition(const arith::Expr& c) {
    using K = arith::ExprKind;
    switch (c.kind()) {
      case K::kAnd:
        return logical_and(condition(c.operand(0)), condition(c.operand(1)));
      case K::kOr:
        return logical_or(condition(c.operand(0)), condition(c.operand(1)));
      case K::kNot:
        return logical_not(condition(c.operand(0)));
      case K::kBoolImm:
        return make_const_int(boolean(), c->value);
      default:
        break;
    }
    if (!arith::is_comparison_kind(c.kind())) return fail(index_value(c, boolean()));
    Expr a = visit_index_value(index_value(c.operand(0), i64()));
    Expr b = visit_index_value(index_value(c.operand(1), i64()));
    if (!ok) return index_value(c, boolean());
    static constexpr CompareOp kOps[] = {CompareOp::kEq, CompareOp::kNe, CompareOp::kLt,
                                         CompareOp::kLe, CompareOp::kGt, CompareOp::kGe};
    return compare(kOps[static_cast<int>(c.kind()) - static_cast<int>(K::kEq)], a, b);
  }

  arith::Var v_;
  arith::Expr min_;
  int lanes_;
  arith::Expr active_;
};

// No iteration may see another's writes: every buffer the body stores to is accessed at one
// index only.
bool independent_iterations(const Stmt& body) {
  AccessCollector c;
  c.stmt(body);
  for (const auto& [buffer, list] : c.accesses) {
    bool stored = false;
    for (const Access& a : list) stored |= a.is_store;
    if (!stored) continue;
    for (const Access& a : list) {
      if (!arith::structural_equal(a.flat, list.front().flat)) return false;
    }
  }
  return true;
}

// Whether an inactive lane could trap: an integer division or modulo by a computed value
// (a masked load gives the inactive lanes zeros). Float math does not trap.
bool may_trap_when_masked(const Stmt& body) {
  bool trap = false;
  for_each_stmt(body, [&](const Stmt& st) {
    if (!st->value.defined()) return;
    visit(st->value, [&](const Expr& e) {
      if (e.kind() == ExprKind::kBinary && !e.type().is_float() &&
          (e->binary_op == BinaryOp::kDiv || e->binary_op == BinaryOp::kMod) &&
          e->operands[1].kind() != ExprKind::kConst) {
        trap = true;
      }
    });
  });
  return trap;
}

// The body as vector code for v in [min, min + lanes), or nullopt; with `active`, only lanes
// [0, active) touch memory.
std::optional<Stmt> vectorize_body(const arith::Var& v, const arith::Expr& min, int lanes,
                                   const Stmt& body, const arith::Expr& active = arith::Expr()) {
  if (!independent_iterations(body)) return std::nullopt;
  if (active.defined() && may_trap_when_masked(body)) return std::nullopt;
  BodyVectorizer bv(v, min, lanes, active);
  Stmt out = bv.mutate_stmt(body);
  if (!bv.ok) return std::nullopt;
  for (const auto& var : free_vars(out).vars) {
    if (var->var_id == v.id()) return std::nullopt;
  }
  return out;
}

// The fewest power-of-two lanes (>= 2) that cover n <= kDefaultLanes.
int covering_lanes(int64_t n) {
  int lanes = 2;
  while (lanes < n) lanes *= 2;
  return lanes;
}

class Vectorizer : public StmtMutator {
 public:
  explicit Vectorizer(const PrimFunc& f) : bounds_(f) {}

 protected:
  Stmt visit_for(const Stmt& s) override {
    bounds_.enter(s);
    Stmt body = mutate_stmt(s->body);
    bounds_.leave(s);
    arith::Var v(s->loop_var);
    if (s->for_kind != ForKind::kVectorized) {
      if (body.get() == s->body.get()) return s;
      return make_for(v, s->min, s->extent, s->for_kind, body, s->thread_axis);
    }
    arith::Expr extent = arith::simplify(s->extent);
    Stmt serial = make_for(v, s->min, extent, ForKind::kSerial, body);
    if (extent.is_int_imm() && extent.int_value() <= kMaxLanes) {
      int64_t lanes = extent.int_value();
      if (lanes <= 0) return make_nop();
      if (lanes == 1) return substitute(body, VarMap{{v.id(), s->min}});
      std::optional<Stmt> vec = vectorize_body(v, s->min, static_cast<int>(lanes), body);
      return vec ? *vec : serial;
    }
    const arith::Bounds range = bounds_.range(extent);
    if (range.max <= 0) return make_nop();
    const arith::Expr runs = arith::ge(extent, arith::make_int(1));
    if (range.max == 1) {
      Stmt once = substitute(body, VarMap{{v.id(), s->min}});
      return range.min >= 1 ? once : make_if(runs, once);
    }
    if (range.max <= kDefaultLanes) {
      std::optional<Stmt> vec = vectorize_body(v, s->min, covering_lanes(range.max), body, extent);
      if (!vec) return serial;
      return range.min >= 1 ? *vec : make_if(runs, *vec);
    }
    // Split: vector chunks of kDefaultLanes, then the remainder, masked.
    arith::Var vo(v.name() + ".vo");
    arith::Expr chunk_min = arith::simplify(s->min + vo * kDefaultLanes);
    std::optional<Stmt> vec = vectorize_body(v, chunk_min, kDefaultLanes, body);
    if (!vec) return serial;
    arith::Expr chunks = arith::simplify(arith::floordiv(extent, kDefaultLanes));
    arith::Expr done = arith::simplify(chunks * kDefaultLanes);
    arith::Expr rest_min = arith::simplify(s->min + done);
    arith::Expr rest = arith::simplify(extent - done);
    Stmt tail;
    if (std::optional<Stmt> masked = vectorize_body(v, rest_min, kDefaultLanes, body, rest)) {
      tail = make_if(arith::ge(rest, arith::make_int(1)), *masked);
    } else {
      tail = make_for(v, rest_min, rest, ForKind::kSerial, body);
    }
    return make_seq({make_for(vo, 0, chunks, ForKind::kSerial, *vec), tail});
  }

 private:
  LoopBounds bounds_;
};

}  // namespace

PrimFunc vectorize(PrimFunc f) {
  Vectorizer v(f);
  f.body = v.mutate_stmt(f.body);
  return f;
}

}  // namespace dynvm::tir
