// TE construction: placeholders, computes and the reduction builders. Everything here only
// builds and checks the math; schedules and lowering live in schedule.cc / lower_te.cc.
#include "kernels/te/tensor.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "vm/error.h"

namespace dynvm::te {
namespace {

void check_shape(const std::string& what, const std::vector<arith::Expr>& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].defined() || shape[d].is_boolean()) {
      user_error(what, ": dim ", d, " of the shape is not an integer expression");
    }
    if (shape[d].is_int_imm() && shape[d].int_value() < 0) {
      user_error(what, ": dim ", d, " of the shape is negative (", shape[d].int_value(), ")");
    }
  }
}

tir::Expr make_reduce(tir::ReduceOp op, const char* what, tir::Expr source,
                      std::vector<IterVar> axes) {
  if (!source.defined()) user_error(what, ": the reduced expression is undefined");
  if (source.type().lanes != 1) user_error(what, ": the reduced expression must be scalar");
  if (source.type().is_bool()) user_error(what, ": reductions over bool are not supported");
  if (axes.empty()) user_error(what, ": needs at least one reduce axis");
  std::unordered_set<arith::VarId> seen;
  for (const IterVar& axis : axes) {
    if (!axis.extent.defined())
      user_error(what, ": reduce axis ", axis.var.name(), " has no extent (use reduce_axis)");
    if (!seen.insert(axis.var.id()).second) {
      user_error(what, ": reduce axis ", axis.var.name(), " appears twice");
    }
  }
  tir::visit(source, [&](const tir::Expr& e) {
    if (e.kind() == tir::ExprKind::kReduce) {
      user_error(what, ": a reduction may not contain another reduction");
    }
  });
  auto node = std::make_shared<tir::ExprNode>();
  node->kind = tir::ExprKind::kReduce;
  bool arg = tir::is_arg_reduce(op);
  node->type = arg ? tir::i64() : source.type();
  node->reduce_op = op;
  node->operands = {std::move(source), tir::Expr()};  // init undefined: the identity
  node->reduce_axes = std::move(axes);
  return tir::Expr(std::move(node));
}

// Whether an index expression anywhere in `e` names `var`.
bool uses_index_var(const tir::Expr& e, const arith::Var& var) {
  bool used = false;
  tir::visit(e, [&](const tir::Expr& x) {
    auto uses = [&](const arith::Expr& index) {
      used |= index.defined() && arith::uses_var(index, var.id());
    };
    uses(x->index);
    uses(x->stride);
    for (const arith::Expr& index : x->indices) uses(index);
  });
  return used;
}

}  // namespace

const tir::ExprNode* root_reduction(const tir::Expr& body,
                                    std::vector<const tir::ExprNode*>* lets) {
  const tir::Expr* e = &body;
  std::vector<const tir::ExprNode*> chain;
  while (e->defined() && e->kind() == tir::ExprKind::kLetIndex) {
    chain.push_back(e->get());
    e = &(*e)->operands[1];
  }
  if (!e->defined() || e->kind() != tir::ExprKind::kReduce) return nullptr;
  if (lets) lets->insert(lets->end(), chain.begin(), chain.end());
  return e->get();
}

const std::vector<IterVar>& Tensor::reduce_axes() const {
  static const std::vector<IterVar> kNone;
  const tir::ExprNode* reduction = kind_ == Kind::kCompute ? root_reduction(body_) : nullptr;
  return reduction ? reduction->reduce_axes : kNone;
}

TensorRef placeholder(std::string name, std::vector<arith::Expr> shape, vm::DType dtype) {
  check_shape("placeholder " + name, shape);
  auto t = std::shared_ptr<Tensor>(new Tensor());
  t->name_ = std::move(name);
  t->dtype_ = dtype;
  t->shape_ = std::move(shape);
  t->kind_ = Tensor::Kind::kPlaceholder;
  return t;
}

