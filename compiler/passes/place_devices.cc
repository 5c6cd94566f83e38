// Device placement (see place_devices.h). One walk over the entry function in the order
// lowering emits it, so that every decision lowering needs is made here.
#include "compiler/passes/place_devices.h"

#include <algorithm>
#include <string>

#include "compiler/ir/functor.h"
#include "compiler/op/binding.h"
#include "compiler/op/ops_sequence.h"
#include "vm/error.h"

namespace dynvm::compiler {

vm::Device Placement::device_of(uint64_t var_id, size_t field) const {
  auto it = devices.find(var_id);
  DYNVM_INTERNAL_CHECK(it != devices.end() && field < it->second.size(), "variable ", var_id,
                       " (field ", field, ") has no placement");
  return it->second[field];
}

const std::vector<vm::Device>& Placement::copies_after(uint64_t var_id, size_t field) const {
  static const std::vector<vm::Device> kNone;
  auto it = copies.find({var_id, field});
  return it == copies.end() ? kNone : it->second;
}

bool Placement::copied_at_read(const ExprNode* operand, vm::Device to) const {
  auto it = read_copies.find(operand);
  return it != read_copies.end() &&
         std::find(it->second.begin(), it->second.end(), to) != it->second.end();
}

const JoinCopies* Placement::join(const ExprNode* node) const {
  auto it = joins.find(node);
  return it == joins.end() ? nullptr : &it->second;
}

size_t Placement::num_copies() const {
  size_t n = 0;
  for (const auto& [key, to] : copies) n += to.size();
  for (const auto& [node, to] : read_copies) n += to.size();
  for (const auto& [node, j] : joins) {
    for (const auto* side : {&j.first, &j.second}) {
      n += static_cast<size_t>(
          std::count_if(side->begin(), side->end(), [](const auto& d) { return d.has_value(); }));
    }
  }
  return n;
}

namespace {

// A value's placement: one device per register. `unreachable`: a dynvm.Unreachable result,
// never written, so an If joining it takes the other branch's placement.
struct Placed {
  std::vector<vm::Device> fields;
  bool unreachable = false;
  vm::Device one() const {
    DYNVM_INTERNAL_CHECK(fields.size() == 1, "a tuple used as one value");
    return fields[0];
  }
};

void add_unique(std::vector<vm::Device>* to, vm::Device d) {
  if (std::find(to->begin(), to->end(), d) == to->end()) to->push_back(d);
}

// Each visit returns where the expression's value lives; `where` names the binding for
// messages, `bound_var` is the let variable the expression is bound to (0: none).
class Placer : public ExprFunctor<Placed(const Expr&, const std::string&, uint64_t)> {
 public:
  Placer(const TypedModule& typed, vm::Device kernel_device) : typed_(typed) {
    out_.kernel_device = kernel_device;
  }

  Placement run() {
    const Module& m = typed_.module;
    const Function* entry = m.find_function(m.entry);
    if (entry == nullptr) user_error("the module has no function @", m.entry);
    // Inputs arrive from the caller (vmrun, the e2e harness) as host tensors.
    for (const Expr& p : entry->params) bind(p, Placed{{vm::kCpu}});
    expr(entry->body, "@" + entry->name);
    return std::move(out_);
  }

 protected:
  void visit_binding(const Expr& var, const Expr& value, const std::string&, uint64_t) override {
    bind(var, visit(value, "%" + var->name, var->var_id));
  }
  Placed visit_var(const Expr& e, const std::string&, uint64_t) override {
    auto it = out_.devices.find(e->var_id);
    DYNVM_INTERNAL_CHECK(it != out_.devices.end(), "unplaced %", e->name);
    return Placed{it->second, unreachable_.count(e->var_id) != 0};
  }
  // The executable's constant table is host memory.
  Placed visit_constant(const Expr&, const std::string&, uint64_t) override {
    return Placed{{vm::kCpu}};
  }
  Placed visit_tuple(const Expr& e, const std::string& where, uint64_t) override {
    Placed t;
    for (const Expr& f : e->operands) t.fields.push_back(expr(f, where).one());
    return t;
  }
  Placed visit_get_item(const Expr& e, const std::string& where, uint64_t) override {
    Placed t = expr(e->operands[0], where);
    DYNVM_INTERNAL_CHECK(static_cast<size_t>(e->index) < t.fields.size(), where,
                         ": get_item of a non-tuple");
    return Placed{{t.fields[static_cast<size_t>(e->index)]}, t.unreachable};
  }

