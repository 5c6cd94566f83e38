// The compiler's steps in order (see pipeline.h).
#include "compiler/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>

#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/expand_recurrent.h"
#include "compiler/passes/fold_constants.h"
#include "compiler/passes/fuse_ops.h"
#include "compiler/passes/infer_types.h"
#include "compiler/passes/place_devices.h"
#include "compiler/passes/simplify.h"
#include "compiler/passes/version_entry.h"
#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

class Steps {
 public:
  explicit Steps(const PipelineOptions& o) : o_(o), log_(o.log != nullptr ? *o.log : std::cerr) {}

  template <typename F>
  auto run(const std::string& name, F&& step) {
    auto start = std::chrono::steady_clock::now();
    auto result = step();
    if (o_.time_passes) {
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      log_ << "[time] " << name << ": " << ms << " ms\n";
    }
    return result;
  }

  // A step's own report, printed with the timings.
  void note(const std::string& name, const std::string& text) {
    if (o_.time_passes) log_ << "[" << name << "] " << text << "\n";
  }

  void dump(const std::string& name, const Module& m) {
    if (o_.dump_after != name && o_.dump_after != "all") return;
    PrintOptions p;
    p.max_constant_elements = 8;
    log_ << "// IR after " << name << "\n" << print_module(m, p);
  }

 private:
  const PipelineOptions& o_;
  std::ostream& log_;
};

// The entry's parameters with the dims of --static inputs replaced by their values.
Module fix_static_inputs(Module m, const std::map<std::string, std::vector<int64_t>>& inputs) {
  if (inputs.empty()) return m;
  auto main = std::make_shared<Function>(*m.find_function(m.entry));
  std::set<std::string> seen;
  for (Expr& p : main->params) {
    auto it = inputs.find(p->name);
    if (it == inputs.end()) continue;
    seen.insert(p->name);
    const Type& t = p.type();
    if (!t.is_tensor() || t->dims.size() != it->second.size()) {
      user_error("--static ", p->name, ": the input is ", to_string(t), ", given ",
                 it->second.size(), " dims");
    }
    std::vector<Dim> dims;
    for (size_t k = 0; k < t->dims.size(); ++k) {
      const Dim& d = t->dims[k];
      int64_t v = it->second[k];
      if (d.is_const() && d.value() != v) {
        user_error("--static ", p->name, ": dim ", k, " is ", d.value(), ", given ", v);
      }
      if (!d.is_const() && !d.is_any() && d.expr().kind() == arith::ExprKind::kVar) {
        // Every use of the symbol (in other inputs too) becomes the value.
        for (DimSymbol& s : m.dims) {
          if (s.var.id() == d.expr()->var_id) s.min = s.max = v;
        }
      }
      dims.emplace_back(v);
    }
    p = with_type(p, tensor_type(t->dtype, dims));
  }
  for (const auto& [name, shape] : inputs) {
    if (!seen.count(name)) user_error("--static ", name, ": the model has no input of that name");
  }
  for (auto& f : m.functions) {
    if (f->name == m.entry) f = main;
  }
  return m;
}

// What simplify rewrote, for --time-passes.
std::string simplify_report(const SimplifyStats& s) {
  return str_cat(s.calls_rewritten(), " calls rewritten (", s.identities, " identities, ",
                 s.noop_moves, " no-op moves, ", s.arithmetic, " arithmetic, ", s.view_chains,
                 " view chains, ", s.reshapes_merged, " reshapes merged, ", s.transposes_merged,
                 " transposes merged), ", s.dims_simplified, " types re-simplified");
}

std::string memory_report(const MemoryPlanStats& s) {
  return str_cat("memory plan: ", s.storages, " allocations, ", s.reused, " reuse a dead storage, ",
                 s.in_arenas, " in ", s.arenas, " arenas (", s.arena_bytes, " bytes for ",
                 s.static_bytes, "), ", s.removed, " size instructions removed");
}

// The import options with each versioned dim's range spanning its values.
frontends::onnx_import::ImportOptions import_options(const PipelineOptions& o) {
  frontends::onnx_import::ImportOptions import = o.import;
  for (const auto& [dim, values] : o.dim_versions) {
    if (values.empty()) user_error("--dim ", dim, ": no values given");
    import.dims[dim] = {*std::min_element(values.begin(), values.end()),
                        *std::max_element(values.begin(), values.end())};
  }
  return import;
}

}  // namespace

vm::Executable compile_onnx(const std::string& model_path, const PipelineOptions& options) {
  Steps steps(options);
  Module m = steps.run("import", [&] {
    return frontends::onnx_import::import_onnx_file(model_path, import_options(options));
  });
  steps.dump("import", m);
  m = steps.run("static", [&] { return fix_static_inputs(std::move(m), options.static_inputs); });
  steps.dump("static", m);
  m = steps.run("version_entry", [&] {
    for (const auto& [dim, values] : options.dim_versions) m = version_entry(m, dim, values);
    return std::move(m);
  });
  steps.dump("version_entry", m);
  m = steps.run("expand_recurrent", [&] { return expand_recurrent(m); });
  steps.dump("expand_recurrent", m);
  TypedModule typed = steps.run("infer_types", [&] { return infer_types_with_facts(m); });
  for (const std::string& w : typed.warnings) {
    (options.log != nullptr ? *options.log : std::cerr) << "warning: " << w << "\n";
  }
  steps.dump("infer_types", typed.module);
  SimplifyStats simplified;
  typed = steps.run("simplify", [&] { return simplify(typed, &simplified); });
  steps.note("simplify", simplify_report(simplified));
  steps.dump("simplify", typed.module);
  typed = steps.run("fold_constants", [&] { return fold_constants(typed); });
  steps.dump("fold_constants", typed.module);
  typed.module = steps.run("dce", [&] { return dce(typed.module); });
  steps.dump("dce", typed.module);
  if (options.fuse) {
    typed = steps.run("fuse_ops", [&] { return fuse_ops(typed); });
    steps.dump("fuse_ops", typed.module);
  }
  Placement placement =
      steps.run("place_devices", [&] { return place_devices(typed, options.kernel_device); });
  steps.note("place_devices",
             str_cat(placement.host_computed.size(), " values computed on the host, ",
                     placement.num_copies(), " copies between devices"));
  LowerOptions lower;
  lower.kernel_device = options.kernel_device;
  lower.static_shapes = options.specialize;
  lower.progress = options.progress;
  lower.producer = options.producer;
  lower.plan_memory = options.plan_memory;
  LowerStats lowered;
  lower.stats = &lowered;
  vm::Executable exe = steps.run("lower", [&] { return lower_module(typed, placement, lower); });
  if (options.plan_memory) steps.note("lower", memory_report(lowered.memory));
  steps.note("lower", str_cat(lowered.frees.frees, " frees; ", lowered.registers.before,
                              " values in ", lowered.registers.after, " registers"));
  return exe;
}

}  // namespace dynvm::compiler
