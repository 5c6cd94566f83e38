// Constant folding through the compiler's own lowering and the VM (see fold_constants.h).
#include "compiler/passes/fold_constants.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/functor.h"
#include "compiler/op/binding.h"
#include "compiler/pipeline.h"
#include "vm/error.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// The output type is fully static and small enough to keep as a constant.
bool foldable_type(const Type& t) {
  if (!t.defined()) return false;
  if (t.kind() == TypeKind::kTuple) {
    if (t->fields.empty()) return false;
    for (const Type& f : t->fields) {
      if (!f.is_tensor() || !foldable_type(f)) return false;
    }
    return true;
  }
  if (!t.is_tensor()) return false;
  int64_t n = 1;
  for (const Dim& d : t->dims) {
    if (!d.is_const() || d.value() <= 0) return false;  // empty values are left alone
    n *= d.value();
    if (n > kMaxFoldedElements) return false;
  }
  return true;
}

// Finds the foldable calls and builds the module that computes them: one parameterless
// function whose lets are those calls (operands: the original constants or earlier
// lets), returning every folded value as a flat tuple of tensors.
class FoldPlanner : public ExprVisitor {
 public:
  explicit FoldPlanner(const TypedModule& typed) : facts_(typed.facts), checks_(typed.checks) {}
  // Nothing to fold at all; no call to compute (the known values need no compile).
  bool empty() const { return lets_.empty() && known_.empty(); }
  bool nothing_to_run() const { return lets_.empty(); }
  size_t size() const { return folded_.size() + known_.size(); }

  Module fold_module() const {
    auto f = std::make_shared<Function>();
    f->name = "fold";
    std::vector<Expr> results;
    for (const Folded& c : folded_) {
      if (c.fields == 0) {
        results.push_back(c.var);
      } else {
        for (size_t k = 0; k < c.fields; ++k)
          results.push_back(make_get_item(c.var, static_cast<int64_t>(k)));
      }
    }
    Expr body = make_tuple(results);
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
      body = make_let(it->first, it->second, body);
    f->body = body;
    Module m;
    m.entry = "fold";
    m.functions.push_back(f);
    return m;
  }

  // The call nodes folded, each with its values (results in fold_module's order).
  std::unordered_map<const ExprNode*, Expr> constants(const std::vector<vm::Value>& results) const {
    std::unordered_map<const ExprNode*, Expr> out = known_;
    size_t next = 0;
    auto take = [&] {
      DYNVM_INTERNAL_CHECK(next < results.size(), "fold_constants: too few results");
      // A deep copy: a result may be a view of the fold program's constants.
      return make_constant(results[next++].as_tensor().copy_to(vm::kCpu));
    };
    for (const Folded& c : folded_) {
      if (c.fields == 0) {
        out[c.call] = take();
      } else {
        std::vector<Expr> fields;
        for (size_t k = 0; k < c.fields; ++k) fields.push_back(take());
        out[c.call] = make_tuple(fields);
      }
    }
    return out;
  }

 private:
  struct Folded {
    const ExprNode* call;
    Expr var;       // its let in the fold module
    size_t fields;  // 0: a tensor; else a tuple of that many tensors
  };

  void visit_binding(const Expr& var, const Expr& value) override {
    visit(value);
    Expr v = resolve(value);
    if (!v.defined() && value.kind() == ExprKind::kCall) v = known_value(var, value);
    if (v.defined()) known_vars_[var->var_id] = v;
  }

  // A call whose operands are not constants but whose value inference knows as numbers: a
  // dim of a Shape that is static (`B, T, D = x.shape` with D = 96 in a model over a
  // symbolic T), arithmetic on such dims. Its constant, needing no kernel; else undefined.
  // Not for calls that check something at run time (dynvm.CheckIndices passes its indices
  // through; a binding with checks of its own): the check must stay.
  Expr known_value(const Expr& var, const Expr& call) {
    if (call->name.rfind("dynvm.", 0) == 0 || checks_.count(var->var_id) != 0) return Expr();
    auto it = facts_.find(var->var_id);
    if (it == facts_.end() || !it->second.value.has_value()) return Expr();
    const Type& t = call.type();
    if (!t.defined() || !t.is_tensor()) return Expr();
    vm::Shape shape;
    for (const Dim& d : t->dims) {
      if (!d.is_const()) return Expr();
      shape.push_back(d.value());
    }
    const std::vector<Dim>& elements = *it->second.value;
    std::vector<int64_t> values;
    for (const Dim& d : elements) {
      if (!d.is_const()) return Expr();
      values.push_back(d.value());
    }
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (numel != static_cast<int64_t>(values.size())) return Expr();
    vm::Tensor constant;
    if (t->dtype == vm::DType::kInt64) {
      constant = vm::Tensor::from_vector(values, shape, t->dtype);
    } else if (t->dtype == vm::DType::kInt32) {
      constant = vm::Tensor::from_vector(std::vector<int32_t>(values.begin(), values.end()), shape,
                                         t->dtype);
    } else if (t->dtype == vm::DType::kBool) {
      constant = vm::Tensor::from_vector(std::vector<uint8_t>(values.begin(), values.end()), shape,
                                         t->dtype);
    } else {
      return Expr();
    }
    Expr c = make_constant(constant);
    known_[call.get()] = c;
    return c;
  }

