#include "vm/interpreter.h"

#include <chrono>
#include <cstring>

#include "vm/error.h"

namespace dynvm::vm {
namespace {

Device decode_device(int64_t v) {
  return Device{static_cast<DeviceType>(v >> 32), static_cast<int32_t>(v & 0xffffffff)};
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) user_error("integer division by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) user_error("integer overflow in div");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) user_error("integer modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

bool compare(CmpKind k, int64_t a, int64_t b) {
  switch (k) {
    case CmpKind::kEq:
      return a == b;
    case CmpKind::kNe:
      return a != b;
    case CmpKind::kLt:
      return a < b;
    case CmpKind::kLe:
      return a <= b;
    case CmpKind::kGt:
      return a > b;
    case CmpKind::kGe:
      return a >= b;
  }
  return false;
}

// Element k (row-major) of a host integer or bool tensor, as an int64.
int64_t load_element(const Tensor& t, int64_t k) {
  if (k < 0 || k >= t.numel()) {
    user_error("load_elem: element ", k, " of a tensor of shape ", shape_str(t.shape()));
  }
  if (t.device().type != DeviceType::kCPU) user_error("load_elem needs a host tensor");
  const void* p = static_cast<const uint8_t*>(t.data()) + k * dtype_size(t.dtype());
  switch (t.dtype()) {
    case DType::kBool:
      return *static_cast<const uint8_t*>(p) != 0;
    case DType::kInt8:
      return *static_cast<const int8_t*>(p);
    case DType::kInt16:
      return *static_cast<const int16_t*>(p);
    case DType::kInt32:
      return *static_cast<const int32_t*>(p);
    case DType::kInt64:
      return *static_cast<const int64_t*>(p);
    case DType::kUInt8:
      return *static_cast<const uint8_t*>(p);
    case DType::kUInt16:
      return *static_cast<const uint16_t*>(p);
    case DType::kUInt32:
      return *static_cast<const uint32_t*>(p);
    case DType::kUInt64: {
      uint64_t v = *static_cast<const uint64_t*>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        user_error("load_elem: ", v, " does not fit in int64");
      }
      return static_cast<int64_t>(v);
    }
    default:
      user_error("load_elem needs an integer or bool tensor, got ", dtype_name(t.dtype()));
  }
}

int64_t load_scalar(const Tensor& t) {
  if (t.numel() != 1)
    user_error("load_scalar needs a one-element tensor, got ", shape_str(t.shape()));
  return load_element(t, 0);
}

// The elements of `s` as an integer host tensor of `dtype`: [n] for rank 1, a scalar for
// rank 0 (which needs exactly one element). Shape arithmetic done on the host (compiler
// lowering) feeds kernels that take shapes or indices as tensors this way.
Value shape_tensor(const Shape& s, int64_t rank, DType dtype) {
  if (rank != 0 && rank != 1) user_error("shape_tensor: rank must be 0 or 1, got ", rank);
  if (rank == 0 && s.size() != 1) {
    user_error("shape_tensor: a scalar needs one element, got ", s.size());
  }
  Shape shape = rank == 0 ? Shape{} : Shape{static_cast<int64_t>(s.size())};
  Tensor t = Tensor::empty(shape, dtype);
  for (size_t k = 0; k < s.size(); ++k) {
    switch (dtype) {
      case DType::kInt64:
        t.data_as<int64_t>()[k] = s[k];
        break;
      case DType::kInt32:
        t.data_as<int32_t>()[k] = static_cast<int32_t>(s[k]);
        break;
      case DType::kBool:
        t.data_as<uint8_t>()[k] = s[k] != 0;
        break;
      default:
        user_error("shape_tensor: dtype ", dtype_name(dtype), " is not i64, i32 or bool");
    }
  }
  return Value(std::move(t));
}

}  // namespace

VirtualMachine::VirtualMachine(std::shared_ptr<const Program> program)
    : program_(std::move(program)), dispatch_(program_->exe().kernels.size()) {}

std::vector<Value> VirtualMachine::run(std::span<const Value> inputs) {
  program_->check_inputs(inputs);
  Value result = invoke(program_->exe().entry, inputs);
  // The entry returns its one tensor, or a tuple of its outputs (lowering wraps a single
  // sequence or optional output, itself a tuple, in one).
  if (result.kind() == ValueKind::kTuple) return result.as_tuple();
  std::vector<Value> outputs;
  outputs.push_back(std::move(result));
  return outputs;
}

void VirtualMachine::set_profiling(bool on) {
  profiling_ = on;
  if (on) profile_.kernels.resize(program_->exe().kernels.size());
}

void VirtualMachine::reset_profile() {
  profile_ = Profile{};
  if (profiling_) profile_.kernels.resize(program_->exe().kernels.size());
}

Value VirtualMachine::invoke(size_t func, std::span<const Value> args) {
  if (!profiling_) [[likely]]
    return invoke_unprofiled(func, args);
  // A failed run counts too (its kernel calls so far were counted), so kernel time never
  // exceeds run time.
  struct RecordRun {
    Profile& profile;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~RecordRun() {
      auto elapsed = std::chrono::steady_clock::now() - start;
      profile.run_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
      ++profile.runs;
    }
  } record{profile_};
  return invoke_unprofiled(func, args);
}

Value VirtualMachine::invoke_unprofiled(size_t func, std::span<const Value> args) {
  const Executable& exe = program_->exe();
  if (func >= exe.functions.size()) user_error("no function ", func);
  if (args.size() != exe.functions[func].num_params) {
    user_error("function ", exe.functions[func].name, " takes ", exe.functions[func].num_params,
               " arguments, got ", args.size());
  }
  try {
    Value v = execute(func, args);
    reset_state();
    return v;
  } catch (const UserError& e) {
    std::string where;
    if (!frames_.empty()) {
      const Frame& f = frames_.back();
      const Function& fn = exe.functions[f.func];
      where = str_cat(" (in ", fn.name, " at pc ", f.pc, ": ",
                      opcode_info(fn.code[f.pc].op).mnemonic, ")");
    }
    reset_state();
    throw UserError(e.what() + where);
  } catch (...) {
    reset_state();
    throw;
  }
}

void VirtualMachine::reset_state() {
  for (Value& v : regs_) v.reset();
  frames_.clear();
}

Value VirtualMachine::execute(size_t entry, std::span<const Value> args) {
  const Executable& exe = program_->exe();
  const Function* fn = &exe.functions[entry];
  if (regs_.size() < fn->num_registers) regs_.resize(fn->num_registers);
  for (size_t i = 0; i < args.size(); ++i) regs_[i] = args[i];
  frames_.push_back(Frame{static_cast<uint32_t>(entry), 0, 0, -1});
  Frame* frame = &frames_.back();
  Value* r = regs_.data();
  const Instruction* code = fn->code.data();
  uint32_t pc = 0;

  for (;;) {
    const Instruction& ins = code[pc];
    const int64_t* a = ins.args.data();
    frame->pc = pc;
    switch (ins.op) {
      case Opcode::Move:
        r[a[0]] = r[a[1]];
        ++pc;
        break;
      case Opcode::Ret: {
        Value result = std::move(r[a[0]]);
        size_t n = fn->num_registers;
        for (size_t i = 0; i < n; ++i) r[i].reset();
        int64_t dst = frame->ret_dst;
        frames_.pop_back();
        if (frames_.empty()) return result;
        frame = &frames_.back();
        fn = &exe.functions[frame->func];
        code = fn->code.data();
        r = regs_.data() + frame->base;
        r[dst] = std::move(result);
        pc = frame->pc + 1;
        break;
      }
      case Opcode::Invoke: {
        const Function& callee = exe.functions[a[1]];
        if (frames_.size() >= kMaxCallDepth) {
          user_error("call depth exceeded ", kMaxCallDepth, " (unbounded recursion?)");
        }
        size_t base = frame->base + fn->num_registers;
        size_t needed = base + callee.num_registers;
        if (regs_.size() < needed) {
          regs_.resize(std::max(needed, regs_.size() * 2));
          r = regs_.data() + frame->base;
        }
        Value* callee_regs = regs_.data() + base;
        size_t nargs = ins.args.size() - 2;
        for (size_t i = 0; i < nargs; ++i) callee_regs[i] = r[a[2 + i]];
        frames_.push_back(Frame{static_cast<uint32_t>(a[1]), 0, base, a[0]});
        frame = &frames_.back();
        fn = &callee;
        code = fn->code.data();
        r = callee_regs;
        pc = 0;
        break;
      }
      case Opcode::InvokeKernel:
        if (profiling_) [[unlikely]] {
          invoke_kernel_profiled(ins, r);
        } else {
          invoke_kernel(ins, r);
        }
        ++pc;
        break;
      case Opcode::If:
        pc = static_cast<uint32_t>(r[a[0]].as_int() != 0 ? a[1] : a[2]);
        break;
      case Opcode::Goto:
        pc = static_cast<uint32_t>(a[0]);
        break;
      case Opcode::LoadConst:
        r[a[0]] = exe.constants[a[1]];
        ++pc;
        break;
      case Opcode::LoadImm:
        r[a[0]] = a[1];
        ++pc;
        break;
      case Opcode::AllocStorage: {
        int64_t bytes = r[a[1]].as_int();
        if (bytes < 0) user_error("alloc_storage of ", bytes, " bytes");
        r[a[0]] = alloc_storage(static_cast<size_t>(bytes), decode_device(a[2]));
        ++pc;
        break;
      }
      case Opcode::AllocTensor: {
        const Storage& storage = r[a[1]].as_storage();
        r[a[0]] = Tensor::from_storage(storage, r[a[2]].as_int(), r[a[3]].as_shape(),
                                       static_cast<DType>(a[4]));
        ++pc;
        break;
      }
      case Opcode::ShapeOf:
        r[a[0]] = Value::shape(r[a[1]].as_tensor().shape());
        ++pc;
        break;
      case Opcode::Dim: {
        const Value& v = r[a[1]];
        const Shape& s = v.kind() == ValueKind::kShape ? v.as_shape() : v.as_tensor().shape();
        if (a[2] >= static_cast<int64_t>(s.size())) {
          user_error("dim ", a[2], " of a rank-", s.size(), " shape ", shape_str(s));
        }
        r[a[0]] = s[a[2]];
        ++pc;
        break;
      }
      case Opcode::AddI: {
        int64_t out;
        if (__builtin_add_overflow(r[a[1]].as_int(), r[a[2]].as_int(), &out)) {
          user_error("integer overflow in add");
        }
        r[a[0]] = out;
        ++pc;
        break;
      }
      case Opcode::SubI: {
        int64_t out;
        if (__builtin_sub_overflow(r[a[1]].as_int(), r[a[2]].as_int(), &out)) {
          user_error("integer overflow in sub");
        }
        r[a[0]] = out;
        ++pc;
        break;
      }
      case Opcode::MulI: {
        int64_t out;
        if (__builtin_mul_overflow(r[a[1]].as_int(), r[a[2]].as_int(), &out)) {
          user_error("integer overflow in mul");
        }
        r[a[0]] = out;
        ++pc;
        break;
      }
      case Opcode::DivI:
        r[a[0]] = floor_div(r[a[1]].as_int(), r[a[2]].as_int());
        ++pc;
        break;
      case Opcode::ModI:
        r[a[0]] = floor_mod(r[a[1]].as_int(), r[a[2]].as_int());
        ++pc;
        break;
      case Opcode::MinI:
        r[a[0]] = std::min(r[a[1]].as_int(), r[a[2]].as_int());
        ++pc;
        break;
      case Opcode::MaxI:
        r[a[0]] = std::max(r[a[1]].as_int(), r[a[2]].as_int());
        ++pc;
        break;
      case Opcode::CmpI:
        r[a[0]] = int64_t{compare(static_cast<CmpKind>(a[1]), r[a[2]].as_int(), r[a[3]].as_int())};
        ++pc;
        break;
      case Opcode::MakeShape: {
        Shape s(ins.args.size() - 1);
        for (size_t i = 0; i < s.size(); ++i) s[i] = r[a[1 + i]].as_int();
        r[a[0]] = Value::shape(std::move(s));
        ++pc;
        break;
      }
      case Opcode::ReshapeView:
        r[a[0]] = r[a[1]].as_tensor().reshape_view(r[a[2]].as_shape());
        ++pc;
        break;
      case Opcode::AllocTuple: {
        Tuple t(ins.args.size() - 1);
        for (size_t i = 0; i < t.size(); ++i) t[i] = r[a[1 + i]];
        r[a[0]] = Value(std::move(t));
        ++pc;
        break;
      }
      case Opcode::GetField: {
        const Tuple& t = r[a[1]].as_tuple();
        if (a[2] >= static_cast<int64_t>(t.size())) {
          user_error("field ", a[2], " of a tuple of ", t.size());
        }
        r[a[0]] = Value(t[a[2]]);
        ++pc;
        break;
      }
      case Opcode::TupleAppend: {
        // Loops collect per-iteration values this way (a scan output's elements); the
        // tuple holds references, so appending never copies tensor data. In place when the
        // register holds the only reference (the loop's own collection).
        if (a[0] == a[1] && r[a[1]].append_in_place(r[a[2]])) {
          ++pc;
          break;
        }
        Tuple t = r[a[1]].as_tuple();
        t.push_back(r[a[2]]);
        r[a[0]] = Value(std::move(t));
        ++pc;
        break;
      }
      case Opcode::TupleGet: {
        const Tuple& t = r[a[1]].as_tuple();
        int64_t i = r[a[2]].as_int();
        if (i < 0 || i >= static_cast<int64_t>(t.size())) {
          user_error("tuple_get: index ", i, " of a tuple of ", t.size());
        }
        r[a[0]] = Value(t[static_cast<size_t>(i)]);
        ++pc;
        break;
      }
      // Sequences and optionals are tuples (compiler/op/ops_sequence.h); the compiler
      // checks positions naming the node, these checks keep the VM in bounds regardless.
      case Opcode::TupleLen:
        r[a[0]] = static_cast<int64_t>(r[a[1]].as_tuple().size());
        ++pc;
        break;
      case Opcode::TupleInsert: {
        Tuple t = r[a[1]].as_tuple();
        int64_t i = r[a[2]].as_int();
        if (i < 0 || i > static_cast<int64_t>(t.size())) {
          user_error("tuple_insert: position ", i, " in a tuple of ", t.size());
        }
        t.insert(t.begin() + i, r[a[3]]);
        r[a[0]] = Value(std::move(t));
        ++pc;
        break;
      }
      case Opcode::TupleErase: {
        Tuple t = r[a[1]].as_tuple();
        int64_t i = r[a[2]].as_int();
        if (i < 0 || i >= static_cast<int64_t>(t.size())) {
          user_error("tuple_erase: position ", i, " in a tuple of ", t.size());
        }
        t.erase(t.begin() + i);
        r[a[0]] = Value(std::move(t));
        ++pc;
        break;
      }
      case Opcode::DeviceCopy:
        r[a[0]] = r[a[1]].as_tensor().copy_to(decode_device(a[2]));
        ++pc;
        break;
      case Opcode::Free:
        r[a[0]].reset();
        ++pc;
        break;
      case Opcode::Assert:
        if (r[a[0]].as_int() == 0) user_error("assertion failed: ", exe.strings[a[1]]);
        ++pc;
        break;
      case Opcode::Fatal:
        user_error(exe.strings[a[0]]);
      case Opcode::LoadScalar:
        r[a[0]] = load_scalar(r[a[1]].as_tensor());
        ++pc;
        break;
      case Opcode::LoadElem:
        r[a[0]] = load_element(r[a[1]].as_tensor(), a[2]);
        ++pc;
        break;
      case Opcode::SelectI:
        r[a[0]] = r[a[1]].as_int() != 0 ? r[a[2]].as_int() : r[a[3]].as_int();
        ++pc;
        break;
      case Opcode::ShapeTensor:
        r[a[0]] = shape_tensor(r[a[1]].as_shape(), a[2], static_cast<DType>(a[3]));
        ++pc;
        break;
      case Opcode::RowView:
        r[a[0]] = r[a[1]].as_tensor().row_view(r[a[2]].as_int());
        ++pc;
        break;
    }
  }
}

int64_t VirtualMachine::select_variant(size_t kernel, const DLTensor* args) {
  const Kernel& k = program_->exe().kernels[kernel];
  const ResolvedKernel& rk = program_->kernel(kernel);
  if (rk.key_dims.empty()) return dispatch_[kernel].variant = 0;  // nothing to decide
  auto dim_of = [&](uint32_t arg, uint32_t axis) -> int64_t {
    const DLTensor& t = args[arg];
    return axis < static_cast<uint32_t>(t.ndim) ? t.shape[axis] : -1;
  };
  key_scratch_.clear();
  for (auto [arg, axis] : rk.key_dims) key_scratch_.push_back(dim_of(arg, axis));
  DispatchEntry& cache = dispatch_[kernel];
  if (cache.variant >= 0 && cache.key == key_scratch_) return cache.variant;
  for (size_t v = 0; v < k.variants.size(); ++v) {
    bool ok = true;
    for (const DimPredicate& c : k.variants[v].conditions) {
      int64_t d = dim_of(c.arg, c.axis);
      switch (c.kind) {
        case DimPredicateKind::kEq:
          ok = d == c.a;
          break;
        case DimPredicateKind::kModEq:
          ok = d >= 0 && d % c.a == c.b;
          break;
        case DimPredicateKind::kRange:
          ok = d >= c.a && d <= c.b;
          break;
        case DimPredicateKind::kDimEq:
          ok = d >= 0 && d == dim_of(static_cast<uint32_t>(c.a), static_cast<uint32_t>(c.b));
          break;
      }
      if (!ok) break;
    }
    if (ok) {
      cache.key = key_scratch_;
      cache.variant = static_cast<int64_t>(v);
      return cache.variant;
    }
  }
  std::string shapes;
  for (uint32_t i = 0; i < k.num_inputs + k.num_outputs; ++i) {
    const DLTensor& t = args[i];
    shapes += (i ? " " : "") + shape_str(std::span<const int64_t>(t.shape, t.ndim));
  }
  user_error("no variant of kernel ", k.name, " accepts arguments of shapes ", shapes);
}

void VirtualMachine::invoke_kernel(const Instruction& ins, const Value* r) {
  const int64_t* a = ins.args.data();
  size_t kernel = static_cast<size_t>(a[0]);
  size_t nargs = ins.args.size() - 2;
  kernel_args_.resize(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const Tensor* t = r[a[2 + i]].if_tensor();
    if (t == nullptr) {
      user_error("kernel argument ", i, " (register r", a[2 + i], ") must be a tensor, found ",
                 value_kind_name(r[a[2 + i]].kind()));
    }
    kernel_args_[i] = t->as_dltensor();
  }
  int64_t variant = select_variant(kernel, kernel_args_.data());
  DynvmKernelFn fn = program_->kernel(kernel).variants[variant];
  call_ctx_.error.clear();
  int32_t status = fn(kernel_args_.data(), static_cast<int32_t>(nargs), &call_ctx_);
  if (status != 0) [[unlikely]] {
    const Kernel& k = program_->exe().kernels[kernel];
    user_error("kernel ", k.name, " (", k.variants[variant].symbol, ") failed",
               call_ctx_.error.empty() ? str_cat(" with status ", status)
                                       : str_cat(": ", call_ctx_.error));
  }
}

void VirtualMachine::invoke_kernel_profiled(const Instruction& ins, const Value* r) {
  auto start = std::chrono::steady_clock::now();
  invoke_kernel(ins, r);
  auto elapsed = std::chrono::steady_clock::now() - start;
  const CallTime call{1, std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()};
  KernelTime& t = profile_.kernels[static_cast<size_t>(ins.args[0])];
  t.add(call);
  ArgShapes shapes(kernel_args_.size());
  for (size_t i = 0; i < kernel_args_.size(); ++i) {
    const DLTensor& a = kernel_args_[i];
    shapes[i].assign(a.shape, a.shape + a.ndim);
  }
  t.by_shape[std::move(shapes)].add(call);
}

}  // namespace dynvm::vm
