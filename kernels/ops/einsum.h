// ONNX Einsum as one TE compute: the output's letters are its data-parallel axes, letters
// that appear only in inputs are reduction axes, and the element is the sum over them of
// the product of one read per input (a letter repeated in one input reads its diagonal).
// "..." stands for the same leading dims in every operand, broadcast numpy-style (right
// aligned, a dim of 1 read at index 0). The implicit form (no "->") outputs "..." then the
// letters used once, in ASCII order, as numpy. Reduction template.
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// The labels of an equation for inputs of the given ranks: letters are 0..51 ('a'..'z',
// 'A'..'Z'), the dims "..." stands for are kEllipsisLabel + k (k counted from the first of
// the widest "...").
struct EinsumLabels {
  static constexpr int kEllipsisLabel = 52;
  std::vector<std::vector<int>> inputs;  // one label per dim of each input
  std::vector<int> output;               // one label per output dim
  int num_labels = 0;                    // labels are below this
};
// UserError naming what is wrong (an operand count or rank that does not fit, a letter in
// the output that no input has, ...).
EinsumLabels parse_einsum(const std::string& equation, const std::vector<size_t>& ranks);

// All inputs share one dtype (not bool); the output has it.
OpInstance einsum(const std::vector<TensorType>& inputs, const std::string& equation);

}  // namespace dynvm::ops
