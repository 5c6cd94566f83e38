// The op library's common vocabulary. Each operator family (elementwise.h, reduce.h,
// matmul.h, conv.h, transform.h, ...) is a set of plain C++ builders: given its input
// types (dtype + possibly symbolic shape) and attributes, a builder returns an OpInstance —
// the operator's math as TE (written once) and its schedule template with named knobs.
// Tuning changes knob values, never the math. The compiler's op registry (issue 4) maps
// ONNX nodes onto these builders; the specializer (kernels/dispatch) re-instantiates a
// builder with substituted input types to make static and residue-class variants.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/arith/expr.h"
#include "kernels/te/schedule.h"
#include "kernels/te/tensor.h"
#include "kernels/tir/stmt.h"

namespace dynvm::ops {

// The type of an operator input or output: element type and (symbolic) shape.
struct TensorType {
  vm::DType dtype = vm::DType::kFloat32;
  std::vector<arith::Expr> shape;
};

// A tunable parameter of a schedule template.
struct KnobSpec {
  std::string name;                 // "tile_m", "vector_width", "unroll", "parallel"
  std::vector<int64_t> candidates;  // the values the tuner may pick
  int64_t default_value = 0;        // what the untuned default schedule uses
};
using KnobValues = std::map<std::string, int64_t>;

struct OpInstance;

// Epilogue fusion (compiler/passes/fuse_ops): elementwise math applied to every element an
// op computes before it is stored, so that a chain like conv -> mul -> add -> clip runs as
// one kernel that writes its output once.
struct FusedEpilogue {
  std::string name;                   // appended to the op's name
  std::vector<te::TensorRef> inputs;  // placeholders `apply` reads; after the op's inputs
  // The stored value from the op's value at output indices `i`.
  std::function<tir::Expr(const tir::Expr& value, const te::Indices& i)> apply;
};

// One operator instantiated for concrete input types.
struct OpInstance {
  std::string name;                    // e.g. "matmul_f32"; also the kernel's symbol prefix
  std::vector<te::TensorRef> inputs;   // placeholders, in kernel-argument order
  std::vector<te::TensorRef> outputs;  // after the inputs in the kernel's arguments
  std::vector<KnobSpec> knobs;
  // Applies the schedule template with `knobs` (missing names take their defaults).
  std::function<te::Schedule(const KnobValues& knobs)> schedule;
  // For residue-class dispatch: symbolic dims whose divisibility by a factor lets the
  // default schedule drop its tails (e.g. M of a matmul by its row tile). Var -> factor.
  std::vector<std::pair<arith::Var, int64_t>> preferred_multiples;
  // Set by single-output ops that can take an epilogue (elementwise, conv, matmul): the same
  // op rebuilt with `e` applied to its output. Null: not fusible as an anchor.
  std::function<OpInstance(const FusedEpilogue& e)> with_epilogue;
  // Set by elementwise ops (elementwise_map): one output element from one element of each
  // input (broadcast), the math the kernel computes. Null: not fusible into an epilogue.
  std::function<tir::Expr(const std::vector<tir::Expr>&)> elementwise;
  // Set by ops whose kernel repeats one step over a sequence (steps.h): `schedule` schedules
  // the step, which lowers over `step_args`, and over_steps makes the kernel (over inputs
  // and outputs) from that step function.
  std::vector<te::TensorRef> step_args;
  std::function<tir::PrimFunc(const tir::PrimFunc& step)> over_steps;
};

// An anchor op from its builder: `build(nullptr)`, with `with_epilogue` rebuilding it
// through `build(&e)`. `build` is kept (copied) for that.
inline OpInstance with_epilogue_builder(std::function<OpInstance(const FusedEpilogue*)> build) {
  OpInstance op = build(nullptr);
  op.with_epilogue = [build](const FusedEpilogue& e) { return build(&e); };
  return op;
}

// "f32", "i64", ...: how kernel names spell a dtype.
std::string dtype_suffix(vm::DType t);

// axis in [-rank, rank) as an index in [0, rank); else a UserError naming `op`.
size_t normalize_axis(const char* op, int64_t axis, size_t rank);

// "tile_m=8 tile_n=16": knobs in name order, for logs, tables and vmrun --info.
std::string knobs_to_string(const KnobValues& knobs);

// The value of `name` in `knobs`, else the knob's default (UserError if no such knob).
int64_t knob(const OpInstance& op, const KnobValues& knobs, const std::string& name);

struct LowerOpOptions {
  std::string dump_after;  // TIR pass name, or "all" (kernels/tir/lower.h)
  std::ostream* dump = nullptr;
  bool time_passes = false;
  // tir::LowerOptions::max_specialized_copies: code size spent on symbolic tails.
  int64_t max_specialized_copies = 8;
};

// TE + schedule -> TIR -> lowered (flattened, vectorized, outlined) function named `symbol`.
tir::LoweredFunc lower_op(const OpInstance& op, const KnobValues& knobs, const std::string& symbol,
                          const LowerOpOptions& options = {});

}  // namespace dynvm::ops
