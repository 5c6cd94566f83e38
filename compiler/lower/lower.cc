// Lowering a typed module to an executable (see lower.h).
#include "compiler/lower/lower.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/fused_kernel.h"
#include "compiler/lower/shape_code.h"
#include "compiler/op/binding.h"
#include "compiler/op/ops_sequence.h"
#include "kernels/arith/printer.h"
#include "kernels/arith/simplify.h"
#include "kernels/dispatch/kernel_set.h"
#include "kernels/ops/elementwise.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// A Device operand as the bytecode encodes it (vm/opcodes.h): (device type << 32) | id.
int64_t device_operand(vm::Device d) {
  return (int64_t{static_cast<int32_t>(d.type)} << 32) | int64_t{d.id};
}

// A value at run time: one register, or (for a tuple the compiler tracks) several.
struct Regs {
  std::vector<uint32_t> regs;
  bool is_tuple = false;
  uint32_t one() const {
    DYNVM_INTERNAL_CHECK(!is_tuple && regs.size() == 1, "a tuple used as one value");
    return regs[0];
  }
};

// How a Loop body reads its iteration number and condition, scalar tensors to ONNX. A body
// that reads the number only as the index of rows (Gather along axis 0: a row view, which
// reads its index on the host) and returns the condition as it came needs neither tensor:
// lowering hands those reads the loop's integer registers (two tensors made and read back
// every step otherwise).
class LoopParamUses : public ExprVisitor {
 public:
  explicit LoopParamUses(const Function& body)
      : t_(body.params[0]->var_id), go_(body.params[1]->var_id) {
    visit_function(body);
    Expr result = body.body;
    while (result.kind() == ExprKind::kLet) result = result->operands[2];
    const bool returns_go = result.kind() == ExprKind::kTuple && !result->operands.empty() &&
                            is_var(result->operands[0], go_);
    go_passed_through_ = returns_go && go_reads_ == 1;
  }
  bool t_only_indexes_rows() const { return t_other_reads_ == 0; }
  bool go_passed_through() const { return go_passed_through_; }

 protected:
  void visit_var(const Expr& e) override {
    t_other_reads_ += e->var_id == t_;
    go_reads_ += e->var_id == go_;
  }
  void visit_call(const Expr& e) override {
    if (e->name == "Gather" && e->operands.size() == 2 && is_var(e->operands[1], t_) &&
        attr_int(e->attrs, "axis", 0, "Gather") == 0) {
      visit(e->operands[0]);
      return;
    }
    visit_operands(e);
  }

 private:
  static bool is_var(const Expr& e, uint64_t id) {
    return e.kind() == ExprKind::kVar && e->var_id == id;
  }
  uint64_t t_, go_;
  size_t t_other_reads_ = 0, go_reads_ = 0;
  bool go_passed_through_ = false;
};

// Each visit lowers an expression and returns the registers of its value; `where` names
// the binding for messages, `bound_var` is the let variable the expression is bound to (0:
// none), whose facts inference kept.
class FunctionLowering : public ExprFunctor<Regs(const Expr&, const std::string&, uint64_t)> {
 public:
  FunctionLowering(const TypedModule& typed, const Placement& placement, vm::Executable* exe,
                   std::vector<KernelRequest>* kernels)
      : typed_(typed),
        placement_(placement),
        exe_(exe),
        kernels_(kernels),
        shapes_(&code_, &next_reg_) {
    shapes_.set_resolver([this](const arith::Var& v) { return read_symbol(v); });
  }

  vm::Function lower(const Function& f) {
    for (const Expr& p : f.params) {
      uint32_t r = next_reg_++;
      values_[p->var_id] = Regs{{r}, false};
      types_[p->var_id] = p.type();
    }
    bind_dims(f);
    Regs result = expr(f.body, "@" + f.name);
    // A single sequence or optional (a VM tuple itself) is returned in a tuple of one, so
    // that a tuple result always means one value per output (VirtualMachine::run).
    const bool container = f.result_type.is_sequence() || f.result_type.is_optional();
    uint32_t out = result.is_tuple || container ? tuple_register(result) : result.one();
    code_.push_back({vm::Opcode::Ret, {out}});
    vm::Function fn;
    fn.name = f.name;
    fn.num_params = static_cast<uint32_t>(f.params.size());
    fn.code = std::move(code_);
    fn.num_registers = next_reg_;  // memory planning and frees come after (lower_module)
    return fn;
  }

 private:
  // Each symbolic dim is read once from the first input that has it alone as a dim.
  void bind_dims(const Function& f) {
    for (size_t i = 0; i < f.params.size(); ++i) {
      const Type& t = f.params[i].type();
      if (!t.is_tensor()) continue;
      for (size_t axis = 0; axis < t->dims.size(); ++axis) {
        const Dim& d = t->dims[axis];
        if (d.is_any() || d.expr().kind() != arith::ExprKind::kVar) continue;
        if (shapes_.is_bound(d.expr()->var_id)) continue;
        uint32_t r = next_reg_++;
        code_.push_back(
            {vm::Opcode::Dim, {r, static_cast<int64_t>(i), static_cast<int64_t>(axis)}});
        shapes_.bind(arith::Var(d.expr()), r);
      }
    }
    // Inputs arrive on the host; those kernels on another device read are copied there
    // once, here at entry (place_devices).
    for (const Expr& p : f.params) copy_after_binding(p->var_id, values_.at(p->var_id));
  }

