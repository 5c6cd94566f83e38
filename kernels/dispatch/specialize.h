// Shape specialization: one operator, several compiled variants, and the conditions over
// argument dims that pick among them at run time (Nimble-style residue dispatch).
//
// For an op with symbolic dims the specializer plans, in dispatch order:
//   1. static variants   every dim the caller named bound to a constant (`M == 37`);
//   2. equal-dims variants  broadcast dims the compiler could not prove equal (an output
//                        dim `select(x == 1, y, x)`) taken as equal, `y -> x`, so the
//                        kernel is the plain elementwise one (`argA.dimB == argC.dimD`),
//                        each with its own residue classes (3.) in front of it;
//   3. residue variants  a symbolic dim the op's schedule would like to be a multiple of
//                        its tile (OpInstance::preferred_multiples, e.g. M of a matmul by
//                        tile_m) substituted by `factor * q`, so lowering proves the tile
//                        divides it and emits no tail (`M % 8 == 0`); not made for an op
//                        with equal-dims variants (its symbolic variant then runs only
//                        for a real broadcast);
//   4. the symbolic variant, loop-partitioned, with no condition: it runs every shape.
// A variant is the same builder re-instantiated with substituted input types, so the
// math is written once and each variant gets exactly the code its shapes allow. The VM's
// InvokeKernel tries variants in order and runs the first whose conditions hold, so the
// same shape always runs the same variant (vm/interpreter.h).
//
//   SpecializeOptions options;
//   options.static_shapes = {{{"m", 1}}};
//   SpecializedOp op = specialize("mm", [](auto& in) { return ops::matmul(in[0], in[1]); },
//                                 {{f32, {m, 768}}, {f32, {768, 768}}}, options);
//   CompiledKernels k = compile_kernels({op}, codegen::Target::host());   // kernel_set.h
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/ops/op.h"
#include "vm/executable.h"

namespace dynvm::dispatch {

// An operator with its attributes bound: input types in, instance out. The specializer
// calls it once per variant with different (substituted) input types.
using OpBuilder = std::function<ops::OpInstance(const std::vector<ops::TensorType>& inputs)>;

struct SpecializeOptions {
  // Sizes the caller expects: each entry binds symbolic dims (by name) to constants and
  // becomes one variant. A name must be a symbolic dim that appears alone as some input
  // dim (that dim is what the run-time condition reads).
  std::vector<std::map<std::string, int64_t>> static_shapes;
  // Residue-class variants from the op's preferred multiples.
  bool residue_classes = true;
  // With k preferred multiples there are 2^k - 1 combinations; at most this many variants
  // are made, the ones constraining more dims first.
  size_t max_residue_variants = 3;
  // Variants for broadcast dims that are equal at run time (3. above).
  bool equal_dim_variants = true;
  ops::KnobValues knobs;  // schedule knobs for every variant
};

struct Variant {
  std::string symbol;       // kernel symbol: "<name>__static_m37", "<name>__mod_m8", "<name>"
  std::string description;  // "m == 37", "m % 8 == 0", "any shape"
  std::vector<vm::DimPredicate> conditions;  // over the kernel's arguments (inputs first)
  ops::OpInstance op;
  ops::KnobValues knobs;
};

struct SpecializedOp {
  std::string name;  // the vm::Kernel's name
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  std::vector<Variant> variants;  // dispatch order; the last one has no conditions
};

// Plans and instantiates the variants of `build` for `inputs`. UserError for a static
// shape naming an unknown dim, a value below 0, or a dim that appears only inside an
// expression (no input dim is the bare symbol, so nothing at run time can test it).
SpecializedOp specialize(const std::string& name, const OpBuilder& build,
                         const std::vector<ops::TensorType>& inputs,
                         const SpecializeOptions& options = {});

// The vm::Kernel entry for `op` (library index as given), variants in dispatch order.
vm::Kernel dispatch_table(const SpecializedOp& op, uint32_t library);

}  // namespace dynvm::dispatch
