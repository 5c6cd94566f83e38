// The op table and OpContext helpers (see registry.h).
#include "compiler/op/registry.h"

#include <algorithm>
#include <map>

#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

std::map<std::string, OpDef>& table() {
  static std::map<std::string, OpDef> ops;
  return ops;
}

// Each family registers its ops once, on first use of the registry.
void ensure_registered() {
  static const bool done = [] {
    register_elementwise_ops();
    register_shape_ops();
    register_nn_ops();
    register_elementwise_extra_ops();
    register_normalization_ops();
    register_quantize_ops();
    register_indexing_ops();
    register_sequence_ops();
    register_signal_ops();
    register_linalg_ops();
    return true;
  }();
  (void)done;
}

}  // namespace

void register_op(OpDef def) {
  DYNVM_INTERNAL_CHECK(def.infer != nullptr, "op ", def.name, " has no type relation");
  std::string name = def.name;
  bool inserted = table().emplace(name, std::move(def)).second;
  DYNVM_INTERNAL_CHECK(inserted, "op ", name, " registered twice");
}

const OpDef* find_op(const std::string& name) {
  ensure_registered();
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  ensure_registered();
  std::vector<std::string> names;
  for (const auto& [name, def] : table()) names.push_back(name);
  return names;
}

ValueFacts tensor_facts(vm::DType dtype, std::vector<Dim> dims,
                        std::optional<std::vector<Dim>> value) {
  ValueFacts f;
  int64_t numel = 1;
  bool is_static = true;
  for (const Dim& d : dims) {
    if (!d.is_const()) {
      is_static = false;
      break;
    }
    numel *= d.value();
  }
  f.type = tensor_type(dtype, std::move(dims));
  if (value && (vm::is_integer(dtype) || dtype == vm::DType::kBool) && is_static &&
      numel <= kMaxTrackedElements && static_cast<int64_t>(value->size()) == numel) {
    f.value = std::move(value);
  }
  return f;
}

const ValueFacts& OpContext::input(size_t i) const {
  if (i >= inputs_.size()) fail("input ", i, " is missing");
  return inputs_[i];
}

const TypeNode& OpContext::tensor(size_t i) const {
  const ValueFacts& f = input(i);
  if (f.absent()) fail("input ", i, " is required");
  if (!f.type.is_tensor()) fail("input ", i, " is ", to_string(f.type), ", expected a tensor");
  return *f.type;
}

std::optional<std::vector<int64_t>> OpContext::const_ints(size_t i) const {
  const ValueFacts& f = input(i);
  if (!f.value) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *f.value) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

std::optional<std::vector<Dim>> OpContext::values(size_t i) {
  const ValueFacts& f = input(i);
  if (f.value) return f.value;
  if (!symbolizer_) return std::nullopt;
  std::optional<std::vector<Dim>> made = symbolizer_(i);
  if (made) inputs_[i].value = made;
  return made;
}

bool OpContext::provable(const arith::Expr& condition) const {
  return analyzer_.can_prove(condition);
}

bool OpContext::is_known_size(const Dim& d) const {
  return known_sizes_ != nullptr && !d.is_any() && known_sizes_->contains(d.expr());
}

void KnownSizes::add(const arith::Expr& e) {
  if (contains(e)) return;
  by_hash_.emplace(arith::structural_hash(e), order_.size());
  order_.push_back(e);
}

bool KnownSizes::contains(const arith::Expr& e) const {
  auto [begin, end] = by_hash_.equal_range(arith::structural_hash(e));
  for (auto it = begin; it != end; ++it) {
    if (arith::structural_equal(order_[it->second], e)) return true;
  }
  return false;
}

void KnownSizes::restore(size_t mark) {
  while (order_.size() > mark) {
    auto [begin, end] = by_hash_.equal_range(arith::structural_hash(order_.back()));
    for (auto it = begin; it != end; ++it) {
      if (it->second == order_.size() - 1) {
        by_hash_.erase(it);
        break;
      }
    }
    order_.pop_back();
  }
}

std::optional<std::vector<int64_t>> OpContext::static_dims(size_t i) const {
  std::vector<int64_t> out;
  for (const Dim& d : dims(i)) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

int64_t OpContext::attr_int(const std::string& name, int64_t fallback) const {
  return compiler::attr_int(attrs_, name, fallback, where_);
}
double OpContext::attr_float(const std::string& name, double fallback) const {
  return compiler::attr_float(attrs_, name, fallback, where_);
}
std::string OpContext::attr_string(const std::string& name, const std::string& fallback) const {
  return compiler::attr_string(attrs_, name, fallback, where_);
}
std::vector<int64_t> OpContext::attr_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  return compiler::attr_ints(attrs_, name, fallback, where_);
}

size_t OpContext::axis(int64_t axis, size_t rank, const char* what) const {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(what, " ", axis, " is out of range for rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

Dim OpContext::simplify(const Dim& d) const {
  return d.is_any() ? d : Dim(analyzer_.simplify(d.expr()));
}
Dim OpContext::equal(const Dim& a, const Dim& b) const {
  if (a.is_any() || b.is_any()) return Dim::any();
  if (analyzer_.provably_equal(a.expr(), b.expr())) return Dim(1);
  if (analyzer_.can_prove(arith::ne(a.expr(), b.expr()))) return Dim(0);
  return Dim::any();
}

Dim OpContext::add(const Dim& a, const Dim& b) const {
  return a.is_any() || b.is_any() ? Dim::any() : simplify(a.expr() + b.expr());
}
Dim OpContext::sub(const Dim& a, const Dim& b) const {
  return a.is_any() || b.is_any() ? Dim::any() : simplify(a.expr() - b.expr());
}
Dim OpContext::mul(const Dim& a, const Dim& b) const {
  return a.is_any() || b.is_any() ? Dim::any() : simplify(a.expr() * b.expr());
}
Dim OpContext::floordiv(const Dim& a, const Dim& b) const {
  if (a.is_any() || b.is_any()) return Dim::any();
  if (b.is_const() && b.value() == 0) fail("division of a dim by zero");
  return simplify(arith::floordiv(a.expr(), b.expr()));
}
Dim OpContext::floormod(const Dim& a, const Dim& b) const {
  if (a.is_any() || b.is_any()) return Dim::any();
  if (b.is_const() && b.value() == 0) fail("modulo of a dim by zero");
  return simplify(arith::floormod(a.expr(), b.expr()));
}

}  // namespace dynvm::compiler
