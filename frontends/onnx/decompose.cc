// Outputs the importer builds from existing operators (see decompose.h).
#include "frontends/onnx/decompose.h"

#include <algorithm>
#include <cstdint>
#include <optional>
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

namespace {

// Einsum's parts: each letter of a plain equation (no ellipsis, no repeated letter) by
// where it occurs.
struct EinsumLetters {
  std::string a, b, out;
  std::string batch, free_a, free_b, contracted;
};

bool in(const std::string& t, char c) { return t.find(c) != std::string::npos; }

std::optional<EinsumLetters> einsum_letters(const NodeForm& form) {
  if (form.inputs.size() != 2) return std::nullopt;
  auto eq = form.attrs.find("equation");
  if (eq == form.attrs.end()) return std::nullopt;
  const auto* text = std::get_if<std::string>(&eq->second);
  if (text == nullptr) return std::nullopt;
  std::string e;
  for (char c : *text) {
    if (c != ' ') e += c;
  }
  const size_t comma = e.find(','), arrow = e.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) {
    return std::nullopt;
  }
  EinsumLetters l;
  l.a = e.substr(0, comma);
  l.b = e.substr(comma + 1, arrow - comma - 1);
  l.out = e.substr(arrow + 2);
  auto is_plain = [](const std::string& t) {
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;  // "...", junk
      if (t.find(c, i + 1) != std::string::npos) return false;                // a diagonal
    }
    return true;
  };
  if (!is_plain(l.a) || !is_plain(l.b) || !is_plain(l.out)) return std::nullopt;
  for (char c : l.out) {
    if (!in(l.a, c) && !in(l.b, c)) return std::nullopt;
  }
  return l;
}

// The letters of one operand without those only it has and the output lacks (summed over
// first: "ij,kl->ik" sums j and l before its product).
Expr sum_own_letters(const Expr& x, std::string& letters, const std::string& other,
                     const std::string& out, const Emit& emit) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t i = 0; i < letters.size(); ++i) {
    if (!in(other, letters[i]) && !in(out, letters[i])) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      kept += letters[i];
    }
  }
  if (axes.empty()) return x;
  letters = kept;
  return emit("einsum_sum",
              make_call("ReduceSum", {x, i64s(axes)}, {{"keepdims", int64_t{0}}}));
}

}  // namespace

Expr einsum_as_matmul(const NodeForm& form, const Emit& emit) {
  std::optional<EinsumLetters> parsed = einsum_letters(form);
  if (!parsed) return {};
  EinsumLetters l = *parsed;
  Expr a_in = sum_own_letters(form.inputs[0], l.a, l.b, l.out, emit);
  Expr b_in = sum_own_letters(form.inputs[1], l.b, l.a, l.out, emit);
  for (char c : l.a) {
    if (in(l.b, c)) {
      (in(l.out, c) ? l.batch : l.contracted) += c;
    } else {
      l.free_a += c;
    }
  }
  for (char c : l.b) {
    if (!in(l.a, c)) l.free_b += c;
  }
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
  // The result, its letters in `product`'s order, as the output's.
  auto to_output = [&](const Expr& y, const std::string& product) {
    if (product == l.out) return y;
    Expr named = emit("einsum_product", y);
    std::vector<int64_t> perm;
    for (char c : l.out) perm.push_back(static_cast<int64_t>(product.find(c)));
    return make_call("Transpose", {named}, {{"perm", compiler::AttrValue{perm}}});
  };

  // No free letter: a product summed over the contracted letters ("nchw,nchw->nc").
  if (l.free_a.empty() && l.free_b.empty()) {
    const std::string order = l.batch + l.contracted;
    Expr y = make_call("Mul", {permuted(a_in, l.a, order, "einsum_lhs"),
                               permuted(b_in, l.b, order, "einsum_rhs")});
    if (!l.contracted.empty()) {
      std::vector<int64_t> axes;
      for (size_t i = l.batch.size(); i < order.size(); ++i) axes.push_back(static_cast<int64_t>(i));
      y = make_call("ReduceSum", {emit("einsum_terms", y), i64s(axes)},
                    {{"keepdims", int64_t{0}}});
    }
    return to_output(y, l.batch);
  }

  Expr lhs = permuted(a_in, l.a, l.batch + l.free_a + l.contracted, "einsum_lhs");
  Expr rhs = permuted(b_in, l.b, l.batch + l.contracted + l.free_b, "einsum_rhs");
  const std::string product = l.batch + l.free_a + l.free_b;
  // MatMul's own forms: [.., m, k] x [k, n] or [k]; with batch letters [batch, m, k] x
  // [batch, k, n], one letter each.
  const bool direct = l.contracted.size() == 1 && l.free_b.size() <= 1 &&
                      (l.batch.empty() || (l.free_a.size() == 1 && l.free_b.size() == 1));
  if (direct) return to_output(make_call("MatMul", {lhs, rhs}), product);

  // Otherwise each group of letters becomes one dim: [batch..., M, K] x [batch..., K, N],
  // M, K and N the products of their letters' dims (read off the Shapes, so symbolic dims
  // stay sizes), and the product is reshaped back to its letters.
  Expr lhs_shape = emit("einsum_lhs_shape", make_call("Shape", {lhs}));
  Expr rhs_shape = emit("einsum_rhs_shape", make_call("Shape", {rhs}));
  auto dim = [&](const Expr& shape, size_t i) {
    return make_call("Gather", {shape, i64s({static_cast<int64_t>(i)})}, {{"axis", int64_t{0}}});
  };
  auto dims = [&](std::vector<Expr>& parts, const Expr& shape, size_t from, size_t count) {
    for (size_t i = from; i < from + count; ++i) parts.push_back(dim(shape, i));
  };
  auto product_of = [&](const Expr& shape, size_t from, size_t count) {
    Expr p = count == 0 ? i64s({1}) : dim(shape, from);
    for (size_t i = from + 1; i < from + count; ++i) p = make_call("Mul", {p, dim(shape, i)});
    return p;
  };
  const size_t nb = l.batch.size(), na = l.free_a.size(), nk = l.contracted.size(),
               nn = l.free_b.size();
  std::vector<Expr> lhs_dims, rhs_dims, out_dims;
  dims(lhs_dims, lhs_shape, 0, nb);
  lhs_dims.push_back(product_of(lhs_shape, nb, na));
  lhs_dims.push_back(product_of(lhs_shape, nb + na, nk));
  dims(rhs_dims, rhs_shape, 0, nb);
  rhs_dims.push_back(product_of(rhs_shape, nb, nk));
  rhs_dims.push_back(product_of(rhs_shape, nb + nk, nn));
  dims(out_dims, lhs_shape, 0, nb + na);
  dims(out_dims, rhs_shape, nb + nk, nn);
  const compiler::Attrs axis0{{"axis", int64_t{0}}};
  auto reshaped = [&](const Expr& x, std::vector<Expr> parts, const std::string& what) {
    return emit(what, make_call("Reshape", {x, make_call("Concat", std::move(parts), axis0)}));
  };
  Expr y = emit("einsum_matmul", make_call("MatMul", {reshaped(lhs, lhs_dims, "einsum_lhs_3d"),
                                                      reshaped(rhs, rhs_dims, "einsum_rhs_3d")}));
  return to_output(make_call("Reshape", {y, make_call("Concat", out_dims, axis0)}), product);
}

}  // namespace dynvm::frontends::onnx_import
