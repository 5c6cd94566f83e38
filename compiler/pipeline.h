// The compiler, start to end: a graph IR module (from any frontend; vmc imports ONNX) in,
// a verified vm::Executable out. pipeline.cc lists every step in order, and that list is
// the whole compiler:
//
//   graph passes (compiler/passes, each `PassResult pass(const TypedModule&)`):
//     static            --static inputs: their dims become constants
//     version_entry     --dim N=V1,V2: the entry versioned by N's values
//     expand_recurrent  LSTM / GRU / RNN as Loops
//     infer_types       types with symbolic dims, known shape values
//     simplify          identities bypassed, data-movement chains shortened, dims canonical
//     fold_constants    all-constant calls evaluated
//     fold_batch_norm   BatchNormalization folded into the Conv that feeds it, else a Mul + Add
//     block_channels    depthwise-separable chains in the channel-blocked layout
//                       (--no-block-channels skips it)
//     pack_weights      MatMul's constant B packed into column panels
//     dce               dead lets and unreachable functions removed
//     fuse_attention    MatMul -> scale -> mask -> Softmax -> MatMul as one dynvm.Attention
//     fuse_ops          epilogue fusion into primitive functions (--no-fuse skips it)
//   place_devices       where each value lives, the copies between devices (an analysis)
//   lowering (compiler/lower):
//     emit_bytecode, plan_memory (--no-plan-memory skips it), insert_frees,
//     allocate_registers, generate_kernels
//
// Every step is timed and reported (`time_passes`: one line each, its summary or
// "(unchanged)"), can be dumped (`dump_after`: the graph IR, the placement, or the bytecode
// through the disassembler), and is followed by a verifier when `verify_each` is on (the
// graph IR verifier, compiler/ir/verify.h; the bytecode verifier, vm/verifier.h). The
// executable `compile` returns has passed vm::verify.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/lower/lower.h"
#include "vm/executable.h"

namespace dynvm::compiler {

struct CompileOptions {
  // --static NAME=SHAPE: input NAME compiled for exactly this shape (its symbolic dims
  // become constants everywhere: a fully static executable, for comparison).
  std::map<std::string, std::vector<int64_t>> static_inputs;
  // --dim NAME=V1,V2,...: dim NAME takes exactly these values; the entry is versioned by
  // them (passes/version_entry.h) and the dim's range becomes min(V)..max(V).
  std::map<std::string, std::vector<int64_t>> dim_versions;
  // fuse_ops (vmc --no-fuse turns it off, to measure what fusion gains).
  bool fuse = true;
  // block_channels (vmc --no-block-channels turns it off, to measure the layout).
  bool block_channels = true;
  // Blocked 3x3 stride-1 convs by Winograd's F(4x4, 3x3) (vmc --no-winograd: directly).
  bool winograd = true;
  // The lowering steps' options: target, kernel device, --specialize sizes, memory
  // planning, kernel compilation progress.
  LowerOptions lower;

  // When set, receives the kernels generate_kernels compiled (what vmtune tunes).
  std::vector<KernelRequest>* kernel_requests = nullptr;

  // A step name (pipeline_step_names(), or "import" for the frontend's), or "all".
  std::string dump_after;
  bool time_passes = false;
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;  // Debug and sanitizer builds check every step
#endif
  std::ostream* log = nullptr;  // dumps, timings and warnings; std::cerr when null
};

// Where dumps, timings and warnings go: options.log, or std::cerr.
std::ostream& log_of(const CompileOptions& options);

// The steps of `compile`, in order (what --dump-ir after:STEP and --time-passes name).
std::vector<std::string> pipeline_step_names();

// Every step on `module`, whose entry function becomes the executable's.
vm::Executable compile(Module module, const CompileOptions& options);

// The steps from place_devices on, for a module typed already (constant folding runs its
// batch through them; tests lower hand-written IR).
vm::Executable lower_module(const TypedModule& typed, const LowerOptions& options = {});

// A step's report line (`[time] STEP: 1.2 ms: summary`, or `(unchanged)`) when
// `options.time_passes`, and the module's text when `options.dump_after` names the step:
// for steps outside `compile` (vmc's import), so that they read the same.
void report_step(const CompileOptions& options, const std::string& step, double ms, bool changed,
                 const std::string& summary);
void dump_ir(const CompileOptions& options, const std::string& step, const Module& module);

}  // namespace dynvm::compiler