  // A run-time symbol (passes/pass.h) read from its value, which is in scope wherever a
  // type mentions the symbol: a dim of its shape, or an element read on the host.
  std::optional<uint32_t> read_symbol(const arith::Var& v) {
    auto it = typed_.runtime_symbols.find(v.id());
    if (it == typed_.runtime_symbols.end()) return std::nullopt;
    const RuntimeSymbol& s = it->second;
    auto value = values_.find(s.var_id);
    DYNVM_INTERNAL_CHECK(value != values_.end() && s.field < value->second.regs.size(),
                         "the run-time symbol ", v.name(), " is read outside its value's scope");
    uint32_t tensor = value->second.regs[s.field];
    uint32_t r = next_reg_++;
    if (s.kind == RuntimeSymbol::Kind::kDim) {
      code_.push_back({vm::Opcode::Dim, {r, tensor, s.index}});
      return r;
    }
    // Read on the host: a value a kernel left on another device is copied first (inputs
    // and host-computed values, which the placement may not list, are on the host).
    auto placed = placement_.devices.find(s.var_id);
    if (placed != placement_.devices.end() && s.field < placed->second.size() &&
        placed->second[s.field].type != vm::DeviceType::kCPU) {
      tensor = device_copy(tensor, vm::kCpu);
    }
    code_.push_back({vm::Opcode::LoadElem, {r, tensor, s.index}});
    return r;
  }

  // The conditions binding `var_id` needs (inference's RunChecks), asserted before it runs.
  void assert_checks(uint64_t var_id) {
    auto it = typed_.checks.find(var_id);
    if (it == typed_.checks.end()) return;
    for (const RunCheck& c : it->second) {
      uint32_t ok = shapes_.emit(c.condition);
      const size_t text = exe_->strings.size();
      exe_->strings.push_back(c.message);
      code_.push_back({vm::Opcode::Assert, {ok, static_cast<int64_t>(text)}});
    }
  }

  uint32_t tuple_register(const Regs& t) {
    uint32_t r = next_reg_++;
    std::vector<int64_t> args{r};
    for (uint32_t x : t.regs) args.push_back(x);
    code_.push_back({vm::Opcode::AllocTuple, args});
    return r;
  }

  // An operand's registers (not a binding's value).
  Regs expr(const Expr& e, const std::string& where) { return visit(e, where, 0); }

 protected:
  // A let binding: its value's registers become the variable's.
  void visit_binding(const Expr& var, const Expr& value, const std::string&, uint64_t) override {
    assert_checks(var->var_id);
    Regs r = visit(value, "%" + var->name, var->var_id);
    values_[var->var_id] = r;
    types_[var->var_id] = var.type();
    copy_after_binding(var->var_id, r);
  }
  Regs visit_var(const Expr& e, const std::string&, uint64_t) override {
    auto it = values_.find(e->var_id);
    DYNVM_INTERNAL_CHECK(it != values_.end(), "unbound %", e->name);
    return it->second;
  }
  Regs visit_constant(const Expr& e, const std::string&, uint64_t) override {
    return Regs{{constant(e->value)}, false};
  }
  Regs visit_tuple(const Expr& e, const std::string& where, uint64_t) override {
    Regs t{{}, true};
    for (const Expr& f : e->operands) t.regs.push_back(expr(f, where).one());
    return t;
  }
  Regs visit_get_item(const Expr& e, const std::string& where, uint64_t) override {
    Regs t = expr(e->operands[0], where);
    DYNVM_INTERNAL_CHECK(t.is_tuple && static_cast<size_t>(e->index) < t.regs.size(), where,
                         ": get_item of a non-tuple");
    return Regs{{t.regs[static_cast<size_t>(e->index)]}, false};
  }
  Regs visit_call_function(const Expr& e, const std::string& where, uint64_t) override {
    const Function* callee = typed_.module.find_function(e->name);
    if (callee == nullptr || !callee->primitive) {
      user_error(where, ": calls of other functions are not lowered yet");
    }
    return fused_call(e, *callee, where);
  }

 private:
  uint32_t constant(const vm::Tensor& t) {
    auto it = constant_index_.find(t.data());
    size_t index;
    if (it != constant_index_.end()) {
      index = it->second;
    } else {
      index = exe_->constants.size();
      exe_->constants.push_back(t);
      constant_index_[t.data()] = index;
    }
    uint32_t r = next_reg_++;
    code_.push_back({vm::Opcode::LoadConst, {r, static_cast<int64_t>(index)}});
    return r;
  }

  // The facts of an operand: what inference recorded for a let-bound variable, the value of
  // a constant, or the bare type.
  ValueFacts facts_of(const Expr& operand) const { return operand_facts(typed_, types_, operand); }

  // Registers holding a shape value for `t`'s dims.
  uint32_t shape_of(const Type& t, const std::string& where) {
    std::vector<int64_t> dims;
    for (const Dim& d : t->dims) {
      if (d.is_any()) user_error(where, ": the output shape ", to_string(t), " is not known");
      dims.push_back(shapes_.emit(d.expr()));
    }
    return shapes_.emit_shape(dims);
  }

  uint32_t alloc(const Type& t, const std::string& where) {
    uint32_t shape = shape_of(t, where);
    arith::Expr bytes = arith::make_int(static_cast<int64_t>(vm::dtype_size(t->dtype)));
    for (const Dim& d : t->dims) bytes = bytes * d.expr();
    uint32_t size = shapes_.emit(arith::simplify(bytes));
    uint32_t storage = next_reg_++, offset = shapes_.emit(arith::make_int(0)), out = next_reg_++;
    // Only kernels write what is allocated here: it lives on the kernel device.
    code_.push_back(
        {vm::Opcode::AllocStorage, {storage, size, device_operand(placement_.kernel_device)}});
    code_.push_back(
        {vm::Opcode::AllocTensor, {out, storage, offset, shape, static_cast<int64_t>(t->dtype)}});
    return out;
  }

