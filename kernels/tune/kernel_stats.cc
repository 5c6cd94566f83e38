// The walk behind kernel_features: a StmtMutator that rebuilds nothing and counts as it goes.
// A parallel region is walked where its kParallelCall stands, inside a loop of the call's
// extent, so that its body is weighted by the iterations it runs.
#include "kernels/tune/kernel_stats.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>

#include "kernels/arith/evaluate.h"
#include "kernels/tir/arith_util.h"
#include "kernels/tir/functor.h"
#include "vm/error.h"

namespace dynvm::tune {
namespace {

// A symbolic dim without a value: a typical mid-sized dimension.
constexpr int64_t kDefaultDim = 64;
// The stride given to an index that is not affine in the innermost loop: a far, irregular jump.
constexpr double kIrregularStride = 1024;

double log_scale(double x) { return std::log2(1.0 + std::clamp(x, 0.0, kMaxCount)); }

// Non-leaf nodes of an index expression: the integer arithmetic the kernel does to address.
double count_index_ops(const arith::Expr& e) {
  if (!e.defined()) return 0;
  double n = 0;
  std::vector<const arith::ExprNode*> stack{e.get()};
  while (!stack.empty()) {
    const arith::ExprNode* node = stack.back();
    stack.pop_back();
    const int arity = arith::kind_arity(node->kind);
    if (arity > 0) n += 1;
    for (int i = 0; i < arity; ++i) {
      if (node->operands[i].defined()) stack.push_back(node->operands[i].get());
    }
  }
  return n;
}

// One enclosing loop (or the root of the entry).
struct Frame {
  arith::VarId var = 0;
  bool is_loop = false;
  double extent = 1;
  double weight = 1;  // times the body runs: the product of the enclosing extents
  size_t serial = 0;  // which frame this is (the root is 0)
  double stores = 0;  // store statements directly in this body (not in nested loops)
};

class StatsCollector : public tir::StmtMutator {
 public:
  StatsCollector(const tir::LoweredFunc& f, const std::map<std::string, int64_t>& dims)
      : func_(f), dims_(dims) {
    frames_.push_back(Frame{});
  }

  KernelStats run() {
    try {
      mutate_stmt(func_.func.body);
    } catch (const Error&) {
      // IR this walk cannot evaluate (a builder or analysis refusing it): keep what was
      // counted so far; a cost model feature must never stop a tuning run.
    }
    const double root_stores = frames_.front().stores;
    stats_.max_stores_per_body = std::max(stats_.max_stores_per_body, root_stores);
    if (main_serial_ == 0) stats_.main_stores = root_stores;
    return std::move(stats_);
  }

 protected:
  tir::Stmt visit_for(const tir::Stmt& s) override {
    const double extent = extent_of(s->extent);
    if (s->for_kind == tir::ForKind::kUnrolled) {
      stats_.max_unrolled = std::max(stats_.max_unrolled, extent);
    }
    const bool opens_parallel = s->for_kind == tir::ForKind::kParallel && !in_parallel_;
    if (opens_parallel) enter_parallel(extent);
    push_loop(s->loop_var, eval(s->min).value_or(0), extent);
    tir::Stmt out = StmtMutator::visit_for(s);
    pop_loop();
    if (opens_parallel) in_parallel_ = false;
    return out;
  }

  tir::Stmt visit_parallel_call(const tir::Stmt& s) override {
    if (in_parallel_ || s->region >= func_.regions.size()) return s;
    const tir::ParallelRegion& region = func_.regions[s->region];
    const double extent = extent_of(s->extent);
    enter_parallel(extent);
    push_loop(region.loop_var, 0, extent);
    mutate_stmt(region.body);
    pop_loop();
    in_parallel_ = false;
    return s;
  }

