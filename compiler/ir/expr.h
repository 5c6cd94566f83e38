// Expressions of the graph IR: immutable, shared nodes (an `Expr` is a handle), each with
// an optional type (set by type inference or given at construction).
//
//   kVar           a value: a function parameter, a let binding, a loop body parameter
//   kConstant      a host tensor (weights, shapes, scalars)
//   kCall          an operator from the registry by name, with arguments and attributes
//   kTuple         several values as one (a Loop's results, a multi-output op's outputs)
//   kGetItem       field `index` of a tuple
//   kLet           let var = value in body; function bodies are chains of lets (A-normal
//                  form), which is also how the text form prints them
//   kIf            cond (a bool scalar tensor) ? then : else, both branches expressions
//   kLoop          ONNX Loop semantics, as a dedicated node (not a tail-recursive function:
//                  type inference, scan-output stacking and lowering to a bytecode loop
//                  all want the loop's structure in one place). Operands: max_trip (an i64
//                  scalar, or undefined: no limit), cond (a bool scalar, or undefined:
//                  true), then the loop-carried initial values. The body is a Function
//                  (iteration: i64[], cond: bool[], carried...) returning the tuple
//                  (cond', carried'..., scan outputs...). The loop's value is the tuple
//                  (final carried..., each scan output stacked along a new axis 0).
//   kCallFunction  a call of a module function by name (recursion, shared subgraphs)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/type.h"
#include "vm/tensor.h"

namespace dynvm::compiler {

enum class ExprKind : uint8_t {
  kVar,
  kConstant,
  kCall,
  kTuple,
  kGetItem,
  kLet,
  kIf,
  kLoop,
  kCallFunction,
};
const char* kind_name(ExprKind kind);

struct ExprNode;
struct Function;

class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const;
  const Type& type() const;
  // Identity, not structure: the same node.
  bool same_node(const Expr& other) const { return node_ == other.node_; }

 private:
  friend struct ExprNode;  // its destructor takes apart nodes nobody else holds
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::kVar;
  Type type;
  std::string name;            // kVar: its name hint; kCall: the op; kCallFunction: callee
  uint64_t var_id = 0;         // kVar: unique identity
  vm::Tensor value;            // kConstant
  std::vector<Expr> operands;  // see the kinds above; kLet: {var, value, body}
  Attrs attrs;                 // kCall
  int64_t index = 0;           // kGetItem: the field; kLoop: number of scan outputs
  std::shared_ptr<const Function> body;  // kLoop

  ExprNode() = default;
  ExprNode(const ExprNode&) = default;
  // Iterative: a let chain of 100,000 bindings is a list 100,000 nodes deep, which the
  // default (recursive) destruction would walk with one stack frame per node.
  ~ExprNode();
};

// A function: parameters (kVar), a body, and its declared result type (may be undefined).
struct Function {
  std::string name;
  std::vector<Expr> params;
  Expr body;
  Type result_type;
  // The names of the results (the ONNX graph's outputs), when the frontend knows them;
  // the executable's output signature uses them. Not part of the text form.
  std::vector<std::string> result_names;
  // A fused group (compiler/passes/fuse_ops): a let chain of calls that lowering compiles
  // into ONE kernel; called only from its caller's body. Printed as `fn @f(...) primitive`.
  bool primitive = false;
};

// ---- builders: each checks its operands' kinds (internal errors) ----
Expr make_var(std::string name_hint, Type type = {});
Expr make_constant(vm::Tensor value);  // type: its dtype and (constant) shape
Expr make_call(std::string op, std::vector<Expr> args, Attrs attrs = {}, Type type = {});
Expr make_tuple(std::vector<Expr> fields, Type type = {});
Expr make_get_item(Expr tuple, int64_t index, Type type = {});
Expr make_let(Expr var, Expr value, Expr body);  // type: body's
Expr make_if(Expr cond, Expr then_branch, Expr else_branch, Type type = {});
// max_trip / cond may be undefined Exprs (see kLoop above).
Expr make_loop(Expr max_trip, Expr cond, std::vector<Expr> carried,
               std::shared_ptr<const Function> body, int64_t num_scan_outputs, Type type = {});
Expr make_call_function(std::string callee, std::vector<Expr> args, Type type = {});

// A copy of a kCall, kTuple, kGetItem, kIf or kCallFunction node with other operands (and
// the same name, attributes, index and type): what rewriting passes rebuild bottom-up.
Expr with_operands(const Expr& e, std::vector<Expr> operands);

// A copy of `e` with `type` (the node itself is immutable).
Expr with_type(const Expr& e, Type type);

// kLoop accessors.
inline const Expr& loop_max_trip(const Expr& loop) { return loop->operands[0]; }
inline const Expr& loop_cond(const Expr& loop) { return loop->operands[1]; }
std::vector<Expr> loop_carried(const Expr& loop);

}  // namespace dynvm::compiler