  // A value known at compile time as dims: a constant when every element is one, else
  // integers computed on the host and made into an i64 tensor.
  uint32_t host_value(const Type& t, const std::vector<Dim>& value, const std::string& where) {
    bool all_const =
        std::all_of(value.begin(), value.end(), [](const Dim& d) { return d.is_const(); });
    std::vector<int64_t> shape;
    for (const Dim& d : t->dims) shape.push_back(d.value());
    if (all_const) {
      vm::Tensor c = vm::Tensor::empty(shape, t->dtype);
      for (size_t k = 0; k < value.size(); ++k) store_integer(c, k, value[k].value());
      return constant(c);
    }
    if (t->dtype != vm::DType::kInt64 && t->dtype != vm::DType::kInt32 &&
        t->dtype != vm::DType::kBool) {
      user_error(where, ": a ", vm::dtype_name(t->dtype),
                 " value computed on the host is not supported (i64, i32 and bool are)");
    }
    std::vector<int64_t> args{0};
    for (const Dim& d : value) args.push_back(shapes_.emit(d.expr()));
    uint32_t s = next_reg_++;
    args[0] = s;
    code_.push_back({vm::Opcode::MakeShape, args});
    uint32_t r = next_reg_++;
    code_.push_back(
        {vm::Opcode::ShapeTensor, {r, s, shape.empty() ? 0 : 1, static_cast<int64_t>(t->dtype)}});
    if (shape.size() <= 1) return r;
    uint32_t view = next_reg_++;  // rank >= 2: a view of the flat values
    code_.push_back({vm::Opcode::ReshapeView, {view, r, shape_of(t, where)}});
    return view;
  }

  static void store_integer(vm::Tensor& t, size_t k, int64_t v) {
    switch (t.dtype()) {
      case vm::DType::kInt64:
        t.data_as<int64_t>()[k] = v;
        break;
      case vm::DType::kInt32:
        t.data_as<int32_t>()[k] = static_cast<int32_t>(v);
        break;
      case vm::DType::kBool:
        t.data_as<uint8_t>()[k] = v != 0;
        break;
      default:
        user_error("cannot store a known value of dtype ", vm::dtype_name(t.dtype()));
    }
  }

  Regs visit_call(const Expr& e, const std::string& where_binding, uint64_t bound_var) override {
    const std::string where = where_binding + " = " + e->name;
    if (e->name == "dynvm.Unreachable") return unreachable(e);
    std::vector<ValueFacts> inputs;
    for (const Expr& a : e->operands) inputs.push_back(facts_of(a));
    // Operands are lowered when used: inputs a binding reads at compile time (Slice's
    // starts, Clip's bounds) never load.
    auto operand = [&](size_t i) -> uint32_t {
      if (i >= e->operands.size() || inputs[i].absent()) {
        user_error(where, ": input ", i, " is absent");
      }
      return expr(e->operands[i], where).one();
    };
    std::vector<Type> outputs;
    const bool tuple = e.type().kind() == TypeKind::kTuple;
    if (tuple) {
      outputs = e.type()->fields;
    } else {
      outputs = {e.type()};
    }
    // Everything known at compile time: computed on the host, no binding needed. The
    // placement decides (a value with an unknown element, such as `n == 5` for a symbolic
    // n, is computed by its kernel).
    if (bound_var != 0 && placement_.computed_on_host(bound_var)) {
      return Regs{{host_value(outputs[0], *typed_.facts.at(bound_var).value, where)}, false};
    }
    if (is_container_op(e->name)) return Regs{{container_op(e, inputs, where)}, false};
    const BindFn* bind = find_binding(e->name);
    if (bind == nullptr) user_error(where, ": no kernel computes ", e->name, " yet");
    KernelBinding b = (*bind)(BindContext(where, e->attrs, inputs, outputs));
    switch (b.kind) {
      case LoweringKind::kAlias: {
        uint32_t r = next_reg_++;
        uint32_t source = operand(0);
        if (e->name == "dynvm.Refine")
          check_refined_dims(inputs[0].type, outputs[0], source, where);
        code_.push_back({vm::Opcode::Move, {r, source}});
        return Regs{{r}, false};
      }
      case LoweringKind::kView: {
        uint32_t r = next_reg_++;
        uint32_t source = operand(0);
        code_.push_back({vm::Opcode::ReshapeView, {r, source, shape_of(outputs[0], where)}});
        return Regs{{r}, false};
      }
      case LoweringKind::kRowView: {
        uint32_t source = operand(0);
        const Expr& i = e->operands[1];
        uint32_t index;
        if (i.kind() == ExprKind::kConstant && i->value.dtype() == vm::DType::kInt64) {
          index = imm(i->value.data_as<int64_t>()[0]);
        } else if (i.kind() == ExprKind::kVar && int_vars_.count(i->var_id)) {
          index = operand(1);
        } else {
          index = load_scalar(read_on(i, operand(1), vm::kCpu));
        }
        uint32_t r = next_reg_++;
        code_.push_back({vm::Opcode::RowView, {r, source, index}});
        return Regs{{r}, false};
      }
      case LoweringKind::kHost:
        user_error(where, ": its value is not known at compile time, so it cannot run on the host");
      case LoweringKind::kKernel:
        break;
    }
    // Kernel arguments are read on the kernel device: a host value's copy there.
    auto kernel_operand = [&](size_t i) {
      return read_on(e->operands[i], operand(i), placement_.kernel_device);
    };
    return invoke(b, inputs, outputs, tuple, kernel_operand, where);
  }