  // A guard runs its body at full weight; the branches of an if / else-if / else chain
  // share it evenly (the tail copies of specialize_extents are one such chain).
  tir::Stmt visit_if(const tir::Stmt& s) override {
    stats_.guards += weight();
    if (!s->else_case.defined()) return StmtMutator::visit_if(s);
    std::vector<tir::Stmt> branches;
    tir::Stmt rest = s;
    while (rest.defined() && rest.kind() == tir::StmtKind::kIf && rest->else_case.defined()) {
      branches.push_back(rest->then_case);
      rest = rest->else_case;
    }
    branches.push_back(rest);
    const double saved = frames_.back().weight;
    frames_.back().weight = saved / static_cast<double>(branches.size());
    for (const tir::Stmt& b : branches) mutate_stmt(b);
    frames_.back().weight = saved;
    return s;
  }

  tir::Stmt visit_store(const tir::Stmt& s) override {
    const int lanes = s->value.defined() ? s->value.type().lanes : 1;
    record_access(s->buffer, s->indices, s->stride, lanes, /*is_store=*/true);
    const double ops_before = stats_.op_elems;
    tir::Stmt out = StmtMutator::visit_store(s);
    frames_.back().stores += 1;
    // The statement doing the most work defines the "main" loop nest.
    const double work = (stats_.op_elems - ops_before) + weight() * lanes;
    if (work > main_work_) {
      main_work_ = work;
      stats_.main_extents.clear();
      for (const Frame& f : frames_) {
        if (f.is_loop) stats_.main_extents.push_back(f.extent);
      }
      main_serial_ = frames_.back().serial;
    }
    return out;
  }

  tir::Stmt visit_allocate(const tir::Stmt& s) override {
    if (s->buffer) {
      ++stats_.num_allocs;
      const double bytes = numel_of(*s->buffer) * static_cast<double>(elem_size(*s->buffer));
      (s->buffer->scope() == tir::BufferScope::kLocal ? stats_.local_bytes
                                                      : stats_.workspace_bytes) += bytes;
    }
    return StmtMutator::visit_allocate(s);
  }

  tir::Stmt visit_let_stmt(const tir::Stmt& s) override {
    stats_.let_indices += weight();
    return StmtMutator::visit_let_stmt(s);
  }

  tir::Expr visit_binary(const tir::Expr& e) override {
    const int lanes = e.type().lanes;
    if (!e.type().is_float()) {
      count_op(stats_.int_ops, lanes, /*is_flop=*/false);
    } else {
      switch (e->binary_op) {
        case tir::BinaryOp::kAdd:
        case tir::BinaryOp::kSub:
          count_op(stats_.float_addsub, lanes, true);
          for (const tir::Expr& operand : e->operands) {
            if (operand.defined() && operand.kind() == tir::ExprKind::kBinary &&
                operand->binary_op == tir::BinaryOp::kMul) {
              stats_.float_fma += weight() * lanes;
              break;
            }
          }
          break;
        case tir::BinaryOp::kMul:
          count_op(stats_.float_mul, lanes, true);
          break;
        case tir::BinaryOp::kDiv:
        case tir::BinaryOp::kMod:
          count_op(stats_.float_divmod, lanes, true);
          break;
        case tir::BinaryOp::kMin:
        case tir::BinaryOp::kMax:
          count_op(stats_.float_minmax, lanes, true);
          break;
        case tir::BinaryOp::kPow:
          count_op(stats_.float_math, lanes, true);
          break;
      }
    }
    return ExprMutator::visit_binary(e);
  }

  tir::Expr visit_call(const tir::Expr& e) override {
    if (e.type().is_float()) {
      count_op(stats_.float_math, e.type().lanes, true);
    } else {
      count_op(stats_.int_ops, e.type().lanes, false);
    }
    return ExprMutator::visit_call(e);
  }

