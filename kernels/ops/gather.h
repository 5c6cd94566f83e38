// Indexing by data: ONNX Gather, GatherElements, GatherND and ReverseSequence. The index is loaded
// from the indices tensor (int32 or int64) and enters the index world through tir::let_index; data
// may be any dtype the kernels store (f32, i64, bool, ...), shapes may be symbolic. Scheduled with
// the injective template (schedules.h): knobs `vector_width` and `parallel`.
//
// Out-of-range indices: a negative index first wraps by adding the axis extent (ONNX);
// what is still outside [0, extent) is CLAMPED into it, so a bad index reads the first or
// last element of the axis instead of out of bounds. ONNX Runtime reports an error; the
// kernel ABI has no error path from inside a kernel body (kernels/codegen reports only
// argument and workspace errors), and a per-element check would cost a branch per load.
// The one case clamping cannot cover is an empty gathered axis with a non-empty output:
// a static empty axis is a UserError; a symbolic one that is 0 at run time must not be
// given indices (ONNX calls every such index invalid).
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

// out[a..., j..., b...] = data[a..., indices[j...], b...] with `a` the dims of data before
// `axis` and `b` those after: the output's rank is rank(data) - 1 + rank(indices).
OpInstance gather(const TensorType& data, const TensorType& indices, int64_t axis);

// out[i] = data[i with i[axis] replaced by indices[i]]: indices has data's rank and the
// output its shape. Dims other than `axis` must be equal (symbolic) or no larger than
// data's (constant), so that they never index data out of range.
OpInstance gather_elements(const TensorType& data, const TensorType& indices, int64_t axis);

// ONNX GatherND: the last dim of indices (k, a constant) indexes data's dims batch_dims ..
// batch_dims + k - 1; the output is indices.shape[:-1] + data.shape[batch_dims + k:]. The
// first batch_dims dims of data and indices must be equal.
OpInstance gather_nd(const TensorType& data, const TensorType& indices, int64_t batch_dims = 0);

// ONNX ReverseSequence: for each batch b (along batch_axis), the first sequence_lens[b]
// elements along time_axis reversed, the rest copied. sequence_lens is int32 or int64, one
// per batch; lengths beyond the time extent are clamped to it.
OpInstance reverse_sequence(const TensorType& x, const TensorType& sequence_lens,
                            int64_t time_axis = 0, int64_t batch_axis = 1);

}  // namespace dynvm::ops
