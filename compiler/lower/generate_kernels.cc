// Kernel specialization and compilation (see generate_kernels.h).
#include "compiler/lower/generate_kernels.h"

#include <algorithm>
#include <map>
#include <string>

#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// The tuned knobs for `k`, when there are some that its template takes (a record made
// for another version of the template is ignored).
const ops::KnobValues* tuned_knobs(const KernelRequest& k, const LowerOptions& options) {
  auto it = options.tuned_knobs.find(k.workload);
  if (it == options.tuned_knobs.end()) return nullptr;
  const std::vector<ops::KnobSpec> specs = k.build(k.arg_types).knobs;
  for (const auto& [name, value] : it->second) {
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const ops::KnobSpec& s) { return s.name == name; });
    if (spec == specs.end() || std::find(spec->candidates.begin(), spec->candidates.end(), value) ==
                                   spec->candidates.end()) {
      return nullptr;
    }
  }
  return &it->second;
}

}  // namespace

void generate_kernels(Lowered& lowered, const LowerOptions& options, KernelStats* stats) {
  KernelStats local;
  KernelStats& s = stats != nullptr ? *stats : local;
  const std::vector<KernelRequest>& kernels = lowered.kernels;
  vm::Executable& exe = lowered.exe;
  DYNVM_INTERNAL_CHECK(exe.kernels.size() == kernels.size(), exe.kernels.size(),
                       " kernel table entries for ", kernels.size(), " kernels");
  if (kernels.empty()) return;
  // Kernels are generated for the CPU only (LLVM, kernels/codegen). This is where a CUDA
  // code generator plugs in (docs/compiler.md): until then, one clear refusal.
  if (options.kernel_device != vm::kCpu) {
    user_error("kernels for ", vm::device_name(options.kernel_device),
               " are not generated yet: dynvm has no CUDA code generator (", kernels.size(),
               " kernels needed; compile for the CPU)");
  }
  std::vector<dispatch::SpecializedOp> ops;
  std::vector<const ops::KnobValues*> tuned;
  for (const KernelRequest& k : kernels) {
    tuned.push_back(tuned_knobs(k, options));
    dispatch::SpecializeOptions so;
    so.residue_classes = options.residue_variants;
    if (tuned.back() != nullptr) so.knobs = *tuned.back();
    // Static sizes apply to the dims this kernel's arguments have alone.
    for (const auto& shape : options.static_shapes) {
      std::map<std::string, int64_t> mine;
      for (const auto& [name, value] : shape) {
        for (const ops::TensorType& t : k.arg_types) {
          for (const arith::Expr& d : t.shape) {
            if (d.kind() == arith::ExprKind::kVar && d->name == name) mine[name] = value;
          }
        }
      }
      if (!mine.empty()) so.static_shapes.push_back(mine);
    }
    ops.push_back(dispatch::specialize(k.name, k.build, k.arg_types, so));
  }
  dispatch::CompileOptions co;
  co.library_index = static_cast<uint32_t>(exe.libraries.size());
  co.progress = options.progress;
  dispatch::CompiledKernels compiled = dispatch::compile_kernels(ops, options.target, co);
  DYNVM_INTERNAL_CHECK(compiled.kernels.size() == exe.kernels.size(), "compiled ",
                       compiled.kernels.size(), " kernels of ", exe.kernels.size());
  for (size_t k = 0; k < compiled.kernels.size(); ++k) {
    const vm::Kernel& declared = exe.kernels[k];
    const vm::Kernel& made = compiled.kernels[k];
    DYNVM_INTERNAL_CHECK(
        made.num_inputs == declared.num_inputs && made.num_outputs == declared.num_outputs,
        "kernel ", declared.name, " was called with ", declared.num_inputs, "+",
        declared.num_outputs, " arguments and compiled with ", made.num_inputs, "+",
        made.num_outputs);
    s.variants += made.variants.size();
    if (tuned[k] != nullptr) {
      compiled.kernels[k].schedule = "tuned: " + ops::knobs_to_string(*tuned[k]);
      ++s.tuned;
    }
  }
  s.kernels = compiled.kernels.size();
  exe.libraries.push_back(std::move(compiled.library));
  exe.kernels = std::move(compiled.kernels);
}

}  // namespace dynvm::compiler
