// Graph IR expressions (see expr.h).
#include "compiler/ir/expr.h"

#include <atomic>

#include "vm/error.h"

namespace dynvm::compiler {
namespace {

std::shared_ptr<ExprNode> node(ExprKind kind, Type type) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->type = std::move(type);
  return n;
}

void check_defined(const std::vector<Expr>& exprs, const char* what) {
  for (const Expr& e : exprs) DYNVM_INTERNAL_CHECK(e.defined(), what, ": undefined operand");
}

}  // namespace

ExprNode::~ExprNode() {
  // Children only this node holds are taken apart here, one at a time, so that each is
  // destroyed with no children left (a shared child just loses a reference). The nodes
  // were made non-const (make_shared<ExprNode>), and nobody else can see one whose only
  // reference is ours, so emptying it is safe.
  std::vector<Expr> pending = std::move(operands);
  auto take_body = [&pending](std::shared_ptr<const Function>& f) {
    if (f != nullptr && f.use_count() == 1) {
      auto* g = const_cast<Function*>(f.get());
      pending.push_back(std::move(g->body));
      for (Expr& p : g->params) pending.push_back(std::move(p));
    }
    f.reset();
  };
  take_body(body);
  while (!pending.empty()) {
    Expr e = std::move(pending.back());
    pending.pop_back();
    if (!e.defined() || e.node_.use_count() != 1) continue;
    auto* n = const_cast<ExprNode*>(e.get());
    for (Expr& o : n->operands) pending.push_back(std::move(o));
    n->operands.clear();
    take_body(n->body);
  }
}

const char* kind_name(ExprKind kind) {
  static const char* const kNames[] = {"var", "constant", "call", "tuple",        "get_item",
                                       "let", "if",       "loop", "call_function"};
  return kNames[static_cast<int>(kind)];
}

ExprKind Expr::kind() const {
  DYNVM_INTERNAL_CHECK(defined(), "kind() of an undefined expression");
  return node_->kind;
}

const Type& Expr::type() const {
  DYNVM_INTERNAL_CHECK(defined(), "type() of an undefined expression");
  return node_->type;
}

Expr make_var(std::string name_hint, Type type) {
  static std::atomic<uint64_t> next_id{1};
  auto n = node(ExprKind::kVar, std::move(type));
  n->name = std::move(name_hint);
  n->var_id = next_id++;
  return Expr(std::move(n));
}

Expr make_constant(vm::Tensor value) {
  DYNVM_INTERNAL_CHECK(value.defined(), "constant without a tensor");
  std::vector<Dim> dims;
  for (int64_t d : value.shape()) dims.emplace_back(d);
  auto n = node(ExprKind::kConstant, tensor_type(value.dtype(), std::move(dims)));
  n->value = std::move(value);
  return Expr(std::move(n));
}

Expr make_call(std::string op, std::vector<Expr> args, Attrs attrs, Type type) {
  check_defined(args, "call");
  DYNVM_INTERNAL_CHECK(!op.empty(), "call without an op name");
  auto n = node(ExprKind::kCall, std::move(type));
  n->name = std::move(op);
  n->operands = std::move(args);
  n->attrs = std::move(attrs);
  return Expr(std::move(n));
}

Expr make_tuple(std::vector<Expr> fields, Type type) {
  check_defined(fields, "tuple");
  auto n = node(ExprKind::kTuple, std::move(type));
  n->operands = std::move(fields);
  return Expr(std::move(n));
}

Expr make_get_item(Expr tuple, int64_t index, Type type) {
  DYNVM_INTERNAL_CHECK(tuple.defined() && index >= 0, "get_item: bad operand or index");
  auto n = node(ExprKind::kGetItem, std::move(type));
  n->operands = {std::move(tuple)};
  n->index = index;
  return Expr(std::move(n));
}

Expr make_let(Expr var, Expr value, Expr body) {
  DYNVM_INTERNAL_CHECK(var.defined() && var.kind() == ExprKind::kVar, "let binds a non-variable");
  DYNVM_INTERNAL_CHECK(value.defined() && body.defined(), "let: undefined value or body");
  auto n = node(ExprKind::kLet, body.type());
  n->operands = {std::move(var), std::move(value), std::move(body)};
  return Expr(std::move(n));
}

Expr make_if(Expr cond, Expr then_branch, Expr else_branch, Type type) {
  check_defined({cond, then_branch, else_branch}, "if");
  auto n = node(ExprKind::kIf, std::move(type));
  n->operands = {std::move(cond), std::move(then_branch), std::move(else_branch)};
  return Expr(std::move(n));
}

Expr make_loop(Expr max_trip, Expr cond, std::vector<Expr> carried,
               std::shared_ptr<const Function> body, int64_t num_scan_outputs, Type type) {
  check_defined(carried, "loop");
  DYNVM_INTERNAL_CHECK(body != nullptr && body->body.defined(), "loop without a body");
  DYNVM_INTERNAL_CHECK(body->params.size() == carried.size() + 2, "loop body takes ",
                       body->params.size(), " parameters, expected iteration, cond and ",
                       carried.size(), " carried values");
  DYNVM_INTERNAL_CHECK(num_scan_outputs >= 0, "negative scan output count");
  auto n = node(ExprKind::kLoop, std::move(type));
  n->operands = {std::move(max_trip), std::move(cond)};
  for (Expr& c : carried) n->operands.push_back(std::move(c));
  n->body = std::move(body);
  n->index = num_scan_outputs;
  return Expr(std::move(n));
}

Expr make_call_function(std::string callee, std::vector<Expr> args, Type type) {
  check_defined(args, "call_function");
  auto n = node(ExprKind::kCallFunction, std::move(type));
  n->name = std::move(callee);
  n->operands = std::move(args);
  return Expr(std::move(n));
}

Expr with_type(const Expr& e, Type type) {
  auto n = std::make_shared<ExprNode>(*e.get());
  n->type = std::move(type);
  return Expr(std::move(n));
}

std::vector<Expr> loop_carried(const Expr& loop) {
  DYNVM_INTERNAL_CHECK(loop.kind() == ExprKind::kLoop, "not a loop");
  return {loop->operands.begin() + 2, loop->operands.end()};
}

Expr with_operands(const Expr& e, std::vector<Expr> ops) {
  switch (e.kind()) {
    case ExprKind::kCall:
      return make_call(e->name, std::move(ops), e->attrs, e.type());
    case ExprKind::kTuple:
      return make_tuple(std::move(ops), e.type());
    case ExprKind::kGetItem:
      return make_get_item(ops.at(0), e->index, e.type());
    case ExprKind::kIf:
      return make_if(ops.at(0), ops.at(1), ops.at(2), e.type());
    case ExprKind::kCallFunction:
      return make_call_function(e->name, std::move(ops), e.type());
    default:
      internal_error(__FILE__, __LINE__, std::string("with_operands of a ") + kind_name(e.kind()));
  }
}

}  // namespace dynvm::compiler
