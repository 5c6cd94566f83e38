// The variant planner (see specialize.h).
#include "kernels/dispatch/specialize.h"

#include <algorithm>
#include <set>

#include "kernels/arith/simplify.h"
#include "kernels/tir/arith_util.h"
#include "vm/error.h"

namespace dynvm::dispatch {
namespace {

// Where a symbolic dim can be read at run time: the first input dim that is the bare var.
struct DimLocation {
  arith::Var var;
  uint32_t arg = 0;
  uint32_t axis = 0;
};

struct SymbolTable {
  std::vector<DimLocation> bare;        // in first-occurrence order
  std::set<std::string> compound_only;  // vars seen only inside expressions

  const DimLocation* find(const std::string& name) const {
    for (const DimLocation& d : bare) {
      if (d.var.name() == name) return &d;
    }
    return nullptr;
  }
  const DimLocation* find(arith::VarId id) const {
    for (const DimLocation& d : bare) {
      if (d.var.id() == id) return &d;
    }
    return nullptr;
  }
  std::string names() const {
    std::string out;
    for (const DimLocation& d : bare) out += (out.empty() ? "" : ", ") + d.var.name();
    return out.empty() ? "none" : out;
  }
};

SymbolTable symbols_of(const std::vector<ops::TensorType>& inputs) {
  SymbolTable table;
  std::set<arith::VarId> seen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < inputs[i].shape.size(); ++j) {
      const arith::Expr& d = inputs[i].shape[j];
      if (d.kind() == arith::ExprKind::kVar && seen.insert(d->var_id).second) {
        table.bare.push_back({arith::Var(d), static_cast<uint32_t>(i), static_cast<uint32_t>(j)});
      }
    }
  }
  for (const ops::TensorType& t : inputs) {
    for (const arith::Expr& d : t.shape) {
      tir::for_each_var(d, [&](const arith::Expr& v) {
        if (!seen.count(v->var_id)) table.compound_only.insert(v->name);
      });
    }
  }
  return table;
}

// Kernel symbols are C identifiers; dim names come from models ("batch size", "N?").
std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::vector<ops::TensorType> substituted(const std::vector<ops::TensorType>& inputs,
                                         const tir::VarMap& map) {
  std::vector<ops::TensorType> out = inputs;
  for (ops::TensorType& t : out) {
    for (arith::Expr& d : t.shape) d = arith::simplify(tir::substitute(d, map));
  }
  return out;
}

Variant make_variant(const std::string& symbol, const std::string& description,
                     std::vector<vm::DimPredicate> conditions, const OpBuilder& build,
                     const std::vector<ops::TensorType>& inputs, const SpecializeOptions& options) {
  Variant v;
  v.symbol = symbol;
  v.description = description;
  v.conditions = std::move(conditions);
  v.op = build(inputs);
  v.knobs = options.knobs;
  return v;
}

void add_static_variants(const std::string& name, const OpBuilder& build,
                         const std::vector<ops::TensorType>& inputs, const SymbolTable& symbols,
                         const SpecializeOptions& options, std::vector<Variant>* out) {
  std::set<std::string> made;
  for (const auto& shape : options.static_shapes) {
    if (shape.empty()) user_error("specialize ", name, ": an empty static shape binds no dim");
    tir::VarMap map;
    std::vector<vm::DimPredicate> conditions;
    std::string symbol = identifier(name) + "__static", description;
    for (const auto& [dim, value] : shape) {
      const DimLocation* loc = symbols.find(dim);
      if (loc == nullptr) {
        if (symbols.compound_only.count(dim)) {
          user_error("specialize ", name, ": dim '", dim,
                     "' appears only inside expressions of the input shapes, so no run-time "
                     "condition can test it");
        }
        user_error("specialize ", name, ": no symbolic dim named '", dim,
                   "' (symbolic dims: ", symbols.names(), ")");
      }
      if (value < 0) user_error("specialize ", name, ": dim '", dim, "' = ", value, " < 0");
      map[loc->var.id()] = arith::make_int(value);
      conditions.push_back({loc->arg, loc->axis, vm::DimPredicateKind::kEq, value, 0});
      symbol += str_cat("_", identifier(dim), value);
      description += str_cat(description.empty() ? "" : ", ", dim, " == ", value);
    }
    if (!made.insert(symbol).second) continue;  // the same sizes asked for twice
    out->push_back(make_variant(symbol, description, std::move(conditions), build,
                                substituted(inputs, map), options));
  }
}

