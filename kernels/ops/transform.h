// Data-movement operators: transpose, concat, split, slice, pad, tile, expand. None of them
// computes a value; each output element is one input element (or pad's constant) picked by
// index arithmetic, so every builder works for any dtype and for symbolic shapes, whose
// output dims become arith expressions (slice's clamped extents, concat's sums). All are
// scheduled with the injective template (schedules.h): knobs `vector_width` and
// `parallel`; split's outputs each get it with the same knob values.
//
// TIR's select is eager (both sides are evaluated), so an op that picks between reads
// (concat between inputs, pad between the input and its constant) clamps every read's
// index into its input's range and selects on the condition: no read is ever out of
// bounds. The one case this cannot cover is a read from an input that is empty at run
// time (a symbolic dim bound to 0) while the output is not: pad and concat assume their
// symbolic inputs are not empty; static empty inputs are handled exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/ops/op.h"

namespace dynvm::ops {

// ONNX Transpose: output dim k is input dim perm[k]. An empty perm reverses the axes.
OpInstance transpose(const TensorType& x, const std::vector<int64_t>& perm = {});

// ONNX Concat: inputs share dtype, rank and every dim but `axis` (negative counts from the
// end); symbolic dims must be structurally equal.
OpInstance concat(const std::vector<TensorType>& xs, int64_t axis);

// ONNX Split with explicit sizes along `axis`: one output per size. The sizes must add up
// to the axis' dim (provably, for symbolic dims: e.g. {n, n} of 2*n).
// Sizes may be symbolic; each must be non-negative (checked for constants).
// `sizes_checked`: the caller checks at run time that the sizes add up (sizes read at run
// time, symbols the kernel binds from its outputs), so they need not provably.
OpInstance split(const TensorType& x, int64_t axis, const std::vector<arith::Expr>& sizes,
                 bool sizes_checked = false);

// ONNX Slice with constant starts / ends / axes / steps. Empty axes means 0..starts.size()-1
// and empty steps means all 1. Negative starts/ends count from the end of the dim; both are
// then clamped ([0, d] for positive steps, [0, d-1] / [-1, d-1] for negative ones), so
// out-of-range ends (INT64_MAX, INT64_MIN) mean "to the end". Zero steps are a UserError.
// It takes an epilogue (with_epilogue), as slice_to does: a crop followed by an add and an
// activation is one kernel.
OpInstance slice(const TensorType& x, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                 const std::vector<int64_t>& steps = {});

// ONNX Slice with constant axes and steps whose starts or ends may be known only at run
// time (nullopt), as when a tensor is cropped to another's size (`x[:, :, :h, :w]`, the
// ends from a Shape): `shape` is the output's (its dims bound from the output argument),
// so an unknown end needs no value. An unknown start needs a constant end and a step of 1
// or -1 (the window then ends at the end); otherwise use slice_at_run_time.
OpInstance slice_to(const TensorType& x, const std::vector<std::optional<int64_t>>& starts,
                    const std::vector<std::optional<int64_t>>& ends,
                    const std::vector<int64_t>& axes, const std::vector<int64_t>& steps,
                    const std::vector<arith::Expr>& shape);

// One axis of an ONNX Slice whose bounds may be known only at run time: for a dim `d` and
// (defaulted) start, end and step (non-zero, of any sign), the input index of output index
// 0 and the output's extent. The same expressions type the output (compiler/op) and index
// the input (slice_at_run_time), so the two cannot disagree.
struct SliceWindow {
  arith::Expr first;
  arith::Expr count;
};
SliceWindow slice_window(const arith::Expr& d, const arith::Expr& start, const arith::Expr& end,
                         const arith::Expr& step);
// The start, end and step of axis `axis` of a rank-`rank` input from n slice entries (axes
// entry k names the axis of entry k; negative counts from the end): the entry's values, or
// 0, "to the end" and 1 for an axis no entry names.
struct SliceEntry {
  arith::Expr start, end, axis, step;
};
SliceWindow slice_axis(const arith::Expr& d, const std::vector<SliceEntry>& entries, int64_t axis,
                       int64_t rank);

// ONNX Slice with starts and ends (and axes, steps: null for the defaults) that the kernel
// reads at run time: integer vectors of one length. `shape` is the output's (its dims
// bound from the output argument).
OpInstance slice_at_run_time(const TensorType& x, const TensorType& starts, const TensorType& ends,
                             const TensorType* axes, const TensorType* steps,
                             const std::vector<arith::Expr>& shape);

enum class PadMode : uint8_t {
  kConstant,  // `value` outside the input
  kReflect,   // mirrored without repeating the border: pads must be < the dim
  kEdge,      // the border element repeated
};
// ONNX Pad with constant pads in ONNX layout: [x1_begin, x2_begin, ..., x1_end, x2_end, ...].
// Negative pads crop. `value` (kConstant only) is converted to x's dtype.
OpInstance pad(const TensorType& x, const std::vector<int64_t>& pads,
               PadMode mode = PadMode::kConstant, double value = 0);

// ONNX Pad with pads (i64 [2 * rank], ONNX layout) and optionally the constant value (a
// one-element tensor of x's dtype; null: 0) read by the kernel at run time. `shape` is the
// output's (its dims bound from the output argument). Reads stay inside x whatever the
// values; the caller checks them (an empty dim padded, reflect pads as large as the dim).
// `known` (empty, or one entry per pad) holds the pads known at compile time (a shape
// computation's zeros beside an `x.shape[3] % 2`): an axis whose two pads are known takes
// the constant form, without a read or, when it is not padded, a condition.
OpInstance pad_at_run_time(const TensorType& x, const TensorType& pads, const TensorType* value,
                           PadMode mode, const std::vector<arith::Expr>& shape,
                           const std::vector<std::optional<int64_t>>& known = {});

// ONNX Tile: output dim k is input dim k times repeats[k] (repeats >= 0, one per dim).
OpInstance tile(const TensorType& x, const std::vector<int64_t>& repeats);
// ONNX Tile with repeats known only at run time: the output's shape is given (each dim a
// constant or a symbol the kernel binds from its output) and element i is x[i mod dims].
OpInstance tile_to(const TensorType& x, const std::vector<arith::Expr>& shape);

// ONNX ConstantOfShape: an output of `shape` (each dim a constant or a symbol the kernel
// binds from its output) holding the scalar constant `value` (its type is the output's).
OpInstance fill(const std::vector<arith::Expr>& shape, const tir::Expr& value);

// ONNX Range: element i of the output [n] is start + i * delta, where start and delta are
// scalar tensors of the output's dtype read at run time and n (a constant or a symbol the
// kernel binds from its output) was computed by the caller.
OpInstance range(const TensorType& start, const TensorType& delta, const arith::Expr& n);
// Range's length: max(ceil((limit - start) / delta), 0) as an i64 scalar, from three scalar
// tensors of one dtype (computed in f64; a zero delta gives 0).
OpInstance range_count(const TensorType& start, const TensorType& limit, const TensorType& delta);

// ONNX Trilu: x's elements on and above (`upper`) or on and below the k-th diagonal of its
// last two dims, zero elsewhere (k > 0 is above the main diagonal). `k` is a constant, or
// with `k_input` a one-element i64 tensor the kernel reads at run time (its second
// argument). Any dtype; rank >= 2.
OpInstance trilu(const TensorType& x, bool upper, int64_t k = 0,
                 const TensorType* k_input = nullptr);

// ONNX Expand: x broadcast with `shape` (numpy rules, both ways: the output shape is
// broadcast_shape({x.shape, shape})).
OpInstance expand(const TensorType& x, const std::vector<arith::Expr>& shape);
// Expand to an output shape computed by the caller (dims the kernel binds from its output;
// x's dims broadcast against it at run time, broadcast_indices).
OpInstance expand_to(const TensorType& x, const std::vector<arith::Expr>& out_shape);

}  // namespace dynvm::ops