  // Sequences and optionals are VM tuples (op/ops_sequence.h): their ops are tuple
  // bytecode on the host, positions checked naming the node.
  uint32_t container_op(const Expr& e, const std::vector<ValueFacts>& inputs,
                        const std::string& where) {
    const std::string& op = e->name;
    auto present = [&](size_t i) { return i < e->operands.size() && !inputs[i].absent(); };
    auto operand = [&](size_t i) { return expr(e->operands[i], where).one(); };
    auto length = [&](uint32_t tuple) {
      uint32_t n = next_reg_++;
      code_.push_back({vm::Opcode::TupleLen, {n, tuple}});
      return n;
    };
    uint32_t r = next_reg_++;
    if (op == "SequenceConstruct" || op == "SequenceEmpty" || op == "Optional") {
      std::vector<int64_t> args{r};
      for (size_t i = 0; i < e->operands.size(); ++i) {
        if (present(i)) args.push_back(operand(i));
      }
      code_.push_back({vm::Opcode::AllocTuple, args});
      return r;
    }
    if (op == "OptionalGetElement" && !inputs[0].type.is_optional()) {
      code_.push_back({vm::Opcode::Move, {r, operand(0)}});
      return r;
    }
    const uint32_t tuple = operand(0);
    const uint32_t n = length(tuple);
    if (op == "SequenceLength") return scalar_tensor(n, vm::DType::kInt64);
    if (op == "OptionalHasElement") return scalar_tensor(n, vm::DType::kBool);  // n is 0 or 1
    if (op == "OptionalGetElement") {
      assert_true(n, where + ": the optional is empty");
      code_.push_back({vm::Opcode::GetField, {r, tuple, 0}});
    } else if (op == "SequenceAt") {
      code_.push_back({vm::Opcode::TupleGet, {r, tuple, position(e, 1, n, false, where)}});
    } else if (op == "SequenceInsert") {
      uint32_t at = present(2) ? position(e, 2, n, true, where) : n;
      code_.push_back({vm::Opcode::TupleInsert, {r, tuple, at, operand(1)}});
    } else if (op == "SequenceErase") {
      uint32_t at =
          present(1) ? position(e, 1, n, false, where) : binary(vm::Opcode::SubI, n, imm(1));
      assert_true(binary(vm::Opcode::CmpI, at, imm(0), vm::CmpKind::kGe),
                  where + ": erasing from an empty sequence");
      code_.push_back({vm::Opcode::TupleErase, {r, tuple, at}});
    } else {
      DYNVM_INTERNAL_CHECK(false, where, ": ", op, " is not a container op");
    }
    return r;
  }

  // Operand `i` of `e`, a position in a sequence of `n` elements read on the host: negative
  // counts from the end; it must lie in [0, n) (or [0, n] where `end_ok`: an insertion).
  uint32_t position(const Expr& e, size_t i, uint32_t n, bool end_ok, const std::string& where) {
    uint32_t p = load_scalar(read_on(e->operands[i], expr(e->operands[i], where).one(), vm::kCpu));
    uint32_t zero = imm(0), r = next_reg_++;
    uint32_t negative = binary(vm::Opcode::CmpI, p, zero, vm::CmpKind::kLt);
    code_.push_back({vm::Opcode::SelectI, {r, negative, binary(vm::Opcode::AddI, p, n), p}});
    uint32_t ok =
        binary(vm::Opcode::MinI, binary(vm::Opcode::CmpI, r, zero, vm::CmpKind::kGe),
               binary(vm::Opcode::CmpI, r, n, end_ok ? vm::CmpKind::kLe : vm::CmpKind::kLt));
    assert_true(ok, where + ": the position is outside the sequence");
    return r;
  }

  // dst = a <op> b (for CmpI: a <cmp> b).
  uint32_t binary(vm::Opcode op, uint32_t a, uint32_t b, vm::CmpKind cmp = vm::CmpKind::kEq) {
    uint32_t r = next_reg_++;
    if (op == vm::Opcode::CmpI) {
      code_.push_back({op, {r, static_cast<int64_t>(cmp), a, b}});
    } else {
      code_.push_back({op, {r, a, b}});
    }
    return r;
  }

  void assert_true(uint32_t condition, const std::string& message) {
    const size_t s = exe_->strings.size();
    exe_->strings.push_back(message);
    code_.push_back({vm::Opcode::Assert, {condition, static_cast<int64_t>(s)}});
  }

  // A kernel call: its arguments (`operand(i)` for each of the binding's), each output
  // allocated, then InvokeKernel.
  template <typename Operand>
  Regs invoke(const KernelBinding& b, const std::vector<ValueFacts>& inputs,
              const std::vector<Type>& outputs, bool tuple, Operand&& operand,
              const std::string& where) {
    std::vector<ops::TensorType> arg_types;
    std::vector<int64_t> args{
        static_cast<int64_t>(kernel_index(b, inputs, outputs.size(), where, &arg_types)),
        static_cast<int64_t>(b.args.size())};
    for (size_t i : b.args) args.push_back(operand(i));
    Regs out{{}, tuple};
    for (const Type& t : outputs) {
      uint32_t r = alloc(t, where);
      out.regs.push_back(r);
      args.push_back(r);
    }
    code_.push_back({vm::Opcode::InvokeKernel, args});
    return out;
  }

  // A fused group (compiler/passes/fuse_ops): one kernel (lower/fused_kernel.h) over the
  // call's arguments.
  Regs fused_call(const Expr& e, const Function& f, const std::string& where_binding) {
    const std::string where = where_binding + " = @" + f.name;
    std::vector<ValueFacts> inputs;
    for (const Expr& a : e->operands) inputs.push_back(facts_of(a));
    KernelBinding b = fused_binding(f, inputs, where);
    auto operand = [&](size_t i) {
      const Expr& a = e->operands.at(i);
      return read_on(a, expr(a, where).one(), placement_.kernel_device);
    };
    return invoke(b, inputs, {e.type()}, false, operand, where);
  }

  // KernelRequest::workload: `key`, then each argument's dtype and dims, the symbolic ones
  // named s0, s1, ... in order of first appearance.
  static std::string workload_key(const std::string& key,
                                  const std::vector<ops::TensorType>& args) {
    std::string out = key;
    std::map<std::string, std::string> renamed;
    for (const ops::TensorType& t : args) {
      out += "|" + ops::dtype_suffix(t.dtype) + "[";
      for (size_t d = 0; d < t.shape.size(); ++d) {
        if (d > 0) out += ",";
        const arith::Expr& e = t.shape[d];
        if (e.is_int_imm()) {
          out += std::to_string(e.int_value());
        } else {
          auto [it, added] = renamed.emplace(arith::to_string(e), "");
          if (added) it->second = "s" + std::to_string(renamed.size() - 1);
          out += it->second;
        }
      }
      out += "]";
    }
    return out;
  }