  tir::Expr visit_compare(const tir::Expr& e) override {
    count_op(stats_.compare_select, e.type().lanes, false);
    return ExprMutator::visit_compare(e);
  }
  tir::Expr visit_logical(const tir::Expr& e) override {
    count_op(stats_.compare_select, e.type().lanes, false);
    return ExprMutator::visit_logical(e);
  }
  tir::Expr visit_select(const tir::Expr& e) override {
    count_op(stats_.compare_select, e.type().lanes, false);
    return ExprMutator::visit_select(e);
  }
  tir::Expr visit_cast(const tir::Expr& e) override {
    count_op(stats_.casts, e.type().lanes, false);
    return ExprMutator::visit_cast(e);
  }
  tir::Expr visit_broadcast(const tir::Expr& e) override {
    stats_.broadcasts += weight();
    stats_.max_lanes = std::max(stats_.max_lanes, static_cast<double>(e.type().lanes));
    return ExprMutator::visit_broadcast(e);
  }
  tir::Expr visit_index_value(const tir::Expr& e) override {
    stats_.index_ops += weight() * (count_index_ops(e->index) + count_index_ops(e->stride));
    return ExprMutator::visit_index_value(e);
  }
  tir::Expr visit_buffer_load(const tir::Expr& e) override {
    record_access(e->buffer, e->indices, e->stride, e.type().lanes, /*is_store=*/false);
    return ExprMutator::visit_buffer_load(e);
  }
  tir::Expr visit_let_expr(const tir::Expr& e) override {
    stats_.let_indices += weight();
    return ExprMutator::visit_let_expr(e);
  }

 private:
  double weight() const { return frames_.back().weight; }

