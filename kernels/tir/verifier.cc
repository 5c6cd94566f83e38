// The TIR verifier (see verifier.h). It re-derives every typing rule from the nodes instead
// of trusting the builders, because passes and tests may assemble nodes directly and a
// wrong type that reaches LLVM shows up far from its cause.
#include "kernels/tir/verifier.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kernels/arith/printer.h"
#include "kernels/arith/simplify.h"
#include "kernels/tir/arith_util.h"
#include "kernels/tir/printer.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

class Verifier {
 public:
  Verifier(std::string func_name, VerifyStage stage) : name_(std::move(func_name)), stage_(stage) {}

  // Params: buffers in scope, and the vars their shapes bind.
  void bind_params(const std::vector<BufferRef>& params) {
    std::unordered_set<arith::VarId> dim_vars;
    for (const BufferRef& p : params) {
      if (p == nullptr) fail("null parameter");
      if (p->scope() != BufferScope::kGlobal) fail("parameter ", p->name(), " is not global");
      if (!buffers_.insert(p.get()).second) fail("parameter ", p->name(), " appears twice");
      for (const auto& d : p->shape()) {
        if (auto binding = dim_binding(d)) dim_vars.insert(binding->var->var_id);
      }
    }
    for (const BufferRef& p : params) {
      for (const auto& d : p->shape()) {
        for_each_var(d, [&](const arith::Expr& v) {
          if (!dim_vars.count(v->var_id)) {
            fail("shape var ", v->name, " of ", p->name(),
                 " is not some parameter's dim (alone or times a constant), so nothing binds it");
          }
        });
      }
    }
    for (arith::VarId id : dim_vars) bound_.insert(id);
  }

  void bind_var(const arith::Expr& v) { bound_.insert(v->var_id); }
  void add_buffer(const BufferRef& b) { buffers_.insert(b.get()); }
  void allow_parallel_calls(size_t num_regions) {
    parallel_calls_ok_ = true;
    num_regions_ = num_regions;
  }
  void forbid_parallel_loops() { parallel_loops_ok_ = false; }

  void stmt(const Stmt& s) {
    if (!s.defined()) fail("undefined statement");
    switch (s.kind()) {
      case StmtKind::kFor:
        index(s->min, "loop min");
        index(s->extent, "loop extent");
        check_for_kind(s);
        scoped_var(s->loop_var, [&] { stmt(s->body); });
        break;
      case StmtKind::kSeq:
        for (const Stmt& c : s->seq) stmt(c);
        break;
      case StmtKind::kIf:
        if (!s->condition.defined() || !s->condition.is_boolean()) {
          fail("if condition is not boolean");
        }
        index(s->condition, "if condition");
        stmt(s->then_case);
        if (s->else_case.defined()) stmt(s->else_case);
        break;
      case StmtKind::kStore:
        if (!s->value.defined()) fail("store without a value");
        access(s->buffer, s->indices, s->stride, s->active, s->value.type(), "store to");
        expr(s->value);
        break;
      case StmtKind::kAllocate:
        allocate(s);
        break;
      case StmtKind::kLetIndex:
        if (!s->value.defined()) fail("let without a value");
        expr(s->value);
        check_let_value(s->value, s->let_var);
        scoped_var(s->let_var, [&] { stmt(s->body); });
        break;
      case StmtKind::kParallelCall:
        if (!parallel_calls_ok_) fail("parallel_call outside a lowered function's entry");
        if (s->region >= num_regions_) fail("parallel_call to missing region ", s->region);
        index(s->extent, "parallel_call extent");
        break;
      case StmtKind::kNop:
        break;
    }
  }