  // A kernel binds each symbolic dim from an argument dim that is exactly that symbol
  // (kernels/codegen). Dims that are expressions of the model's dims (`(w + 1) floordiv 2`
  // after a strided conv) become fresh symbols, one per distinct expression, so the kernel
  // reads them from its arguments; equal expressions stay one symbol.
  static void generalize_dims(std::vector<ops::TensorType>* types) {
    std::vector<std::pair<arith::Expr, arith::Expr>> fresh;
    for (ops::TensorType& t : *types) {
      for (arith::Expr& d : t.shape) {
        if (d.is_int_imm() || d.kind() == arith::ExprKind::kVar) continue;
        arith::Expr replacement;
        for (const auto& [expr, var] : fresh) {
          if (arith::structural_equal(expr, d)) replacement = var;
        }
        if (!replacement.defined()) {
          replacement = arith::Var("d" + std::to_string(fresh.size()));
          fresh.emplace_back(d, replacement);
        }
        d = replacement;
      }
    }
  }

  // The kernel for this binding and these argument types (shared between equal uses).
  size_t kernel_index(const KernelBinding& b, const std::vector<ValueFacts>& inputs,
                      size_t num_outputs, const std::string& where,
                      std::vector<ops::TensorType>* arg_types) {
    std::string key = b.key;
    for (size_t i : b.args) {
      if (i >= inputs.size() || inputs[i].absent()) {
        user_error(where, ": kernel argument ", i, " is absent");
      }
      arg_types->push_back(kernel_type(inputs[i].type, where));
      key += "|" + to_string(inputs[i].type);
    }
    generalize_dims(arg_types);
    auto it = kernel_keys_.find(key);
    if (it != kernel_keys_.end()) return it->second;
    size_t index = kernels_->size();
    std::string name = "k" + std::to_string(index);
    for (char c : b.key) {
      if (name.size() > 40) break;
      if (std::isalnum(static_cast<unsigned char>(c)))
        name += c;
      else if (name.back() != '_')
        name += '_';
    }
    kernels_->push_back({name, b.build, *arg_types, workload_key(b.key, *arg_types)});
    // Its entry in the kernel table: arity now (the verifier checks calls against it),
    // variants when generate_kernels compiles it.
    vm::Kernel declared;
    declared.name = name;
    declared.num_inputs = static_cast<uint32_t>(b.args.size());
    declared.num_outputs = static_cast<uint32_t>(num_outputs);
    exe_->kernels.push_back(declared);
    kernel_keys_[key] = index;
    return index;
  }

  Regs visit_if(const Expr& e, const std::string& where, uint64_t) override {
    // LoadScalar reads the condition on the host: a kernel's value is copied there.
    uint32_t cond_tensor = read_on(e->operands[0], expr(e->operands[0], where).one(), vm::kCpu);
    const JoinCopies* join = placement_.join(e.get());
    uint32_t cond = next_reg_++;
    code_.push_back({vm::Opcode::LoadScalar, {cond, cond_tensor}});
    const size_t branch_at = code_.size();
    code_.push_back({vm::Opcode::If, {cond, 0, 0}});
    // Shape registers computed in one branch are not valid in the other or after.
    const ShapeCode::Saved before = shapes_.save();
    code_[branch_at].args[1] = static_cast<int64_t>(code_.size());
    Regs then_value = copied_for_join(expr(e->operands[1], where), join ? &join->first : nullptr);
    Regs result = fresh_like(then_value);
    move_all(then_value, result);
    const size_t goto_at = code_.size();
    code_.push_back({vm::Opcode::Goto, {0}});
    shapes_.restore(before);
    code_[branch_at].args[2] = static_cast<int64_t>(code_.size());
    Regs else_value = copied_for_join(expr(e->operands[2], where), join ? &join->second : nullptr);
    move_all(else_value, result);
    shapes_.restore(before);
    code_[goto_at].args[0] = static_cast<int64_t>(code_.size());
    return result;
  }

  // dynvm.Refine's output type has constants where its input's has dims (version_entry
  // dispatches on them, so this never fails in a module it built); the VM checks them
  // anyway, so that a wrong refinement cannot make kernels read out of bounds.
  void check_refined_dims(const Type& from, const Type& to, uint32_t tensor,
                          const std::string& where) {
    DYNVM_INTERNAL_CHECK(from.is_tensor() && to.is_tensor() && from->dims.size() == to->dims.size(),
                         where, ": refines ", to_string(from), " to ", to_string(to));
    for (size_t axis = 0; axis < to->dims.size(); ++axis) {
      const Dim& d = to->dims[axis];
      if (!d.is_const() || from->dims[axis].is_const()) continue;
      uint32_t actual = next_reg_++, ok = next_reg_++;
      code_.push_back({vm::Opcode::Dim, {actual, tensor, static_cast<int64_t>(axis)}});
      code_.push_back(
          {vm::Opcode::CmpI, {ok, static_cast<int64_t>(vm::CmpKind::kEq), actual, imm(d.value())}});
      const size_t s = exe_->strings.size();
      exe_->strings.push_back(
          str_cat(where, ": dim ", axis, " of ", to_string(from), " is not ", d.value()));
      code_.push_back({vm::Opcode::Assert, {ok, static_cast<int64_t>(s)}});
    }
  }

  // A branch type inference found impossible for the declared dims: fail the run, naming
  // why, if it is ever taken. Its result registers are never written.
  Regs unreachable(const Expr& e) {
    const size_t s = exe_->strings.size();
    exe_->strings.push_back(attr_string(e->attrs, "message", "unreachable", "dynvm.Unreachable"));
    code_.push_back({vm::Opcode::Fatal, {static_cast<int64_t>(s)}});
    const bool tuple = e.type().kind() == TypeKind::kTuple;
    Regs out{{}, tuple};
    for (size_t k = 0; k < (tuple ? e.type()->fields.size() : 1); ++k)
      out.regs.push_back(next_reg_++);
    return out;
  }

