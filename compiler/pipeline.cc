// The compiler's steps in order (see pipeline.h). kSteps below is the compiler; the rest
// of this file runs it: timing, reports, dumps and verification around each step.
#include "compiler/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/lower/allocate_registers.h"
#include "compiler/lower/generate_kernels.h"
#include "compiler/lower/insert_frees.h"
#include "compiler/lower/plan_memory.h"
#include "compiler/passes/block_channels.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/expand_recurrent.h"
#include "compiler/passes/fold_batch_norm.h"
#include "compiler/passes/fold_constants.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/passes/fuse_ops.h"
#include "compiler/passes/infer_types.h"
#include "compiler/passes/pack_weights.h"
#include "compiler/passes/place_devices.h"
#include "compiler/passes/simplify.h"
#include "compiler/passes/static_inputs.h"
#include "compiler/passes/version_entry.h"
#include "vm/asm/disassembler.h"
#include "vm/error.h"
#include "vm/verifier.h"

namespace dynvm::compiler {
namespace {

// What the steps hand on: the graph IR until lowering, the placement lowering follows, then
// the bytecode and the kernels still to generate.
struct Compilation {
  TypedModule typed;
  Placement placement;
  Lowered lowered;
  bool typed_yet = false;  // infer_types has run (the verifier then checks types)
};

// What a step did: whether it changed anything, and one line saying what.
struct StepReport {
  bool changed = false;
  std::string summary;
};

// Which form of the program a step works on (what --dump-ir prints, which verifier runs).
enum class Form : uint8_t { kGraph, kPlacement, kBytecode };

struct Step {
  const char* name;
  Form form;
  StepReport (*run)(Compilation&, const CompileOptions&);
};

StepReport graph(Compilation& c, PassResult result) {
  StepReport r{result.changed, std::move(result.summary)};
  c.typed = std::move(result);
  return r;
}

StepReport skipped(const char* why) { return {false, std::string("skipped: ") + why}; }

vm::Function& entry_code(Compilation& c) { return c.lowered.exe.functions.at(0); }

// ---- the compiler ----
constexpr Step kSteps[] = {
    {"static", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       return graph(c, static_inputs(c.typed, o.static_inputs));
     }},
    {"version_entry", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       StepReport r;
       for (const auto& [dim, values] : o.dim_versions) {
         StepReport one = graph(c, version_entry(c.typed, dim, values));
         r.changed = true;
         r.summary += (r.summary.empty() ? "" : "; ") + one.summary;
       }
       return r;
     }},
    {"expand_recurrent", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, expand_recurrent(c.typed)); }},
    {"infer_types", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       StepReport r = graph(c, infer_types(c.typed));
       c.typed_yet = true;
       for (const std::string& w : c.typed.warnings) log_of(o) << "warning: " << w << "\n";
       return r;
     }},
    {"simplify", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, simplify(c.typed)); }},
    {"fold_constants", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, fold_constants(c.typed)); }},
    {"fold_batch_norm", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, fold_batch_norm(c.typed)); }},
    {"block_channels", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       return o.block_channels ? graph(c, block_channels(c.typed, nullptr, o.winograd))
                               : skipped("--no-block-channels");
     }},
    {"pack_weights", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, pack_weights(c.typed)); }},
    {"dce", Form::kGraph,
     [](Compilation& c, const CompileOptions&) { return graph(c, dce(c.typed)); }},
    {"fuse_attention", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       return o.fuse ? graph(c, fuse_attention(c.typed)) : skipped("--no-fuse");
     }},
    {"fuse_ops", Form::kGraph,
     [](Compilation& c, const CompileOptions& o) {
       return o.fuse ? graph(c, fuse_ops(c.typed)) : skipped("--no-fuse");
     }},
    // Lowering starts here (lower_module runs the steps from this one on).
    {"place_devices", Form::kPlacement,
     [](Compilation& c, const CompileOptions& o) {
       c.placement = place_devices(c.typed, o.lower.kernel_device);
       return StepReport{true,
                         str_cat(c.placement.host_computed.size(), " values computed on the host, ",
                                 c.placement.num_copies(), " copies between devices")};
     }},
    {"emit_bytecode", Form::kBytecode,
     [](Compilation& c, const CompileOptions& o) {
       c.lowered = emit_bytecode(c.typed, c.placement, o.lower);
       const vm::Function& fn = entry_code(c);
       return StepReport{true, str_cat(fn.code.size(), " instructions, ", fn.num_registers,
                                       " registers, ", c.lowered.kernels.size(), " kernels")};
     }},
    {"plan_memory", Form::kBytecode,
     [](Compilation& c, const CompileOptions& o) {
       if (!o.lower.plan_memory) return skipped("--no-plan-memory");
       MemoryPlanStats s;
       plan_memory(entry_code(c), c.lowered.exe.inputs, &s);
       return StepReport{
           s.reused > 0 || s.in_arenas > 0 || s.in_symbolic_arenas > 0 || s.removed > 0,
           str_cat(s.storages, " allocations, ", s.reused, " reuse a dead storage, ", s.in_arenas,
                   " in ", s.arenas, " arenas (", s.arena_bytes, " bytes for ", s.static_bytes,
                   "), ", s.in_symbolic_arenas, " in ", s.symbolic_arenas,
                   " arenas of symbolic size, ", s.removed, " size instructions removed")};
     }},
    {"insert_frees", Form::kBytecode,
     [](Compilation& c, const CompileOptions&) {
       FreeStats s;
       insert_frees(entry_code(c), &s);
       return StepReport{s.frees > 0, str_cat(s.frees, " frees")};
     }},
    {"allocate_registers", Form::kBytecode,
     [](Compilation& c, const CompileOptions&) {
       RegisterStats s;
       allocate_registers(entry_code(c), &s);
       return StepReport{s.after != s.before,
                         str_cat(s.before, " values in ", s.after, " registers")};
     }},
    {"generate_kernels", Form::kBytecode,
     [](Compilation& c, const CompileOptions& o) {
       KernelStats s;
       generate_kernels(c.lowered, o.lower, &s);
       if (o.kernel_requests != nullptr) *o.kernel_requests = c.lowered.kernels;
       return StepReport{s.kernels > 0, str_cat(s.kernels, " kernels (", s.tuned, " tuned, ",
                                                s.ranked, " ranked), ", s.variants, " variants")};
     }},
};
constexpr const char* kFirstLoweringStep = "place_devices";