 private:
  vm::Device kernel() const { return out_.kernel_device; }

  void bind(const Expr& var, const Placed& value) {
    out_.devices[var->var_id] = value.fields;
    types_[var->var_id] = var.type();
    if (value.unreachable) unreachable_.insert(var->var_id);
  }

  // An operand's placement (not a binding's value).
  Placed expr(const Expr& e, const std::string& where) { return visit(e, where, 0); }

  // `operand` is read on `reader`: where it lives elsewhere, a copy. A variable (or a field
  // of one) is copied once, right after it is bound, so every reader in its scope shares
  // the copy; anything else is evaluated at its read and copied there.
  void read(const Expr& operand, vm::Device reader, const std::string& where) {
    const vm::Device lives = expr(operand, where).one();
    if (lives == reader) return;
    if (operand.kind() == ExprKind::kVar) {
      add_unique(&out_.copies[{operand->var_id, 0}], reader);
    } else if (operand.kind() == ExprKind::kGetItem &&
               operand->operands[0].kind() == ExprKind::kVar) {
      add_unique(&out_.copies[{operand->operands[0]->var_id, static_cast<size_t>(operand->index)}],
                 reader);
    } else {
      add_unique(&out_.read_copies[operand.get()], reader);
    }
  }

  // The rule lowering's `call` follows: a fully known value is computed on the host.
  bool known_on_host(const Expr& e, uint64_t bound_var) const {
    if (bound_var == 0 || e.type().kind() == TypeKind::kTuple || !e.type().is_tensor())
      return false;
    auto known = typed_.facts.find(bound_var);
    return known != typed_.facts.end() && known->second.value &&
           std::none_of(known->second.value->begin(), known->second.value->end(),
                        [](const Dim& d) { return d.is_any(); });
  }

  Placed on_kernel_device(size_t n) const { return Placed{std::vector<vm::Device>(n, kernel())}; }

  Placed visit_call(const Expr& e, const std::string& where_binding, uint64_t bound_var) override {
    const std::string where = where_binding + " = " + e->name;
    const bool tuple = e.type().kind() == TypeKind::kTuple;
    const std::vector<Type> outputs = tuple ? e.type()->fields : std::vector<Type>{e.type()};
    if (e->name == "dynvm.Unreachable") {
      Placed never = on_kernel_device(outputs.size());
      never.unreachable = true;
      return never;
    }
    if (known_on_host(e, bound_var)) {
      out_.host_computed.insert(bound_var);
      return Placed{{vm::kCpu}};
    }
    if (is_container_op(e->name)) return container_op(e, where);
    const BindFn* bind_fn = find_binding(e->name);
    // No binding: lowering refuses the call, naming it; its placement is never used.
    if (bind_fn == nullptr) return on_kernel_device(outputs.size());
    std::vector<ValueFacts> inputs;
    for (const Expr& a : e->operands) inputs.push_back(operand_facts(typed_, types_, a));
    KernelBinding b = (*bind_fn)(BindContext(where, e->attrs, inputs, outputs));
    switch (b.kind) {
      case LoweringKind::kAlias:
      case LoweringKind::kView:  // the same data, so the same device
        return Placed{{expr(e->operands.at(0), where).one()}};
      case LoweringKind::kRowView:  // the same data; the row's index is read on the host
        read(e->operands.at(1), vm::kCpu, where);
        return Placed{{expr(e->operands.at(0), where).one()}};
      case LoweringKind::kHost:  // refused by lowering (its value is not known)
        return Placed{{vm::kCpu}};
      case LoweringKind::kKernel:
        break;
    }
    for (size_t i : b.args) {
      if (i < e->operands.size() && !inputs[i].absent()) read(e->operands[i], kernel(), where);
    }
    return on_kernel_device(outputs.size());
  }

