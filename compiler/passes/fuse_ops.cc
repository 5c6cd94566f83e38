// Operator fusion (see fuse_ops.h).
#include "compiler/passes/fuse_ops.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/op/binding.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

enum Role : uint8_t { kNone = 0, kAnchor = 1, kFollower = 2 };

// A constant a follower reads as an immediate rather than as a kernel argument.
bool is_immediate(const Expr& e) {
  if (e.kind() != ExprKind::kConstant || e->value.numel() != 1) return false;
  switch (e->value.dtype()) {
    case vm::DType::kFloat32:
    case vm::DType::kFloat64:
    case vm::DType::kInt32:
    case vm::DType::kInt64:
      return true;
    default:
      return false;
  }
}

std::string dims_text(const Type& t) {
  std::string s;
  for (const Dim& d : t->dims) s += to_string(d) + ",";
  return s;
}

// The variables an expression reads, nested bodies included.
class Reads : public ExprVisitor {
 public:
  explicit Reads(std::unordered_set<uint64_t>* out) : out_(out) {}

 protected:
  void visit_var(const Expr& e) override { out_->insert(e->var_id); }

 private:
  std::unordered_set<uint64_t>* out_;
};

void collect_reads(const Expr& e, std::unordered_set<uint64_t>* out) { Reads(out).visit(e); }

using Let = Binding;

struct Group {
  std::vector<size_t> members;  // let indices, in order; members[0] is the anchor
  std::string shape;            // dims_text of the anchor's type
  bool elementwise = false;     // the anchor is itself elementwise (no heavier compute)
};

class Fuser : public ExprMutator {
 public:
  explicit Fuser(const TypedModule& typed) : typed_(typed) {}

  PassResult run() {
    TypedModule out = typed_;
    for (auto& f : out.module.functions) f = mutate_function(f);
    for (auto& f : fused_) out.module.functions.push_back(f);
    // A member's run-time checks (a conv's new output dim must not be negative) hold before
    // the group runs: they are asserted before the fused call, which binds the last member.
    for (const auto& [member, call] : checks_moved_) {
      auto it = out.checks.find(member);
      if (it == out.checks.end()) continue;
      std::vector<RunCheck> moved = std::move(it->second);
      out.checks.erase(it);
      std::vector<RunCheck>& to = out.checks[call];
      to.insert(to.end(), std::make_move_iterator(moved.begin()),
                std::make_move_iterator(moved.end()));
    }
    return PassResult(std::move(out), !fused_.empty(),
                      str_cat(fused_.size(), " groups fused (", fused_calls_, " calls)"));
  }

  // Module functions and Loop bodies; fused groups are left as they are.
  std::shared_ptr<const Function> mutate_function(
      const std::shared_ptr<const Function>& f) override {
    if (f->primitive) return f;
    for (const Expr& p : f->params) types_[p->var_id] = p.type();
    return ExprMutator::mutate_function(f);
  }

 protected:
  // A let chain: nested bodies first (the base rewrites each binding), then the chain's
  // own groups.
  Expr visit_let(const Expr& e) override {
    RewrittenChain r = rewrite_let_chain(e);
    std::vector<Let>& lets = r.chain.bindings;
    std::vector<Group> groups = find_groups(lets);
    cut_back(lets, r.chain.body, &groups);
    if (std::none_of(groups.begin(), groups.end(),
                     [](const Group& g) { return g.members.size() >= 2; })) {
      return r.changed ? make_let_chain(lets, r.chain.body) : e;
    }
    std::unordered_map<size_t, const Group*> last_of;
    std::unordered_set<size_t> inner;
    for (const Group& g : groups) {
      if (g.members.size() < 2) continue;
      last_of[g.members.back()] = &g;
      for (size_t k = 0; k + 1 < g.members.size(); ++k) {
        inner.insert(g.members[k]);
        checks_moved_.emplace_back(lets[g.members[k]].var->var_id,
                                   lets[g.members.back()].var->var_id);
      }
    }
    std::vector<Let> out;
    for (size_t i = 0; i < lets.size(); ++i) {
      if (inner.count(i)) continue;
      auto g = last_of.find(i);
      out.push_back(
          {lets[i].var, g == last_of.end() ? lets[i].value : fused_call(lets, *g->second)});
    }
    return make_let_chain(out, r.chain.body);
  }

