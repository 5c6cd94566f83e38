// Einsum (see einsum.h): the equation's labels, each label's extent, then one compute.
#include "kernels/ops/einsum.h"

#include <algorithm>
#include <cctype>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

int letter_label(char c, const std::string& equation) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  user_error("einsum: unexpected character '", c, "' in \"", equation, "\"");
}

// One operand's term: its letters' labels with -1 where "..." stands.
std::vector<int> parse_term(const std::string& term, const std::string& equation) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t p = 0; p < term.size(); ++p) {
    if (term[p] == '.') {
      if (ellipsis || term.compare(p, 3, "...") != 0) {
        user_error("einsum: a malformed \"...\" in \"", equation, "\"");
      }
      ellipsis = true;
      labels.push_back(-1);
      p += 2;
      continue;
    }
    labels.push_back(letter_label(term[p], equation));
  }
  return labels;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

}  // namespace

EinsumLabels parse_einsum(const std::string& equation, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  const size_t arrow = eq.find("->");
  const std::vector<std::string> terms =
      split(arrow == std::string::npos ? eq : eq.substr(0, arrow), ',');
  if (terms.size() != ranks.size()) {
    user_error("einsum: \"", equation, "\" has ", terms.size(), " operands, the node ",
               ranks.size());
  }
  EinsumLabels out;
  size_t widest = 0;  // how many dims "..." stands for in the widest operand
  std::vector<std::vector<int>> parsed;
  for (size_t k = 0; k < terms.size(); ++k) {
    parsed.push_back(parse_term(terms[k], equation));
    const auto letters = static_cast<size_t>(
        std::count_if(parsed[k].begin(), parsed[k].end(), [](int l) { return l >= 0; }));
    const bool has_ellipsis = letters != parsed[k].size();
    if (ranks[k] < letters || (!has_ellipsis && ranks[k] != letters)) {
      user_error("einsum: operand ", k, " has rank ", ranks[k], " but \"", terms[k], "\" has ",
                 letters, " letters");
    }
    if (has_ellipsis) widest = std::max(widest, ranks[k] - letters);
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    const size_t letters = static_cast<size_t>(
        std::count_if(parsed[k].begin(), parsed[k].end(), [](int l) { return l >= 0; }));
    for (int l : parsed[k]) {
      if (l >= 0) {
        labels.push_back(l);
        continue;
      }
      const size_t e = ranks[k] - letters;  // right aligned within the widest "..."
      for (size_t t = 0; t < e; ++t) {
        labels.push_back(EinsumLabels::kEllipsisLabel + static_cast<int>(widest - e + t));
      }
    }
    out.inputs.push_back(std::move(labels));
  }
  out.num_labels = EinsumLabels::kEllipsisLabel + static_cast<int>(widest);
  auto ellipsis_labels = [&] {
    std::vector<int> v;
    for (size_t t = 0; t < widest; ++t) {
      v.push_back(EinsumLabels::kEllipsisLabel + static_cast<int>(t));
    }
    return v;
  };
  if (arrow == std::string::npos) {
    out.output = ellipsis_labels();
    std::vector<int> uses(EinsumLabels::kEllipsisLabel, 0);
    for (const auto& term : parsed) {
      for (int l : term) {
        if (l >= 0) ++uses[static_cast<size_t>(l)];
      }
    }
    // ASCII order: upper case (labels 26..51) before lower case.
    for (int l = 26; l < 52; ++l) {
      if (uses[static_cast<size_t>(l)] == 1) out.output.push_back(l);
    }
    for (int l = 0; l < 26; ++l) {
      if (uses[static_cast<size_t>(l)] == 1) out.output.push_back(l);
    }
    return out;
  }
  for (int l : parse_term(eq.substr(arrow + 2), equation)) {
    if (l < 0) {
      for (int e : ellipsis_labels()) out.output.push_back(e);
      continue;
    }
    if (std::count(out.output.begin(), out.output.end(), l) != 0) {
      user_error("einsum: a letter repeats in the output of \"", equation, "\"");
    }
    bool used = false;
    for (const auto& in : out.inputs) used = used || std::count(in.begin(), in.end(), l) != 0;
    if (!used) user_error("einsum: an output letter of \"", equation, "\" is in no input");
    out.output.push_back(l);
  }
  return out;
}

