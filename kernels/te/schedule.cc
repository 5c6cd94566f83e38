// Schedule construction and the schedule primitives. Primitives only record what they were
// asked (relations between axes, annotations, attach points); lowering (lower_te.cc) and
// bound inference (bound.cc) interpret the record, so primitives can come in any order.
#include "kernels/te/schedule.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <unordered_set>

#include "kernels/arith/simplify.h"
#include "kernels/te/expr_rewrite.h"
#include "vm/error.h"

namespace dynvm::te {
namespace {

arith::Expr ceil_div(const arith::Expr& a, int64_t b) {
  return arith::simplify(arith::floordiv(a + arith::Expr(b - 1), arith::Expr(b)));
}

}  // namespace

// ---- Stage ----

Stage::Stage(TensorRef tensor, bool is_output, uint64_t schedule_id)
    : tensor_(std::move(tensor)), is_output_(is_output), schedule_id_(schedule_id) {
  reset_op(tensor_->axis(), tensor_->body());
}

void Stage::reset_op(Indices op_axis, tir::Expr body) {
  op_axis_ = std::move(op_axis);
  body_ = std::move(body);
  root_axes_.clear();
  relations_.clear();
  annotations_.clear();
  num_data_axes_ = op_axis_.size();
  for (size_t d = 0; d < op_axis_.size(); ++d) {
    root_axes_.push_back(new_axis(op_axis_[d].name(), tensor_->shape()[d], false));
  }
  if (is_reduction()) {
    for (const IterVar& r : root_reduction(body_)->reduce_axes) {
      root_axes_.push_back(new_axis(r.var.name(), r.extent, true));
    }
  }
  leaf_axes_ = root_axes_;
}

IterVarRef Stage::new_axis(std::string name, arith::Expr extent, bool is_reduce) {
  auto node = std::make_shared<AxisNode>(
      AxisNode{name, arith::Var(name), std::move(extent), is_reduce, this});
  return node;
}

IterVarRef Stage::axis(size_t i) const {
  if (i >= num_data_axes_) {
    user_error("stage ", name(), ": axis(", i, ") but the tensor has ", num_data_axes_, " dims");
  }
  return root_axes_[i];
}

IterVarRef Stage::reduce_axis(size_t i) const {
  if (i >= num_reduce_axes()) {
    user_error("stage ", name(), ": reduce_axis(", i, ") but it has ", num_reduce_axes(),
               " reduce axes");
  }
  return root_axes_[num_data_axes_ + i];
}

AxisAnnotation Stage::annotation(const IterVarRef& axis) const {
  auto it = annotations_.find(axis.get());
  return it == annotations_.end() ? AxisAnnotation{} : it->second;
}

bool Stage::is_scheduled() const {
  return !relations_.empty() || !annotations_.empty() || leaf_axes_ != root_axes_ ||
         attach_kind_ != AttachKind::kRoot;
}

size_t Stage::leaf_position(const IterVarRef& axis, const char* what) const {
  if (!axis) user_error(what, " on stage ", name(), ": null axis");
  if (axis->stage != this) {
    user_error(what, " on stage ", name(), ": axis ", axis->name, " belongs to stage ",
               axis->stage->name());
  }
  auto it = std::find(leaf_axes_.begin(), leaf_axes_.end(), axis);
  if (it == leaf_axes_.end()) {
    user_error(what, " on stage ", name(), ": axis ", axis->name,
               " is no longer a loop (it was already split or fused)");
  }
  return static_cast<size_t>(it - leaf_axes_.begin());
}

std::pair<IterVarRef, IterVarRef> Stage::split(const IterVarRef& axis, int64_t factor) {
  size_t pos = leaf_position(axis, "split");
  if (factor <= 0) user_error("split on stage ", name(), ": factor ", factor, " is not positive");
  AxisRelation rel;
  rel.kind = AxisRelation::Kind::kSplit;
  rel.parent = axis;
  rel.factor = factor;
  rel.outer = new_axis(axis->name + ".outer", ceil_div(axis->extent, factor), axis->is_reduce);
  rel.inner = new_axis(axis->name + ".inner", arith::Expr(factor), axis->is_reduce);
  leaf_axes_[pos] = rel.outer;
  leaf_axes_.insert(leaf_axes_.begin() + static_cast<std::ptrdiff_t>(pos) + 1, rel.inner);
  relations_.push_back(rel);
  return {rel.outer, rel.inner};
}

std::pair<IterVarRef, IterVarRef> Stage::split_by_nparts(const IterVarRef& axis, int64_t nparts) {
  size_t pos = leaf_position(axis, "split_by_nparts");
  if (nparts <= 0) {
    user_error("split_by_nparts on stage ", name(), ": nparts ", nparts, " is not positive");
  }
  AxisRelation rel;
  rel.kind = AxisRelation::Kind::kSplit;
  rel.parent = axis;
  rel.nparts = nparts;
  rel.outer = new_axis(axis->name + ".outer", arith::Expr(nparts), axis->is_reduce);
  rel.inner = new_axis(axis->name + ".inner", ceil_div(axis->extent, nparts), axis->is_reduce);
  leaf_axes_[pos] = rel.outer;
  leaf_axes_.insert(leaf_axes_.begin() + static_cast<std::ptrdiff_t>(pos) + 1, rel.inner);
  relations_.push_back(rel);
  return {rel.outer, rel.inner};
}

IterVarRef Stage::fuse(const IterVarRef& outer, const IterVarRef& inner) {
  size_t po = leaf_position(outer, "fuse");
  size_t pi = leaf_position(inner, "fuse");
  if (pi != po + 1) {
    user_error("fuse on stage ", name(), ": ", outer->name, " must be the loop directly around ",
               inner->name, " (reorder first)");
  }
  if (outer->is_reduce != inner->is_reduce) {
    user_error("fuse on stage ", name(), ": cannot fuse data-parallel and reduce axes (",
               outer->name, ", ", inner->name, ")");
  }
  AxisRelation rel;
  rel.kind = AxisRelation::Kind::kFuse;
  rel.outer = outer;
  rel.inner = inner;
  rel.fused = new_axis(outer->name + "." + inner->name + ".fused",
                       arith::simplify(outer->extent * inner->extent), outer->is_reduce);
  leaf_axes_[po] = rel.fused;
  leaf_axes_.erase(leaf_axes_.begin() + static_cast<std::ptrdiff_t>(pi));
  relations_.push_back(rel);
  return rel.fused;
}

void Stage::reorder(const std::vector<IterVarRef>& order) {
  std::vector<size_t> positions;
  for (const IterVarRef& axis : order) {
    size_t pos = leaf_position(axis, "reorder");
    if (std::find(positions.begin(), positions.end(), pos) != positions.end()) {
      user_error("reorder on stage ", name(), ": axis ", axis->name, " is listed twice");
    }
    positions.push_back(pos);
  }
  std::sort(positions.begin(), positions.end());
  for (size_t i = 0; i < order.size(); ++i) leaf_axes_[positions[i]] = order[i];
}

std::array<IterVarRef, 4> Stage::tile(const IterVarRef& x, const IterVarRef& y, int64_t fx,
                                      int64_t fy) {
  if (x == y) user_error("tile on stage ", name(), ": x and y are the same axis");
  auto [xo, xi] = split(x, fx);
  auto [yo, yi] = split(y, fy);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

void Stage::annotate(const IterVarRef& axis, AxisAnnotation annotation, const char* what) {
  leaf_position(axis, what);
  annotations_[axis.get()] = annotation;
}

// The extent is checked by lowering, not here: compute_at may still shrink a symbolic
// extent to a constant one (a register tile's axes are the whole tensor's until then).
void Stage::vectorize(const IterVarRef& axis) {
  annotate(axis, {tir::ForKind::kVectorized, 0}, "vectorize");
}

void Stage::unroll(const IterVarRef& axis) {
  annotate(axis, {tir::ForKind::kUnrolled, 0}, "unroll");
}

void Stage::parallel(const IterVarRef& axis) {
  leaf_position(axis, "parallel");
  if (axis->is_reduce) {
    user_error("parallel on stage ", name(), ": ", axis->name,
               " is a reduce axis (its iterations are not independent)");
  }
  if (tensor_->is_scan() && axis == root_axes_[tensor_->scan_axis()]) {
    user_error("parallel on stage ", name(), ": ", axis->name,
               " is the scan axis (each element needs the previous one)");
  }
  annotate(axis, {tir::ForKind::kParallel, 0}, "parallel");
}

void Stage::bind(const IterVarRef& axis, const std::string& thread_tag) {
  leaf_position(axis, "bind");
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  auto it = std::find(std::begin(kTags), std::end(kTags), thread_tag);
  if (it == std::end(kTags)) {
    user_error("bind on stage ", name(), ": unknown thread tag '", thread_tag,
               "' (expected blockIdx.x/y/z or threadIdx.x/y/z)");
  }
  if (axis->is_reduce) {
    user_error("bind on stage ", name(), ": ", axis->name,
               " is a reduce axis (cross-thread reductions are not supported)");
  }
  int index = static_cast<int>(it - std::begin(kTags));
  for (const auto& [other, ann] : annotations_) {
    bool gpu = ann.kind == tir::ForKind::kGpuBlock || ann.kind == tir::ForKind::kGpuThread;
    int other_index = (ann.kind == tir::ForKind::kGpuThread ? 3 : 0) + ann.thread_axis;
    if (gpu && other != axis.get() && other_index == index) {
      user_error("bind on stage ", name(), ": ", thread_tag, " is already bound to ", other->name);
    }
  }
  annotate(axis, {index < 3 ? tir::ForKind::kGpuBlock : tir::ForKind::kGpuThread, index % 3},
           "bind");
}

void Stage::compute_inline() {
  if (is_output_) user_error("compute_inline: ", name(), " is an output of the schedule");
  if (is_reduction()) {
    user_error("compute_inline: ", name(), " is a reduction (only element-wise stages inline)");
  }
  if (tensor_->is_scan() || tensor_->is_scatter()) {
    user_error("compute_inline: ", name(), " is a ", tensor_->is_scan() ? "scan" : "scatter",
               " (it reads its own earlier elements)");
  }
  attach_kind_ = AttachKind::kInline;
  attach_stage_ = nullptr;
  attach_axis_.reset();
}

void Stage::compute_at(Stage& consumer, const IterVarRef& axis) {
  if (is_output_) user_error("compute_at: ", name(), " is an output of the schedule");
  if (consumer.schedule_id_ != schedule_id_) {
    user_error("compute_at: stage ", consumer.name(), " belongs to another schedule");
  }
  if (&consumer == this) user_error("compute_at: stage ", name(), " cannot attach to itself");
  if (tensor_->is_scan() || tensor_->is_scatter()) {
    user_error("compute_at: ", name(), " is a ", tensor_->is_scan() ? "scan" : "scatter",
               " (computed whole, at the root)");
  }
  consumer.leaf_position(axis, "compute_at");
  attach_kind_ = AttachKind::kAt;
  attach_stage_ = &consumer;
  attach_axis_ = axis;
}

void Stage::compute_root() {
  attach_kind_ = AttachKind::kRoot;
  attach_stage_ = nullptr;
  attach_axis_.reset();
}

// ---- Schedule ----

Schedule create_schedule(std::vector<TensorRef> outputs) {
  static std::atomic<uint64_t> next_id{1};
  Schedule s;
  s.id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  if (outputs.empty()) user_error("create_schedule: no outputs");
  std::unordered_set<const Tensor*> output_set;
  for (const TensorRef& t : outputs) {
    if (!t) user_error("create_schedule: null output tensor");
    if (t->kind() != Tensor::Kind::kCompute) {
      user_error("create_schedule: output ", t->name(), " is a placeholder, not a compute");
    }
    if (!output_set.insert(t.get()).second) {
      user_error("create_schedule: output ", t->name(), " is listed twice");
    }
  }
  // Post-order DFS from the outputs: every producer gets its stage before its consumers.
  std::unordered_set<const Tensor*> visited;
  std::function<void(const TensorRef&)> visit = [&](const TensorRef& t) {
    if (t->kind() != Tensor::Kind::kCompute || !visited.insert(t.get()).second) return;
    for (const TensorRef& input : t->inputs()) visit(input);
    auto stage = std::unique_ptr<Stage>(new Stage(t, output_set.count(t.get()) > 0, s.id_));
    s.by_tensor_[t.get()] = stage.get();
    s.stages_.push_back(std::move(stage));
  };
  for (const TensorRef& t : outputs) visit(t);
  s.outputs_ = std::move(outputs);
  return s;
}

Stage& Schedule::stage_or_error(const TensorRef& tensor, const char* what) const {
  if (!tensor) user_error(what, ": null tensor");
  auto it = by_tensor_.find(tensor.get());
  if (it == by_tensor_.end()) {
    if (tensor->kind() == Tensor::Kind::kPlaceholder) {
      user_error(what, ": ", tensor->name(), " is a placeholder and has no stage");
    }
    user_error(what, ": ", tensor->name(), " is not computed by this schedule's outputs");
  }
  return *it->second;
}

Stage& Schedule::operator[](const TensorRef& tensor) {
  return stage_or_error(tensor, "schedule[]");
}

const Stage& Schedule::operator[](const TensorRef& tensor) const {
  return stage_or_error(tensor, "schedule[]");
}

const Stage* Schedule::find(const Tensor* tensor) const {
  auto it = by_tensor_.find(tensor);
  return it == by_tensor_.end() ? nullptr : it->second;
}

TensorRef Schedule::cache_write(const TensorRef& tensor, const std::string& scope) {
  Stage& stage = stage_or_error(tensor, "cache_write");
  StorageHint hint;
  if (scope == "local") {
    hint = StorageHint::kLocal;
  } else if (scope == "global") {
    hint = StorageHint::kWorkspace;
  } else {
    user_error("cache_write ", tensor->name(), ": unknown scope '", scope,
               "' (expected \"local\" or \"global\")");
  }
  if (stage.is_scheduled()) {
    user_error("cache_write ", tensor->name(),
               ": must come before any other primitive on its stage");
  }
  if (tensor->is_scan() || tensor->is_scatter()) {
    user_error("cache_write ", tensor->name(), ": a ", tensor->is_scan() ? "scan" : "scatter",
               " reads its own buffer and is not cached");
  }
  // The cache computes the stage's body over its own fresh axes...
  const Stage& original = stage;
  TensorRef cache = compute(tensor->name() + ".local", tensor->shape(), [&](const Indices& i) {
    IndexMap map;
    for (size_t d = 0; d < i.size(); ++d) map[original.op_axis()[d].id()] = i[d];
    return substitute(original.body(), map);
  });
  auto cache_stage = std::unique_ptr<Stage>(new Stage(cache, false, id_));
  cache_stage->storage_hint_ = hint;
  // ... and the original stage becomes an element-wise copy out of it.
  stage.reset_op(stage.op_axis(), read(cache, {stage.op_axis().begin(), stage.op_axis().end()}));
  by_tensor_[cache.get()] = cache_stage.get();
  auto pos = std::find_if(stages_.begin(), stages_.end(),
                          [&](const std::unique_ptr<Stage>& s) { return s.get() == &stage; });
  stages_.insert(pos, std::move(cache_stage));
  return cache;
}

}  // namespace dynvm::te
