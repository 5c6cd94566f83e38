// kernel_features: the counts of one walk over the kernel (kernel_stats.h), encoded in a fixed
// order. Counts that grow with the problem are log-scaled, log2(1 + x), so that kernels of very
// different sizes land in one range; fractions and small numbers (lanes, depths) are kept as is.
#include "kernels/tune/features.h"

#include <algorithm>
#include <cmath>

#include "kernels/tune/kernel_stats.h"
#include "vm/error.h"

namespace dynvm::tune {
namespace {

double log_scale(double x) { return std::log2(1.0 + std::clamp(x, 0.0, kMaxCount)); }
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
double elem_size(const BufferStats& b) {
  return static_cast<double>(vm::dtype_size(b.buffer->dtype()));
}

// Emits the features in their fixed order; `names` and `values` may each be null.
void describe(const KernelStats& s, std::vector<std::string>* names, std::vector<float>* values) {
  auto emit = [&](const std::string& name, double value) {
    if (names) names->push_back(name);
    if (!values) return;
    if (!std::isfinite(value)) value = 0;
    values->push_back(static_cast<float>(std::clamp(value, -kMaxCount, kMaxCount)));
  };
  // Arithmetic, weighted by trip count (elements: a 16-lane add counts 16).
  emit("float_addsub", log_scale(s.float_addsub));
  emit("float_mul", log_scale(s.float_mul));
  emit("float_fma", log_scale(s.float_fma));
  emit("float_divmod", log_scale(s.float_divmod));
  emit("float_minmax", log_scale(s.float_minmax));
  emit("float_math", log_scale(s.float_math));
  emit("compare_select", log_scale(s.compare_select));
  emit("int_ops", log_scale(s.int_ops));
  emit("casts", log_scale(s.casts));
  emit("index_ops", log_scale(s.index_ops));
  emit("flops", log_scale(s.flops));
  // Vectorization.
  emit("max_lanes", s.max_lanes);
  emit("avg_op_lanes", s.op_instrs > 0 ? s.op_elems / s.op_instrs : 1.0);
  emit("vector_flop_fraction", ratio(s.vector_flops, s.flops));
  emit("vector_access_fraction", ratio(s.vector_access_elems, s.access_elems));
  emit("broadcasts", log_scale(s.broadcasts));
  // Memory, over all buffers.
  double loaded = 0, stored = 0, unique = 0;
  for (const BufferStats& b : s.buffers) {
    const double size = elem_size(b);
    loaded += b.loaded * size;
    stored += b.stored * size;
    unique += std::min(b.touched, b.numel) * size;
  }
  emit("bytes_loaded", log_scale(loaded));
  emit("bytes_stored", log_scale(stored));
  emit("unique_bytes", log_scale(unique));
  emit("arith_intensity", log_scale(ratio(s.flops, loaded + stored)));
  emit("unique_intensity", log_scale(ratio(s.flops, unique)));
  emit("contiguous_fraction", ratio(s.contiguous, s.access_elems));
  emit("strided_fraction", ratio(s.strided, s.access_elems));
  emit("broadcast_fraction", ratio(s.broadcast_access, s.access_elems));
  emit("num_buffers", static_cast<double>(s.buffers.size()));
  // Loop structure, and the nest of the statement doing the most work.
  emit("num_loops", s.num_loops);
  emit("max_depth", s.max_depth);
  emit("main_depth", static_cast<double>(s.main_extents.size()));
  const size_t n = s.main_extents.size();
  for (size_t i = 0; i < 3; ++i) {
    emit(str_cat("main_outer", i, "_extent"), i < n ? log_scale(s.main_extents[i]) : 0.0);
  }
  for (size_t i = 0; i < 3; ++i) {
    emit(str_cat("main_inner", i, "_extent"), i < n ? log_scale(s.main_extents[n - 1 - i]) : 0.0);
  }
  emit("main_stores_per_iteration", s.main_stores);
  emit("max_stores_per_body", s.max_stores_per_body);
  emit("max_unrolled_extent", s.max_unrolled);
  emit("guards", log_scale(s.guards));
  emit("let_indices", log_scale(s.let_indices));
  // Parallelism.
  const double work = s.op_elems + s.access_elems;
  emit("parallel_extent", log_scale(s.parallel_extent));
  emit("parallel_calls", log_scale(s.parallel_calls));
  emit("parallel_work_per_iteration", log_scale(ratio(s.parallel_work, s.parallel_iterations)));
  emit("parallel_fraction", ratio(s.parallel_work, work));
  // Allocations: register tiles (local) and runtime workspace.
  emit("num_allocs", s.num_allocs);
  emit("local_alloc_bytes", log_scale(s.local_bytes));
  emit("workspace_alloc_bytes", log_scale(s.workspace_bytes));
  // The busiest buffers by traffic, one slot each (absent: all zeros).
  std::vector<const BufferStats*> order;
  for (const BufferStats& b : s.buffers) order.push_back(&b);
  auto traffic = [&](const BufferStats* b) { return (b->loaded + b->stored) * elem_size(*b); };
  std::stable_sort(order.begin(), order.end(), [&](const BufferStats* a, const BufferStats* b) {
    return traffic(a) > traffic(b);
  });
  for (size_t slot = 0; slot < kNumBufferSlots; ++slot) {
    const BufferStats* b = slot < order.size() ? order[slot] : nullptr;
    const double size = b ? elem_size(*b) : 0;
    const double accessed = b ? b->loaded + b->stored : 0;
    const double touched = b ? std::min(b->touched, b->numel) : 0;
    const std::string p = str_cat("buffer", slot, "_");
    emit(p + "bytes_loaded", b ? log_scale(b->loaded * size) : 0);
    emit(p + "bytes_stored", b ? log_scale(b->stored * size) : 0);
    emit(p + "unique_bytes", log_scale(touched * size));
    emit(p + "reuse", log_scale(ratio(accessed, touched)));
    emit(p + "inner_stride", b ? ratio(b->stride_sum, accessed) : 0);
    emit(p + "scope", b ? 1.0 + static_cast<double>(b->buffer->scope()) : 0);
  }
}

}  // namespace

std::vector<float> kernel_features(const tir::LoweredFunc& f,
                                   const std::map<std::string, int64_t>& dim_values) {
  std::vector<float> values;
  values.reserve(kNumFeatures);
  describe(kernel_stats(f, dim_values), nullptr, &values);
  DYNVM_INTERNAL_CHECK(values.size() == kNumFeatures, "feature count ", values.size());
  return values;
}

std::vector<std::string> feature_names() {
  std::vector<std::string> names;
  describe(KernelStats{}, &names, nullptr);
  DYNVM_INTERNAL_CHECK(names.size() == kNumFeatures, "feature count ", names.size());
  return names;
}

}  // namespace dynvm::tune
