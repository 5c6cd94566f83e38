#include "vm/verifier.h"

#include "vm/error.h"

namespace dynvm::vm {
namespace {

class Verifier {
 public:
  Verifier(const Executable& exe, const VerifyOptions& options) : exe_(exe), options_(options) {}

  void run() {
    if (exe_.functions.empty()) fail("", "it has no functions");
    for (size_t k = 0; k < exe_.kernels.size(); ++k) check_kernel(k);
    for (size_t f = 0; f < exe_.functions.size(); ++f) check_function(f);
    check_signature();
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const std::string& where, Args&&... what) {
    user_error("invalid executable: ", where, where.empty() ? "" : ": ",
               std::forward<Args>(what)...);
  }

  void check_kernel(size_t k) {
    const Kernel& kernel = exe_.kernels[k];
    std::string where = str_cat("kernel ", k, " (", kernel.name, ")");
    if (!options_.kernels_generated) {
      if (uint64_t{kernel.num_inputs} + kernel.num_outputs > kMaxInstructionArgs) {
        fail(where, "too many arguments");
      }
      return;
    }
    if (kernel.library >= exe_.libraries.size()) {
      fail(where, "library ", kernel.library, " out of range (", exe_.libraries.size(), ")");
    }
    if (kernel.variants.empty()) fail(where, "has no variants");
    uint64_t arity = uint64_t{kernel.num_inputs} + kernel.num_outputs;
    if (arity > kMaxInstructionArgs) fail(where, "too many arguments");
    for (const KernelVariant& v : kernel.variants) {
      if (v.symbol.empty()) fail(where, "a variant has no symbol");
      for (const DimPredicate& p : v.conditions) {
        if (p.arg >= arity) fail(where, "condition on argument ", p.arg, " of ", arity);
        if (static_cast<int>(p.kind) >= kNumDimPredicateKinds) fail(where, "bad condition kind");
        if (p.kind == DimPredicateKind::kModEq && p.a <= 0) {
          fail(where, "modulo condition with divisor ", p.a);
        }
        if (p.kind == DimPredicateKind::kDimEq &&
            (p.a < 0 || static_cast<uint64_t>(p.a) >= arity || p.b < 0 || p.b > UINT32_MAX)) {
          fail(where, "condition compares with argument ", p.a, " dim ", p.b, " of ", arity,
               " arguments");
        }
      }
    }
  }

  void check_function(size_t f) {
    const Function& fn = exe_.functions[f];
    std::string where = str_cat("function ", f, " (", fn.name, ")");
    if (fn.num_registers > kMaxRegisters) fail(where, "too many registers");
    if (fn.num_params > fn.num_registers) {
      fail(where, fn.num_params, " parameters but only ", fn.num_registers, " registers");
    }
    if (fn.code.empty()) fail(where, "has no code");
    for (size_t pc = 0; pc < fn.code.size(); ++pc) check_instruction(fn, pc, where);
    // Every instruction but a terminator falls through to pc + 1, and jump targets are in
    // range, so a function cannot fall off its end iff its last instruction is a
    // terminator.
    if (!opcode_info(fn.code.back().op).terminator) {
      fail(where, "can fall off its end (the last instruction is ",
           opcode_info(fn.code.back().op).mnemonic, ", not ret, goto, if or fatal)");
    }
  }

  void check_instruction(const Function& fn, size_t pc, const std::string& fn_where) {
    const Instruction& ins = fn.code[pc];
    std::string where = str_cat(fn_where, " pc ", pc);
    if (!is_valid_opcode(static_cast<int64_t>(ins.op))) {
      fail(where, "unknown opcode ", static_cast<int>(ins.op));
    }
    const OpcodeInfo& info = opcode_info(ins.op);
    where += str_cat(" (", info.mnemonic, ")");
    size_t fixed = info.variadic ? info.num_operands - 1u : info.num_operands;
    if (info.variadic ? ins.args.size() < fixed : ins.args.size() != fixed) {
      fail(where, "has ", ins.args.size(), " operands, expected ", info.variadic ? "at least " : "",
           fixed);
    }
    if (ins.args.size() > kMaxInstructionArgs) fail(where, "too many operands");
    for (size_t i = 0; i < ins.args.size(); ++i) {
      OperandKind kind = i < fixed ? info.operands[i] : OperandKind::Regs;
      check_operand(fn, kind, ins.args[i], i, where);
    }
    check_arity(ins, fixed, where);
  }

