// Lowering, the bytecode half of the compiler. Its steps, in the order compiler/pipeline.cc
// runs them (each its own file, each named in `vmc --time-passes` and `--dump-ir`):
//
//   emit_bytecode       (here)                 typed entry function -> register bytecode and
//                                              the kernels it calls, not yet generated
//   plan_memory         (plan_memory.h)        dead storages reused, static sizes in arenas
//   insert_frees        (insert_frees.h)       a Free after each register's last use
//   allocate_registers  (allocate_registers.h) values never alive together share a register
//   generate_kernels    (generate_kernels.h)   every kernel specialized and compiled into
//                                              one library
//
// emit_bytecode: shape work runs on the host as integer bytecode (dims read from the inputs
// once, expressions evaluated with common subexpressions shared); each kernel's outputs are
// allocated just before it runs; constants go to the constant table; the signature keeps the
// module's symbolic dims. Where each value lives (host or kernel device) and the copies
// between them: compiler/passes/place_devices.
//
// What lowers: calls with a kernel, view, alias or host binding (compiler/op/binding.h),
// fused groups (primitive functions), constants, tuples, If and Loop (scan outputs
// included). Calls of other functions and dims that stay Any in a kernel's types are
// refused with a UserError naming the binding.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/passes/infer_types.h"
#include "compiler/passes/place_devices.h"
#include "kernels/codegen/target.h"
#include "kernels/dispatch/kernel_set.h"
#include "kernels/tune/cost_model.h"
#include "vm/executable.h"

namespace dynvm::compiler {

struct LowerOptions {
  codegen::Target target = codegen::Target::host();
  // Where kernels run (compiler/passes/place_devices). Only the CPU has a code generator:
  // another device is refused where kernels are generated (generate_kernels).
  vm::Device kernel_device = vm::kCpu;
  // Sizes to specialize every kernel for (vmc --static / --specialize): dim name -> value.
  std::vector<std::map<std::string, int64_t>> static_shapes;
  bool residue_variants = true;
  std::string producer = "dynvm vmc";
  // Storage reuse by liveness and one arena per block for static sizes (plan_memory.h);
  // vmc --no-plan-memory turns it off, to measure what it saves.
  bool plan_memory = true;
  // Schedule knobs per workload (KernelRequest::workload), from tuning records (vmc
  // --tuning-log): every variant of such a kernel takes them; the others the defaults.
  std::map<std::string, ops::KnobValues> tuned_knobs;
  // Sub-range schedules per workload: the sizes whose argument `arg` has dim `axis` in
  // [lo, hi] run variants built with `knobs`, ahead of the kernel's other variants.
  struct TunedRange {
    uint32_t arg = 0;
    uint32_t axis = 0;
    int64_t lo = 0;
    int64_t hi = 0;
    ops::KnobValues knobs;
  };
  std::map<std::string, std::vector<TunedRange>> tuned_ranges;
  // Kernels no record covers take the knobs the cost model that ships with dynvm ranks
  // first (kernels/tune/shipped_model.h) instead of the template's defaults; vmc
  // --no-cost-model turns it off, to measure what it gains.
  bool rank_schedules = true;
  // The model that ranks them; null: the shipped one.
  std::shared_ptr<const tune::CostModel> cost_model;
  // Kernel compilation progress: (done, total, what).
  std::function<void(size_t, size_t, const std::string&)> progress;
  // Each kernel variant's lowered TIR, as generate_kernels makes it (vmc --dump-tir).
  std::function<void(const tir::LoweredFunc&)> lowered;
};

// One kernel the bytecode calls: its binding instantiated for concrete argument types.
struct KernelRequest {
  std::string name;
  dispatch::OpBuilder build;
  std::vector<ops::TensorType> arg_types;
  // The workload: the binding's key (op and attributes) and the argument types with their
  // symbolic dims renamed in order of appearance, so that the same kernel in another model,
  // or compiled again, has the same key. What tuning records are looked up by.
  std::string workload;
};

// The bytecode and what is still to generate. `exe.kernels[k]` is kernel k's name and
// arity (what InvokeKernel is verified against) until generate_kernels compiles
// `kernels[k]` and fills in its variants and library.
struct Lowered {
  vm::Executable exe;
  std::vector<KernelRequest> kernels;
};

// The entry function of `typed` as bytecode. `placement`: place_devices(typed,
// options.kernel_device); lowering computes on the host, allocates and copies where it says.
Lowered emit_bytecode(const TypedModule& typed, const Placement& placement,
                      const LowerOptions& options);

}  // namespace dynvm::compiler