  // `e` for concrete values: enclosing loop variables at the middle of their range, symbolic
  // dims from dims_ (else kDefaultDim). nullopt when it cannot be evaluated (division by 0).
  std::optional<int64_t> eval(const arith::Expr& e) const {
    if (!e.defined()) return std::nullopt;
    if (e.is_int_imm()) return e.int_value();
    arith::VarValues values;
    tir::for_each_var(e, [&](const arith::Expr& v) {
      if (auto it = loop_values_.find(v->var_id); it != loop_values_.end()) {
        values[v->var_id] = it->second;
      } else if (auto d = dims_.find(v->name); d != dims_.end()) {
        values[v->var_id] = d->second;
      } else {
        values[v->var_id] = kDefaultDim;
      }
    });
    try {
      return arith::evaluate(e, values);
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  double extent_of(const arith::Expr& e) const {
    return static_cast<double>(std::max<int64_t>(0, eval(e).value_or(kDefaultDim)));
  }

  double numel_of(const tir::Buffer& b) const {
    double n = 1;
    for (const arith::Expr& d : b.shape()) n *= extent_of(d);
    return std::min(n, kMaxCount);
  }

  static size_t elem_size(const tir::Buffer& b) { return vm::dtype_size(b.dtype()); }

  void push_loop(const arith::Expr& var, int64_t min, double extent) {
    Frame f;
    f.var = var.defined() ? var->var_id : 0;
    f.is_loop = true;
    f.extent = extent;
    f.weight = std::min(weight() * extent, kMaxCount);
    f.serial = next_serial_++;
    frames_.push_back(f);
    // Inner extents that depend on this loop are evaluated at its middle iteration.
    const double middle = static_cast<double>(min) + std::floor((extent - 1) / 2);
    if (var.defined()) loop_values_[f.var] = static_cast<int64_t>(std::clamp(middle, -1e18, 1e18));
    ++stats_.num_loops;
    size_t depth = frames_.size() - 1;
    stats_.max_depth = std::max(stats_.max_depth, static_cast<double>(depth));
  }

  void pop_loop() {
    const Frame& f = frames_.back();
    stats_.max_stores_per_body = std::max(stats_.max_stores_per_body, f.stores);
    if (f.serial == main_serial_) stats_.main_stores = f.stores;
    loop_values_.erase(f.var);
    frames_.pop_back();
  }

  void enter_parallel(double extent) {
    in_parallel_ = true;
    stats_.parallel_extent = std::max(stats_.parallel_extent, extent);
    stats_.parallel_calls += weight();
    stats_.parallel_iterations += weight() * extent;
  }

  void count_op(double& counter, int lanes, bool is_flop) {
    const double elems = weight() * lanes;
    counter += elems;
    stats_.op_elems += elems;
    stats_.op_instrs += weight();
    if (in_parallel_) stats_.parallel_work += elems;
    stats_.max_lanes = std::max(stats_.max_lanes, static_cast<double>(lanes));
    if (!is_flop) return;
    stats_.flops += elems;
    if (lanes > 1) stats_.vector_flops += elems;
  }

  void record_access(const tir::BufferRef& buffer, const std::vector<arith::Expr>& indices,
                     const arith::Expr& vector_stride, int lanes, bool is_store);
  BufferStats& stats_for(const tir::Buffer* b);

  const tir::LoweredFunc& func_;
  const std::map<std::string, int64_t>& dims_;
  std::vector<Frame> frames_;
  std::unordered_map<arith::VarId, int64_t> loop_values_;
  size_t next_serial_ = 1;
  bool in_parallel_ = false;

  KernelStats stats_;
  std::unordered_map<const tir::Buffer*, size_t> buffer_index_;
  double main_work_ = -1;
  size_t main_serial_ = 0;
};

BufferStats& StatsCollector::stats_for(const tir::Buffer* b) {
  auto [it, inserted] = buffer_index_.emplace(b, stats_.buffers.size());
  if (inserted) {
    BufferStats s;
    s.buffer = b;
    s.numel = numel_of(*b);
    stats_.buffers.push_back(std::move(s));
  }
  return stats_.buffers[it->second];
}

// One load or store. Its distinct elements are estimated as the product of the extents of
// the enclosing loops its index mentions (times the lanes of a moving vector access), summed
// over the buffer's structurally different accesses and capped by the buffer's size: the
// unrolled rows of a register tile each add their own rows, a re-read of the same index
// adds nothing. The innermost stride is the vector stride of a vector access, else the index's
// coefficient in the innermost enclosing loop (0: the access stays put while it runs).
void StatsCollector::record_access(const tir::BufferRef& buffer,
                                   const std::vector<arith::Expr>& indices,
                                   const arith::Expr& vector_stride, int lanes, bool is_store) {
  if (!buffer) return;
  BufferStats& b = stats_for(buffer.get());
  const double elems = weight() * lanes;
  arith::Expr flat = arith::make_int(0);
  if (indices.size() == 1) {
    flat = indices[0];
  } else if (indices.size() == buffer->shape().size()) {
    std::vector<arith::Expr> strides = buffer->strides();
    for (size_t d = 0; d < indices.size(); ++d) flat = flat + indices[d] * strides[d];
  }
  for (const arith::Expr& i : indices) stats_.index_ops += weight() * count_index_ops(i);

  std::unordered_set<arith::VarId> vars;
  tir::for_each_var(flat, [&](const arith::Expr& v) { vars.insert(v->var_id); });
  double touched = 1;
  for (const Frame& f : frames_) {
    if (f.is_loop && vars.count(f.var)) touched = std::min(touched * f.extent, kMaxCount);
  }

  double stride = 0;
  if (lanes > 1) {
    stride = vector_stride.defined() ? static_cast<double>(eval(vector_stride).value_or(1)) : 1;
  } else if (frames_.back().is_loop && vars.count(frames_.back().var)) {
    std::optional<tir::AffineForm> form = tir::affine_in(flat, frames_.back().var);
    std::optional<int64_t> coeff = form ? eval(form->coeff) : std::nullopt;
    stride = coeff ? static_cast<double>(*coeff) : kIrregularStride;
  }
  stride = std::abs(stride);
  if (lanes > 1 && stride != 0) touched = std::min(touched * lanes, kMaxCount);

  (stride == 0   ? stats_.broadcast_access
   : stride == 1 ? stats_.contiguous
                 : stats_.strided) += elems;
  stats_.access_elems += elems;
  if (lanes > 1) stats_.vector_access_elems += elems;
  if (in_parallel_) stats_.parallel_work += elems;
  stats_.max_lanes = std::max(stats_.max_lanes, static_cast<double>(lanes));
  (is_store ? b.stored : b.loaded) += elems;
  b.stride_sum += elems * log_scale(stride);

  size_t key = arith::structural_hash(flat) * 31 + static_cast<size_t>(lanes);
  if (vector_stride.defined()) key = key * 31 + arith::structural_hash(vector_stride);
  if (b.distinct_accesses.insert(key).second) b.touched += touched;
}

}  // namespace

KernelStats kernel_stats(const tir::LoweredFunc& f, const std::map<std::string, int64_t>& dims) {
  StatsCollector collector(f, dims);
  return collector.run();
}

}  // namespace dynvm::tune
