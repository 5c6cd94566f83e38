// Type relations of Hardmax, LRN and InstanceNormalization: all keep their input's type.
#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

void require_float(const OpContext& ctx) {
  if (!vm::is_floating(ctx.dtype(0))) {
    ctx.fail("needs a floating-point input, got ", vm::dtype_name(ctx.dtype(0)));
  }
}

}  // namespace

void register_normalization_ops() {
  register_op({"Hardmax", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 require_float(ctx);
                 ctx.axis(ctx.attr_int("axis", -1), ctx.rank(0));
                 return Facts{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
  register_op({"LRN", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 require_float(ctx);
                 if (ctx.rank(0) < 3) ctx.fail("needs an input of rank 3 or more (N x C x ...)");
                 if (ctx.attr_int("size", 0) < 1) ctx.fail("size must be a positive int");
                 return Facts{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
  register_op({"InstanceNormalization", ShapeRule::kFromInputDims, 3, 3, [](OpContext& ctx) {
                 require_float(ctx);
                 if (ctx.rank(0) < 3) ctx.fail("needs an input of rank 3 or more (N x C x ...)");
                 for (size_t k = 1; k < 3; ++k) {
                   if (ctx.dtype(k) != ctx.dtype(0) || ctx.rank(k) != 1) {
                     ctx.fail("scale and B must be 1-D of the input's dtype");
                   }
                 }
                 return Facts{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
}

}  // namespace dynvm::compiler
