// NonMaxSuppression (see nms.h).
#include "kernels/ops/nms.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

const tir::DataType kI64{vm::DType::kInt64, 1};
const tir::DataType kF32{vm::DType::kFloat32, 1};

tir::Expr i64(int64_t v) { return tir::make_const_int(kI64, v); }
tir::Expr f32(double v) { return tir::make_const(kF32, v); }

// The one element of a scalar or one-element input.
tir::Expr scalar(const te::TensorRef& t) {
  return te::read(t, std::vector<arith::Expr>(t->ndim(), arith::Expr(0)));
}

struct Selection {
  std::vector<te::TensorRef> inputs;
  te::TensorRef order;                // [B, C, n]: the box at each rank
  te::TensorRef chosen;               // [B, C, n] i64 0 / 1, by rank
  std::vector<te::TensorRef> stages;  // every intermediate, for the schedule
};

// The corners of box `b` of batch `batch`: ymin, xmin, ymax, xmax.
std::vector<tir::Expr> corners(const te::TensorRef& boxes, const arith::Expr& batch,
                               const arith::Expr& b, bool center_point_box) {
  auto coord = [&](int64_t k) { return te::read(boxes, {batch, b, arith::Expr(k)}); };
  if (center_point_box) {
    tir::Expr xc = coord(0), yc = coord(1), hw = coord(2) * f32(0.5), hh = coord(3) * f32(0.5);
    return {yc - hh, xc - hw, yc + hh, xc + hw};
  }
  tir::Expr y1 = coord(0), x1 = coord(1), y2 = coord(2), x2 = coord(3);
  return {tir::min(y1, y2), tir::min(x1, x2), tir::max(y1, y2), tir::max(x1, x2)};
}

// Whether box j suppresses box k: IoU above the threshold (empty boxes or no overlap never do).
tir::Expr suppresses(const std::vector<tir::Expr>& a, const std::vector<tir::Expr>& b,
                     const tir::Expr& threshold) {
  tir::Expr h = tir::max(tir::min(a[2], b[2]) - tir::max(a[0], b[0]), f32(0));
  tir::Expr w = tir::max(tir::min(a[3], b[3]) - tir::max(a[1], b[1]), f32(0));
  tir::Expr inter = h * w;
  tir::Expr area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  auto gt = [](const tir::Expr& x, const tir::Expr& y) {
    return tir::compare(tir::CompareOp::kGt, x, y);
  };
  tir::Expr iou = inter / (area_a + area_b - inter);
  return tir::logical_and(tir::logical_and(gt(inter, f32(0)), gt(area_a, f32(0))),
                          tir::logical_and(gt(area_b, f32(0)), gt(iou, threshold)));
}

Selection select_boxes(const NmsInputs& in) {
  if (in.boxes.shape.size() != 3 || in.scores.shape.size() != 3) {
    user_error("nms: boxes must be [B, n, 4] and scores [B, C, n]");
  }
  if (in.boxes.dtype != vm::DType::kFloat32 || in.scores.dtype != vm::DType::kFloat32) {
    user_error("nms: boxes and scores must be f32");
  }
  const arith::Expr &B = in.boxes.shape[0], &n = in.boxes.shape[1], &C = in.scores.shape[1];
  Selection sel;
  te::TensorRef boxes = te::placeholder("boxes", {B, n, 4}, vm::DType::kFloat32);
  te::TensorRef scores = te::placeholder("scores", {B, C, n}, vm::DType::kFloat32);
  sel.inputs = {boxes, scores};
  auto optional = [&](const TensorType* t, const char* name, vm::DType dtype) -> te::TensorRef {
    if (!t) return nullptr;
    if (t->dtype != dtype) user_error("nms: ", name, " must be ", dtype_suffix(dtype));
    te::TensorRef p = te::placeholder(name, t->shape, t->dtype);
    sel.inputs.push_back(p);
    return p;
  };
  te::TensorRef max_t = optional(in.max_per_class, "max_output_boxes_per_class", vm::DType::kInt64);
  te::TensorRef iou_t = optional(in.iou_threshold, "iou_threshold", vm::DType::kFloat32);
  te::TensorRef score_t = optional(in.score_threshold, "score_threshold", vm::DType::kFloat32);

  te::TensorRef place = te::compute("place", {B, C, n}, [&](const te::Indices& i) {
    te::IterVar q = te::reduce_axis(n, "q");
    tir::Expr v = te::read(scores, {i[0], i[1], i[2]}), w = te::read(scores, {i[0], i[1], q.var});
    tir::Expr first =
        tir::logical_or(tir::compare(tir::CompareOp::kGt, w, v),
                        tir::logical_and(tir::compare(tir::CompareOp::kEq, w, v),
                                         tir::index_value(arith::lt(q.var, i[2]), tir::boolean())));
    return te::sum(tir::select(first, i64(1), i64(0)), {q});
  });
  sel.order = te::scatter(
      "order", {B, C, n}, [&](const te::Indices&) { return i64(0); }, {B, C, n},
      [&](const te::Indices& j, const te::TensorRef&) {
        te::ScatterUpdate u;
        arith::Var p("p");
        u.lets.emplace_back(p, te::read(place, {j[0], j[1], j[2]}));
        u.at = {j[0], j[1], p};
        u.value = tir::index_value(j[2], kI64);
        return u;
      });
  const tir::Expr iou_threshold = iou_t ? scalar(iou_t) : f32(0);
  te::TensorRef keep = te::scatter(
      "keep", {B, C, n},
      [&](const te::Indices& i) {
        if (!score_t) return i64(1);
        arith::Var b("b");
        tir::Expr s = te::read(scores, {i[0], i[1], b});
        return tir::let_index(
            b, te::read(sel.order, {i[0], i[1], i[2]}),
            tir::select(tir::compare(tir::CompareOp::kGt, s, scalar(score_t)), i64(1), i64(0)));
      },
      {B, C, n, n},
      [&](const te::Indices& j, const te::TensorRef& self) {
        // Box of rank j[2] against each kept box of a lower rank j[3].
        te::ScatterUpdate u;
        arith::Var bk("bk"), bj("bj");
        u.lets.emplace_back(bk, te::read(sel.order, {j[0], j[1], j[2]}));
        u.lets.emplace_back(bj, te::read(sel.order, {j[0], j[1], j[3]}));
        auto kept = [&](const arith::Expr& rank) {
          return tir::compare(tir::CompareOp::kNe, te::read(self, {j[0], j[1], rank}), i64(0));
        };
        u.when = tir::logical_and(
            tir::logical_and(tir::index_value(arith::lt(j[3], j[2]), tir::boolean()),
                             tir::logical_and(kept(j[2]), kept(j[3]))),
            suppresses(corners(boxes, j[0], bj, in.center_point_box),
                       corners(boxes, j[0], bk, in.center_point_box), iou_threshold));
        u.at = {j[0], j[1], j[2]};
        u.value = i64(0);
        return u;
      });
  // How many boxes of lower rank were kept.
  te::TensorRef before = te::scan(
      "before", {B, C, n}, 2, false, [&](const te::Indices&) { return i64(0); },
      [&](const te::Indices& i, tir::Expr prev) {
        return prev + te::read(keep, {i[0], i[1], i[2] - arith::Expr(1)});
      });
  const tir::Expr max_boxes = max_t ? scalar(max_t) : i64(0);
  sel.chosen = te::compute("chosen", {B, C, n}, [&](const te::Indices& i) {
    tir::Expr k = te::read(keep, {i[0], i[1], i[2]});
    tir::Expr room =
        tir::compare(tir::CompareOp::kLt, te::read(before, {i[0], i[1], i[2]}), max_boxes);
    return tir::select(room, k, i64(0));
  });
  sel.stages = {place, sel.order, keep, before, sel.chosen};
  return sel;
}