TensorRef compute(std::string name, std::vector<arith::Expr> shape,
                  const std::function<tir::Expr(const Indices&)>& body) {
  const std::string what = "compute " + name;
  check_shape(what, shape);
  auto t = std::shared_ptr<Tensor>(new Tensor());
  t->name_ = std::move(name);
  t->shape_ = std::move(shape);
  t->kind_ = Tensor::Kind::kCompute;
  for (size_t d = 0; d < t->shape_.size(); ++d) t->axis_.emplace_back("i" + std::to_string(d));
  t->body_ = body(t->axis_);
  if (!t->body_.defined()) user_error(what, ": the body is undefined");
  if (t->body_.type().lanes != 1) user_error(what, ": the body must be a scalar expression");
  t->dtype_ = t->body_.type().elem;

  // A reduction is a loop around the whole element; one nested in arithmetic would need
  // a temporary the TE language cannot name, so it is refused rather than guessed at. Lets
  // around it bind what its extents read, once per element.
  std::vector<const tir::ExprNode*> lets;
  const tir::ExprNode* reduction = root_reduction(t->body_, &lets);
  for (const tir::ExprNode* let : lets) {
    for (const IterVar& axis : reduction->reduce_axes) {
      if (uses_index_var(let->operands[0], axis.var)) {
        user_error(what, ": the value bound to ", arith::Var(let->let_var).name(),
                   " uses the reduce variable ", axis.var.name(),
                   " (lets at the root are evaluated outside the reduction)");
      }
    }
  }
  std::unordered_set<const Tensor*> seen;
  tir::visit(t->body_, [&](const tir::Expr& e) {
    if (e.kind() == tir::ExprKind::kReduce && e.get() != reduction) {
      user_error(what,
                 ": a reduction must be the root of the body (compute the reduction "
                 "as its own tensor and use it)");
    }
    if (e.kind() == tir::ExprKind::kTensorRead && seen.insert(e->tensor.get()).second) {
      t->inputs_.push_back(e->tensor);
    }
  });
  return t;
}

TensorRef scan(std::string name, std::vector<arith::Expr> shape, size_t axis, bool reverse,
               const std::function<tir::Expr(const Indices&)>& init,
               const std::function<tir::Expr(const Indices&, tir::Expr prev)>& update) {
  const std::string what = "scan " + name;
  if (axis >= shape.size()) {
    user_error(what, ": axis ", axis, " is out of range for rank ", shape.size());
  }
  // The dtype comes from init; the state placeholder (the tensor itself, one step back)
  // needs it before update is built, and only update can read it.
  TensorRef state;
  tir::Expr first;
  TensorRef t = compute(name, shape, [&](const Indices& i) {
    first = init(i);
    if (!first.defined()) user_error(what, ": init is undefined");
    state = placeholder(name + ".prev", shape, first.type().elem);
    std::vector<arith::Expr> prev_index(i.begin(), i.end());
    arith::Expr k = i[axis];
    prev_index[axis] = reverse ? k + arith::Expr(1) : k - arith::Expr(1);
    tir::Expr next = update(i, read(state, prev_index));
    if (!next.defined()) user_error(what, ": update is undefined");
    if (next.type() != first.type()) {
      user_error(what, ": init is ", tir::to_string(first.type()), " but update is ",
                 tir::to_string(next.type()));
    }
    arith::Expr at_first = reverse ? arith::eq(k, shape[axis] - arith::Expr(1)) : arith::eq(k, 0);
    return tir::select(tir::index_value(at_first, tir::boolean()), first, next);
  });
  // compute() made the tensor (a non-const object) and nobody else holds it yet.
  auto* mutable_t = const_cast<Tensor*>(t.get());
  // The state is not an input: lowering reads the tensor's own buffer for it.
  auto& inputs = mutable_t->inputs_;
  inputs.erase(std::remove(inputs.begin(), inputs.end(), state), inputs.end());
  mutable_t->scan_state_ = std::move(state);
  mutable_t->scan_axis_ = axis;
  mutable_t->scan_reverse_ = reverse;
  return t;
}

