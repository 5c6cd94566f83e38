// TE: tensor expressions. A kernel's math is written once as placeholders (its inputs)
// and computes (outputs and intermediates defined element-wise by a lambda over their
// indices, possibly reducing over extra axes). How it runs is the schedule's business
// (schedule.h); lowering (lower_te.h) turns both into a TIR PrimFunc.
//
//   auto A = placeholder("A", {m, k}, f32);  auto B = placeholder("B", {k, n}, f32);
//   auto r = reduce_axis(k, "r");
//   auto C = compute("C", {m, n}, [&](const Indices& i) {
//     return sum(read(A, {i[0], r.var}) * read(B, {r.var, i[1]}), {r});
//   });
//
// A reduction whose extents are values read per element (a row length, RoiAlign's sampling
// grid per roi) binds them with tir::let_index around the reduction; the reduce axes'
// extents name the bound variables:
//   arith::Var len("len");  auto r = reduce_axis(len, "r");
//   auto S = compute("S", {m}, [&](const Indices& i) {
//     return tir::let_index(len, read(L, {i[0]}), sum(read(A, {i[0], r.var}), {r}));
//   });
//
// A scan (a recurrence along one axis, e.g. a cumulative sum) is a compute whose element
// reads the tensor's own previous element along that axis:
//   auto Y = scan("Y", {n, m}, /*axis=*/0, /*reverse=*/false,
//                 [&](const Indices& i) { return read(X, {i[0], i[1]}); },          // i0 == 0
//                 [&](const Indices& i, tir::Expr prev) { return prev + read(X, {i[0], i[1]}); });
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/arith/expr.h"
#include "kernels/tir/expr.h"

namespace dynvm::te {

using Indices = std::vector<arith::Var>;
using tir::IterVar;

class Tensor;
using TensorRef = std::shared_ptr<const Tensor>;

// What one point of a scatter's domain does (see scatter()).
struct ScatterUpdate {
  // Integer values loaded first, in order; each var may appear in the later ones, in `at`,
  // `when` and `value` (an index read from a tensor).
  std::vector<std::pair<arith::Var, tir::Expr>> lets;
  tir::Expr when;               // boolean; undefined: always
  std::vector<arith::Expr> at;  // the element written (one index per dim)
  tir::Expr value;              // its new value; may read the tensor's own contents anywhere
};

// A scatter's serial pass (Tensor::scatter()).
struct ScatterSpec {
  Indices domain_vars;
  std::vector<arith::Expr> domain;
  ScatterUpdate update;
  TensorRef self;  // the placeholder that stands for the tensor's current contents
};

class Tensor {
 public:
  enum class Kind : uint8_t { kPlaceholder, kCompute };

  const std::string& name() const { return name_; }
  vm::DType dtype() const { return dtype_; }
  const std::vector<arith::Expr>& shape() const { return shape_; }
  size_t ndim() const { return shape_.size(); }
  Kind kind() const { return kind_; }
  // kCompute: one data-parallel var per dim, the body (a kReduce at its root for
  // reductions), and the tensors the body reads, in first-use order.
  const Indices& axis() const { return axis_; }
  const tir::Expr& body() const { return body_; }
  const std::vector<TensorRef>& inputs() const { return inputs_; }
  // kCompute with a kReduce body: its reduction axes.
  const std::vector<IterVar>& reduce_axes() const;
  // Scans (scan()): the placeholder that stands for the tensor itself in the body (reads
  // of it are the previous element), the scan axis and its direction; null otherwise.
  const TensorRef& scan_state() const { return scan_state_; }
  bool is_scan() const { return scan_state_ != nullptr; }
  size_t scan_axis() const { return scan_axis_; }
  bool scan_reverse() const { return scan_reverse_; }
  // Scatters (scatter()): the serial pass after the element-wise init; null otherwise.
  const ScatterSpec* scatter() const { return scatter_.get(); }
  bool is_scatter() const { return scatter_ != nullptr; }
  // The placeholder a scan or scatter reads its own buffer through; null otherwise.
  const TensorRef& self_state() const { return is_scatter() ? scatter_->self : scan_state_; }

