// Schedule templates shared by the op families, each driven by named knobs (op.h).
//   injective: elementwise outputs. The last axis is split by `vector_width` and its inner
//     part vectorized; the leading axes are fused into one loop that runs in parallel when
//     `parallel` is 1 (for rank 1, the outer part of the split is the parallel loop).
//   reduction: a stage whose body reduces. Its data-parallel axes are fused and run in
//     parallel when `parallel` is 1; the reduce axes stay serial inside, the innermost
//     one split by `unroll` and its inner part unrolled when `unroll` > 1.
// Intermediate stages (e.g. softmax's row max) are left at the root: their own nest, with
// a workspace buffer when symbolic.
#pragma once

#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// The knobs of the injective template (vector_width, parallel), with defaults that depend on the
// output's size: static outputs below kParallelThreshold elements default to serial.
std::vector<KnobSpec> injective_knobs(const std::vector<arith::Expr>& shape);
// parallel, unroll.
std::vector<KnobSpec> reduction_knobs(const std::vector<arith::Expr>& shape);

inline constexpr int64_t kParallelThreshold = 1 << 15;

// Applies the injective template to `tensor`'s stage.
void schedule_injective(te::Schedule& s, const te::TensorRef& tensor, int64_t vector_width,
                        bool parallel);
// Applies the reduction template to `tensor`'s stage.
void schedule_reduction(te::Schedule& s, const te::TensorRef& tensor, bool parallel,
                        int64_t unroll = 1);
// The reduction template for a stage whose innermost axis is contiguous in what it reads
// (a mean over the T of [B, T, E] or the L of [L, n, E]): that axis in vectors of `lanes`
// with the reduce loops between its outer and inner parts, so that every step adds one
// contiguous vector into a vector of outputs (where the scalar template walks one strided
// chain per output); `unroll` splits the innermost reduce loop.
void schedule_column_reduction(te::Schedule& s, const te::TensorRef& tensor, bool parallel,
                               int64_t unroll, int64_t lanes);

// The value of `name` in `values`, else its default among `specs`.
int64_t knob_value(const std::vector<KnobSpec>& specs, const KnobValues& values,
                   const std::string& name);

// An OpInstance's schedule for a single output with the injective template; `specs` are the
// op's knobs (injective_knobs).
std::function<te::Schedule(const KnobValues&)> injective_schedule(std::vector<KnobSpec> specs,
                                                                  te::TensorRef out);

// A single-output op computed element by element into `out`: the injective template's
// knobs and schedule, and the last dim as preferred multiple of the default vector width.
OpInstance injective_op(std::string name, std::vector<te::TensorRef> inputs, te::TensorRef out);

// A scalar `out` reduced from `inputs` in one serial loop nest (the counts the importer binds
// beside data-sized ops): nothing to tune, so no knobs.
OpInstance serial_scalar_op(std::string name, std::vector<te::TensorRef> inputs, te::TensorRef out);

// For preferred_multiples: (var, factor) when the last dim is a bare symbolic variable.
std::vector<std::pair<arith::Var, int64_t>> last_dim_multiple(const std::vector<arith::Expr>& shape,
                                                              int64_t factor);

}  // namespace dynvm::ops