  // Sequences and optionals (op/ops_sequence.h) are tuples the host builds and reads: they
  // live on the host, positions are read there; an element taken out of one is taken to
  // live on the kernel device (where the kernels that made it wrote it).
  Placed container_op(const Expr& e, const std::string& where) {
    const std::string& op = e->name;
    size_t position = op == "SequenceAt"       ? 1
                      : op == "SequenceInsert" ? 2
                      : op == "SequenceErase"  ? 1
                                               : 0;
    if (position != 0 && position < e->operands.size() &&
        !(e->operands[position].kind() == ExprKind::kTuple &&
          e->operands[position]->operands.empty())) {
      read(e->operands[position], vm::kCpu, where);
    }
    if (op == "SequenceLength" || op == "OptionalHasElement") return Placed{{vm::kCpu}};
    if (e.type().is_tensor()) return on_kernel_device(1);
    return Placed{{vm::kCpu}};
  }

  // A fused group is one kernel: its arguments are read on the kernel device (every operand
  // a kernel argument or a scalar the kernel inlines, which is never read at run time), and
  // the values inside it never leave the kernel.
  Placed visit_call_function(const Expr& e, const std::string& where_binding, uint64_t) override {
    const Function* callee = typed_.module.find_function(e->name);
    // Not a fused group: lowering refuses calls of other functions.
    if (callee == nullptr || !callee->primitive) return on_kernel_device(1);
    const std::string where = where_binding + " = @" + callee->name;
    for (const Expr& a : e->operands) read(a, kernel(), where);
    for (const Binding& b : flatten_lets(callee->body).bindings) {
      out_.devices[b.var->var_id] = {kernel()};
    }
    return on_kernel_device(1);
  }

  // Where both branches' results go: the device they share; else the kernel device, the
  // one side that could be read by kernels without a copy in the hot path.
  std::vector<vm::Device> joined(const Placed& a, const Placed& b, const std::string& where) {
    DYNVM_INTERNAL_CHECK(a.fields.size() == b.fields.size(), where,
                         ": branches of different arity");
    if (a.unreachable) return b.fields;
    if (b.unreachable) return a.fields;
    std::vector<vm::Device> out;
    for (size_t k = 0; k < a.fields.size(); ++k) {
      out.push_back(a.fields[k] == b.fields[k] ? a.fields[k] : kernel());
    }
    return out;
  }

  // Per field: the device to copy to, where `from` does not already live at `to`.
  static std::vector<std::optional<vm::Device>> copies_into(const Placed& from,
                                                            const std::vector<vm::Device>& to) {
    std::vector<std::optional<vm::Device>> out(to.size());
    if (from.unreachable) return out;  // never written, nothing to copy
    for (size_t k = 0; k < to.size(); ++k) {
      if (from.fields[k] != to[k]) out[k] = to[k];
    }
    return out;
  }

  Placed visit_if(const Expr& e, const std::string& where, uint64_t) override {
    read(e->operands[0], vm::kCpu, where);  // lowering's LoadScalar reads it on the host
    Placed then_value = expr(e->operands[1], where);
    Placed else_value = expr(e->operands[2], where);
    Placed result{joined(then_value, else_value, where),
                  then_value.unreachable && else_value.unreachable};
    out_.joins[e.get()] =
        JoinCopies{copies_into(then_value, result.fields), copies_into(else_value, result.fields)};
    return result;
  }

