// Graph IR types (see type.h).
#include "compiler/ir/type.h"

#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::compiler {

Dim::Dim(arith::Expr expr) : expr_(std::move(expr)) {
  DYNVM_INTERNAL_CHECK(expr_.defined() && !expr_.is_boolean(),
                       "a dim must be an integer expression (use Dim::any() for unknown)");
}
Dim::Dim(int64_t value) : expr_(arith::make_int(value)) {}

int64_t Dim::value() const {
  DYNVM_INTERNAL_CHECK(is_const(), "dim ", to_string(*this), " is not a constant");
  return expr_.int_value();
}

const arith::Expr& Dim::expr() const {
  DYNVM_INTERNAL_CHECK(!is_any(), "dim is Any: it has no expression");
  return expr_;
}

bool Dim::same_as(const Dim& other) const {
  if (is_any() || other.is_any()) return is_any() && other.is_any();
  return arith::structural_equal(expr_, other.expr_);
}

TypeKind Type::kind() const {
  DYNVM_INTERNAL_CHECK(defined(), "kind() of an undefined type");
  return node_->kind;
}

Type tensor_type(vm::DType dtype, std::vector<Dim> dims) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kTensor;
  n->dtype = dtype;
  n->dims = std::move(dims);
  return Type(std::move(n));
}

Type tuple_type(std::vector<Type> fields) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kTuple;
  for (const Type& f : fields) DYNVM_INTERNAL_CHECK(f.defined(), "tuple field type undefined");
  n->fields = std::move(fields);
  return Type(std::move(n));
}

Type func_type(std::vector<Type> params, std::vector<Type> results) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kFunc;
  n->fields = std::move(params);
  n->results = std::move(results);
  return Type(std::move(n));
}

Type sequence_type(vm::DType dtype, Type elem) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kSequence;
  n->dtype = dtype;
  if (elem.defined()) {
    DYNVM_INTERNAL_CHECK(elem.is_tensor() && elem->dtype == dtype,
                         "a sequence's elements are tensors of its dtype, got ", to_string(elem));
    std::vector<Dim> dims;
    for (const Dim& d : elem->dims) dims.push_back(d.is_const() ? d : Dim::any());
    n->fields.push_back(tensor_type(dtype, std::move(dims)));
  }
  return Type(std::move(n));
}

Type empty_sequence_type(vm::DType dtype) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kSequence;
  n->dtype = dtype;
  n->no_elements = true;
  return Type(std::move(n));
}

Type optional_type(Type elem) {
  DYNVM_INTERNAL_CHECK(elem.is_tensor() || elem.is_sequence(),
                       "an optional holds a tensor or a sequence, got ", to_string(elem));
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeKind::kOptional;
  n->fields.push_back(std::move(elem));
  return Type(std::move(n));
}

namespace {
bool all_equal(const std::vector<Type>& a, const std::vector<Type>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!type_equal(a[i], b[i])) return false;
  }
  return true;
}
}  // namespace

bool type_equal(const Type& a, const Type& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case TypeKind::kTensor:
      if (a->dtype != b->dtype || a->dims.size() != b->dims.size()) return false;
      for (size_t i = 0; i < a->dims.size(); ++i) {
        if (!a->dims[i].same_as(b->dims[i])) return false;
      }
      return true;
    case TypeKind::kTuple:
      return all_equal(a->fields, b->fields);
    case TypeKind::kFunc:
      return all_equal(a->fields, b->fields) && all_equal(a->results, b->results);
    case TypeKind::kSequence:
      return a->dtype == b->dtype && a->no_elements == b->no_elements &&
             all_equal(a->fields, b->fields);
    case TypeKind::kOptional:
      return all_equal(a->fields, b->fields);
  }
  return false;
}

std::string to_string(const Dim& d) { return d.is_any() ? "?" : arith::to_string(d.expr()); }

namespace {
std::string list(const std::vector<Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + to_string(types[i]);
  return out;
}
}  // namespace

std::string to_string(const Type& t) {
  if (!t.defined()) return "?";
  switch (t.kind()) {
    case TypeKind::kTensor: {
      std::string out = str_cat(vm::dtype_name(t->dtype), "[");
      for (size_t i = 0; i < t->dims.size(); ++i) out += (i ? ", " : "") + to_string(t->dims[i]);
      return out + "]";
    }
    case TypeKind::kTuple:
      return "(" + list(t->fields) + (t->fields.size() == 1 ? ",)" : ")");
    case TypeKind::kFunc:
      return "fn(" + list(t->fields) + ") -> (" + list(t->results) + ")";
    case TypeKind::kSequence:
      if (t->no_elements) return str_cat("seq<", vm::dtype_name(t->dtype), ", empty>");
      return "seq<" +
             (t->fields.empty() ? std::string(vm::dtype_name(t->dtype)) : list(t->fields)) + ">";
    case TypeKind::kOptional:
      return "opt<" + list(t->fields) + ">";
  }
  return "?";
}

}  // namespace dynvm::compiler