  void expr(const Expr& e) {
    if (!e.defined()) fail("undefined expression");
    DataType t = e.type();
    if (t.lanes < 1) fail("expression with ", t.lanes, " lanes: ", to_string(e));
    const auto& ops = e->operands;
    auto need_ops = [&](size_t n) {
      if (ops.size() != n) fail(to_string(e), ": expected ", n, " operands");
      for (const Expr& op : ops) expr(op);
    };
    switch (e.kind()) {
      case ExprKind::kConst:
        if (t.lanes != 1) fail("vector constant ", to_string(e), " (use broadcast)");
        break;
      case ExprKind::kIndexValue:
        if (!e->index.defined()) fail("index value without an index");
        if (e->index.is_boolean() != t.is_bool()) fail("index value type: ", to_string(e));
        if ((t.lanes > 1) != e->stride.defined()) fail("index value lanes/stride: ", to_string(e));
        index(e->index, "index value");
        if (e->stride.defined()) index(e->stride, "index value stride");
        break;
      case ExprKind::kTensorRead:
      case ExprKind::kReduce:
        fail("TE-only node in TIR: ", to_string(e));
      case ExprKind::kBufferLoad:
        access(e->buffer, e->indices, e->stride, e->active, t, "load from");
        break;
      case ExprKind::kBinary:
        need_ops(2);
        same_type(e, ops[0], t);
        same_type(e, ops[1], t);
        if (t.is_bool()) fail("arithmetic on bool: ", to_string(e));
        break;
      case ExprKind::kCompare:
        need_ops(2);
        same_type(e, ops[1], ops[0].type());
        if (t != boolean(ops[0].type().lanes)) fail("compare result type: ", to_string(e));
        break;
      case ExprKind::kLogical:
        need_ops(e->logical_op == LogicalOp::kNot ? 1 : 2);
        if (!t.is_bool()) fail("logical op of type ", to_string(t));
        for (const Expr& op : ops) same_type(e, op, t);
        break;
      case ExprKind::kCall:
        need_ops(1);
        if (ops[0].type().lanes != t.lanes) fail("call changes lanes: ", to_string(e));
        break;
      case ExprKind::kCast:
        need_ops(1);
        if (ops[0].type().lanes != t.lanes) fail("cast changes lanes: ", to_string(e));
        break;
      case ExprKind::kSelect:
        need_ops(3);
        if (!ops[0].type().is_bool() ||
            (ops[0].type().lanes != 1 && ops[0].type().lanes != t.lanes)) {
          fail("select condition type: ", to_string(e));
        }
        same_type(e, ops[1], t);
        same_type(e, ops[2], t);
        break;
      case ExprKind::kBroadcast:
        need_ops(1);
        if (ops[0].type() != t.with_lanes(1)) fail("broadcast type: ", to_string(e));
        break;
      case ExprKind::kLetIndex:
        if (ops.size() != 2) fail("let expression needs a value and a body");
        expr(ops[0]);
        check_let_value(ops[0], e->let_var);
        scoped_var(e->let_var, [&] { expr(ops[1]); });
        same_type(e, ops[1], t);
        break;
    }
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) {
    internal_error(__FILE__, __LINE__,
                   str_cat("verify ", name_, ": ", std::forward<Args>(args)...));
  }

  template <typename F>
  void scoped_var(const arith::Expr& v, F&& body) {
    if (!v.defined() || v.kind() != arith::ExprKind::kVar) fail("binder is not a variable");
    if (bound_.count(v->var_id)) fail("variable ", v->name, " is bound again inside its scope");
    bound_.insert(v->var_id);
    body();
    bound_.erase(v->var_id);
  }

  void index(const arith::Expr& e, const char* what) {
    if (!e.defined()) fail("undefined ", what);
    for_each_var(e, [&](const arith::Expr& v) {
      if (!bound_.count(v->var_id)) {
        fail("unbound variable ", v->name, " in ", what, " ", arith::to_string(e));
      }
    });
  }

  void same_type(const Expr& parent, const Expr& op, DataType want) {
    if (op.type() != want) {
      fail("operand ", to_string(op), " of type ", to_string(op.type()), " in ", to_string(parent),
           ", expected ", to_string(want));
    }
  }

  void check_let_value(const Expr& value, const arith::Expr& var) {
    if (value.type().lanes != 1 || !vm::is_integer(value.type().elem)) {
      fail("let value for ", var.defined() ? var->name : "?", " is not a scalar integer");
    }
  }

