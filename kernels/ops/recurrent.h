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

// Whole recurrences, one kernel for every time step (steps.h): each step is the product of the
// carried h [batch, hidden] with rt (R transposed, [hidden, gates * hidden], read in place) in
// a register tile, then the cell's math above, h' written into y[t] ([steps, batch, hidden])
// and read back by the next step. xw holds x_t W (plus the biases the cell adds outside the
// product) for every step: [steps, batch, gates * hidden]. steps may be 0 (then y is empty
// and c_last is c0). Knobs: tile_m, tile_n, tile_k (the product's tile, as matmul.h's),
// vector_width (the cell's).
//
// LSTM: -> y, c_last [batch, hidden] (the final cell state).
OpInstance lstm_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                         const TensorType& c0, const std::optional<TensorType>& peepholes);
// GRU with linear_before_reset 1: rb [3 hidden] (when given) adds to h R, as in gru_cell's hr.
OpInstance gru_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                        const std::optional<TensorType>& rb);
// RNN (tanh): h' = tanh(x_t W + h R + biases).
OpInstance rnn_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0);

}  // namespace dynvm::ops
