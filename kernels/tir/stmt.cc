// Statement builders and buffers. Like the expression builders, they check the IR's
// invariants at construction so that a malformed statement is caught where it is made, not
// where code generation trips over it.
#include "kernels/tir/stmt.h"

#include <utility>

#include "kernels/arith/simplify.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

Stmt finish(StmtNode node) { return Stmt(std::make_shared<const StmtNode>(std::move(node))); }

void check_index(const arith::Expr& e, const char* what) {
  DYNVM_INTERNAL_CHECK(e.defined(), "undefined ", what);
  DYNVM_INTERNAL_CHECK(!e.is_boolean(), what, " must be an integer expression");
}

}  // namespace

Buffer::Buffer(std::string name, vm::DType dtype, std::vector<arith::Expr> shape, BufferScope scope)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), scope_(scope) {
  for (const auto& d : shape_) check_index(d, "buffer dim");
}

std::vector<arith::Expr> Buffer::strides() const {
  std::vector<arith::Expr> strides(shape_.size());
  arith::Expr stride = arith::make_int(1);
  for (size_t i = shape_.size(); i-- > 0;) {
    strides[i] = stride;
    stride = arith::simplify(stride * shape_[i]);
  }
  return strides;
}

arith::Expr Buffer::numel() const {
  arith::Expr n = arith::make_int(1);
  for (const auto& d : shape_) n = n * d;
  return arith::simplify(n);
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unrolled";
    case ForKind::kGpuBlock:
      return "gpu_block";
    case ForKind::kGpuThread:
      return "gpu_thread";
  }
  return "?";
}

StmtKind Stmt::kind() const {
  DYNVM_INTERNAL_CHECK(defined(), "kind() of an undefined tir::Stmt");
  return node_->kind;
}

Stmt make_for(arith::Var var, arith::Expr min, arith::Expr extent, ForKind kind, Stmt body,
              int thread_axis) {
  check_index(min, "loop min");
  check_index(extent, "loop extent");
  DYNVM_INTERNAL_CHECK(body.defined(), "loop ", var.name(), " without a body");
  DYNVM_INTERNAL_CHECK(thread_axis >= 0 && thread_axis <= 2, "thread axis ", thread_axis);
  StmtNode n;
  n.kind = StmtKind::kFor;
  n.loop_var = var.expr();
  n.min = std::move(min);
  n.extent = std::move(extent);
  n.for_kind = kind;
  n.thread_axis = thread_axis;
  n.body = std::move(body);
  return finish(std::move(n));
}

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    DYNVM_INTERNAL_CHECK(s.defined(), "undefined statement in a sequence");
    if (s.kind() == StmtKind::kNop) continue;
    if (s.kind() == StmtKind::kSeq) {
      flat.insert(flat.end(), s->seq.begin(), s->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.empty()) return make_nop();
  if (flat.size() == 1) return flat[0];
  StmtNode n;
  n.kind = StmtKind::kSeq;
  n.seq = std::move(flat);
  return finish(std::move(n));
}

Stmt make_if(arith::Expr condition, Stmt then_case, Stmt else_case) {
  DYNVM_INTERNAL_CHECK(condition.defined() && condition.is_boolean(),
                       "if needs a boolean condition");
  DYNVM_INTERNAL_CHECK(then_case.defined(), "if without a then branch");
  StmtNode n;
  n.kind = StmtKind::kIf;
  n.condition = std::move(condition);
  n.then_case = std::move(then_case);
  n.else_case = std::move(else_case);
  return finish(std::move(n));
}

Stmt make_store(BufferRef buffer, std::vector<arith::Expr> indices, Expr value) {
  DYNVM_INTERNAL_CHECK(buffer != nullptr, "store to a null buffer");
  DYNVM_INTERNAL_CHECK(indices.size() == buffer->shape().size() || indices.size() == 1, "store to ",
                       buffer->name(), " with ", indices.size(), " indices, rank is ",
                       buffer->shape().size());
  for (const auto& i : indices) check_index(i, "store index");
  DYNVM_INTERNAL_CHECK(value.defined(), "store of an undefined value to ", buffer->name());
  DYNVM_INTERNAL_CHECK(value.type() == (DataType{buffer->dtype(), 1}), "store of ",
                       to_string(value.type()), " to ", buffer->name(), " of ",
                       vm::dtype_name(buffer->dtype()));
  StmtNode n;
  n.kind = StmtKind::kStore;
  n.buffer = std::move(buffer);
  n.indices = std::move(indices);
  n.value = std::move(value);
  return finish(std::move(n));
}

Stmt make_vector_store(BufferRef buffer, arith::Expr flat_base, arith::Expr stride, Expr value,
                       arith::Expr active) {
  DYNVM_INTERNAL_CHECK(buffer != nullptr, "store to a null buffer");
  check_index(flat_base, "vector store base");
  check_index(stride, "vector store stride");
  if (active.defined()) check_index(active, "vector store's active lanes");
  DYNVM_INTERNAL_CHECK(value.defined(), "store of an undefined value to ", buffer->name());
  DYNVM_INTERNAL_CHECK(value.type().elem == buffer->dtype(), "store of ", to_string(value.type()),
                       " to ", buffer->name(), " of ", vm::dtype_name(buffer->dtype()));
  if (value.type().lanes == 1) return make_store(std::move(buffer), {flat_base}, value);
  StmtNode n;
  n.kind = StmtKind::kStore;
  n.buffer = std::move(buffer);
  n.indices = {std::move(flat_base)};
  n.stride = std::move(stride);
  n.active = std::move(active);
  n.value = std::move(value);
  return finish(std::move(n));
}

Stmt make_allocate(BufferRef buffer, Stmt body) {
  DYNVM_INTERNAL_CHECK(buffer != nullptr, "allocate of a null buffer");
  DYNVM_INTERNAL_CHECK(buffer->scope() != BufferScope::kGlobal, "allocate of global buffer ",
                       buffer->name());
  DYNVM_INTERNAL_CHECK(body.defined(), "allocate of ", buffer->name(), " without a body");
  StmtNode n;
  n.kind = StmtKind::kAllocate;
  n.buffer = std::move(buffer);
  n.body = std::move(body);
  return finish(std::move(n));
}

Stmt make_let_index(arith::Var var, Expr value, Stmt body) {
  DYNVM_INTERNAL_CHECK(value.defined() && body.defined(), "let ", var.name(),
                       " with an undefined part");
  DYNVM_INTERNAL_CHECK(value.type().lanes == 1 && vm::is_integer(value.type().elem), "let ",
                       var.name(), " value must be a scalar integer, got ",
                       to_string(value.type()));
  StmtNode n;
  n.kind = StmtKind::kLetIndex;
  n.let_var = var.expr();
  n.value = std::move(value);
  n.body = std::move(body);
  return finish(std::move(n));
}

Stmt make_nop() {
  static const Stmt nop = [] {
    StmtNode n;
    n.kind = StmtKind::kNop;
    return finish(std::move(n));
  }();
  return nop;
}

Stmt make_parallel_call(size_t region, arith::Expr extent) {
  check_index(extent, "parallel call extent");
  StmtNode n;
  n.kind = StmtKind::kParallelCall;
  n.extent = std::move(extent);
  n.region = region;
  return finish(std::move(n));
}

}  // namespace dynvm::tir
