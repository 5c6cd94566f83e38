// The op registry: what the compiler knows about each operator the frontend produces
// (ONNX operators in their newest opset form, as the ONNX importer normalizes them). For each op:
//   - a type relation: output types from input types and attributes, keeping dims symbolic
//     (arith expressions of the model's dims) wherever the op allows;
//   - value propagation for shape arithmetic: small integer tensors (Shape's output, the
//     indices and slices and concatenations of it, Reshape's target) carry their elements
//     as dims, so `Reshape(x, Concat(Gather(Shape(x), 0), [-1, 6625]))` gets the symbolic
//     type `[n, w*2, 6625]` instead of `[?, ?, ?]`;
//   - its run-time shape rule: from input dims, from input values (read on the host
//     before the kernel runs), or from the result (docs/kernels.md, data-dependent shapes).
// Kernel bindings (which kernels/ops builder computes the op) come with lowering.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/expr.h"
#include "kernels/arith/analyzer.h"
#include "vm/error.h"

namespace dynvm::compiler {

inline constexpr int64_t kMaxTrackedElements = 64;

// What type inference knows about one value.
struct ValueFacts {
  Type type;  // undefined: an absent optional input (the empty tuple)
  // For small integer or bool tensors with a static shape (at most kMaxTrackedElements):
  // the elements in row-major order, each a dim (a constant, an expression of dims, or
  // Any; bools as 0 / 1). nullopt when unknown. A bool value decided from the dims'
  // declared ranges is what lets type inference take one branch of an If.
  std::optional<std::vector<Dim>> value;
  // Defined when the value is a compile-time constant (a Constant, or folded).
  vm::Tensor constant;
  bool absent() const { return !type.defined(); }
};

// A condition on dims that only the run time can decide (a Reshape target whose product
// must match, a broadcast of two dims that must be equal or 1), with the error it raises.
struct RunCheck {
  arith::Expr condition;  // boolean
  std::string message;
};

enum class ShapeRule : uint8_t {
  kFromInputDims,  // output dims are expressions of input dims
  // They need input values (Reshape's shape, Range, ConstantOfShape). A size only the data
  // decides (NonZero's, Compress's) is one too: a count op the importer binds beside it.
  kFromInputValues,
};

// Dim expressions of the tensors that exist where an op runs. Each is a size (>= 0) there
// whatever its variables' bounds say: an input's dims are, and the VM checks every computed
// dim before the op that makes it runs. So a Reshape target read off a Shape ((t + 1)
// floordiv 4 - 1, which the bounds of t >= 0 allow to be -1) is a size, not a select on 0
// and -1 that every later Reshape nests in its own. Type inference adds the dims of each
// tensor it types, and forgets a branch's or a loop body's when it leaves them.
class KnownSizes {
 public:
  void add(const arith::Expr& e);
  bool contains(const arith::Expr& e) const;
  size_t mark() const { return order_.size(); }
  void restore(size_t mark);

