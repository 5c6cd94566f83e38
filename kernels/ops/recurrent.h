// The element-wise half of a recurrent step as one kernel: what an LSTM or GRU computes from
// its gate pre-activations once the step's products are done (the products stay matmuls,
// whose epilogue adds x_t W). A step of eight small kernels becomes three: the matmul, this
// cell and the read of x_t W (compiler/passes/recurrent_*.cc build the calls).
//
// LSTM, gates in ONNX's order i, o, f, c ([batch, 4 hidden], biases included), the cell state
// c [batch, hidden], peepholes p [3 hidden] (i, o, f) when given:
//   i = sigmoid(G_i + p_i c), f = sigmoid(G_f + p_f c), c' = f c + i tanh(G_c),
//   o = sigmoid(G_o + p_o c'), h' = o tanh(c').
// Outputs h' then c' ([batch, hidden] each).
//
// GRU with linear_before_reset 1, gates in ONNX's order z, r, n: xw = x_t W + Wb and
// hr = h R + Rb ([batch, 3 hidden] each), h [batch, hidden]:
//   z = sigmoid(xw_z + hr_z), r = sigmoid(xw_r + hr_r), n = tanh(xw_n + r hr_n),
//   h' = (1 - z) n + z h (computed as n + z (h - n)).
//
// Both are scheduled with the injective template (knobs vector_width, parallel).
#pragma once

#include <optional>

#include "kernels/ops/op.h"

namespace dynvm::ops {

OpInstance lstm_cell(const TensorType& gates, const TensorType& c,
                     const std::optional<TensorType>& peepholes);

OpInstance gru_cell(const TensorType& xw, const TensorType& hr, const TensorType& h);

}  // namespace dynvm::ops