// ---- running it ----

bool dumps(const CompileOptions& o, const std::string& step) {
  return o.dump_after == step || o.dump_after == "all";
}

void dump(const Step& step, const Compilation& c, const CompileOptions& o) {
  if (!dumps(o, step.name)) return;
  switch (step.form) {
    case Form::kGraph:
      dump_ir(o, step.name, c.typed.module);
      return;
    case Form::kPlacement:
      log_of(o) << "// placement after " << step.name << "\n"
                << print_placement(c.placement, c.typed.module);
      return;
    case Form::kBytecode:
      log_of(o) << "// bytecode after " << step.name << "\n" << vm::disassemble(c.lowered.exe);
      return;
  }
}

// The verifier of the step's form. A failure is a bug in the step (InternalError), so a
// bytecode verifier's UserError is turned into one naming the step.
void verify(const Step& step, const Compilation& c) {
  switch (step.form) {
    case Form::kGraph:
      verify_module(c.typed.module, c.typed_yet, step.name);
      return;
    case Form::kPlacement:
      return;  // an analysis: the module is the one verified after the previous step
    case Form::kBytecode:
      try {
        vm::verify(c.lowered.exe,
                   {.kernels_generated = std::string(step.name) == "generate_kernels"});
      } catch (const UserError& e) {
        internal_error(__FILE__, __LINE__, str_cat("after ", step.name, ": ", e.what()));
      }
      return;
  }
}

// The steps of kSteps from `first` on, each timed, reported, dumped and verified.
void run_steps(Compilation& c, const CompileOptions& o, const char* first) {
  bool started = false;
  for (const Step& step : kSteps) {
    started = started || std::string(step.name) == first;
    if (!started) continue;
    auto start = std::chrono::steady_clock::now();
    StepReport r = step.run(c, o);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    report_step(o, step.name, ms, r.changed, r.summary);
    dump(step, c, o);
    if (o.verify_each) verify(step, c);
  }
  DYNVM_INTERNAL_CHECK(started, "no step named ", first);
}

}  // namespace

std::vector<std::string> pipeline_step_names() {
  std::vector<std::string> names;
  for (const Step& s : kSteps) names.emplace_back(s.name);
  return names;
}

void report_step(const CompileOptions& o, const std::string& step, double ms, bool changed,
                 const std::string& summary) {
  if (!o.time_passes) return;
  std::ostream& log = log_of(o);
  log << "[time] " << step << ": " << ms << " ms";
  if (!changed) {
    log << " (unchanged" << (summary.empty() ? "" : ": " + summary) << ")\n";
  } else {
    log << (summary.empty() ? "" : ": " + summary) << "\n";
  }
}

void dump_ir(const CompileOptions& o, const std::string& step, const Module& module) {
  if (!dumps(o, step)) return;
  PrintOptions p;
  p.max_constant_elements = 8;
  log_of(o) << "// IR after " << step << "\n" << print_module(module, p);
}

vm::Executable compile(Module module, const CompileOptions& options) {
  Compilation c;
  c.typed = TypedModule(std::move(module));
  if (options.verify_each) verify_module(c.typed.module, false, "the frontend");
  run_steps(c, options, kSteps[0].name);
  // What a tool writes must load: the same verifier the runtime runs before a first run.
  // Failing it is a bug in a step, not in the model.
  try {
    vm::verify(c.lowered.exe);
  } catch (const UserError& e) {
    internal_error(__FILE__, __LINE__, str_cat("the compiled executable: ", e.what()));
  }
  return std::move(c.lowered.exe);
}

vm::Executable lower_module(const TypedModule& typed, const LowerOptions& options) {
  Compilation c;
  c.typed = typed;
  c.typed_yet = true;
  CompileOptions o;
  o.lower = options;
  run_steps(c, o, kFirstLoweringStep);
  return std::move(c.lowered.exe);
}

std::ostream& log_of(const CompileOptions& o) { return o.log != nullptr ? *o.log : std::cerr; }

}  // namespace dynvm::compiler