  void access(const BufferRef& b, const std::vector<arith::Expr>& indices,
              const arith::Expr& stride, const arith::Expr& active, DataType t, const char* what) {
    if (b == nullptr) fail(what, " a null buffer");
    if (!buffers_.count(b.get())) fail(what, " buffer ", b->name(), " that is not in scope");
    if (t.elem != b->dtype()) {
      fail(what, " ", b->name(), " of ", vm::dtype_name(b->dtype()), " with type ", to_string(t));
    }
    size_t rank = b->shape().size();
    if (stage_ >= VerifyStage::kFlattened) {
      if (indices.size() != 1)
        fail(what, " ", b->name(), " with ", indices.size(), " indices after flattening");
    } else if (indices.size() != rank && indices.size() != 1) {
      fail(what, " ", b->name(), " with ", indices.size(), " indices, rank is ", rank);
    }
    if (t.lanes > 1 && indices.size() != 1) fail("vector ", what, " ", b->name(), " not flat");
    if ((t.lanes > 1) != stride.defined()) {
      fail(what, " ", b->name(), ": stride must be given exactly for vector accesses");
    }
    for (const auto& i : indices) {
      if (i.defined() && i.is_boolean()) fail(what, " ", b->name(), " with a boolean index");
      index(i, "buffer index");
    }
    if (stride.defined()) index(stride, "access stride");
    if (active.defined()) {
      if (t.lanes == 1) fail(what, " ", b->name(), ": active lanes on a scalar access");
      index(active, "active lanes");
    }
  }

  void check_for_kind(const Stmt& s) {
    switch (s->for_kind) {
      case ForKind::kVectorized:
        if (stage_ >= VerifyStage::kVectorized) fail("vectorized loop after vectorize");
        break;
      case ForKind::kUnrolled:
        if (stage_ >= VerifyStage::kUnrolled) fail("unrolled loop after unroll");
        break;
      case ForKind::kParallel:
        if (!parallel_loops_ok_) fail("parallel loop inside an outlined region");
        break;
      default:
        break;
    }
  }

  void allocate(const Stmt& s) {
    const BufferRef& b = s->buffer;
    if (b == nullptr) fail("allocate of a null buffer");
    if (b->scope() == BufferScope::kGlobal) fail("allocate of global buffer ", b->name());
    if (buffers_.count(b.get())) fail("buffer ", b->name(), " allocated while in scope");
    for (const auto& d : b->shape()) {
      index(d, "allocated shape");
      if (b->scope() == BufferScope::kLocal && !arith::simplify(d).is_int_imm()) {
        fail("local buffer ", b->name(), " has non-constant dim ", arith::to_string(d));
      }
    }
    buffers_.insert(b.get());
    stmt(s->body);
    buffers_.erase(b.get());
  }

  std::string name_;
  VerifyStage stage_;
  std::unordered_set<arith::VarId> bound_;
  std::unordered_set<const Buffer*> buffers_;
  bool parallel_calls_ok_ = false;
  bool parallel_loops_ok_ = true;
  size_t num_regions_ = 0;
};

}  // namespace

void verify(const PrimFunc& f, VerifyStage stage) {
  Verifier v(f.name, stage);
  if (f.num_inputs > f.params.size()) {
    internal_error(__FILE__, __LINE__,
                   str_cat("verify ", f.name, ": num_inputs ", f.num_inputs, " > ", f.params.size(),
                           " params"));
  }
  v.bind_params(f.params);
  v.stmt(f.body);
}

void verify(const LoweredFunc& f, VerifyStage stage) {
  {
    Verifier v(f.func.name, stage);
    v.bind_params(f.func.params);
    v.allow_parallel_calls(f.regions.size());
    v.stmt(f.func.body);
  }
  for (const ParallelRegion& r : f.regions) {
    Verifier v(str_cat(f.func.name, "/", r.name), stage);
    v.forbid_parallel_loops();
    for (const auto& var : r.captured_vars) v.bind_var(var);
    for (const BufferRef& b : r.captured_buffers) v.add_buffer(b);
    // The loop variable is bound by the region itself.
    v.bind_var(r.loop_var);
    v.stmt(r.body);
  }
}

}  // namespace dynvm::tir
