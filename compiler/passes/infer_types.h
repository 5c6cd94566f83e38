// Type inference: every expression of every function gets its type, with dims kept
// symbolic (arith expressions of the module's dims) wherever the op registry's relations
// allow, small integer values (shapes) followed through shape arithmetic, an If whose
// condition those values decide over the dims' declared ranges replaced by its branch
// (exporters emit `if rank == 2` and `if dim == 1` guards), other If results joined
// (dims that differ between branches become Any), Loop-carried types generalized
// to a fixed point and scan outputs given a leading trip-count dim (a dim when the trip
// count is known and no condition can stop the loop early, else Any).
// UserError, naming the binding, for an unknown op, a wrong arity or a relation's refusal.
#pragma once

#include <unordered_map>

#include "compiler/ir/module.h"
#include "compiler/op/registry.h"
#include "compiler/passes/pass.h"

namespace dynvm::compiler {

// The pass (pass.h): `in.module` typed, its facts and warnings. Always "changed" (types
// are added).
PassResult infer_types(const TypedModule& in);
// The same for an untyped module, without the report (tests, fold_constants).
TypedModule infer_types_with_facts(const Module& module);

// The facts of a call's operand: what inference recorded for a let-bound variable, else its
// type (from `types`, by var_id, when the node carries none); a constant's value; nothing
// for an absent input (the empty tuple).
ValueFacts operand_facts(const TypedModule& typed, const std::unordered_map<uint64_t, Type>& types,
                         const Expr& operand);

}  // namespace dynvm::compiler
