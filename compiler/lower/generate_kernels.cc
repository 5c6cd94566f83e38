// Kernel specialization and compilation (see generate_kernels.h).
#include "compiler/lower/generate_kernels.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "kernels/tune/knob_space.h"
#include "kernels/tune/shipped_model.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// Whether every knob of `knobs` is one of `specs` with one of its values or its default (a
// record made for another version of the template is ignored).
bool template_takes(const std::vector<ops::KnobSpec>& specs, const ops::KnobValues& knobs) {
  for (const auto& [name, value] : knobs) {
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const ops::KnobSpec& s) { return s.name == name; });
    if (spec == specs.end()) return false;
    const bool candidate = std::find(spec->candidates.begin(), spec->candidates.end(), value) !=
                           spec->candidates.end();
    if (!candidate && value != spec->default_value) return false;
  }
  return true;
}

// What tuning records say about `k`: knobs for every size, and sub-range knobs. Either is
// empty when the records do not fit the kernel's template or arguments. Without records,
// the knobs the cost model ranks first (`ranked`, when they are not the defaults).
struct TunedSchedule {
  const ops::KnobValues* knobs = nullptr;
  std::vector<LowerOptions::TunedRange> ranges;
  std::optional<ops::KnobValues> ranked;
  bool tuned() const { return knobs != nullptr || !ranges.empty(); }
  std::string note() const {
    if (!tuned()) return ranked ? "ranked: " + ops::knobs_to_string(*ranked) : std::string();
    std::string out = "tuned: " + (knobs != nullptr ? ops::knobs_to_string(*knobs) : "defaults");
    for (const LowerOptions::TunedRange& r : ranges) {
      out += str_cat("; argument ", r.arg, " dim ", r.axis, " in ", r.lo, "..",
                     r.hi == std::numeric_limits<int64_t>::max() ? "" : std::to_string(r.hi), ": ",
                     ops::knobs_to_string(r.knobs));
    }
    return out;
  }
};

TunedSchedule tuned_schedule(const KernelRequest& k, const LowerOptions& options) {
  TunedSchedule t;
  auto knobs = options.tuned_knobs.find(k.workload);
  auto ranges = options.tuned_ranges.find(k.workload);
  if (knobs == options.tuned_knobs.end() && ranges == options.tuned_ranges.end()) return t;
  const std::vector<ops::KnobSpec> specs = k.build(k.arg_types).knobs;
  if (knobs != options.tuned_knobs.end() && template_takes(specs, knobs->second)) {
    t.knobs = &knobs->second;
  }
  if (ranges == options.tuned_ranges.end()) return t;
  for (const LowerOptions::TunedRange& r : ranges->second) {
    const bool fits = r.arg < k.arg_types.size() && r.axis < k.arg_types[r.arg].shape.size() &&
                      k.arg_types[r.arg].shape[r.axis].kind() == arith::ExprKind::kVar &&
                      r.lo <= r.hi && template_takes(specs, r.knobs);
    if (!fits) return {t.knobs, {}, std::nullopt};
  }
  t.ranges = ranges->second;
  return t;
}

// `base` with a variant set per sub-range in front, each guarded by its range: the same
// builder specialized with the range's knobs (its own static and residue variants, then its
// symbolic one, all under the range's condition).
dispatch::SpecializedOp with_ranges(dispatch::SpecializedOp base, const KernelRequest& k,
                                    const dispatch::SpecializeOptions& so,
                                    const std::vector<LowerOptions::TunedRange>& ranges) {
  std::vector<dispatch::Variant> variants;
  for (size_t i = 0; i < ranges.size(); ++i) {
    dispatch::SpecializeOptions mine = so;
    mine.knobs = ranges[i].knobs;
    dispatch::SpecializedOp part =
        dispatch::specialize(k.name + "_r" + std::to_string(i), k.build, k.arg_types, mine);
    for (dispatch::Variant& v : part.variants) {
      v.conditions.insert(v.conditions.begin(), vm::DimPredicate{ranges[i].arg, ranges[i].axis,
                                                                 vm::DimPredicateKind::kRange,
                                                                 ranges[i].lo, ranges[i].hi});
      v.description = str_cat("argument ", ranges[i].arg, " dim ", ranges[i].axis, " in ",
                              ranges[i].lo, "..", ranges[i].hi, ", ", v.description);
      variants.push_back(std::move(v));
    }
  }
  for (dispatch::Variant& v : base.variants) variants.push_back(std::move(v));
  base.variants = std::move(variants);
  return base;
}

