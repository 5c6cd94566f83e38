// Lowering: a typed module (compiler/passes/infer_types) becomes a vm::Executable —
// register bytecode for the entry function, every kernel it calls generated and
// specialized (kernels/dispatch) into one library, constants in the constant table, and
// the signature with the module's symbolic dims. Shape work runs on the host as integer
// bytecode (dims read from the inputs once, expressions evaluated with common
// subexpressions shared); each kernel's outputs are allocated just before it runs. Then
// the bytecode's memory is planned (plan_memory.h: dead storages reused, static sizes in
// arenas), every register is freed after its last use (insert_frees.h), and values never
// alive together share a register (allocate_registers.h). Where each value
// lives (host or kernel device) and the copies between them: compiler/passes/place_devices.
//
//   vm::Executable exe = lower_module(infer_types_with_facts(module), options);
//
// What lowers: calls with a kernel, view, alias or host binding (compiler/op/binding.h),
// fused groups (primitive functions), constants, tuples, If and Loop (scan outputs
// included). Calls of other functions and dims that stay Any in a kernel's types are
// refused with a UserError naming the binding.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/lower/allocate_registers.h"
#include "compiler/lower/insert_frees.h"
#include "compiler/lower/plan_memory.h"
#include "compiler/passes/infer_types.h"
#include "compiler/passes/place_devices.h"
#include "kernels/codegen/target.h"
#include "vm/executable.h"

namespace dynvm::compiler {

// What the steps after bytecode emission did to the entry function.
struct LowerStats {
  MemoryPlanStats memory;
  FreeStats frees;
  RegisterStats registers;
};

struct LowerOptions {
  codegen::Target target = codegen::Target::host();
  // Where kernels run (compiler/passes/place_devices). Only the CPU has a code generator:
  // another device is refused where kernels are generated (lower_module).
  vm::Device kernel_device = vm::kCpu;
  // Sizes to specialize every kernel for (vmc --static / --specialize): dim name -> value.
  std::vector<std::map<std::string, int64_t>> static_shapes;
  bool residue_variants = true;
  std::string producer = "dynvm vmc";
  // Storage reuse by liveness and one arena per block for static sizes (plan_memory.h);
  // vmc --no-plan-memory turns it off, to measure what it saves.
  bool plan_memory = true;
  LowerStats* stats = nullptr;  // filled when given (vmc --time-passes)
  // Kernel compilation progress: (done, total, what).
  std::function<void(size_t, size_t, const std::string&)> progress;
};

// `placement`: place_devices(typed, options.kernel_device), made by the pipeline before
// lowering; lowering computes on the host, allocates and copies where it says.
vm::Executable lower_module(const TypedModule& typed, const Placement& placement,
                            const LowerOptions& options = {});
// The same with the placement made here.
vm::Executable lower_module(const TypedModule& typed, const LowerOptions& options = {});

}  // namespace dynvm::compiler
