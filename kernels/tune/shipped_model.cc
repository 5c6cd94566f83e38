#include "kernels/tune/shipped_model.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "kernels/tune/rank.h"

// The model's bytes, placed in read-only data by the assembler (CMake passes the file's
// path as DYNVM_SHIPPED_MODEL_PATH and makes this file depend on it).
asm(R"(.section .rodata
.balign 16
.global dynvm_shipped_cost_model_begin
dynvm_shipped_cost_model_begin:
.incbin ")" DYNVM_SHIPPED_MODEL_PATH R"("
.global dynvm_shipped_cost_model_end
dynvm_shipped_cost_model_end:
.previous
)");
extern "C" const uint8_t dynvm_shipped_cost_model_begin[];
extern "C" const uint8_t dynvm_shipped_cost_model_end[];

namespace dynvm::tune {
namespace {

// How sure the model must be before a ranked configuration replaces the default
// (rank_schedule's min_gain): chosen on the real models with models trained without them
// (docs/tuning.md).
constexpr double kShippedMinGain = 0.5;

}  // namespace

const CostModel& shipped_cost_model() {
  // Never destroyed: freeing a booster at exit runs after XGBoost's own statics are gone.
  static const CostModel* model = new CostModel(CostModel::load(
      std::vector<uint8_t>(dynvm_shipped_cost_model_begin, dynvm_shipped_cost_model_end)));
  return *model;
}

ops::KnobValues ranked_schedule(const ops::OpInstance& op,
                                const std::vector<ops::TensorType>& arg_types,
                                const CostModel& model) {
  // A kernel whose every argument is small, its symbolic dims at the largest nominal size,
  // runs in microseconds whatever its knobs: not worth lowering tens of configurations.
  const int64_t nominal = *std::max_element(std::begin(kNominalDims), std::end(kNominalDims));
  int64_t largest = 0;
  for (const ops::TensorType& t : arg_types) {
    int64_t elements = 1;
    for (const arith::Expr& d : t.shape) {
      elements *= d.is_int_imm() ? std::max<int64_t>(d.int_value(), 1) : nominal;
      elements = std::min<int64_t>(elements, kMinRankedElements);
    }
    largest = std::max(largest, elements);
  }
  if (largest < kMinRankedElements) {
    const KnobSpace space(op.knobs);
    return space.at(space.default_index());
  }
  // The outputs' dims too: a size point where an output is empty is no point to score at.
  std::vector<ops::TensorType> all_types = arg_types;
  for (const te::TensorRef& out : op.outputs) all_types.push_back({out->dtype(), out->shape()});
  return rank_schedule(op, nominal_sizes(all_types), model, {"parallel"}, kShippedMinGain);
}

}  // namespace dynvm::tune
