// Building blocks of the row-local templates (softmax and layer norm in norm.cc, attention
// in attention.cc): reductions over a row's last axis in vector lanes, their schedule, and
// the fusion of a row-block loop with the loops outside it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/arith/expr.h"
#include "kernels/te/schedule.h"
#include "kernels/te/tensor.h"

namespace dynvm::ops {

// The lane count of lane_reduce, fixed, not a knob: the partial stages must exist before a
// schedule runs. 16 f32 lanes fill a 512-bit vector and split into two 256-bit ones.
constexpr int64_t kLanes = 16;

struct LaneStages {
  std::vector<te::TensorRef> partials;  // vectorized over their last axis
  std::vector<te::TensorRef> scalars;   // reductions and combinations over kept_shape
};

// A reduction (max or sum) over the last axis of a row (`length` elements, the row's other
// indices `kept`), computed in `lanes` parallel partial results so that the generated loop
// is a vector loop: partial[kept..., v] reduces element c * lanes + v over the whole chunks
// c, with v innermost and vectorized; the lanes and the tail (the last length % lanes
// elements) are then reduced by two short scalar loops and combined. Nothing is read out of
// bounds and no element is guarded, so the chunk loop has no selects. `element` gives the
// value to reduce at a row position; the stages to schedule are appended to `stages`
// (partial first), the result (over `kept_shape`) is returned.
te::TensorRef lane_reduce(
    const std::string& name, bool is_max, const std::vector<arith::Expr>& kept_shape,
    const arith::Expr& length, int64_t lanes,
    const std::function<tir::Expr(const te::Indices&, const arith::Expr&)>& element,
    LaneStages* stages);

// A lane_reduce partial stage: the chunk loop outside, the lanes inside as one vector; its
// kept loops fused and parallel when `parallel` (at the root).
void schedule_lanes(te::Schedule& s, const te::TensorRef& partial, bool parallel);

// The loop `inner` (over `inner_extent` iterations) fused with the loops `outer` (outermost
// first, directly around it, over `extents`) from the inside out, as long as the loops
// already fused have a constant extent: a fused index decomposes by those extents, and bound
// inference proves a quotient by a constant in range but not one by a symbolic extent (a
// stage computed at the fused loop would then be sized for the whole outer dim). The loops
// left outside stay serial. Returns the fused loop.
te::IterVarRef fuse_while_constant(te::Stage& stage, const std::vector<te::IterVarRef>& outer,
                                   const std::vector<arith::Expr>& extents, te::IterVarRef inner,
                                   arith::Expr inner_extent);

}  // namespace dynvm::ops
