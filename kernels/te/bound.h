// Internal to kernels/te: the lowering-time arithmetic of a stage's loops. Given the region
// a stage computes (its root domain), it derives every axis's loop extent through the
// split/fuse relations, the value of every axis from the loop variables, the guards that
// non-dividing splits need, and — bound inference for compute_at — the region of a producer
// that a consumer reads inside one of its loops.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "kernels/arith/analyzer.h"
#include "kernels/te/schedule.h"

namespace dynvm::te {

using AxisExprMap = std::unordered_map<const AxisNode*, arith::Expr>;

// What one stage computes and how its loops run, once the region is known.
struct StageLoops {
  const Stage* stage = nullptr;
  // Per data-parallel root axis: the first element computed (0 unless compute_at).
  std::vector<arith::Expr> root_min;
  // Per root axis (data-parallel, then reduce): how many elements are computed...
  std::vector<arith::Expr> root_extent;
  // ... and how many iterations its loop runs: the same, or a constant bound of a
  // symbolic region extent (then a guard skips the excess).
  std::vector<arith::Expr> root_loop_extent;
  // The loop extent of every axis of the stage (root, split and fused ones).
  AxisExprMap extent;
};

// Fills loops.extent from root_loop_extent through the stage's relations.
void infer_extents(StageLoops& loops, const arith::Analyzer& analyzer);

// The value of every axis computable from the given leaf values (relations whose inputs
// are missing are skipped: the init nest of a reduction has no reduce loops).
AxisExprMap axis_values(const StageLoops& loops, const AxisExprMap& leaf_values);

// Conditions under which an iteration is real: each non-dividing split keeps its parent
// in range, and each bounded root loop stays inside the region. Only axes with values are
// considered; provably true conditions are dropped.
std::vector<arith::Expr> iteration_guards(const StageLoops& loops, const AxisExprMap& values,
                                          const arith::Analyzer& analyzer);

// The region of producer `producer` (of shape `shape`) read by `consumer_body` (the
// consumer's computation after inlining) during one iteration of the consumer's leaf loop
// at `attach_pos`: per dim, [min, min + extent). Index expressions bound inference cannot
// follow (data-dependent gathers, products of ranges) fall back to the whole dim.
struct Region {
  std::vector<arith::Expr> min;
  std::vector<arith::Expr> extent;
};
// With attach_pos == kNoFixedLoops, every loop of the consumer runs: the region a stage
// computed inside the same loop reads in all its iterations.
inline constexpr size_t kNoFixedLoops = static_cast<size_t>(-1);
Region infer_region(const StageLoops& consumer, const tir::Expr& consumer_body, size_t attach_pos,
                    const Tensor* producer, const std::vector<arith::Expr>& shape,
                    const arith::Analyzer& analyzer);
// `r`, read by a stage computed at the consumer's leaf loop `inner`, over every iteration
// of the consumer's loops after `outer` up to `inner` (a region for a stage computed at
// loop `outer`; kNoFixedLoops: from its first loop on); dims it cannot follow are the whole
// dim of `shape`.
Region relax_region(const Region& r, const StageLoops& consumer, size_t outer, size_t inner,
                    const std::vector<arith::Expr>& shape, const arith::Analyzer& analyzer);
// Per dim, the smallest range holding both regions.
Region region_union(const Region& a, const Region& b, const arith::Analyzer& analyzer);

}  // namespace dynvm::te
