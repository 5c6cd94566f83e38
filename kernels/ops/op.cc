#include "kernels/ops/op.h"

#include "kernels/te/lower_te.h"
#include "kernels/tir/lower.h"
#include "vm/error.h"

namespace dynvm::ops {

int64_t knob(const OpInstance& op, const KnobValues& knobs, const std::string& name) {
  for (const KnobSpec& spec : op.knobs) {
    if (spec.name != name) continue;
    auto it = knobs.find(name);
    return it != knobs.end() ? it->second : spec.default_value;
  }
  user_error("operator ", op.name, " has no schedule knob '", name, "'");
}

std::string knobs_to_string(const KnobValues& knobs) {
  std::string out;
  for (const auto& [name, value] : knobs) {
    out += (out.empty() ? "" : " ") + name + "=" + std::to_string(value);
  }
  return out;
}

tir::LoweredFunc lower_op(const OpInstance& op, const KnobValues& knobs, const std::string& symbol,
                          const LowerOpOptions& options) {
  for (const auto& [name, value] : knobs) knob(op, knobs, name);  // rejects unknown knobs
  te::Schedule schedule = op.schedule(knobs);
  tir::PrimFunc func;
  if (op.over_steps) {
    func = op.over_steps(te::lower(schedule, op.step_args, symbol + "_step"));
    func.name = symbol;
  } else {
    std::vector<te::TensorRef> args = op.inputs;
    args.insert(args.end(), op.outputs.begin(), op.outputs.end());
    func = te::lower(schedule, args, symbol);
  }
  tir::LowerOptions lower_options;
  lower_options.dump_after = options.dump_after;
  lower_options.dump_stream = options.dump;
  lower_options.time_passes = options.time_passes;
  lower_options.max_specialized_copies = options.max_specialized_copies;
  return tir::lower(std::move(func), lower_options);
}

std::string dtype_suffix(vm::DType t) { return tir::to_string(tir::DataType{t, 1}); }

size_t normalize_axis(const char* op, int64_t axis, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) user_error(op, ": axis ", axis, " is out of range for rank ", r);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace dynvm::ops
