// Outputs the importer builds from existing operators (see decompose.h).
#include "frontends/onnx/decompose.h"

#include <algorithm>
#include <cstdint>
#include <string>
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

Expr einsum_as_matmul(const NodeForm& form, const Emit& emit) {
  if (form.inputs.size() != 2) return {};
  auto eq = form.attrs.find("equation");
  if (eq == form.attrs.end()) return {};
  const auto* text = std::get_if<std::string>(&eq->second);
  if (text == nullptr) return {};
  std::string e;
  for (char c : *text) {
    if (c != ' ') e += c;
  }
  const size_t comma = e.find(','), arrow = e.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) return {};
  const std::string a = e.substr(0, comma), b = e.substr(comma + 1, arrow - comma - 1),
                    out = e.substr(arrow + 2);
  auto is_plain = [](const std::string& t) {
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;  // "...", junk
      if (t.find(c, i + 1) != std::string::npos) return false;                // a diagonal
    }
    return true;
  };
  if (!is_plain(a) || !is_plain(b) || !is_plain(out)) return {};
  auto in = [](const std::string& t, char c) { return t.find(c) != std::string::npos; };
  std::string batch, free_a, free_b, contracted;
  for (char c : a) {
    if (in(b, c)) {
      (in(out, c) ? batch : contracted) += c;
    } else if (in(out, c)) {
      free_a += c;
    } else {
      return {};  // summed over one operand only
    }
  }
  for (char c : b) {
    if (in(a, c)) continue;
    if (!in(out, c)) return {};
    free_b += c;
  }
  for (char c : out) {
    if (!in(a, c) && !in(b, c)) return {};
  }
  if (contracted.size() != 1 || free_b.size() > 1) return {};
  // With batch letters MatMul's broadcast aligns them only as [batch, m, k] x [batch, k, n].
  if (!batch.empty() && (free_a.size() != 1 || free_b.size() != 1)) return {};
  // The operands in MatMul's order, and the product's letters.
  auto permuted = [&](const Expr& x, const std::string& from, const std::string& to,
                      const std::string& what) {
    std::vector<int64_t> perm;
    for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) return x;
    return emit(what, make_call("Transpose", {x}, {{"perm", compiler::AttrValue{perm}}}));
  };
  Expr lhs = permuted(form.inputs[0], a, batch + free_a + contracted, "einsum_lhs");
  Expr rhs = permuted(form.inputs[1], b, batch + contracted + free_b, "einsum_rhs");
  const std::string product = batch + free_a + free_b;
  Expr y = make_call("MatMul", {lhs, rhs});
  if (product == out) return y;
  y = emit("einsum_product", y);
  std::vector<int64_t> perm;
  for (char c : out) perm.push_back(static_cast<int64_t>(product.find(c)));
  return make_call("Transpose", {y}, {{"perm", compiler::AttrValue{perm}}});
}

}  // namespace dynvm::frontends::onnx_import