  void visit_call(const Expr& e) override {
    ExprVisitor::visit_call(e);
    call(e);
  }

  void call(const Expr& e) {
    if (known_calls_.count(e.get())) return;  // a shared node, seen already
    if (e->name.rfind("dynvm.", 0) == 0 || e->operands.empty()) return;
    if (find_op(e->name) == nullptr || find_binding(e->name) == nullptr) return;
    if (!foldable_type(e.type())) return;
    std::vector<Expr> args;
    for (const Expr& o : e->operands) {
      Expr v = resolve(o);
      if (!v.defined()) return;
      args.push_back(v);
    }
    Expr var = make_var("folded_" + std::to_string(folded_.size()));
    lets_.emplace_back(var, make_call(e->name, args, e->attrs));
    const Type& t = e.type();
    folded_.push_back({e.get(), var, t.kind() == TypeKind::kTuple ? t->fields.size() : 0});
    known_calls_[e.get()] = var;
  }

  // The fold module's expression for a value known at compile time, or undefined.
  Expr resolve(const Expr& e) const {
    switch (e.kind()) {
      case ExprKind::kConstant:
        return e;
      case ExprKind::kVar: {
        auto it = known_vars_.find(e->var_id);
        return it != known_vars_.end() ? it->second : Expr();
      }
      case ExprKind::kCall: {
        auto it = known_calls_.find(e.get());
        return it != known_calls_.end() ? it->second : Expr();
      }
      case ExprKind::kTuple: {  // incl. the empty tuple: an absent optional input
        std::vector<Expr> fields;
        for (const Expr& f : e->operands) {
          Expr v = resolve(f);
          if (!v.defined()) return Expr();
          fields.push_back(v);
        }
        return make_tuple(fields);
      }
      case ExprKind::kGetItem: {
        Expr t = resolve(e->operands[0]);
        if (!t.defined()) return Expr();
        if (t.kind() == ExprKind::kTuple) {
          if (static_cast<size_t>(e->index) >= t->operands.size()) return Expr();
          return t->operands[static_cast<size_t>(e->index)];
        }
        return make_get_item(t, e->index);
      }
      default:
        return Expr();
    }
  }

  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  const std::unordered_map<uint64_t, std::vector<RunCheck>>& checks_;
  std::unordered_map<const ExprNode*, Expr> known_;  // calls whose values inference knows
  std::vector<std::pair<Expr, Expr>> lets_;
  std::vector<Folded> folded_;
  std::unordered_map<uint64_t, Expr> known_vars_;
  std::unordered_map<const ExprNode*, Expr> known_calls_;
};

// The module with the folded calls replaced by their constants.
class Substituter : public ExprMutator {
 public:
  explicit Substituter(std::unordered_map<const ExprNode*, Expr> constants)
      : constants_(std::move(constants)) {}

 protected:
  Expr visit_call(const Expr& e) override {
    auto it = constants_.find(e.get());
    return it != constants_.end() ? it->second : ExprMutator::visit_call(e);
  }

 private:
  std::unordered_map<const ExprNode*, Expr> constants_;
};

}  // namespace

PassResult fold_constants(const TypedModule& typed, FoldStats* stats) {
  FoldStats local;
  FoldStats& s = stats != nullptr ? *stats : local;
  FoldPlanner planner(typed);
  planner.visit_module(typed.module);
  if (planner.empty()) return unchanged(typed, "nothing to fold");  // no compile

  std::vector<vm::Value> results;
  if (!planner.nothing_to_run()) {
    try {
      // Static shapes only, so no residue variants: one kernel per op, one LLVM compile.
      LowerOptions options;
      options.residue_variants = false;
      options.rank_schedules = false;  // each kernel runs once
      options.producer = "dynvm fold_constants";
      vm::Executable exe = lower_module(infer_types_with_facts(planner.fold_module()), options);
      vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
      results = machine.run({});
    } catch (const UserError& error) {
      // A binding that refuses a dtype, a kernel that fails on a value: those calls are left
      // for lowering, which reports them where they are. A dynvm bug (InternalError) is not
      // caught: it must not pass for a model that cannot be folded.
      s.error = error.what();
      return unchanged(typed, "nothing folded: " + s.error);
    }
  }
  Substituter substitute(planner.constants(results));
  Module folded = substitute.mutate_module(typed.module);
  s.calls_folded = planner.size();
  // Re-typed so later steps see the folded values as constants; the If decisions and their
  // warnings were made by the first inference and stay.
  TypedModule out = infer_types_with_facts(folded);
  out.warnings = typed.warnings;
  return PassResult(std::move(out), true, str_cat(s.calls_folded, " calls folded"));
}

}  // namespace dynvm::compiler
