// What one walk over a lowered kernel counts (kernel_stats.cc), before features.cc encodes it
// as the cost model's fixed-length vector. Kept apart so that the walk (which needs the IR)
// and the encoding (which fixes the feature order) each read on their own. Internal to
// dynvm_tune.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/tir/stmt.h"

namespace dynvm::tune {

// Counts beyond this are clamped so that every feature stays finite as a float.
inline constexpr double kMaxCount = 1e30;

// Accesses to one buffer. Element counts are weighted by how often the access runs.
struct BufferStats {
  const tir::Buffer* buffer = nullptr;
  double loaded = 0;
  double stored = 0;
  double touched = 0;  // distinct elements, estimated (kernel_stats.cc: record_access)
  double numel = kMaxCount;
  double stride_sum = 0;  // element-weighted log2(1 + |innermost stride|)
  std::unordered_set<size_t> distinct_accesses;
};

// Every count is weighted by the product of the enclosing loop extents; "elements" counts a
// 16-lane operation 16 times, "instructions" once.
struct KernelStats {
  // Arithmetic, in elements.
  double float_addsub = 0, float_mul = 0, float_fma = 0, float_divmod = 0, float_minmax = 0;
  double float_math = 0, compare_select = 0, int_ops = 0, casts = 0, index_ops = 0;
  double flops = 0, vector_flops = 0;
  double op_elems = 0, op_instrs = 0;  // all of the above but index_ops
  // Vectors.
  double max_lanes = 1, broadcasts = 0;
  // Memory accesses, in elements, and how they move with the innermost loop.
  double access_elems = 0, vector_access_elems = 0;
  double contiguous = 0, strided = 0, broadcast_access = 0;
  std::vector<BufferStats> buffers;  // in first-access order
  // Loop structure; the "main" nest encloses the store doing the most work.
  double num_loops = 0, max_depth = 0, max_unrolled = 0, guards = 0, let_indices = 0;
  std::vector<double> main_extents;  // outermost first
  double main_stores = 0;            // stores in one iteration of the main nest's inner loop
  double max_stores_per_body = 0;    // the most stores in one loop body (unrolled code)
  // Parallel regions: work counts arithmetic and access elements.
  double parallel_extent = 0, parallel_calls = 0, parallel_iterations = 0, parallel_work = 0;
  // Allocations.
  double num_allocs = 0, local_bytes = 0, workspace_bytes = 0;
};

// Walks f's entry and, where each kParallelCall stands, the region it calls. Symbolic values
// come from `dims` (name -> value; missing: 64). Never throws dynvm::Error: IR it cannot
// evaluate leaves the counts gathered so far.
KernelStats kernel_stats(const tir::LoweredFunc& f, const std::map<std::string, int64_t>& dims);

}  // namespace dynvm::tune
