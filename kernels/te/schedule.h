// Schedules: how a TE program runs, kept apart from what it computes (tensor.h). A
// Schedule has one Stage per compute tensor reachable from its outputs; each stage starts
// as a loop nest over its tensor's axes (data-parallel, then reduce) and is rearranged by
// TVM-style primitives. Lowering (lower_te.h) turns the result into a TIR PrimFunc.
//
//   Schedule s = create_schedule({C});
//   TensorRef CC = s.cache_write(C, "local");          // register accumulator
//   auto [xo, yo, xi, yi] = s[C].tile(s[C].axis(0), s[C].axis(1), 8, 8);
//   s[CC].compute_at(s[C], yo);                          // one 8x8 tile per (xo, yo)
//   auto [ko, ki] = s[CC].split(s[CC].reduce_axis(0), 4);
//   s[CC].reorder({ko, ki, s[CC].axis(0), s[CC].axis(1)});
//   s[CC].vectorize(s[CC].axis(1));
//
// Axes are handles (IterVarRef); a primitive given an axis that is not a current loop of
// that stage (already split, fused, or another stage's) is a UserError, as is any other
// misuse, so that a tuning template with a bad knob fails with a message, not bad code.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/te/tensor.h"
#include "kernels/tir/stmt.h"

namespace dynvm::te {

class Schedule;
class Stage;

// One loop axis of a stage: an axis of its tensor, or one made by split / fuse.
struct AxisNode {
  std::string name;
  arith::Var var;      // the loop variable when this axis is a loop
  arith::Expr extent;  // as known when scheduled; lowering recomputes it from the region
  bool is_reduce = false;
  const Stage* stage = nullptr;
};
using IterVarRef = std::shared_ptr<const AxisNode>;

// How an axis was derived. kSplit: parent -> (outer, inner) with
// parent = outer * extent(inner) + inner. kFuse: (outer, inner) -> fused with
// outer = fused floordiv extent(inner), inner = fused floormod extent(inner).
struct AxisRelation {
  enum class Kind : uint8_t { kSplit, kFuse };
  Kind kind = Kind::kSplit;
  IterVarRef parent;  // kSplit
  IterVarRef fused;   // kFuse
  IterVarRef outer;
  IterVarRef inner;
  int64_t factor = 0;  // kSplit by factor: extent(inner)
  int64_t nparts = 0;  // kSplit by nparts: extent(outer)
};

// What lowering does with a loop besides running it in order.
struct AxisAnnotation {
  tir::ForKind kind = tir::ForKind::kSerial;
  int thread_axis = 0;  // GPU binds: 0, 1, 2 = x, y, z
};

// Where a stage's computation is placed.
enum class AttachKind : uint8_t {
  kRoot,    // its own loop nest at the top level of the kernel
  kInline,  // no loops, no buffer: its body is substituted into every read
  kAt,      // inside a consumer's loop (compute_at), computing only the region needed there
};

// Where a stage's intermediate buffer lives when it is not a kernel argument.
enum class StorageHint : uint8_t {
  kAuto,       // kLocal when small and statically sized, else kWorkspace
  kLocal,      // cache_write(..., "local"): kLocal whenever the region is static
  kWorkspace,  // cache_write(..., "global")
};

class Stage {
 public:
  // The tensor this stage produces (what consumers read and arguments name).
  const TensorRef& tensor() const { return tensor_; }
  const std::string& name() const { return tensor_->name(); }
  // The stage's computation over op_axis(): the tensor's own, except after cache_write,
  // when the original stage only copies from the cache.
  const Indices& op_axis() const { return op_axis_; }
  const tir::Expr& body() const { return body_; }
  bool is_reduction() const { return root_reduction(body_) != nullptr; }
  bool is_output() const { return is_output_; }

  // The original data-parallel axes (one per dim) and reduce axes, as loops.
  IterVarRef axis(size_t i) const;
  IterVarRef reduce_axis(size_t i) const;
  size_t num_axes() const { return num_data_axes_; }
  size_t num_reduce_axes() const { return root_axes_.size() - num_data_axes_; }
  // Data-parallel root axes first, then the reduce ones.
  const std::vector<IterVarRef>& root_axes() const { return root_axes_; }
  // The current loops, outermost first.
  const std::vector<IterVarRef>& leaf_axes() const { return leaf_axes_; }
  const std::vector<AxisRelation>& relations() const { return relations_; }
  // The annotation of a leaf axis (serial when none).
  AxisAnnotation annotation(const IterVarRef& axis) const;