  uint32_t imm(int64_t v) {
    uint32_t r = next_reg_++;
    code_.push_back({vm::Opcode::LoadImm, {r, v}});
    return r;
  }

  // A scalar tensor of `dtype` holding integer register `value` (a loop's iteration number
  // and condition as the body sees them).
  uint32_t scalar_tensor(uint32_t value, vm::DType dtype) {
    uint32_t shape = next_reg_++, t = next_reg_++;
    code_.push_back({vm::Opcode::MakeShape, {shape, value}});
    code_.push_back({vm::Opcode::ShapeTensor, {t, shape, 0, static_cast<int64_t>(dtype)}});
    return t;
  }

  // ONNX Loop as a bytecode loop:
  //   i = 0; cond = cond_in; carried = init
  //   head: if !(i < max_trip && cond) goto exit
  //         body(i, cond, carried...) -> (cond', carried'..., scans...)
  //         scan element k appended to a tuple; i += 1; goto head
  //   exit: each scan output allocated as [i, elem...] and filled by a generated copy kernel
  //         per element (a view of the output at element k's offset).
  Regs visit_loop(const Expr& e, const std::string& where, uint64_t) override {
    const Function& body = *e->body;
    // The trip count and condition are read on the host (a kernel's value copied there).
    auto host_scalar = [&](const Expr& x) {
      return load_scalar(read_on(x, expr(x, where).one(), vm::kCpu));
    };
    uint32_t max_trip = loop_max_trip(e).defined() ? host_scalar(loop_max_trip(e))
                                                   : imm(std::numeric_limits<int64_t>::max());
    uint32_t cond = loop_cond(e).defined() ? host_scalar(loop_cond(e)) : imm(1);
    std::vector<Expr> init = loop_carried(e);
    // Initial values are copied to where the carried values live (place_devices).
    const JoinCopies* join = placement_.join(e.get());
    std::vector<uint32_t> carried;
    for (size_t k = 0; k < init.size(); ++k) {
      uint32_t r = next_reg_++;
      uint32_t value = expr(init[k], where).one();
      if (join != nullptr && join->first.at(k)) value = device_copy(value, *join->first[k]);
      code_.push_back({vm::Opcode::Move, {r, value}});
      carried.push_back(r);
    }
    const size_t scans = static_cast<size_t>(e->index);
    std::vector<uint32_t> collected;
    for (size_t k = 0; k < scans; ++k) {
      uint32_t r = next_reg_++;
      code_.push_back({vm::Opcode::AllocTuple, {r}});
      collected.push_back(r);
    }
    uint32_t i = imm(0), one = imm(1);
    // Shape registers computed in the body are not valid after the loop (it may not run).
    const ShapeCode::Saved before_loop = shapes_.save();
    const size_t head = code_.size();
    const LoopParamUses uses(body);
    uint32_t in_range = next_reg_++, go = in_range;
    code_.push_back(
        {vm::Opcode::CmpI, {in_range, static_cast<int64_t>(vm::CmpKind::kLt), i, max_trip}});
    // Without a condition input, a body that passes the condition through keeps it 1.
    if (loop_cond(e).defined() || !uses.go_passed_through()) {
      go = next_reg_++;
      code_.push_back({vm::Opcode::MinI, {go, in_range, cond}});  // both are 0 or 1 (cond != 0)
    }
    const size_t branch = code_.size();
    code_.push_back({vm::Opcode::If, {go, static_cast<int64_t>(code_.size() + 1), 0}});
    // The body: parameters bound to this iteration's values (the number and the condition
    // as integer registers where the body only needs those, LoopParamUses).
    const uint64_t t_var = body.params[0]->var_id, go_var = body.params[1]->var_id;
    if (uses.t_only_indexes_rows()) {
      values_[t_var] = Regs{{i}, false};
      int_vars_.insert(t_var);
    } else {
      values_[t_var] = Regs{{scalar_tensor(i, vm::DType::kInt64)}, false};
    }
    values_[go_var] =
        Regs{{uses.go_passed_through() ? cond : scalar_tensor(cond, vm::DType::kBool)}, false};
    for (size_t k = 0; k < carried.size(); ++k) {
      values_[body.params[k + 2]->var_id] = Regs{{carried[k]}, false};
      types_[body.params[k + 2]->var_id] = body.params[k + 2].type();
    }
    for (const Expr& p : body.params) copy_after_binding(p->var_id, values_.at(p->var_id));
    // The body's results as the loop moves them on: cond' to the host, carried' to the
    // carried registers' device, scan elements to the stacking kernel's.
    Regs out =
        copied_for_join(expr(body.body, where + " (loop body)"), join ? &join->second : nullptr);
    DYNVM_INTERNAL_CHECK(out.is_tuple && out.regs.size() == 1 + carried.size() + scans, where,
                         ": the loop body returns ", out.regs.size(), " values");
    uint32_t next_cond = uses.go_passed_through() ? cond : load_scalar(out.regs[0]);
    // The body's results are this iteration's values, read before the carried registers are
    // overwritten: scan elements are appended first (an element may be a carried value as
    // the iteration saw it), and a carried' that is another carried register (a swap) is
    // moved aside first, since the moves are parallel.
    for (size_t k = 0; k < scans; ++k) {
      code_.push_back({vm::Opcode::TupleAppend,
                       {collected[k], collected[k], out.regs[1 + carried.size() + k]}});
    }
    std::vector<uint32_t> next(out.regs.begin() + 1, out.regs.begin() + 1 + carried.size());
    for (size_t k = 0; k < carried.size(); ++k) {
      const bool other_carried =
          next[k] != carried[k] && std::count(carried.begin(), carried.end(), next[k]) != 0;
      if (!other_carried) continue;
      uint32_t aside = next_reg_++;
      code_.push_back({vm::Opcode::Move, {aside, next[k]}});
      next[k] = aside;
    }
    for (size_t k = 0; k < carried.size(); ++k) {
      code_.push_back({vm::Opcode::Move, {carried[k], next[k]}});
    }
    if (next_cond != cond) code_.push_back({vm::Opcode::Move, {cond, next_cond}});
    code_.push_back({vm::Opcode::AddI, {i, i, one}});
    code_.push_back({vm::Opcode::Goto, {static_cast<int64_t>(head)}});
    code_[branch].args[2] = static_cast<int64_t>(code_.size());
    shapes_.restore(before_loop);

    Regs result{carried, true};
    const Type& loop_type = e.type();
    for (size_t k = 0; k < scans; ++k) {
      const Type& stacked = loop_type->fields[carried.size() + k];
      result.regs.push_back(stack(collected[k], i, stacked, where));
    }
    return result;
  }

