// Internal to expand_recurrent: what LSTM, GRU and RNN share when they become a sequence
// kernel or a Loop over time (attribute checks, per-direction weights, the kernel's stacked
// operands or the loop, and their outputs), and what each cell adds — its step and its
// sequence op (recurrent_lstm.cc, recurrent_gru.cc, recurrent_rnn.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"

namespace dynvm::compiler::recurrent {

Expr i64s(std::vector<int64_t> v);
Expr i64(int64_t v);
Expr call(const char* op, std::vector<Expr> args, Attrs attrs = {});
Expr slice(const Expr& x, int64_t begin, int64_t end, int64_t axis);
// Input i is missing or the empty name.
bool absent(const std::vector<Expr>& in, size_t i);

// The per-direction values stacked along a new leading axis ([dirs, ...]), bound to `name`.
class Lets;
Expr stack(Lets& outer, const std::string& name, const std::vector<Expr>& per_direction);

// A builder of let chains: bind() names a value, finish() wraps the body.
class Lets {
 public:
  Expr bind(const std::string& name, Expr value);
  Expr finish(Expr body) const;

 private:
  std::vector<std::pair<Expr, Expr>> lets_;
};

// One direction's weights, bound before the loop. W and R are transposed for row-vector
// matmuls: x_t [batch, input] @ wt [input, gates * hidden], h [batch, hidden] @ rt.
struct DirectionWeights {
  Expr wt, rt;
  Expr wb, rb;  // [gates * hidden] each; undefined when B is absent
  Expr p;       // LSTM's peepholes [3 * hidden] (i, o, f); undefined when P is absent
  int64_t hidden = 0;
  std::string prefix;  // for the names of bound values: "gru", "lstm_bw", ...
  std::string name(const std::string& what) const { return prefix + "_" + what; }
};

// One time step: x_t Wt (every gate's input projection, computed for all steps before the
// loop as one product) and the carried states in (h first, then c for LSTM), the next states
// out. Steps bind every intermediate to a variable of its own, so that fuse_ops can group
// the elementwise gate math with the products it follows (a nested call stays a kernel of
// its own).
using CellStep =
    std::function<std::vector<Expr>(Lets& step, const Expr& xw, const std::vector<Expr>& states)>;

// Every direction of the recurrence as one call (kernels/ops/recurrent.h's sequence kernels):
// from x Wt of every step and direction ([seq, batch, dirs * gates * hidden], biases added, the
// directions' columns side by side), the directions' Rt stacked ([dirs, hidden, gates *
// hidden]), the initial states ([dirs, batch, hidden] each) and each direction's weights (for
// what else the cell reads: peepholes, R's bias), Y ([seq, dirs, batch, hidden]), then the
// final states besides h (LSTM's c), as a tuple when there are any (the call itself
// otherwise).
using CellSequence = std::function<Expr(
    Lets& outer, const Expr& xw, const Expr& rt, const std::vector<Expr>& initial,
    const std::vector<DirectionWeights>& directions, const std::string& direction)>;

// What a cell binds before the loop: its step, the bias that x Wt takes for every step at
// once (undefined: none), where a step would add it again each time, and the whole
// recurrence as one kernel where the cell has one (null: the step runs in a Loop).
struct PreparedCell {
  CellStep step;
  Expr xw_bias;
  CellSequence sequence;
};

struct Cell {
  const char* op;  // "LSTM", "GRU", "RNN"
  int64_t gates;   // blocks of `hidden` rows in W and R (4, 3, 1)
  int states;      // carried states, initial values from inputs 5 (initial_h) and 6 (initial_c)
  std::vector<std::string> activations;  // the defaults, for one direction
  // Binds what the step needs before the loop (bias sums, weight slices).
  std::function<PreparedCell(Lets& outer, const DirectionWeights& w)> prepare;
};

// The node `e` as a Loop per direction. Refuses, with a UserError naming `where`: clip,
// activations other than the defaults, sequence_lens other than forward. Output: Y [seq, dirs,
// batch, hidden], then each final state [dirs, batch, hidden], as a tuple cut to `num_outputs`;
// layout 1 (batch first: X [batch, seq, input], Y [batch, seq, dirs, hidden], states [batch, dirs,
// hidden]) is the same loop between transposes.
Expr expand_cell(const Expr& e, const std::string& where, const Cell& cell);

Expr expand_lstm(const Expr& e, const std::string& where);
Expr expand_gru(const Expr& e, const std::string& where);
Expr expand_rnn(const Expr& e, const std::string& where);

}  // namespace dynvm::compiler::recurrent