// The knobs a cost model ranks first for each workload of `kernels` that `tuned` does not
// cover (kernels/tune/rank.h), ranked in parallel (a workload's ranking lowers tens of
// configurations); nullopt where they are the template's defaults.
std::map<std::string, std::optional<ops::KnobValues>> rank_workloads(
    const std::vector<KernelRequest>& kernels, const std::vector<TunedSchedule>& tuned,
    const tune::CostModel& model) {
  // The shipped model's choices are remembered for the life of the process (a model
  // compiled again, a workload shared by several models): ranking lowers each
  // configuration, the most expensive part of a compile after LLVM.
  static std::mutex remembered_mutex;
  static std::map<std::string, std::optional<ops::KnobValues>> remembered;
  const bool shipped = &model == &tune::shipped_cost_model();
  std::vector<const KernelRequest*> unranked;
  std::map<std::string, std::optional<ops::KnobValues>> ranked;
  {
    std::lock_guard<std::mutex> lock(remembered_mutex);
    for (size_t k = 0; k < kernels.size(); ++k) {
      const std::string& w = kernels[k].workload;
      if (tuned[k].tuned() || ranked.count(w) != 0) continue;
      auto known = shipped ? remembered.find(w) : remembered.end();
      if (known != remembered.end()) {
        ranked[w] = known->second;
      } else {
        ranked[w] = std::nullopt;
        unranked.push_back(&kernels[k]);
      }
    }
  }
  std::vector<std::optional<ops::KnobValues>> out(unranked.size());
  oneapi::tbb::parallel_for(size_t{0}, unranked.size(), [&](size_t i) {
    const KernelRequest& k = *unranked[i];
    const ops::OpInstance op = k.build(k.arg_types);
    ops::KnobValues best = tune::ranked_schedule(op, k.arg_types, model);
    const tune::KnobSpace space(op.knobs);
    if (best != space.at(space.default_index())) out[i] = std::move(best);
  });
  std::lock_guard<std::mutex> lock(remembered_mutex);
  for (size_t i = 0; i < unranked.size(); ++i) {
    if (shipped) remembered[unranked[i]->workload] = out[i];
    ranked[unranked[i]->workload] = std::move(out[i]);
  }
  return ranked;
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
  std::vector<TunedSchedule> tuned;
  for (const KernelRequest& k : kernels) tuned.push_back(tuned_schedule(k, options));
  if (options.rank_schedules) {  // the model is loaded only when it ranks
    const auto ranked = rank_workloads(
        kernels, tuned, options.cost_model ? *options.cost_model : tune::shipped_cost_model());
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (!tuned[k].tuned()) tuned[k].ranked = ranked.at(kernels[k].workload);
    }
  }
  for (size_t index = 0; index < kernels.size(); ++index) {
    const KernelRequest& k = kernels[index];
    dispatch::SpecializeOptions so;
    so.residue_classes = options.residue_variants;
    if (tuned[index].knobs != nullptr) so.knobs = *tuned[index].knobs;
    if (tuned[index].ranked) so.knobs = *tuned[index].ranked;
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
    if (!tuned[index].ranges.empty()) {
      ops.back() = with_ranges(std::move(ops.back()), k, so, tuned[index].ranges);
    }
  }
  dispatch::CompileOptions co;
  co.library_index = static_cast<uint32_t>(exe.libraries.size());
  co.progress = options.progress;
  co.lowered = options.lowered;
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
    compiled.kernels[k].schedule = tuned[k].note();
    s.tuned += tuned[k].tuned() ? 1 : 0;
    s.ranked += tuned[k].ranked ? 1 : 0;
  }
  s.kernels = compiled.kernels.size();
  exe.libraries.push_back(std::move(compiled.library));
  exe.kernels = std::move(compiled.kernels);
}

}  // namespace dynvm::compiler
