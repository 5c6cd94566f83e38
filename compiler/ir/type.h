// Types of the graph IR. A tensor type has a dtype and dims; each dim is a constant, a
// named symbol (`seq`), an expression of symbols (`seq*2`, `(w - 1) floordiv 8 + 1`, the
// kernels' arith::Expr, so shape inference and kernels share one symbolic library) or Any
// (unknown until run time, e.g. NonZero's count or a loop's trip count). Tuples group
// values (a Loop's results); function types describe a Function's signature.
// A sequence (ONNX's sequence type) holds a number of tensors known only at run time, all
// of one dtype; its element type is a tensor type whose non-constant dims are Any (the
// elements may differ in shape), or unknown (only the dtype) when even their rank is not
// known. An optional holds one value (a tensor or a sequence) or none. At run time both
// are VM tuples: a sequence's fields are its elements, an optional has 0 or 1 field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/arith/expr.h"
#include "vm/dtype.h"

namespace dynvm::compiler {

class Dim {
 public:
  static Dim any() { return Dim(); }
  Dim(arith::Expr expr);  // NOLINT(google-explicit-constructor): dims read as expressions
  Dim(int64_t value);     // NOLINT(google-explicit-constructor)
  Dim(const arith::Var& var) : Dim(arith::Expr(var)) {}  // NOLINT(google-explicit-constructor)

  bool is_any() const { return !expr_.defined(); }
  bool is_const() const { return !is_any() && expr_.is_int_imm(); }
  int64_t value() const;            // is_const() only
  const arith::Expr& expr() const;  // !is_any() only
  // The same dim: both Any, or structurally equal expressions.
  bool same_as(const Dim& other) const;

 private:
  Dim() = default;
  arith::Expr expr_;  // undefined: Any
};

enum class TypeKind : uint8_t { kTensor, kTuple, kFunc, kSequence, kOptional };

struct TypeNode;

// A handle to an immutable type; undefined before type inference.
class Type {
 public:
  Type() = default;
  explicit Type(std::shared_ptr<const TypeNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const TypeNode* operator->() const { return node_.get(); }
  const TypeNode& operator*() const { return *node_; }
  TypeKind kind() const;
  bool is_tensor() const { return defined() && kind() == TypeKind::kTensor; }
  bool is_sequence() const { return defined() && kind() == TypeKind::kSequence; }
  bool is_optional() const { return defined() && kind() == TypeKind::kOptional; }

 private:
  std::shared_ptr<const TypeNode> node_;
};

struct TypeNode {
  TypeKind kind = TypeKind::kTensor;
  vm::DType dtype = vm::DType::kFloat32;  // kTensor; kSequence: the elements' dtype
  std::vector<Dim> dims;                  // kTensor
  // kTuple: the fields; kFunc: the parameters; kSequence: the element type, none when
  // the elements' rank is unknown; kOptional: the type of the value it may hold.
  std::vector<Type> fields;
  // kSequence: known to hold no element (SequenceEmpty), so any element type fits it: it
  // joins with a sequence as that sequence (a loop that inserts into an empty sequence).
  bool no_elements = false;
  std::vector<Type> results;  // kFunc
};

Type tensor_type(vm::DType dtype, std::vector<Dim> dims);
Type tuple_type(std::vector<Type> fields);
Type func_type(std::vector<Type> params, std::vector<Type> results);
// `elem` (a tensor type) with its non-constant dims made Any; undefined: rank unknown.
Type sequence_type(vm::DType dtype, Type elem = {});
Type empty_sequence_type(vm::DType dtype);  // `seq<f32, empty>`: no_elements
Type optional_type(Type elem);              // elem: a tensor or sequence type
// A sequence's element type (undefined when the rank is unknown), an optional's value type.
inline const Type* element_type(const Type& t) {
  return t->fields.empty() ? nullptr : &t->fields[0];
}

// Structural equality (dims by same_as).
bool type_equal(const Type& a, const Type& b);
// "f32[seq, 80]", "(f32[2], i64[])", "fn(f32[n]) -> (f32[n])", "seq<f32[?, 3]>", "seq<i64>"
// (rank unknown), "seq<f32, empty>", "opt<f32[4]>", "?" for undefined; Any prints as `?`. The
// parser (parser.h) reads this back.
std::string to_string(const Type& t);
std::string to_string(const Dim& d);

}  // namespace dynvm::compiler
