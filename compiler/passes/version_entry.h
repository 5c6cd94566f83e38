// Versions the entry function by the values of one symbolic dim (vmc --dim NAME=V1,V2,...),
// so that one executable serves several sizes whose control flow differs. Exporters emit
// shape guards (`if last dim == 1 then squeeze`, Silero VAD's 8 kHz and 16 kHz paths) that
// only a fixed size decides; with the dim symbolic their branches have different ranks and
// cannot be joined. The entry's body becomes a chain of Ifs on the dim's run-time value:
//
//   %shape = Shape(%x); %n = Gather(%shape, const(axis)); %is_V1 = Equal(%n, const(V1)); ...
//   if %is_V1 { %x1 = dynvm.Refine(%x) {dim="n", value=V1}; <body with %x1 for %x> }
//   else if %is_V2 { ... } else { dynvm.Unreachable() {message="... must be one of V1, V2"} }
//
// Each version is a copy of the body with fresh variables (type inference and lowering key
// what they know by variable), in which every parameter whose type mentions the dim is
// replaced by a `dynvm.Refine` of it: the same tensor, typed with the dim replaced by the
// version's value (checked at run time by lowering). Type inference then types each version
// with the dim constant, so its shape guards are decided, and joins the versions' results.
// Runs on the untyped IR, right after import, before expand_recurrent and infer_types.
// The dim's range becomes min(values)..max(values). UserError when the module has no dim
// NAME, no entry parameter has it as a dim of its own, or a value is outside the dim's
// declared range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

PassResult version_entry(const TypedModule& in, const std::string& dim,
                         const std::vector<int64_t>& values);

}  // namespace dynvm::compiler
