// The shape every graph pass has (as XLA's HloPassInterface): a function named as its file,
//
//   PassResult fuse_ops(const TypedModule& in);
//
// that returns the module it made, whether that differs from `in`, and one line saying what
// it did (`vmc --time-passes` prints it, or "(unchanged)"). The pipeline (compiler/pipeline.cc)
// lists the passes in order; pass-specific inputs (version_entry's dim and values) are
// extra parameters, and a pass's detailed counts are an optional stats struct for tests.
//
// The module travels as a TypedModule from import to lowering: before infer_types it has
// no types and no facts; from infer_types on, every expression has a type and `facts`
// says what inference knew about each let-bound tensor.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/op/registry.h"

namespace dynvm::compiler {

// A dim symbol that stands for something only the run time knows, and where the VM reads
// it: element `index` of a small integer tensor (a Reshape target computed by a kernel, a
// graph input), or dim `index` of a value whose shape type inference could not follow (an
// If whose branches differ, a Loop's trip count). Lowering reads it where the value is in
// scope, so every later shape computes from it like from an input's dim.
struct RuntimeSymbol {
  enum class Kind : uint8_t { kElement, kDim };
  uint64_t var_id = 0;  // the let variable or parameter holding the value
  size_t field = 0;     // its field, for a tuple-valued variable
  Kind kind = Kind::kElement;
  int64_t index = 0;  // row-major element, or axis
};

struct TypedModule {
  TypedModule() = default;
  // An untyped module (what the importer and the parser make), before infer_types.
  TypedModule(Module m) : module(std::move(m)) {}  // NOLINT(google-explicit-constructor)

  Module module;
  // What inference knew about each let-bound tensor variable (by var_id): known values
  // and constants, which lowering uses to compute shape arithmetic on the host and to hand
  // bindings their compile-time inputs.
  std::unordered_map<uint64_t, ValueFacts> facts;
  // The run-time symbols inference introduced (by variable id), and the conditions on them
  // each binding needs before it runs (by the binding's variable id; lowered to Assert).
  std::unordered_map<arith::VarId, RuntimeSymbol> runtime_symbols;
  std::unordered_map<uint64_t, std::vector<RunCheck>> checks;
  // Branches typed as unreachable for the declared dims (a call of `dynvm.Unreachable`,
  // lowered to a run-time error with its `message`), for the compiler to report.
  std::vector<std::string> warnings;
};

// A compile-time constant operand's value: a Constant's, or that of a let variable `facts`
// know to be constant; an undefined tensor otherwise.
inline vm::Tensor constant_operand(const std::unordered_map<uint64_t, ValueFacts>& facts,
                                   const Expr& e) {
  if (e.kind() == ExprKind::kConstant) return e->value;
  if (e.kind() == ExprKind::kVar) {
    auto it = facts.find(e->var_id);
    if (it != facts.end()) return it->second.constant;
  }
  return {};
}

// A pass's module and its report. It is a TypedModule, so one pass's result is the next
// one's input.
struct PassResult : TypedModule {
  PassResult() = default;
  PassResult(TypedModule m, bool changed, std::string summary)
      : TypedModule(std::move(m)), changed(changed), summary(std::move(summary)) {}

  bool changed = false;
  std::string summary;  // one line; empty when there is nothing to say
};

// `in` unchanged, with a summary saying why (a pass with nothing to do).
inline PassResult unchanged(const TypedModule& in, std::string summary = "") {
  return PassResult(in, false, std::move(summary));
}

}  // namespace dynvm::compiler