  uint32_t device_copy(uint32_t tensor, vm::Device to) {
    uint32_t r = next_reg_++;
    code_.push_back({vm::Opcode::DeviceCopy, {r, tensor, device_operand(to)}});
    return r;
  }

  // The copies the placement asks for right after a variable (or parameter) is bound: made
  // once per value, in its scope, so that every reader there shares them.
  void copy_after_binding(uint64_t var_id, const Regs& value) {
    for (size_t k = 0; k < value.regs.size(); ++k) {
      for (vm::Device to : placement_.copies_after(var_id, k)) {
        copies_[{var_id, k, device_operand(to)}] = device_copy(value.regs[k], to);
      }
    }
  }

  // `operand`, lowered into `reg`, as `reader` reads it: a variable's copy made when it was
  // bound, or a copy made here of anything else (a constant) the placement says lives
  // elsewhere; else `reg` itself.
  uint32_t read_on(const Expr& operand, uint32_t reg, vm::Device reader) {
    uint64_t var = 0;
    size_t field = 0;
    if (operand.kind() == ExprKind::kVar) {
      var = operand->var_id;
    } else if (operand.kind() == ExprKind::kGetItem &&
               operand->operands[0].kind() == ExprKind::kVar) {
      var = operand->operands[0]->var_id;
      field = static_cast<size_t>(operand->index);
    }
    if (var == 0) {
      return placement_.copied_at_read(operand.get(), reader) ? device_copy(reg, reader) : reg;
    }
    const std::vector<vm::Device>& copied = placement_.copies_after(var, field);
    if (std::find(copied.begin(), copied.end(), reader) == copied.end()) return reg;
    auto it = copies_.find({var, field, device_operand(reader)});
    DYNVM_INTERNAL_CHECK(it != copies_.end(), "a copy of variable ", var, " to ",
                         vm::device_name(reader), " was not made where it was bound");
    return it->second;
  }

  // `value` moved into an If's or a Loop's registers: each field copied first where the
  // placement's join says (`to`, one per field; null: no join recorded).
  Regs copied_for_join(const Regs& value, const std::vector<std::optional<vm::Device>>* to) {
    Regs out = value;
    if (to == nullptr) return out;
    DYNVM_INTERNAL_CHECK(to->size() == out.regs.size(), "a join of ", to->size(), " fields for ",
                         out.regs.size(), " values");
    for (size_t k = 0; k < out.regs.size(); ++k) {
      if ((*to)[k]) out.regs[k] = device_copy(out.regs[k], *(*to)[k]);
    }
    return out;
  }

  uint32_t load_scalar(uint32_t tensor) {
    uint32_t r = next_reg_++;
    code_.push_back({vm::Opcode::LoadScalar, {r, tensor}});
    return r;
  }

  // The `count` tensors of tuple `items`, stacked along a new axis 0 into a fresh tensor of
  // type `stacked` ([?, elem dims...]): each copied by a generated kernel into the view of
  // its slot.
  uint32_t stack(uint32_t items, uint32_t count, const Type& stacked, const std::string& where) {
    std::vector<Dim> elem_dims(stacked->dims.begin() + 1, stacked->dims.end());
    Type elem = tensor_type(stacked->dtype, elem_dims);
    uint32_t elem_shape = shape_of(elem, where + " (scan output)");
    arith::Expr elem_bytes = arith::make_int(static_cast<int64_t>(vm::dtype_size(stacked->dtype)));
    for (const Dim& d : elem_dims) elem_bytes = elem_bytes * d.expr();
    uint32_t slot = shapes_.emit(arith::simplify(elem_bytes));
    uint32_t full_shape = next_reg_++;
    {
      std::vector<int64_t> args{full_shape, count};
      for (const Dim& d : elem_dims) args.push_back(shapes_.emit(d.expr()));
      code_.push_back({vm::Opcode::MakeShape, args});
    }
    uint32_t bytes = next_reg_++, storage = next_reg_++, out = next_reg_++;
    code_.push_back({vm::Opcode::MulI, {bytes, count, slot}});
    code_.push_back(  // written by the copy kernel below, on the kernel device
        {vm::Opcode::AllocStorage, {storage, bytes, device_operand(placement_.kernel_device)}});
    code_.push_back({vm::Opcode::AllocTensor,
                     {out, storage, shapes_.emit(arith::make_int(0)), full_shape,
                      static_cast<int64_t>(stacked->dtype)}});
    // for k in 0..count: copy(items[k] -> view at k * slot)
    KernelBinding copy;
    copy.key = std::string("stack_copy_") + std::string(vm::dtype_name(stacked->dtype));
    copy.args = {0};
    vm::DType dtype = stacked->dtype;
    copy.build = [dtype](const std::vector<ops::TensorType>& t) { return ops::cast(t[0], dtype); };
    ValueFacts elem_facts;
    elem_facts.type = elem;
    std::vector<ops::TensorType> arg_types;
    size_t kernel = kernel_index(copy, {elem_facts}, 1, where, &arg_types);
    uint32_t k = imm(0), one = imm(1);
    const size_t head = code_.size();
    uint32_t more = next_reg_++;
    code_.push_back({vm::Opcode::CmpI, {more, static_cast<int64_t>(vm::CmpKind::kLt), k, count}});
    const size_t branch = code_.size();
    code_.push_back({vm::Opcode::If, {more, static_cast<int64_t>(code_.size() + 1), 0}});
    uint32_t offset = next_reg_++, view = next_reg_++, item = next_reg_++;
    code_.push_back({vm::Opcode::MulI, {offset, k, slot}});
    code_.push_back({vm::Opcode::AllocTensor,
                     {view, storage, offset, elem_shape, static_cast<int64_t>(dtype)}});
    code_.push_back({vm::Opcode::TupleGet, {item, items, k}});
    code_.push_back({vm::Opcode::InvokeKernel, {static_cast<int64_t>(kernel), 1, item, view}});
    code_.push_back({vm::Opcode::AddI, {k, k, one}});
    code_.push_back({vm::Opcode::Goto, {static_cast<int64_t>(head)}});
    code_[branch].args[2] = static_cast<int64_t>(code_.size());
    return out;
  }