TensorRef scatter(std::string name, std::vector<arith::Expr> shape,
                  const std::function<tir::Expr(const Indices&)>& init,
                  std::vector<arith::Expr> domain,
                  const std::function<ScatterUpdate(const Indices&, const TensorRef&)>& update) {
  const std::string what = "scatter " + name;
  check_shape(what, domain);
  TensorRef t = compute(name, shape, init);
  if (root_reduction(t->body())) user_error(what, ": init may not reduce");
  auto spec = std::make_shared<ScatterSpec>();
  spec->domain = std::move(domain);
  for (size_t d = 0; d < spec->domain.size(); ++d) {
    spec->domain_vars.emplace_back("j" + std::to_string(d));
  }
  spec->self = placeholder(name + ".self", shape, t->dtype());
  spec->update = update(spec->domain_vars, spec->self);
  ScatterUpdate& u = spec->update;
  if (u.at.size() != shape.size()) {
    user_error(what, ": the update writes ", u.at.size(), " indices into a tensor of rank ",
               shape.size());
  }
  if (!u.value.defined() || u.value.type() != tir::DataType{t->dtype(), 1}) {
    user_error(what, ": the update's value must be a scalar ",
               tir::to_string(tir::DataType{t->dtype(), 1}));
  }
  if (u.when.defined() && !u.when.type().is_bool()) user_error(what, ": `when` must be boolean");
  auto* mutable_t = const_cast<Tensor*>(t.get());  // made above, held by nobody else yet
  std::unordered_set<const Tensor*> seen;
  for (const TensorRef& in : t->inputs()) seen.insert(in.get());
  auto note_reads = [&](const tir::Expr& e) {
    if (!e.defined()) return;
    tir::visit(e, [&](const tir::Expr& x) {
      if (x.kind() == tir::ExprKind::kReduce) user_error(what, ": an update may not reduce");
      if (x.kind() == tir::ExprKind::kTensorRead && x->tensor != spec->self &&
          seen.insert(x->tensor.get()).second) {
        mutable_t->inputs_.push_back(x->tensor);
      }
    });
  };
  for (const auto& [var, value] : u.lets) note_reads(value);
  note_reads(u.when);
  note_reads(u.value);
  mutable_t->scatter_ = std::move(spec);
  return t;
}

tir::Expr read(const TensorRef& tensor, std::vector<arith::Expr> indices) {
  if (!tensor) user_error("read: the tensor is null");
  if (indices.size() != tensor->ndim()) {
    user_error("read ", tensor->name(), ": ", indices.size(), " indices for a tensor of rank ",
               tensor->ndim());
  }
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined() || indices[d].is_boolean()) {
      user_error("read ", tensor->name(), ": index ", d, " is not an integer expression");
    }
  }
  auto node = std::make_shared<tir::ExprNode>();
  node->kind = tir::ExprKind::kTensorRead;
  node->type = tir::DataType{tensor->dtype(), 1};
  node->indices = std::move(indices);
  node->tensor = tensor;
  return tir::Expr(std::move(node));
}

IterVar reduce_axis(arith::Expr extent, const std::string& name) {
  if (!extent.defined() || extent.is_boolean()) {
    user_error("reduce_axis ", name, ": the extent is not an integer expression");
  }
  if (extent.is_int_imm() && extent.int_value() < 0) {
    user_error("reduce_axis ", name, ": negative extent ", extent.int_value());
  }
  return IterVar{arith::Var(name), std::move(extent)};
}

tir::Expr sum(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kSum, "sum", std::move(source), std::move(axes));
}
tir::Expr prod(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kProd, "prod", std::move(source), std::move(axes));
}
tir::Expr max_reduce(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kMax, "max_reduce", std::move(source), std::move(axes));
}
tir::Expr min_reduce(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kMin, "min_reduce", std::move(source), std::move(axes));
}
tir::Expr argmax(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kArgMax, "argmax", std::move(source), std::move(axes));
}
tir::Expr argmin(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kArgMin, "argmin", std::move(source), std::move(axes));
}
tir::Expr argmax_last(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kArgMaxLast, "argmax_last", std::move(source), std::move(axes));
}
tir::Expr argmin_last(tir::Expr source, std::vector<IterVar> axes) {
  return make_reduce(tir::ReduceOp::kArgMinLast, "argmin_last", std::move(source), std::move(axes));
}

}  // namespace dynvm::te
