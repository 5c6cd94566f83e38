// What a VM register holds: nothing, a 64-bit integer (dims and shape arithmetic live in
// integer registers, as in IREE), a tensor, a tuple of values, a shape, or a storage
// (the result of AllocStorage, from which AllocTensor carves tensors).
// Every alternative is one machine word or one shared pointer, so moving and copying
// registers is cheap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "vm/tensor.h"

namespace dynvm::vm {

class Value;
using Tuple = std::vector<Value>;
using TupleRef = std::shared_ptr<const Tuple>;
using ShapeRef = std::shared_ptr<const Shape>;

enum class ValueKind : uint8_t { kEmpty, kInt, kTensor, kTuple, kShape, kStorage };
const char* value_kind_name(ValueKind k);

class Value {
 public:
  Value() = default;
  Value(int64_t i) : v_(i) {}
  Value(Tensor t) : v_(std::move(t)) {}
  Value(TupleRef t) : v_(std::move(t)) {}
  // The tuple object itself is not const (append_in_place may grow it); shared, it is.
  Value(Tuple t) : v_(TupleRef(std::make_shared<Tuple>(std::move(t)))) {}
  Value(ShapeRef s) : v_(std::move(s)) {}
  Value(Storage s) : v_(std::move(s)) {}
  static Value shape(Shape s) { return Value(std::make_shared<const Shape>(std::move(s))); }

  ValueKind kind() const { return static_cast<ValueKind>(v_.index()); }
  bool empty() const { return v_.index() == 0; }

  // The checked accessors throw UserError naming the kind that was found; the VM adds
  // which register and instruction.
  int64_t as_int() const;
  const Tensor& as_tensor() const;
  const Tuple& as_tuple() const;
  const Shape& as_shape() const;
  const Storage& as_storage() const;

  const int64_t* if_int() const { return std::get_if<int64_t>(&v_); }
  const Tensor* if_tensor() const { return std::get_if<Tensor>(&v_); }

  // Appends `v` to this tuple when this value is its only owner (a loop collecting its scan
  // elements in one register: amortized O(1) a step, where a copy per step was O(steps)).
  // False, and nothing changed, when it is shared or not a tuple.
  bool append_in_place(const Value& v);

  // Integer registers are written by every step of shape arithmetic: straight into the
  // variant (in place when it holds an integer already), no temporary Value.
  Value& operator=(int64_t i) {
    v_ = i;
    return *this;
  }

  void reset() {
    if (v_.index() != 0) v_.emplace<std::monostate>();
  }
  std::string summary() const;  // "tensor f32 [2, 3]", "int 7", ...

 private:
  [[noreturn]] void kind_error(ValueKind expected) const;
  std::variant<std::monostate, int64_t, Tensor, TupleRef, ShapeRef, Storage> v_;
};

inline int64_t Value::as_int() const {
  if (const int64_t* i = std::get_if<int64_t>(&v_)) [[likely]]
    return *i;
  kind_error(ValueKind::kInt);
}

}  // namespace dynvm::vm
