// ONNX Unique: the distinct elements of x (flattened), or its distinct slices along
// `axis`, sorted ascending (slices lexicographically) or in order of first occurrence,
// with their first indices, each element's place among them (inverse_indices) and how
// often each occurs. As NonZero: unique_count computes the number of distinct values (an
// i64 scalar the importer binds as dynvm.UniqueCount beside the op, read as a run-time
// symbol); unique takes it from its output arguments.
//
// Every element is compared with every other: for slices of m elements, a first-difference
// stage [n, n] (reduction over m) decides equality and order; then per element, reductions
// over n: how many equal ones come before it (first occurrence when none), its first
// occurrence, how many are equal (its count), and its rank (how many distinct values are
// smaller, or how many first occurrences come before its own). A te::scatter pass stores
// each first occurrence at its rank. O(n^2 m) work; Unique is a post-processing op.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

struct UniqueAttrs {
  bool has_axis = false;
  int64_t axis = 0;
  bool sorted = true;
};

// How many distinct values (or slices) x has: an i64 scalar.
OpInstance unique_count(const TensorType& x, const UniqueAttrs& attrs);

// The first `num_outputs` (1..4) of Y, indices, inverse_indices, counts; `count` is
// unique_count's result.
OpInstance unique(const TensorType& x, const UniqueAttrs& attrs, const arith::Expr& count,
                  size_t num_outputs);

}  // namespace dynvm::ops
