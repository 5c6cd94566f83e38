// Signal processing: ONNX DFT, STFT and MelWeightMatrix. The transforms are direct sums, one
// TE reduction over the signal (or frame) axis per output element, in f64 with the angle
// 2*pi*((k*j) mod n)/n taken from an exact integer product, then cast to the data's dtype:
// O(n^2) per transformed row (O(frames * bins * frame_length) for STFT), no FFT. Lengths
// read at run time (DFT's dft_length, STFT's frame_step / frame_length) are kernel inputs
// bound with `tir::let_index`; output extents come from the output argument (`out_shape`).
// Scheduled with the reduction template (knobs `parallel`, `unroll`), the cast injective.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// x: [..., n, ..., 1 or 2] (real, or complex as the last dim), f32 or f64; `axis` is the
// signal axis (not the last). `dft_length` (a scalar i32/i64, or null: n) zero-pads or
// truncates the signal. `out_shape`: x's dims with the axis' extent the output's bins
// (dft_length, or dft_length / 2 + 1 onesided) and a last dim 2. Inverse scales by 1/n.
OpInstance dft(const TensorType& x, const TensorType* dft_length, int64_t axis, bool inverse,
               const std::vector<arith::Expr>& out_shape);

// signal: [batch, length, 1 or 2]; frame_step a scalar; window [frame_length] or null;
// frame_length a scalar or null (then the window's length). `out_shape`: [batch, frames,
// bins, 2]. Without a window the frame length is only a value, so the reduction runs over
// the whole signal length with the samples past the frame masked.
OpInstance stft(const TensorType& signal, const TensorType& frame_step, const TensorType* window,
                const TensorType* frame_length, const std::vector<arith::Expr>& out_shape);

// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
// scalars read by the kernel; `out_shape` [dft_length / 2 + 1, num_mel_bins]; the triangles
// of the ONNX definition (mel = 2595 log10(1 + hz / 700), num_mel_bins + 2 points evenly
// spaced in mel, bin = floor((dft_length + 1) * hz / sample_rate)), computed in f64.
OpInstance mel_weight_matrix(const std::vector<TensorType>& inputs, vm::DType out_dtype,
                             const std::vector<arith::Expr>& out_shape);

}  // namespace dynvm::ops
