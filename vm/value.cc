#include "vm/value.h"

#include "vm/error.h"

namespace dynvm::vm {

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kEmpty: return "nothing";
    case ValueKind::kInt: return "an integer";
    case ValueKind::kTensor: return "a tensor";
    case ValueKind::kTuple: return "a tuple";
    case ValueKind::kShape: return "a shape";
    case ValueKind::kStorage: return "a storage";
  }
  return "?";
}

void Value::kind_error(ValueKind expected) const {
  user_error("expected ", value_kind_name(expected), " but found ", value_kind_name(kind()));
}

const Tensor& Value::as_tensor() const {
  if (const Tensor* t = std::get_if<Tensor>(&v_)) return *t;
  kind_error(ValueKind::kTensor);
}

const Tuple& Value::as_tuple() const {
  if (const TupleRef* t = std::get_if<TupleRef>(&v_)) return **t;
  kind_error(ValueKind::kTuple);
}

bool Value::append_in_place(const Value& v) {
  TupleRef* t = std::get_if<TupleRef>(&v_);
  if (t == nullptr || t->use_count() != 1) return false;
  // Every tuple is made by Value(Tuple) as a non-const object, so the cast is sound.
  const_cast<Tuple&>(**t).push_back(v);
  return true;
}

const Shape& Value::as_shape() const {
  if (const ShapeRef* s = std::get_if<ShapeRef>(&v_)) return **s;
  kind_error(ValueKind::kShape);
}

const Storage& Value::as_storage() const {
  if (const Storage* s = std::get_if<Storage>(&v_)) return *s;
  kind_error(ValueKind::kStorage);
}

std::string Value::summary() const {
  switch (kind()) {
    case ValueKind::kEmpty: return "empty";
    case ValueKind::kInt: return str_cat("int ", as_int());
    case ValueKind::kTensor: {
      const Tensor& t = as_tensor();
      return str_cat("tensor ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
    }
    case ValueKind::kTuple: return str_cat("tuple of ", as_tuple().size());
    case ValueKind::kShape: return str_cat("shape ", shape_str(as_shape()));
    case ValueKind::kStorage: return str_cat("storage of ", as_storage()->nbytes(), " bytes");
  }
  return "?";
}

}  // namespace dynvm::vm
