// CodeGenLLVM: the target-independent part of CPU code generation. It turns flattened TIR
// (every buffer access has exactly one flat index; parallel loops outlined into
// ParallelRegions) into one LLVM module that implements the kernel ABI of vm/kernel_abi.h.
// Targets derive from it (codegen_x86.h) to pick the TargetMachine and to say which
// operations their ISA has natively. Internal to kernels/codegen: includes LLVM headers.
//
// The visitor is split by concern:
//   codegen_llvm.cc   module-level state, types, runtime callbacks, ABI symbols, helpers
//   codegen_expr.cc   arith::Expr (i64 index arithmetic) and tir::Expr (typed values)
//   codegen_stmt.cc   loops, ifs, stores, allocations, lets, parallel calls and regions
//   codegen_entry.cc  the kernel entry: argument checks, shape binding, error messages
//   intrinsics.cc     tir::Intrinsic -> IR (table), math_ir.cc: exp/log/tanh/... in IR
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/arith/analyzer.h"
#include "kernels/codegen/math_ir.h"
#include "kernels/codegen/target.h"
#include "kernels/tir/stmt.h"

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace dynvm::codegen {

// Status codes a generated kernel returns (0 is success).
inline constexpr int32_t kStatusBadArguments = 1;
inline constexpr int32_t kStatusOutOfMemory = 2;

class CodeGenLLVM : public MathTargetHooks {
 public:
  // `tm` must outlive this object; the module gets its triple and data layout.
  CodeGenLLVM(llvm::LLVMContext& context, llvm::TargetMachine& tm, Target target);
  ~CodeGenLLVM() override;
  CodeGenLLVM(const CodeGenLLVM&) = delete;
  CodeGenLLVM& operator=(const CodeGenLLVM&) = delete;

  // Emits `f`'s kernel entry (an exported symbol named f.func.name) and its parallel regions.
  void add_function(const tir::LoweredFunc& f);
  // Adds dynvm_kernel_abi_version / dynvm_library_init, verifies and returns the module.
  std::unique_ptr<llvm::Module> finish();

  const Target& target() const { return target_; }

  // ---- Target hooks (MathTargetHooks and code generation). ----
  // Whether floor/ceil/roundeven are single instructions (else math_ir emits them in IR,
  // because the LLVM intrinsics would become libm calls the library cannot link against).
  bool has_native_rounding() const override { return false; }
  // Whether f32 <-> f16 conversions are instructions (else bit manipulation in IR).
  virtual bool has_native_f16_conversion() const { return false; }
  // Attributes every generated function carries (CPU, features, vector width).
  void add_function_attributes(llvm::Function* f) const override;
  // The target's own float max (min) of two vectors, `a > b ? a : b` (`a < b ? a : b`):
  // `b` when either is NaN. Null where the target has none for the type; then max and min
  // are compares and selects, which LLVM merges into one compare whose result both
  // operands wait for (five cycles a step of a max chain on Zen 4, against two).
  virtual llvm::Value* emit_target_minmax(llvm::IRBuilder<>& b, bool is_max, llvm::Value* a,
                                          llvm::Value* b_value) const {
    (void)b, (void)is_max, (void)a, (void)b_value;
    return nullptr;
  }

 protected:
  llvm::TargetMachine& target_machine() { return tm_; }

 private:
  // ---- Types (codegen_llvm.cc). ----
  // The register type of a value: f16/bf16 are held as f32, bool as i1.
  llvm::Type* value_type(tir::DataType t);
  llvm::Type* value_scalar_type(vm::DType t);
  // The in-memory element type: bool is i8, f16/bf16 are i16.
  llvm::Type* memory_type(vm::DType t);
  llvm::Align element_align(vm::DType t);

  // ---- Function state. Everything that belongs to the function being emitted, swapped
  // out while a parallel region is emitted from its call site. ----
  struct FunctionState {
    llvm::Function* fn = nullptr;
    llvm::Value* ctx = nullptr;      // the kernel call's ctx (void*)
    llvm::Value* runtime = nullptr;  // const DynvmRuntimeCallbacks*
    llvm::BasicBlock* entry = nullptr;
    std::unordered_map<arith::VarId, llvm::Value*> vars;
    std::unordered_map<const tir::Buffer*, llvm::Value*> buffers;
    std::vector<llvm::Value*> live_workspaces;
    std::vector<const tir::Buffer*> workspace_buffers;  // live_workspaces' buffers
    arith::Analyzer analyzer;
  };

  // ---- Expressions (codegen_expr.cc). ----
  // An integer index expression as i64, or a condition as i1.
  llvm::Value* emit_index(const arith::Expr& e);
  llvm::Value* emit_floordiv(const arith::Expr& a, const arith::Expr& b, bool mod);
  // A typed value (scalar or vector).
  llvm::Value* emit_expr(const tir::Expr& e);
  llvm::Value* emit_binary(const tir::Expr& e);
  llvm::Value* emit_int_divmod(llvm::Value* a, llvm::Value* b, tir::DataType t, bool mod);
  llvm::Value* emit_int_pow(llvm::Value* x, llvm::Value* y, tir::DataType t);
  llvm::Value* emit_compare(const tir::Expr& e);
  llvm::Value* emit_load(const tir::Expr& e);
  llvm::Value* emit_index_value(const tir::Expr& e);
  // Converts a register value of type `from` to `to` (C semantics with saturation for
  // float -> int, f16/bf16 rounding emulated on f32 registers).
  llvm::Value* emit_cast(llvm::Value* v, tir::DataType from, tir::DataType to);
  // f32 <-> f16 / bf16 bit patterns (i16), scalar or vector.
  llvm::Value* emit_f32_to_f16(llvm::Value* f);
  llvm::Value* emit_f16_to_f32(llvm::Value* bits);
  llvm::Value* emit_f32_to_bf16(llvm::Value* f);
  llvm::Value* emit_bf16_to_f32(llvm::Value* bits);
  // Memory <-> register conversions of one element type.
  llvm::Value* from_memory(llvm::Value* v, vm::DType t);
  llvm::Value* to_memory(llvm::Value* v, vm::DType t);
  // The address of element `index` (i64) of `buffer`, or a vector of addresses.
  llvm::Value* element_address(const tir::Buffer& buffer, llvm::Value* index);
  llvm::Value* buffer_base(const tir::Buffer& buffer);
  // base + lane * stride for lanes 0..n-1, as <n x i64>.
  llvm::Value* lane_indices(llvm::Value* base, llvm::Value* stride, int lanes);
  // <n x i1>: lane < active, the lanes a masked access touches (tir ExprNode::active).
  llvm::Value* active_mask(const arith::Expr& active, int lanes);
  // A vector access of constant stride s in [2, kMaxWideStride] is one contiguous access of
  // s * lanes elements, every s-th of them a lane's (a gather or scatter costs an access per
  // lane): its s, else 0.
  static int64_t wide_stride(const arith::Expr& stride, int lanes);
  // <s * lanes x i1> over that contiguous range: the elements up to the last (active) lane's,
  // only the lanes' own with `lanes_only` (a store must not write the others).
  llvm::Value* wide_mask(int64_t s, int lanes, const arith::Expr& active, bool lanes_only);
  // Whether every lane of a vector access at (index, stride) lies inside `buffer`'s stack
  // slot (a local buffer of static size): it may then read and write the inactive lanes
  // too, which keeps a register tile's masked remainder in registers.
  bool in_stack_slot(const tir::Buffer& buffer, const arith::Expr& index, const arith::Expr& stride,
                     int lanes);
  void bind_var(const arith::Expr& var, llvm::Value* value);
  void unbind_var(const arith::Expr& var);

  // ---- Statements (codegen_stmt.cc). ----
  void emit_stmt(const tir::Stmt& s);
  void emit_for(const tir::Stmt& s);
  void emit_if(const tir::Stmt& s);
  void emit_store(const tir::Stmt& s);
  void emit_masked_store(const tir::Stmt& s, llvm::Value* index, llvm::Value* value);
  void emit_allocate(const tir::Stmt& s);
  // Local buffers of a constant size up to kMaxStackBytes live in the entry block's frame.
  bool on_stack(const tir::Buffer& buffer) const;
  // A workspace from the runtime (returning kStatusOutOfMemory when it fails), bound to
  // `buffer` until free_workspace (last allocated, first freed). `at_least_zero`: a
  // negative computed size allocates nothing.
  llvm::Value* allocate_workspace(const tir::Buffer& buffer, bool at_least_zero);
  void free_workspace(llvm::Value* ptr);
  void emit_parallel_call(const tir::Stmt& s);
  // A counted loop over [begin, end) binding `var`; emits body() inside; `properties`
  // are extra llvm.loop metadata entries.
  void emit_counted_loop(const arith::Expr& var, llvm::Value* begin, llvm::Value* end,
                         const std::function<void()>& body,
                         const std::vector<llvm::Metadata*>& properties);
  // emit_counted_loop over `body`, with the workspaces it allocates (anywhere in it) at a
  // size none of its variables change allocated once around the loop, not once per trip.
  void emit_loop_hoisting_workspaces(const arith::Expr& var, llvm::Value* begin, llvm::Value* end,
                                     const tir::Stmt& body,
                                     const std::vector<llvm::Metadata*>& properties);
  void emit_region(size_t index, const arith::Expr& extent);
  // How many ParallelCalls name each region (a region called from one site may use what
  // the caller's analyzer knows; one called from several may not).
  void count_region_calls(const tir::Stmt& s);
  // Pointer to DynvmRuntimeCallbacks field `field` (0 = abi_version, 1 = parallel_for, ...)
  llvm::Value* runtime_callback(int field);

  // ---- Kernel entry and errors (codegen_entry.cc). ----
  void emit_kernel_entry();
  void bind_arguments(llvm::Value* args, llvm::Value* num_args);
  // Branches on `ok`: when false, calls report() (if any), frees the live workspaces and
  // returns `status` from the current function; the builder continues on the true edge.
  void return_on_failure(llvm::Value* ok, llvm::Value* status, const std::function<void()>& report);
  void report_static(const std::string& message);
  // Reports "<a><x><b><y><c>" through set_error, formatted by generated code (no libc);
  // y == nullptr reports "<a><x><b>".
  void report_numbers(const std::string& a, llvm::Value* x, const std::string& b, llvm::Value* y,
                      const std::string& c);
  llvm::Function* report_function();
  llvm::Function* append_function();
  llvm::Constant* string_constant(const std::string& s);

  // ---- Module level (codegen_llvm.cc). ----
  void emit_abi_symbols();

  llvm::LLVMContext& context_;
  llvm::TargetMachine& tm_;
  Target target_;
  std::unique_ptr<llvm::Module> module_;
  std::unique_ptr<llvm::IRBuilder<>> b_;
  std::unique_ptr<MathLibrary> math_;
  llvm::GlobalVariable* runtime_global_ = nullptr;
  llvm::StructType* callbacks_type_ = nullptr;
  llvm::StructType* dltensor_type_ = nullptr;
  llvm::Function* report_fn_ = nullptr;
  llvm::Function* append_fn_ = nullptr;
  std::map<std::string, llvm::Constant*> strings_;

  // The function being emitted.
  const tir::LoweredFunc* lowered_ = nullptr;
  std::vector<llvm::Function*> region_fns_;
  std::vector<llvm::StructType*> closure_types_;
  std::vector<int> region_calls_;
  arith::Analyzer kernel_analyzer_;  // facts that hold everywhere in the kernel (dims >= 0)
  FunctionState fs_;
  std::vector<std::string> kernel_names_;
};

// The code generator for `target` (x86-64 only today); UserError for other targets.
std::unique_ptr<CodeGenLLVM> make_codegen(llvm::LLVMContext& context, llvm::TargetMachine& tm,
                                          const Target& target);
// A TargetMachine for `target` at optimisation level 0..3 (PIC, for shared objects).
std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& target, int opt_level);

}  // namespace dynvm::codegen