void add_residue_variants(const std::string& name, const OpBuilder& build,
                          const std::vector<ops::TensorType>& inputs, const SymbolTable& symbols,
                          const ops::OpInstance& symbolic, const SpecializeOptions& options,
                          std::vector<Variant>* out) {
  std::vector<std::pair<const DimLocation*, int64_t>> multiples;
  for (const auto& [var, factor] : symbolic.preferred_multiples) {
    const DimLocation* loc = symbols.find(var.id());
    if (loc != nullptr && factor > 1) multiples.emplace_back(loc, factor);
  }
  // Subsets as bit masks, the ones constraining more dims first (they drop more tails).
  std::vector<uint32_t> masks;
  for (uint32_t m = 1; m < (1u << std::min<size_t>(multiples.size(), 16)); ++m) masks.push_back(m);
  std::stable_sort(masks.begin(), masks.end(), [](uint32_t a, uint32_t b) {
    return __builtin_popcount(a) > __builtin_popcount(b);
  });
  if (masks.size() > options.max_residue_variants) masks.resize(options.max_residue_variants);
  for (uint32_t mask : masks) {
    tir::VarMap map;
    std::vector<vm::DimPredicate> conditions;
    std::string symbol = identifier(name) + "__mod", description;
    for (size_t i = 0; i < multiples.size(); ++i) {
      if (!(mask & (1u << i))) continue;
      const auto& [loc, factor] = multiples[i];
      // n -> factor * q: the kernel binds q = n floordiv factor (kernels/codegen) and its
      // loops over n split by `factor` have no tail.
      arith::Var q(str_cat(loc->var.name(), "_div", factor));
      map[loc->var.id()] = arith::Expr(q) * factor;
      conditions.push_back({loc->arg, loc->axis, vm::DimPredicateKind::kModEq, factor, 0});
      symbol += str_cat("_", identifier(loc->var.name()), factor);
      description +=
          str_cat(description.empty() ? "" : ", ", loc->var.name(), " % ", factor, " == 0");
    }
    out->push_back(make_variant(symbol, description, std::move(conditions), build,
                                substituted(inputs, map), options));
  }
}

// The bare input dims a broadcast output dim chooses among at run time (`select(x == 1, y,
// x)`, nested for more inputs: kernels/ops broadcast_shape), or nothing when `d` is another
// kind of expression.
std::vector<arith::Var> broadcast_class(const arith::Expr& d) {
  if (d.kind() == arith::ExprKind::kVar) return {arith::Var(d)};
  if (d.kind() != arith::ExprKind::kSelect) return {};
  std::vector<arith::Var> out = broadcast_class(d.operand(1));
  std::vector<arith::Var> other = broadcast_class(d.operand(2));
  if (out.empty() || other.empty()) return {};
  for (const arith::Var& v : other) {
    if (std::none_of(out.begin(), out.end(), [&](const arith::Var& w) { return w.id() == v.id(); }))
      out.push_back(v);
  }
  return out;
}

