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

// Where a step's element lies in a kernel argument: the step's indices in order, with the
// time step inserted at time_axis and the direction at direction_axis (each -1: none), and the
// direction's offset direction * direction_stride added to the last index (the directions'
// columns side by side: x W of both directions from one product).
struct ArgumentLayout {
  int time_axis = -1;
  int direction_axis = -1;
  int64_t direction_stride = 0;
};

// One argument of the step function and what it stands for in the kernel.
struct StepArgument {
  enum class Role : uint8_t {
    kWhole,    // `whole` at every step (a weight; a state the step updates in place, element
               // by element)
    kAtStep,   // `whole` at the step's time (layout.time_axis): x_t, or the output y_t
    kCarried,  // what the step before left: `initial` at the first step, then `whole` at the
               // time before (layout.time_axis), or `whole` itself (a state updated in place,
               // no time axis)
  };
  Role role = Role::kWhole;
  te::TensorRef whole;
  ArgumentLayout layout;
  te::TensorRef initial;  // kCarried only
  ArgumentLayout initial_layout;
};

// The kernel over `kernel_args` (its inputs, then its outputs) that runs `step` over t in
// [0, steps) once per direction (reversed.size() of them, in parallel when there are several;
// a reversed one visits times steps - 1 down to 0); step's parameters correspond one to one
// to `roles`, and every `whole` and `initial` is one of `kernel_args`. When steps is 0 a
// kCarried state without a time axis (a final state, an output) gets its initial value;
// nothing else is written.
tir::PrimFunc over_steps(const tir::PrimFunc& step, const std::vector<StepArgument>& roles,
                         const std::vector<te::TensorRef>& kernel_args, size_t num_inputs,
                         const arith::Expr& steps, const std::vector<bool>& reversed);

}  // namespace dynvm::ops