  Regs fresh_like(const Regs& r) {
    Regs out{{}, r.is_tuple};
    for (size_t k = 0; k < r.regs.size(); ++k) out.regs.push_back(next_reg_++);
    return out;
  }
  void move_all(const Regs& from, const Regs& to) {
    DYNVM_INTERNAL_CHECK(from.regs.size() == to.regs.size(), "branches of different arity");
    for (size_t k = 0; k < from.regs.size(); ++k) {
      code_.push_back({vm::Opcode::Move, {to.regs[k], from.regs[k]}});
    }
  }

  const TypedModule& typed_;
  const Placement& placement_;  // where values live, what is copied (passes/place_devices.h)
  vm::Executable* exe_;
  std::vector<KernelRequest>* kernels_;
  std::vector<vm::Instruction> code_;
  uint32_t next_reg_ = 0;
  ShapeCode shapes_;
  std::unordered_map<uint64_t, Regs> values_;
  // Variables whose register holds an integer, not the scalar tensor ONNX has (a Loop's
  // iteration number, LoopParamUses).
  std::unordered_set<uint64_t> int_vars_;
  std::unordered_map<uint64_t, Type> types_;
  std::unordered_map<const void*, size_t> constant_index_;
  std::unordered_map<std::string, size_t> kernel_keys_;
  // (var_id, field, device operand) -> the register of the value's copy on that device.
  std::map<std::tuple<uint64_t, size_t, int64_t>, uint32_t> copies_;
};

}  // namespace
}  // namespace dynvm::compiler

namespace dynvm::compiler {
namespace {

vm::TensorSpec spec_of(const std::string& name, const Type& type, const Module& m) {
  // Sequences and optionals: the form, and the spec of the tensor(s) they hold.
  vm::ValueForm form = vm::ValueForm::kTensor;
  Type t = type;
  if (t.is_optional()) {
    form = vm::ValueForm::kOptional;
    t = t->fields[0];
  }
  if (t.is_sequence()) {
    form = form == vm::ValueForm::kOptional ? vm::ValueForm::kOptionalSequence
                                            : vm::ValueForm::kSequence;
    if (t->fields.empty()) return vm::TensorSpec{name, t->dtype, {}, form, true};
    t = t->fields[0];
  }
  if (!t.is_tensor())
    user_error(name, ": only tensor, sequence and optional inputs and outputs are supported, got ",
               to_string(type));
  vm::TensorSpec spec{name, t->dtype, {}, form, false};
  for (const Dim& d : t->dims) {
    vm::DimSpec ds;
    if (d.is_const()) {
      ds.value = d.value();
    } else if (!d.is_any() && d.expr().kind() == arith::ExprKind::kVar) {
      ds.symbol = d.expr()->name;
      if (const DimSymbol* s = m.find_dim(ds.symbol)) {
        ds.min = s->min;
        ds.max = s->max;
      }
    } else {
      ds.symbol = d.is_any() ? "?" : arith::to_string(d.expr());  // checked by the kernels
    }
    spec.dims.push_back(ds);
  }
  return spec;
}

}  // namespace

Lowered emit_bytecode(const TypedModule& typed, const Placement& placement,
                      const LowerOptions& options) {
  DYNVM_INTERNAL_CHECK(placement.kernel_device == options.kernel_device, "placed for ",
                       vm::device_name(placement.kernel_device), ", lowered for ",
                       vm::device_name(options.kernel_device));
  const Module& m = typed.module;
  const Function* entry = m.find_function(m.entry);
  if (entry == nullptr) user_error("the module has no function @", m.entry);
  Lowered out;
  vm::Executable& exe = out.exe;
  exe.target = options.target.description();
  exe.producer = options.producer;
  FunctionLowering lowering(typed, placement, &exe, &out.kernels);
  exe.functions.push_back(lowering.lower(*entry));
  exe.entry = 0;
  for (const Expr& p : entry->params) exe.inputs.push_back(spec_of(p->name, p.type(), m));
  const Type& result = entry->result_type;
  auto output_name = [&](size_t k) {
    return k < entry->result_names.size() ? entry->result_names[k] : "output_" + std::to_string(k);
  };
  if (result.kind() == TypeKind::kTuple) {
    for (size_t k = 0; k < result->fields.size(); ++k) {
      exe.outputs.push_back(spec_of(output_name(k), result->fields[k], m));
    }
  } else {
    exe.outputs.push_back(spec_of(output_name(0), result, m));
  }
  return out;
}

}  // namespace dynvm::compiler