// Variants for broadcast dims that are equal at run time. A broadcasting op's output dim is
// `select(x == 1, y, x)` when its inputs' dims x and y cannot be proved equal (a skip
// connection added to an upsampled map, a mask with its own dim name); its kernel then
// computes every index through selects and does not vectorize. When the dims are equal,
// as they are in every run except a real broadcast, the op re-instantiated with y -> x is
// the plain elementwise kernel. Condition: `argA.dimB == argC.dimD` for each such pair.
// Returns whether there were any (the caller then gives the broadcasting variant no
// residue classes: it runs only when a dim is 1).
bool add_equal_dim_variants(const std::string& name, const OpBuilder& build,
                            const std::vector<ops::TensorType>& inputs, const SymbolTable& symbols,
                            const ops::OpInstance& symbolic, const SpecializeOptions& options,
                            std::vector<Variant>* out) {
  tir::VarMap map;
  std::vector<vm::DimPredicate> conditions;
  std::string description;
  for (const te::TensorRef& t : symbolic.outputs) {
    for (const arith::Expr& d : t->shape()) {
      std::vector<arith::Var> vars = broadcast_class(d);
      if (vars.size() < 2) continue;
      std::vector<const DimLocation*> locs;
      for (const arith::Var& v : vars) {
        const DimLocation* loc = symbols.find(v.id());
        if (loc == nullptr || map.count(v.id())) break;
        locs.push_back(loc);
      }
      if (locs.size() != vars.size()) continue;
      // The class's first input dim stands for all of them.
      std::sort(locs.begin(), locs.end(), [](const DimLocation* a, const DimLocation* b) {
        return std::pair(a->arg, a->axis) < std::pair(b->arg, b->axis);
      });
      for (size_t k = 1; k < locs.size(); ++k) {
        map[locs[k]->var.id()] = locs[0]->var;
        conditions.push_back({locs[k]->arg, locs[k]->axis, vm::DimPredicateKind::kDimEq,
                              locs[0]->arg, locs[0]->axis});
        description += str_cat(description.empty() ? "" : ", ", locs[k]->var.name(),
                               " == ", locs[0]->var.name());
      }
    }
  }
  if (conditions.empty()) return false;
  const std::string eq_name = identifier(name) + "__eq";
  const std::vector<ops::TensorType> equal = substituted(inputs, map);
  Variant plain = make_variant(eq_name, description, conditions, build, equal, options);
  if (options.residue_classes) {
    std::vector<Variant> residues;
    add_residue_variants(eq_name, build, equal, symbols_of(equal), plain.op, options, &residues);
    for (Variant& v : residues) {
      v.conditions.insert(v.conditions.begin(), conditions.begin(), conditions.end());
      v.description = description + ", " + v.description;
      out->push_back(std::move(v));
    }
  }
  out->push_back(std::move(plain));
  return true;
}

}  // namespace

SpecializedOp specialize(const std::string& name, const OpBuilder& build,
                         const std::vector<ops::TensorType>& inputs,
                         const SpecializeOptions& options) {
  SpecializedOp result;
  result.name = name;
  ops::OpInstance symbolic = build(inputs);
  result.num_inputs = static_cast<uint32_t>(symbolic.inputs.size());
  result.num_outputs = static_cast<uint32_t>(symbolic.outputs.size());
  DYNVM_INTERNAL_CHECK(result.num_inputs == inputs.size(), "specialize ", name, ": the op has ",
                       result.num_inputs, " inputs, given ", inputs.size(), " types");

  SymbolTable symbols = symbols_of(inputs);
  if (symbols.bare.empty() && symbols.compound_only.empty()) {
    if (!options.static_shapes.empty()) {
      user_error("specialize ", name, ": static shapes given, but every dim is already static");
    }
  } else {
    add_static_variants(name, build, inputs, symbols, options, &result.variants);
    const bool equal_dims =
        options.equal_dim_variants &&
        add_equal_dim_variants(name, build, inputs, symbols, symbolic, options, &result.variants);
    if (options.residue_classes && !equal_dims) {
      add_residue_variants(name, build, inputs, symbols, symbolic, options, &result.variants);
    }
  }
  Variant fallback;
  fallback.symbol = identifier(name);
  fallback.description = "any shape";
  fallback.op = std::move(symbolic);
  fallback.knobs = options.knobs;
  result.variants.push_back(std::move(fallback));
  return result;
}

vm::Kernel dispatch_table(const SpecializedOp& op, uint32_t library) {
  vm::Kernel k;
  k.name = op.name;
  k.library = library;
  k.num_inputs = op.num_inputs;
  k.num_outputs = op.num_outputs;
  for (const Variant& v : op.variants) k.variants.push_back({v.symbol, v.conditions});
  return k;
}

}  // namespace dynvm::dispatch