  // factor > 0; the outer extent is ceil(extent / factor). A split that may not divide
  // the extent leaves a guard in the lowered code.
  std::pair<IterVarRef, IterVarRef> split(const IterVarRef& axis, int64_t factor);
  // nparts > 0 outer iterations, the inner extent is ceil(extent / nparts).
  std::pair<IterVarRef, IterVarRef> split_by_nparts(const IterVarRef& axis, int64_t nparts);
  // outer and inner must be adjacent loops (outer directly around inner) of the same kind.
  IterVarRef fuse(const IterVarRef& outer, const IterVarRef& inner);
  // The listed loops take the listed order among the positions they occupy; others stay.
  void reorder(const std::vector<IterVarRef>& order);
  // split x by fx and y by fy, then reorder to (xo, yo, xi, yi), which it returns.
  std::array<IterVarRef, 4> tile(const IterVarRef& x, const IterVarRef& y, int64_t fx, int64_t fy);

  // Unroll needs a constant extent where the loop is lowered (lowering checks: compute_at
  // may make a symbolic axis constant), e.g. the inner axis of a split. A vectorized loop
  // of symbolic extent becomes vector chunks and a masked remainder (tir's vectorize).
  void vectorize(const IterVarRef& axis);
  void unroll(const IterVarRef& axis);
  // Data-parallel axes only: the iterations must be independent.
  void parallel(const IterVarRef& axis);
  // "blockIdx.x" .. "blockIdx.z", "threadIdx.x" .. "threadIdx.z" (data-parallel axes).
  void bind(const IterVarRef& axis, const std::string& thread_tag);

  // Non-reduction, non-output stages: the body is substituted into its consumers.
  void compute_inline();
  // Computes, inside consumer's loop `axis`, only the region the consumer's iterations
  // under that loop read. The consumer must be this stage's only reader (after inlining).
  void compute_at(Stage& consumer, const IterVarRef& axis);
  void compute_root();

  AttachKind attach_kind() const { return attach_kind_; }
  const Stage* attach_stage() const { return attach_stage_; }
  const IterVarRef& attach_axis() const { return attach_axis_; }
  StorageHint storage_hint() const { return storage_hint_; }

 private:
  friend class Schedule;
  friend Schedule create_schedule(std::vector<TensorRef> outputs);
  Stage(TensorRef tensor, bool is_output, uint64_t schedule_id);
  // Sets the computation and makes fresh root axes for it (no primitives applied yet).
  void reset_op(Indices op_axis, tir::Expr body);
  IterVarRef new_axis(std::string name, arith::Expr extent, bool is_reduce);
  // The position of axis among the leaves, or a UserError naming `what`.
  size_t leaf_position(const IterVarRef& axis, const char* what) const;
  void annotate(const IterVarRef& axis, AxisAnnotation annotation, const char* what);
  // Whether any primitive changed the loops (cache_write needs a fresh stage).
  bool is_scheduled() const;

  TensorRef tensor_;
  bool is_output_ = false;
  uint64_t schedule_id_ = 0;
  Indices op_axis_;
  tir::Expr body_;
  size_t num_data_axes_ = 0;
  std::vector<IterVarRef> root_axes_;
  std::vector<IterVarRef> leaf_axes_;
  std::vector<AxisRelation> relations_;
  std::unordered_map<const AxisNode*, AxisAnnotation> annotations_;
  AttachKind attach_kind_ = AttachKind::kRoot;
  const Stage* attach_stage_ = nullptr;
  IterVarRef attach_axis_;
  StorageHint storage_hint_ = StorageHint::kAuto;
};

class Schedule {
 public:
  Schedule(Schedule&&) = default;
  Schedule& operator=(Schedule&&) = default;

  const std::vector<TensorRef>& outputs() const { return outputs_; }
  // The stage of a compute tensor of this schedule (UserError for placeholders and
  // tensors the outputs do not depend on).
  Stage& operator[](const TensorRef& tensor);
  const Stage& operator[](const TensorRef& tensor) const;
  // The stage of tensor, or nullptr.
  const Stage* find(const Tensor* tensor) const;
  // Every stage, producers before consumers.
  const std::vector<std::unique_ptr<Stage>>& stages() const { return stages_; }

  // TVM's cache_write: a new stage (returned as its tensor, named "<name>.local") computes
  // tensor's body into a buffer of `scope` ("local": registers / stack, "global": a
  // workspace), and tensor's stage becomes a copy out of it. Must come before any other
  // primitive on tensor's stage.
  TensorRef cache_write(const TensorRef& tensor, const std::string& scope);

 private:
  friend Schedule create_schedule(std::vector<TensorRef> outputs);
  Schedule() = default;
  Stage& stage_or_error(const TensorRef& tensor, const char* what) const;

  uint64_t id_ = 0;
  std::vector<TensorRef> outputs_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::unordered_map<const Tensor*, Stage*> by_tensor_;
};

Schedule create_schedule(std::vector<TensorRef> outputs);

}  // namespace dynvm::te
