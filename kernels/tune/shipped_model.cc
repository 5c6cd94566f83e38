#include "kernels/tune/shipped_model.h"

#include <cstdint>

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
  return rank_schedule(op, nominal_sizes(arg_types), model, {"parallel"}, kShippedMinGain);
}

}  // namespace dynvm::tune
