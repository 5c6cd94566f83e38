// Kernels that run one step's computation over a whole sequence: a recurrence whose every
// step is several stages (a product, then the gate math over its result) and reads what the
// step before wrote (recurrent.h's LSTM, GRU and RNN over all time steps).
//
// The step is written and scheduled as an ordinary TE computation over step-sized tensors
// (x_t [B, ...], the state in, the state out) and lowered as usual. over_steps() then makes
// the kernel: a serial loop over t around the step's loop nests, each of the step's buffers
// rebound to what it stands for at step t (a slice of a [T, ...] argument, the state the step
// before left, a weight), so that one kernel call runs every step where a VM loop made two
// kernel calls, their allocations and their shapes per step. Step 0 is emitted apart, reading
// the initial states, so the loop body reads the previous slice with no test. Buffers the
// step allocates at its top (its intermediates) are allocated once, around the loop.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/te/tensor.h"
#include "kernels/tir/stmt.h"

namespace dynvm::ops {

// One argument of the step function and what it stands for in the kernel.
struct StepArgument {
  enum class Role : uint8_t {
    kWhole,    // the kernel argument `whole` itself at every step (a weight; a state the
               // step updates in place, element by element)
    kAtStep,   // slice t of `whole` ([T, ...]): the step's input x_t, or its output y_t
    kCarried,  // what the step before left: `initial` at t = 0, then slice t - 1 of `whole`
               // ([T, ...]), or `whole` itself when it has the step's rank (a state updated
               // in place)
  };
  Role role = Role::kWhole;
  te::TensorRef whole;
  te::TensorRef initial;  // kCarried only
};

// The kernel over `kernel_args` (its inputs, then its outputs) that runs `step` for t in
// [0, steps); step's parameters correspond one to one to `roles`, and every `whole` and
// `initial` is one of `kernel_args`. When steps is 0 a kCarried state whose whole has the
// step's rank (the final state, an output) gets its initial value; nothing else is written.
tir::PrimFunc over_steps(const tir::PrimFunc& step, const std::vector<StepArgument>& roles,
                         const std::vector<te::TensorRef>& kernel_args, size_t num_inputs,
                         const arith::Expr& steps);

}  // namespace dynvm::ops