  void check_operand(const Function& fn, OperandKind kind, int64_t v, size_t i,
                     const std::string& where) {
    auto in_range = [&](size_t n, const char* what) {
      if (v < 0 || static_cast<uint64_t>(v) >= n) {
        fail(where, "operand ", i, ": ", what, " ", v, " out of range (", n, ")");
      }
    };
    switch (kind) {
      case OperandKind::Dst:
      case OperandKind::Reg:
      case OperandKind::Regs:
        in_range(fn.num_registers, "register");
        break;
      case OperandKind::Imm:
        break;
      case OperandKind::Const:
        in_range(exe_.constants.size(), "constant");
        break;
      case OperandKind::Func:
        in_range(exe_.functions.size(), "function");
        break;
      case OperandKind::Kernel:
        in_range(exe_.kernels.size(), "kernel");
        break;
      case OperandKind::Target:
        in_range(fn.code.size(), "jump target");
        break;
      case OperandKind::Str:
        in_range(exe_.strings.size(), "string");
        break;
      case OperandKind::DType:
        if (!is_valid_dtype(v)) fail(where, "operand ", i, ": unknown dtype code ", v);
        break;
      case OperandKind::Device:
        if (!is_valid_device_type(v >> 32) || (v & 0xffffffff) > 0x7fffffff) {
          fail(where, "operand ", i, ": unknown device ", v);
        }
        break;
      case OperandKind::Cmp:
        if (v < 0 || v >= kNumCmpKinds) fail(where, "operand ", i, ": unknown comparison ", v);
        break;
    }
  }

  void check_arity(const Instruction& ins, size_t fixed, const std::string& where) {
    size_t list = ins.args.size() - fixed;
    switch (ins.op) {
      case Opcode::Invoke: {
        const Function& callee = exe_.functions[ins.args[1]];
        if (list != callee.num_params) {
          fail(where, "calls ", callee.name, " with ", list, " arguments, it takes ",
               callee.num_params);
        }
        break;
      }
      case Opcode::InvokeKernel: {
        const Kernel& k = exe_.kernels[ins.args[0]];
        if (ins.args[1] != k.num_inputs || list != uint64_t{k.num_inputs} + k.num_outputs) {
          // Operands come from the file: report them as they are, no arithmetic on them.
          fail(where, "calls kernel ", k.name, " with ", ins.args[1], " inputs and ", list,
               " arguments in all, it takes ", k.num_inputs, " inputs and ", k.num_outputs,
               " outputs");
        }
        break;
      }
      case Opcode::Dim:
      case Opcode::GetField:
        if (ins.args[2] < 0) fail(where, "negative index ", ins.args[2]);
        break;
      default:
        break;
    }
  }

  void check_signature() {
    if (exe_.entry >= exe_.functions.size()) {
      fail("", "entry function ", exe_.entry, " out of range (", exe_.functions.size(), ")");
    }
    const Function& entry = exe_.functions[exe_.entry];
    if (entry.num_params != exe_.inputs.size()) {
      fail("", "entry function ", entry.name, " takes ", entry.num_params,
           " parameters but the signature declares ", exe_.inputs.size(), " inputs");
    }
    for (const auto* specs : {&exe_.inputs, &exe_.outputs}) {
      for (const TensorSpec& s : *specs) {
        if (!is_valid_dtype(static_cast<int64_t>(s.dtype)))
          fail("", "signature ", s.name, ": bad dtype");
        for (const DimSpec& d : s.dims) {
          if (!d.is_symbolic() && d.value < 0) fail("", "signature ", s.name, ": negative dim");
          if (d.is_symbolic() && (d.min < 0 || d.min > d.max)) {
            fail("", "signature ", s.name, ": empty range ", d.min, "..", d.max, " for ", d.symbol);
          }
        }
      }
    }
    for (const Tensor& c : exe_.constants) {
      if (!c.defined() || c.device().type != DeviceType::kCPU)
        fail("", "a constant is not a host tensor");
    }
  }

  const Executable& exe_;
  const VerifyOptions& options_;
};

}  // namespace

void verify(const Executable& exe, const VerifyOptions& options) { Verifier(exe, options).run(); }

}  // namespace dynvm::vm