  Binding rewrite_binding(const Expr& var, const Expr& value) override {
    Expr v = mutate(value);
    types_[var->var_id] = var.type();
    return {var, v};
  }

 private:
  ValueFacts facts_of(const Expr& operand) const { return operand_facts(typed_, types_, operand); }

  // What a let-bound call can be in a group: its binding, instantiated for its types, says
  // whether the kernel takes an epilogue (anchor) and whether it is elementwise (follower).
  uint8_t role(const Let& let) {
    const Expr& e = let.value;
    if (e.kind() != ExprKind::kCall || !e.type().is_tensor()) return kNone;
    // dynvm's own ops check or compute shapes, except pack_weights' matmul and
    // block_channels' conv.
    if (e->name.rfind("dynvm.", 0) == 0 && e->name != "dynvm.MatMulPackedB" &&
        e->name != "dynvm.ConvBlocked") {
      return kNone;
    }
    auto known = typed_.facts.find(let.var->var_id);
    if (known != typed_.facts.end() && known->second.value) return kNone;  // a host value
    // A fused function's body reads only its parameters and constants: a call whose operand
    // is a nested expression (the recurrent cells build `Add(MatMul(..), MatMul(..))`) stays
    // out of groups.
    for (const Expr& o : e->operands) {
      const bool absent = o.kind() == ExprKind::kTuple && o->operands.empty();
      if (o.kind() != ExprKind::kVar && o.kind() != ExprKind::kConstant && !absent) return kNone;
    }
    const BindFn* bind = find_binding(e->name);
    if (bind == nullptr) return kNone;
    try {
      std::vector<ValueFacts> inputs;
      for (const Expr& a : e->operands) inputs.push_back(facts_of(a));
      KernelBinding b = (*bind)(BindContext(e->name, e->attrs, inputs, {e.type()}));
      if (b.kind != LoweringKind::kKernel) return kNone;
      std::vector<ops::TensorType> types;
      for (size_t i : b.args) {
        if (i >= inputs.size() || inputs[i].absent()) return kNone;
        types.push_back(kernel_type(inputs[i].type, e->name));
      }
      ops::OpInstance op = b.build(types);
      uint8_t r = kNone;
      if (op.with_epilogue && op.outputs.size() == 1) r |= kAnchor;
      if (op.elementwise) r |= kFollower;
      return r;
    } catch (const UserError&) {
      return kNone;  // lowering reports it
    }
  }

  std::vector<Group> find_groups(const std::vector<Let>& lets) {
    std::vector<Group> groups;
    std::unordered_map<uint64_t, size_t> group_of;  // member var -> group
    for (size_t i = 0; i < lets.size(); ++i) {
      const uint8_t r = role(lets[i]);
      if (r == kNone) continue;
      const Expr& call = lets[i].value;
      if (r & kFollower) {
        std::set<size_t> read;
        for (const Expr& o : call->operands) {
          if (o.kind() != ExprKind::kVar) continue;
          auto it = group_of.find(o->var_id);
          if (it != group_of.end()) read.insert(it->second);
        }
        // Of the groups it reads with its own shape, it joins one whose anchor computes
        // more than an elementwise op (a matmul's scores plus a mask), else the latest; the
        // values of the others are its inputs (cut_back ends their groups at them).
        std::optional<size_t> join;
        for (size_t g : read) {
          if (groups[g].shape != dims_text(call.type())) continue;
          if (!join || groups[*join].elementwise || !groups[g].elementwise) join = g;
        }
        if (join) {
          groups[*join].members.push_back(i);
          group_of[lets[i].var->var_id] = *join;
          continue;
        }
      }
      if (r & kAnchor) {
        group_of[lets[i].var->var_id] = groups.size();
        groups.push_back({{i}, dims_text(call.type()), (r & kFollower) != 0});
      }
    }
    return groups;
  }