OpInstance einsum(const std::vector<TensorType>& inputs, const std::string& equation) {
  if (inputs.empty()) user_error("einsum: needs at least one input");
  const vm::DType dtype = inputs[0].dtype;
  if (dtype == vm::DType::kBool) user_error("einsum: does not take bool");
  std::vector<size_t> ranks;
  for (const TensorType& t : inputs) {
    if (t.dtype != dtype) user_error("einsum: the inputs' dtypes differ");
    ranks.push_back(t.shape.size());
  }
  const EinsumLabels labels = parse_einsum(equation, ranks);
  // Each label's extent: the first dim that is not a constant 1 (those broadcast), else 1.
  std::vector<arith::Expr> extent(static_cast<size_t>(labels.num_labels));
  for (size_t k = 0; k < inputs.size(); ++k) {
    for (size_t d = 0; d < ranks[k]; ++d) {
      arith::Expr& e = extent[static_cast<size_t>(labels.inputs[k][d])];
      const arith::Expr& dim = inputs[k].shape[d];
      const bool one = dim.is_int_imm() && dim.int_value() == 1;
      if (!e.defined() || (e.is_int_imm() && e.int_value() == 1 && !one)) {
        e = dim;
      } else if (!one && !arith::structural_equal(e, dim) && e.is_int_imm() && dim.is_int_imm()) {
        user_error("einsum: a letter of \"", equation, "\" has extents ", e.int_value(), " and ",
                   dim.int_value());
      }
    }
  }
  std::vector<arith::Expr> shape;
  for (int l : labels.output) shape.push_back(extent[static_cast<size_t>(l)]);
  std::vector<int> reduced;
  for (int l = 0; l < labels.num_labels; ++l) {
    const bool in_output = std::count(labels.output.begin(), labels.output.end(), l) != 0;
    if (!in_output && extent[static_cast<size_t>(l)].defined()) reduced.push_back(l);
  }
  std::vector<te::TensorRef> ins;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ins.push_back(te::placeholder("X" + std::to_string(k), inputs[k].shape, dtype));
  }
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at_label(static_cast<size_t>(labels.num_labels));
    for (size_t d = 0; d < labels.output.size(); ++d) {
      at_label[static_cast<size_t>(labels.output[d])] = i[d];
    }
    std::vector<te::IterVar> axes;
    for (int l : reduced) {
      axes.push_back(te::reduce_axis(extent[static_cast<size_t>(l)], "r" + std::to_string(l)));
      at_label[static_cast<size_t>(l)] = axes.back().var;
    }
    tir::Expr product;
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<arith::Expr> at;
      for (size_t d = 0; d < ranks[k]; ++d) {
        const arith::Expr& dim = inputs[k].shape[d];
        const bool broadcast = dim.is_int_imm() && dim.int_value() == 1;
        at.push_back(broadcast ? arith::Expr(0)
                               : at_label[static_cast<size_t>(labels.inputs[k][d])]);
      }
      tir::Expr v = te::read(ins[k], at);
      product = product.defined() ? product * v : v;
    }
    return axes.empty() ? product : te::sum(product, axes);
  });
  OpInstance op;
  op.name = "einsum_" + dtype_suffix(dtype);
  op.inputs = ins;
  op.outputs = {out};
  op.knobs = reduction_knobs(shape);
  op.schedule = [specs = op.knobs, out](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    schedule_reduction(s, out, knob_value(specs, knobs, "parallel") != 0,
                       knob_value(specs, knobs, "unroll"));
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
