// Device placement: where each value of the entry function lives at run time, decided once
// for lowering (compiler/lower) to follow. Shape work stays on the host, tensor work runs
// on the kernel device, and every crossing between the two is an explicit copy:
//   host          values lowering computes on the host (every element known to type
//                 inference: constants, shapes, `Concat(Gather(Shape(x), 0), [-1, 16])`),
//                 constants, the entry's inputs, a Loop's iteration and condition;
//   kernel device kernel outputs (ops with a kKernel binding, fused groups, scan outputs
//                 stacked after a Loop);
//   its source's  views and aliases (Reshape views, Identity, dynvm.Refine);
//   joined        an If's results and a Loop's carried values: where every branch / every
//                 iteration has them, else the kernel device.
// Copies: a value read where it does not live (a host value read by a kernel, a kernel's
// value read on the host by an If or a Loop's trip count / condition) is copied once,
// right after it is bound; a value moved into an If's or a Loop's result registers that
// live elsewhere is copied at that move. With the kernel device the CPU, host and kernel
// device are one device and nothing is copied. The rules and why: docs/compiler.md.
//
//   Placement p = place_devices(typed, vm::Device{vm::DeviceType::kCUDA, 0});
//   p.device_of(var->var_id), p.copies_after(var->var_id, 0), p.computed_on_host(...)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/passes/infer_types.h"
#include "vm/device.h"

namespace dynvm::compiler {

// Copies into registers shared by several sources (lowering moves each source in):
//   If:   first = the then branch's result fields, second = the else branch's;
//   Loop: first = the initial carried values, second = the body's results
//         (cond', carried'..., scan elements...).
// nullopt: the source already lives there.
struct JoinCopies {
  std::vector<std::optional<vm::Device>> first, second;
};

struct Placement {
  vm::Device kernel_device = vm::kCpu;
  // Every let-bound variable and parameter of the entry function, its If branches and Loop
  // bodies (and the let-bound variables inside fused groups, which are the kernel's), by
  // var_id: the device of its value, one per register (a tuple has one per field).
  std::unordered_map<uint64_t, std::vector<vm::Device>> devices;
  // Let-bound calls whose value lowering computes on the host (`host_value`): every
  // element is known to type inference.
  std::unordered_set<uint64_t> host_computed;
  // (var_id, field) -> the devices the value is copied to right after it is bound.
  std::map<std::pair<uint64_t, size_t>, std::vector<vm::Device>> copies;
  // Operands that are not variables (constants, nested calls) read where they do not live:
  // copied at that read, to these devices.
  std::unordered_map<const ExprNode*, std::vector<vm::Device>> read_copies;
  // By the If or Loop node.
  std::unordered_map<const ExprNode*, JoinCopies> joins;

  // The device of a variable's value (field `field` of a tuple); InternalError if unplaced.
  vm::Device device_of(uint64_t var_id, size_t field = 0) const;
  bool computed_on_host(uint64_t var_id) const { return host_computed.count(var_id) != 0; }
  // Where a variable's value (field) is copied right after it is bound; empty if nowhere.
  const std::vector<vm::Device>& copies_after(uint64_t var_id, size_t field = 0) const;
  bool copied_at_read(const ExprNode* operand, vm::Device to) const;
  const JoinCopies* join(const ExprNode* node) const;
  // Every copy this placement asks for (after bindings, at reads, at joins).
  size_t num_copies() const;
};

// The placement of `typed`'s entry function, kernels on `kernel_device`. Bindings
// (compiler/op/binding.h) say which calls are kernels, views or aliases and which operands
// a kernel reads; a binding's UserError (a refused attribute) names the binding as
// lowering would.
Placement place_devices(const TypedModule& typed, vm::Device kernel_device = vm::kCpu);

// The placement as text (vmc --dump-ir after:place_devices): one line per parameter and
// let-bound variable of the entry, in order, with its devices, whether the host computes
// it, and where it is copied.
std::string print_placement(const Placement& placement, const Module& module);

}  // namespace dynvm::compiler