  // The body is placed with each carried value where its initial value lives; a carried
  // value the body returns from elsewhere moves to the kernel device and the body is placed
  // again (at most once per carried value: host -> kernel device is the only change).
  Placed visit_loop(const Expr& e, const std::string& where, uint64_t) override {
    const Function& body = *e->body;
    if (loop_max_trip(e).defined()) read(loop_max_trip(e), vm::kCpu, where);  // LoadScalar
    if (loop_cond(e).defined()) read(loop_cond(e), vm::kCpu, where);
    Placed init;
    for (const Expr& c : loop_carried(e)) init.fields.push_back(expr(c, where).one());
    std::vector<vm::Device> carried = init.fields;
    const size_t scans = static_cast<size_t>(e->index);
    Placed out;
    for (;;) {
      Placement before = out_;
      // The iteration number and condition are made on the host (ShapeTensor).
      bind(body.params[0], Placed{{vm::kCpu}});
      bind(body.params[1], Placed{{vm::kCpu}});
      for (size_t k = 0; k < carried.size(); ++k) bind(body.params[k + 2], Placed{{carried[k]}});
      out = expr(body.body, where + " (loop body)");
      DYNVM_INTERNAL_CHECK(out.fields.size() == 1 + carried.size() + scans, where,
                           ": the loop body returns ", out.fields.size(), " values");
      bool changed = false;
      for (size_t k = 0; k < carried.size(); ++k) {
        if (!out.unreachable && out.fields[1 + k] != carried[k] && carried[k] != kernel()) {
          carried[k] = kernel();
          changed = true;
        }
      }
      if (!changed) break;
      out_ = std::move(before);
    }
    // Body results: cond' read on the host, carried' into the carried registers, scan
    // elements read by the stacking kernel on the kernel device.
    std::vector<vm::Device> targets{vm::kCpu};
    targets.insert(targets.end(), carried.begin(), carried.end());
    targets.insert(targets.end(), scans, kernel());
    out_.joins[e.get()] = JoinCopies{copies_into(init, carried), copies_into(out, targets)};
    Placed result{carried};
    result.fields.insert(result.fields.end(), scans, kernel());  // stacked by a kernel
    return result;
  }

  const TypedModule& typed_;
  Placement out_;
  std::unordered_map<uint64_t, Type> types_;
  std::unordered_set<uint64_t> unreachable_;
};

}  // namespace

Placement place_devices(const TypedModule& typed, vm::Device kernel_device) {
  return Placer(typed, kernel_device).run();
}

namespace {

// The entry's variables in binding order (parameters, lets, Loop body parameters).
class BoundVars : public ExprVisitor {
 public:
  std::vector<Expr> vars;
  void visit_function(const Function& f) override {
    for (const Expr& p : f.params) vars.push_back(p);
    ExprVisitor::visit_function(f);
  }

 protected:
  void visit_binding(const Expr& var, const Expr& value) override {
    visit(value);
    vars.push_back(var);
  }
};

std::string devices_text(const std::vector<vm::Device>& devices) {
  std::string out;
  for (const vm::Device& d : devices) out += (out.empty() ? "" : ", ") + vm::device_name(d);
  return out;
}

}  // namespace

std::string print_placement(const Placement& placement, const Module& module) {
  const Function* entry = module.find_function(module.entry);
  if (entry == nullptr) return "(no entry function)\n";
  BoundVars bound;
  bound.visit_function(*entry);
  std::string out = str_cat("kernel device ", vm::device_name(placement.kernel_device), "\n");
  for (const Expr& v : bound.vars) {
    auto it = placement.devices.find(v->var_id);
    if (it == placement.devices.end()) continue;
    out += str_cat("%", v->name, " (", v->var_id, "): ", devices_text(it->second));
    if (placement.computed_on_host(v->var_id)) out += ", computed on the host";
    for (size_t k = 0; k < it->second.size(); ++k) {
      const std::vector<vm::Device>& to = placement.copies_after(v->var_id, k);
      if (!to.empty()) out += str_cat(", field ", k, " copied to ", devices_text(to));
    }
    out += "\n";
  }
  return out;
}

}  // namespace dynvm::compiler
