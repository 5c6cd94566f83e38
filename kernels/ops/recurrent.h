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
#include <string>

#include "kernels/ops/op.h"

namespace dynvm::ops {

OpInstance lstm_cell(const TensorType& gates, const TensorType& c,
                     const std::optional<TensorType>& peepholes);

OpInstance gru_cell(const TensorType& xw, const TensorType& hr, const TensorType& h);

// Whole recurrences, one kernel for every time step of every direction (steps.h): each step is
// the product of the carried h [batch, hidden] with its direction's rt (R transposed, read in
// place) in a register tile, then the cell's math above, h' written into y and read back by
// the next step. direction: "forward", "reverse" (times last to first) or "bidirectional"
// (both, in parallel); dirs is 1 or 2. xw holds x_t W (plus the biases the cell adds outside
// the product) for every step, the directions' columns side by side: [steps, batch, dirs *
// gates * hidden] (one product of x with both directions' W). rt: [dirs, hidden, gates *
// hidden]; states [dirs, batch, hidden]; y: [steps, dirs, batch, hidden], ONNX's Y. steps may
// be 0 (then y is empty and c_last is c0). Knobs: tile_m, tile_n, tile_k (the product's tile,
// as matmul.h's), vector_width (the cell's).
//
// LSTM: -> y, c_last [dirs, batch, hidden] (the final cell state); peepholes [dirs, 3 hidden].
OpInstance lstm_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                         const TensorType& c0, const std::optional<TensorType>& peepholes,
                         const std::string& direction = "forward");
// GRU. linear_before_reset 1: rb [dirs, 3 hidden] (when given) adds to h R, as in gru_cell's
// hr. 0: the reset gate multiplies h before the n block's product, so a step is two products
// (z and r, then n over r h) with the gate math between them; every bias adds outside the
// products and belongs in xw (no rb).
OpInstance gru_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                        const std::optional<TensorType>& rb,
                        const std::string& direction = "forward", bool linear_before_reset = true);
// RNN (tanh): h' = tanh(x_t W + h R + biases).
OpInstance rnn_sequence(const TensorType& xw, const TensorType& rt, const TensorType& h0,
                        const std::string& direction = "forward");

}  // namespace dynvm::ops