OpInstance instance(std::string name, const Selection& sel, te::TensorRef out,
                    std::vector<te::TensorRef> extra) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = sel.inputs;
  op.outputs = {out};
  op.knobs = reduction_knobs(out->shape());
  std::vector<te::TensorRef> stages = sel.stages;
  stages.insert(stages.end(), extra.begin(), extra.end());
  op.schedule = [out, stages](const KnobValues&) {
    te::Schedule s = te::create_schedule({out});
    for (const te::TensorRef& t : stages) {
      if (t->body().kind() == tir::ExprKind::kReduce) schedule_reduction(s, t, false);
    }
    return s;
  };
  return op;
}

std::string suffix(const NmsInputs& in) {
  return std::string(in.center_point_box ? "_center" : "_corners") +
         (in.max_per_class ? "_m" : "") + (in.iou_threshold ? "_i" : "") +
         (in.score_threshold ? "_s" : "");
}

}  // namespace

OpInstance nms_count(const NmsInputs& in) {
  Selection sel = select_boxes(in);
  const auto& shape = sel.chosen->shape();
  te::TensorRef count = te::compute("N", {}, [&](const te::Indices&) {
    te::IterVar b = te::reduce_axis(shape[0], "b"), c = te::reduce_axis(shape[1], "c"),
                k = te::reduce_axis(shape[2], "k");
    return te::sum(te::read(sel.chosen, {b.var, c.var, k.var}), {b, c, k});
  });
  return instance("nms_count" + suffix(in), sel, count, {count});
}

OpInstance nms(const NmsInputs& in, const arith::Expr& count) {
  Selection sel = select_boxes(in);
  const auto& shape = sel.chosen->shape();
  const arith::Expr total = shape[0] * shape[1] * shape[2];
  auto at = [&](const arith::Expr& flat) -> std::vector<arith::Expr> {
    return {arith::floordiv(flat, shape[1] * shape[2]),
            arith::floormod(arith::floordiv(flat, shape[2]), shape[1]),
            arith::floormod(flat, shape[2])};
  };
  // Each chosen box's row: how many are chosen before it, batch-major.
  te::TensorRef row = te::scan(
      "row", {total}, 0, false, [&](const te::Indices&) { return i64(0); },
      [&](const te::Indices& i, tir::Expr prev) {
        return prev + te::read(sel.chosen, at(i[0] - arith::Expr(1)));
      });
  te::TensorRef out = te::scatter(
      "Y", {count, 3}, [&](const te::Indices&) { return i64(0); }, {total, 3},
      [&](const te::Indices& j, const te::TensorRef&) {
        te::ScatterUpdate u;
        std::vector<arith::Expr> where = at(j[0]);
        arith::Var r("r"), box("box");
        u.lets.emplace_back(r, te::read(row, {j[0]}));
        u.lets.emplace_back(box, te::read(sel.order, where));
        u.when = tir::compare(tir::CompareOp::kNe, te::read(sel.chosen, where), i64(0));
        u.at = {r, j[1]};
        u.value = tir::index_value(arith::select(arith::eq(j[1], 0), where[0],
                                                 arith::select(arith::eq(j[1], 1), where[1], box)),
                                   kI64);
        return u;
      });
  return instance("nms" + suffix(in), sel, out, {row});
}

}  // namespace dynvm::ops
