// Lowering and building specialized ops (see kernel_set.h).
#include "kernels/dispatch/kernel_set.h"

#include <set>

#include "vm/error.h"

namespace dynvm::dispatch {

CompiledKernels compile_kernels(const std::vector<SpecializedOp>& ops,
                                const codegen::Target& target, const CompileOptions& options) {
  size_t total = 0;
  for (const SpecializedOp& op : ops) total += op.variants.size();
  std::set<std::string> symbols;
  std::vector<tir::LoweredFunc> funcs;
  CompiledKernels out;
  for (const SpecializedOp& op : ops) {
    for (const Variant& v : op.variants) {
      if (!symbols.insert(v.symbol).second) {
        user_error("kernel symbol ", v.symbol, " is made twice: two ops named ", op.name, "?");
      }
      funcs.push_back(ops::lower_op(v.op, v.knobs, v.symbol));
      if (options.lowered) options.lowered(funcs.back());
      if (options.progress) options.progress(funcs.size(), total, v.symbol);
    }
    out.kernels.push_back(dispatch_table(op, options.library_index));
  }
  out.library = codegen::build_library(funcs, target, options.build);
  return out;
}

}  // namespace dynvm::dispatch
