// Indexing by data: ONNX Gather, GatherElements, GatherND and ReverseSequence. The index is loaded
// from the indices tensor (int32 or int64) and enters the index world through tir::let_index; data
// may be any dtype the kernels store (f32, i64, bool, ...), shapes may be symbolic. Scheduled with
// the injective template (schedules.h): knobs `vector_width` and `parallel`.
//
// Out-of-range indices: a negative index first wraps by adding the axis extent (ONNX);
// what is still outside [0, extent) is CLAMPED into it, so that a kernel never reads out of
// bounds. Reporting them is not the kernels' job: the importer binds count_out_of_range
// (below) beside every Gather / Scatter whose indices only the run time knows, and the VM
// fails the run naming the node when the count is not 0 (compiler/op: dynvm.CheckIndices);
// constant indices are checked at compile time. The clamp stays for the ops the compiler
// builds itself, whose indices are in range by construction.
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

// How many elements of `indices` are outside [-n, n), n the extent of the data dim they
// address: data's `axis` (Gather, GatherElements, ScatterElements), or with `nd` (GatherND,
// ScatterND) data's dim axis + j for an element at position j of indices' last dim (axis is
// then batch_dims). An i64 scalar; data's dims are read, never its elements. Reduction
// template.
OpInstance count_out_of_range(const TensorType& data, const TensorType& indices, int64_t axis,
                              bool nd);

// ONNX ReverseSequence: for each batch b (along batch_axis), the first sequence_lens[b]
// elements along time_axis reversed, the rest copied. sequence_lens is int32 or int64, one
// per batch; lengths beyond the time extent are clamped to it.
OpInstance reverse_sequence(const TensorType& x, const TensorType& sequence_lens,
                            int64_t time_axis = 0, int64_t batch_axis = 1);

}  // namespace dynvm::ops
