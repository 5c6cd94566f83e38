// Outputs the importer builds from existing operators (see decompose.h).
#include "frontends/onnx/decompose.h"

#include <cstdint>
#include <vector>

#include "vm/error.h"

namespace dynvm::frontends::onnx_import {
namespace {

using compiler::Expr;
using compiler::make_call;

Expr i64s(const std::vector<int64_t>& v) {
  return compiler::make_constant(
      vm::Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, vm::DType::kInt64));
}

Expr f32(double v) {
  return compiler::make_constant(
      vm::Tensor::from_vector(std::vector<float>{static_cast<float>(v)}, {}, vm::DType::kFloat32));
}

}  // namespace

Expr dropout_with_mask(NodeForm form, const Emit& emit) {
  form.attrs.erase("num_outputs");
  Expr output = emit("dropout", make_call("Dropout", form.inputs, form.attrs));
  Expr shape = emit("mask_shape", make_call("Shape", {form.inputs[0]}));
  compiler::Attrs fill{
      {"value", vm::Tensor::from_vector(std::vector<uint8_t>{1}, {1}, vm::DType::kBool)}};
  return compiler::make_tuple({output, make_call("ConstantOfShape", {shape}, fill)});
}

Expr batch_norm_training(NodeForm form, const Emit& emit, const std::string& where) {
  if (compiler::attr_int(form.attrs, "training_mode", 0, where) == 0) {
    user_error(where, ": running_mean and running_var are outputs of training_mode=1 only");
  }
  if (form.inputs.size() != 5) user_error(where, ": BatchNormalization takes 5 inputs");
  const double momentum = compiler::attr_float(form.attrs, "momentum", 0.9, where);
  form.attrs.erase("num_outputs");
  form.attrs.erase("training_mode");
  form.attrs.erase("momentum");
  const Expr& x = form.inputs[0];
  // [N, C, rest]: the statistics reduce axes 0 and 2 whatever X's rank.
  Expr flat = emit("flat", make_call("Reshape", {x, i64s({0, 0, -1})}));
  const compiler::Attrs keep{{"keepdims", int64_t{1}}}, drop{{"keepdims", int64_t{0}}};
  Expr axes = i64s({0, 2});
  Expr mean = emit("mean", make_call("ReduceMean", {flat, axes}, drop));
  Expr centered =
      emit("centered", make_call("Sub", {flat, make_call("ReduceMean", {flat, axes}, keep)}));
  Expr var =
      emit("var", make_call("ReduceMean", {make_call("Mul", {centered, centered}), axes}, drop));
  Expr y = emit(
      "normalized",
      make_call("BatchNormalization", {x, form.inputs[1], form.inputs[2], mean, var}, form.attrs));
  auto running = [&](const Expr& input, const Expr& current) {
    return make_call("Add", {make_call("Mul", {input, f32(momentum)}),
                             make_call("Mul", {current, f32(1 - momentum)})});
  };
  return compiler::make_tuple({y, running(form.inputs[3], mean), running(form.inputs[4], var)});
}

}  // namespace dynvm::frontends::onnx_import