  // Every member but the last must be read only inside its group: drop members from the end
  // until that holds (a dropped member is an ordinary call again).
  static void cut_back(const std::vector<Let>& lets, const Expr& result,
                       std::vector<Group>* groups) {
    std::vector<std::unordered_set<uint64_t>> reads(lets.size());
    for (size_t i = 0; i < lets.size(); ++i) collect_reads(lets[i].value, &reads[i]);
    std::unordered_set<uint64_t> result_reads;
    collect_reads(result, &result_reads);
    for (Group& g : *groups) {
      while (g.members.size() > 1) {
        std::unordered_set<size_t> in(g.members.begin(), g.members.end());
        bool escapes = false;
        for (size_t k = 0; k + 1 < g.members.size() && !escapes; ++k) {
          const uint64_t v = lets[g.members[k]].var->var_id;
          escapes = result_reads.count(v) > 0;
          for (size_t j = g.members[k] + 1; j < lets.size() && !escapes; ++j) {
            escapes = !in.count(j) && reads[j].count(v) > 0;
          }
        }
        if (!escapes) break;
        g.members.pop_back();
      }
    }
  }

  // The group as a primitive function and the call of it that replaces its last member.
  Expr fused_call(const std::vector<Let>& lets, const Group& g) {
    auto f = std::make_shared<Function>();
    f->primitive = true;
    std::vector<Expr> args;
    std::unordered_map<uint64_t, Expr> renamed;        // caller var -> fused function var
    std::unordered_map<const ExprNode*, Expr> lifted;  // caller constant -> parameter
    auto param = [&](const Expr& caller_value, const std::string& name) {
      Type t = caller_value.type();
      if (caller_value.kind() == ExprKind::kVar) t = types_.at(caller_value->var_id);
      Expr p = make_var(name, t);
      f->params.push_back(p);
      args.push_back(caller_value);
      return p;
    };
    std::vector<std::pair<Expr, Expr>> body;
    for (size_t k = 0; k < g.members.size(); ++k) {
      const Let& let = lets[g.members[k]];
      std::vector<Expr> operands;
      for (const Expr& o : let.value->operands) {
        if (o.kind() == ExprKind::kVar) {
          auto it = renamed.find(o->var_id);
          if (it == renamed.end()) it = renamed.emplace(o->var_id, param(o, o->name)).first;
          operands.push_back(it->second);
        } else if (o.kind() == ExprKind::kConstant && !(k > 0 && is_immediate(o))) {
          auto it = lifted.find(o.get());
          if (it == lifted.end()) it = lifted.emplace(o.get(), param(o, "c")).first;
          operands.push_back(it->second);
        } else {
          operands.push_back(o);  // a follower's scalar constant, or an absent input
        }
      }
      Expr v = make_var(let.var->name, let.var.type());
      renamed[let.var->var_id] = v;
      body.emplace_back(v,
                        make_call(let.value->name, operands, let.value->attrs, let.value.type()));
    }
    Expr out = body.back().first;
    for (auto it = body.rbegin(); it != body.rend(); ++it)
      out = make_let(it->first, it->second, out);
    f->body = out;
    f->result_type = lets[g.members.back()].var.type();
    f->name = "fused" + std::to_string(fused_.size()) + "_" + lets[g.members[0]].value->name +
              "_x" + std::to_string(g.members.size());
    fused_.push_back(f);
    fused_calls_ += g.members.size();
    return make_call_function(f->name, args, f->result_type);
  }

  const TypedModule& typed_;
  std::unordered_map<uint64_t, Type> types_;
  std::vector<std::shared_ptr<const Function>> fused_;
  size_t fused_calls_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> checks_moved_;  // member var -> fused call's var
};

}  // namespace

PassResult fuse_ops(const TypedModule& typed) { return Fuser(typed).run(); }

}  // namespace dynvm::compiler