 private:
  std::vector<arith::Expr> order_;
  std::unordered_multimap<size_t, size_t> by_hash_;  // structural hash -> index in order_
};

class OpContext;

struct OpDef {
  std::string name;
  ShapeRule shape_rule = ShapeRule::kFromInputDims;
  size_t min_inputs = 1;
  size_t max_inputs = 1;
  std::function<std::vector<ValueFacts>(OpContext&)> infer;
};

// The inputs, attributes and helpers a type relation works with. Errors name the node.
class OpContext {
 public:
  OpContext(const std::string& where, const Attrs& attrs, std::vector<ValueFacts> inputs,
            arith::Analyzer& analyzer)
      : where_(where), attrs_(attrs), inputs_(std::move(inputs)), analyzer_(analyzer) {}

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && !inputs_[i].absent(); }
  const ValueFacts& input(size_t i) const;
  // Input i as a tensor type (UserError if it is absent or not a tensor).
  const TypeNode& tensor(size_t i) const;
  vm::DType dtype(size_t i) const { return tensor(i).dtype; }
  const std::vector<Dim>& dims(size_t i) const { return tensor(i).dims; }
  size_t rank(size_t i) const { return dims(i).size(); }
  // Input i's elements as int64 constants, when every one is known (e.g. a Reshape target
  // or Slice starts given as constants); nullopt otherwise.
  std::optional<std::vector<int64_t>> const_ints(size_t i) const;
  // Input i's static dims, when all are constants.
  std::optional<std::vector<int64_t>> static_dims(size_t i) const;
  // Input i's elements as dims: what is known, else (for a small integer vector computed at
  // run time) one run-time symbol per element, which the VM reads before this op runs.
  // nullopt when neither is possible.
  std::optional<std::vector<Dim>> values(size_t i);
  // Records that `condition` must hold at run time (checked before the op runs, failing
  // with `message` naming the node). Provably true: nothing; provably false: fails now.
  template <typename... Args>
  void require(const arith::Expr& condition, Args&&... message);
  // The same, the message naming `who` instead of the binding (an op the importer bound
  // beside a node names that node).
  template <typename... Args>
  void require_for(const std::string& who, const arith::Expr& condition, Args&&... message);
  std::vector<RunCheck> take_checks() { return std::move(checks_); }
  // Who makes run-time symbols for values(): type inference (registry.h's users without
  // one get nullopt).
  using Symbolizer = std::function<std::optional<std::vector<Dim>>(size_t input)>;
  void set_symbolizer(Symbolizer s) { symbolizer_ = std::move(s); }
  bool provable(const arith::Expr& condition) const;
  // Whether `d` is the dim of a tensor that exists where this op runs (KnownSizes), set by
  // type inference; without it, nothing is.
  void set_known_sizes(const KnownSizes* sizes) { known_sizes_ = sizes; }
  bool is_known_size(const Dim& d) const;

  const Attrs& attrs() const { return attrs_; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 const std::vector<int64_t>& fallback) const;
  // A (possibly negative) axis normalized into [0, rank).
  size_t axis(int64_t axis, size_t rank, const char* what = "axis") const;

  // Dims arithmetic, simplified (Any in, Any out).
  Dim add(const Dim& a, const Dim& b) const;
  Dim sub(const Dim& a, const Dim& b) const;
  Dim mul(const Dim& a, const Dim& b) const;
  Dim floordiv(const Dim& a, const Dim& b) const;
  Dim floormod(const Dim& a, const Dim& b) const;
  Dim simplify(const Dim& d) const;
  // 1 / 0 when a == b is provable / provably false over the dims' declared ranges, else Any.
  Dim equal(const Dim& a, const Dim& b) const;

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) const;
  const std::string& where() const { return where_; }

 private:
  std::string where_;
  const Attrs& attrs_;
  std::vector<ValueFacts> inputs_;
  arith::Analyzer& analyzer_;
  Symbolizer symbolizer_;
  const KnownSizes* known_sizes_ = nullptr;
  std::vector<RunCheck> checks_;
};

// Registers an op; each family file (ops_*.cc) registers its ops in a function that
// registry.cc calls once.
void register_op(OpDef def);
// The op, or nullptr.
const OpDef* find_op(const std::string& name);
// Every registered op name, sorted.
std::vector<std::string> registered_ops();

// Facts of a single tensor output; `value` is kept only when it fits the facts' rule
// (integer dtype, static dims whose product is its length).
ValueFacts tensor_facts(vm::DType dtype, std::vector<Dim> dims,
                        std::optional<std::vector<Dim>> value = std::nullopt);

template <typename... Args>
void OpContext::fail(Args&&... args) const {
  user_error(where_, ": ", std::forward<Args>(args)...);
}

template <typename... Args>
void OpContext::require(const arith::Expr& condition, Args&&... message) {
  require_for(where_, condition, std::forward<Args>(message)...);
}

template <typename... Args>
void OpContext::require_for(const std::string& who, const arith::Expr& condition,
                            Args&&... message) {
  if (provable(condition)) return;
  std::string text = str_cat(who, ": ", std::forward<Args>(message)...);
  if (provable(arith::make_not(condition))) user_error(text);
  checks_.push_back({condition, std::move(text)});
}

}  // namespace dynvm::compiler