 private:
  friend TensorRef placeholder(std::string, std::vector<arith::Expr>, vm::DType);
  friend TensorRef compute(std::string, std::vector<arith::Expr>,
                           const std::function<tir::Expr(const Indices&)>&);
  friend TensorRef scan(std::string, std::vector<arith::Expr>, size_t, bool,
                        const std::function<tir::Expr(const Indices&)>&,
                        const std::function<tir::Expr(const Indices&, tir::Expr)>&);
  friend TensorRef scatter(std::string, std::vector<arith::Expr>,
                           const std::function<tir::Expr(const Indices&)>&,
                           std::vector<arith::Expr>,
                           const std::function<ScatterUpdate(const Indices&, const TensorRef&)>&);
  Tensor() = default;
  std::string name_;
  vm::DType dtype_ = vm::DType::kFloat32;
  std::vector<arith::Expr> shape_;
  Kind kind_ = Kind::kPlaceholder;
  Indices axis_;
  tir::Expr body_;
  std::vector<TensorRef> inputs_;
  TensorRef scan_state_;
  size_t scan_axis_ = 0;
  bool scan_reverse_ = false;
  std::shared_ptr<const ScatterSpec> scatter_;
};

TensorRef placeholder(std::string name, std::vector<arith::Expr> shape, vm::DType dtype);
// The body's type gives the tensor's dtype. A reduction must be the body's root, or sit
// under a chain of let_index bindings at the root (extents read per element, see above):
// lowering evaluates those lets just outside the stage's first reduce loop, so they may read
// only the indices of the data-parallel loops outside it (UserError at lowering) and never
// the reduce variables; a let-bound extent must not be negative (clamp it with max(v, 0)).
TensorRef compute(std::string name, std::vector<arith::Expr> shape,
                  const std::function<tir::Expr(const Indices&)>& body);

// A scan along `axis`: the first element along it (index 0, or extent - 1 when `reverse`)
// is init(i); every other one is update(i, prev), prev being the tensor's element one step
// back (i[axis] - 1, or + 1 when `reverse`). Linear work: lowering runs the axis as one
// serial loop in scan order and stores each element before the next reads it; a schedule
// may not split, fuse or parallelise that axis, nor inline, compute_at or cache_write the
// stage (UserError at lowering or in the primitive). The body is a select on the first
// element, which lowering turns into an if, so update never runs at the first element.
TensorRef scan(std::string name, std::vector<arith::Expr> shape, size_t axis, bool reverse,
               const std::function<tir::Expr(const Indices&)>& init,
               const std::function<tir::Expr(const Indices&, tir::Expr prev)>& update);

// A scatter: every element starts as init(i) (element-wise, scheduled like any compute),
// then one serial pass visits the points j of `domain` in row-major order and, where
// update(j, self).when holds, stores update.value at update.at. `self` reads the tensor's
// current contents (anywhere: a combining scatter reads the element it replaces, a greedy
// selection the elements decided before). Writes outside the tensor are skipped. This is
// how data decides where results go (ScatterElements / ScatterND, NonZero's positions,
// NonMaxSuppression's selections); the pass is serial, so its cost is the domain's size.
// A scatter is computed at the root: it may not be inlined, compute_at'ed or cache_written.
TensorRef scatter(
    std::string name, std::vector<arith::Expr> shape,
    const std::function<tir::Expr(const Indices&)>& init, std::vector<arith::Expr> domain,
    const std::function<ScatterUpdate(const Indices& j, const TensorRef& self)>& update);

// The reduction at the root of a compute body, under its let_index bindings (when `lets`
// is given, they are appended to it, outermost first); null when the body does not reduce.
const tir::ExprNode* root_reduction(const tir::Expr& body,
                                    std::vector<const tir::ExprNode*>* lets = nullptr);

// tensor(indices...): reads one element (indices must match the rank).
tir::Expr read(const TensorRef& tensor, std::vector<arith::Expr> indices);

IterVar reduce_axis(arith::Expr extent, const std::string& name);
tir::Expr sum(tir::Expr source, std::vector<IterVar> axes);
tir::Expr prod(tir::Expr source, std::vector<IterVar> axes);
tir::Expr max_reduce(tir::Expr source, std::vector<IterVar> axes);
tir::Expr min_reduce(tir::Expr source, std::vector<IterVar> axes);
// The value reduction `op` starts from for type t (0 for sums, the lowest value for max...).
tir::Expr reduce_identity(tir::ReduceOp op, tir::DataType t);
// Index (int64, row-major over `axes`) of the first maximum / minimum of source.
tir::Expr argmax(tir::Expr source, std::vector<IterVar> axes);
tir::Expr argmin(tir::Expr source, std::vector<IterVar> axes);
// The same with ties going to the last index (ONNX select_last_index=1).
tir::Expr argmax_last(tir::Expr source, std::vector<IterVar> axes);
tir::Expr argmin_last(tir::Expr source, std::vector<IterVar> axes);

}  // namespace dynvm::te
