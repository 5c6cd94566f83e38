// ONNX NonMaxSuppression: per batch and class, boxes in descending score order (ties: the
// lower index first), each kept unless a box kept before it overlaps it by IoU above
// iou_threshold, at most max_output_boxes_per_class of them, only scores above
// score_threshold; the result lists [batch, class, box] rows, batch-major, then class,
// then selection order (ONNX Runtime's order and tie rules).
//
// Its length is data-decided: nms_count computes it (an i64 scalar the importer binds as
// dynvm.NonMaxSuppressionCount beside the op, read as a run-time symbol), nms then fills a
// [count, 3] output taken from its argument. Both run the same selection:
//   place   each box's rank by score in its (batch, class): a reduction, O(n^2);
//   order   the box at each rank (te::scatter);
//   keep    greedy suppression in rank order: one serial te::scatter pass over (k, j < k)
//           that clears box k when a kept j overlaps it, O(n^2) per (batch, class);
//   chosen  kept and among the first max_output_boxes_per_class kept (a running count).
// The selection runs twice (count, then fill); NMS is rarely a model's cost.
//
// The scalar inputs may be absent (nullptr): max_output_boxes_per_class then 0 (nothing
// is selected), iou_threshold 0, no score threshold. Boxes are f32; scalars are read at
// run time.
#pragma once

#include "kernels/ops/op.h"

namespace dynvm::ops {

struct NmsInputs {
  TensorType boxes;   // [B, n, 4] f32: y1, x1, y2, x2 (any corner order) or xc, yc, w, h
  TensorType scores;  // [B, C, n] f32
  const TensorType* max_per_class = nullptr;    // i64, one element
  const TensorType* iou_threshold = nullptr;    // f32, one element
  const TensorType* score_threshold = nullptr;  // f32, one element
  bool center_point_box = false;
};

// How many rows NonMaxSuppression selects: an i64 scalar.
OpInstance nms_count(const NmsInputs& in);
// The rows: i64 [count, 3].
OpInstance nms(const NmsInputs& in, const arith::Expr& count);

}  // namespace dynvm::ops
