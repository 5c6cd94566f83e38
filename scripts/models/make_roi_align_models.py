#!/usr/bin/env python3
"""Writes tests/e2e/models/{roi_align_opset10,roi_align_max}: one ONNX RoiAlign node each,
with symbolic N, H, W and num_rois, and reference outputs computed by ONNX Runtime (checked
against a numpy loop that follows the ONNX operator, as ORT's CPU kernel computes it, in
float32, so the two agree before anything is written). Needs python3-onnx, numpy and
onnxruntime-node (/work/shared/peer/setup.sh).

  roi_align_opset10  RoiAlign-10 (no coordinate_transformation_mode: output_half_pixel),
                     avg, adaptive sampling (sampling_ratio 0), spatial_scale 0.5, 3 x 2
  roi_align_max      RoiAlign-16 (half_pixel by default), max, adaptive sampling,
                     spatial_scale 0.25, 2 x 2

  /usr/bin/python3 scripts/models/make_roi_align_models.py     # from the repository root"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHANNELS = 2
CASES = ((1, 1, 1, 1), (2, 6, 9, 5), (1, 11, 7, 0), (3, 16, 13, 9))  # (n, h, w, num_rois)

# name, opset, mode, coordinate_transformation_mode (None: the opset's), output_height,
# output_width, spatial_scale
MODELS = (
    ("roi_align_opset10", 10, "avg", None, 3, 2, 0.5),
    ("roi_align_max", 16, "max", None, 2, 2, 0.25),
)


def numpy_reference(x, rois, batch_indices, mode, half_pixel, oh, ow, scale):
    """ONNX RoiAlign with sampling_ratio 0, ORT's order of operations, in float32."""
    f = np.float32
    n_rois, channels, height, width = rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
    y = np.zeros((n_rois, channels, oh, ow), np.float32)
    offset = f(0.5) if half_pixel else f(0)
    for n in range(n_rois):
        x1, y1, x2, y2 = (rois[n, k] * f(scale) - offset for k in range(4))
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:
            roi_w, roi_h = max(roi_w, f(1)), max(roi_h, f(1))
        bin_h, bin_w = roi_h / f(oh), roi_w / f(ow)
        grid_h, grid_w = int(math.ceil(bin_h)), int(math.ceil(bin_w))
        count = max(grid_h * grid_w, 1)
        image = x[batch_indices[n]]
        for ph in range(oh):
            for pw in range(ow):
                acc = np.zeros(channels, np.float32)
                first = True
                for iy in range(grid_h):
                    yy = y1 + f(ph) * bin_h + (f(iy) + f(0.5)) * bin_h / f(grid_h)
                    for ix in range(grid_w):
                        xx = x1 + f(pw) * bin_w + (f(ix) + f(0.5)) * bin_w / f(grid_w)
                        value = np.zeros(channels, np.float32)
                        if not (yy < -1 or yy > height or xx < -1 or xx > width):
                            yc, xc = max(yy, f(0)), max(xx, f(0))
                            y_low, x_low = int(yc), int(xc)
                            y_high, x_high = y_low + 1, x_low + 1
                            if y_low >= height - 1:
                                y_low = y_high = height - 1
                                yc = f(y_low)
                            if x_low >= width - 1:
                                x_low = x_high = width - 1
                                xc = f(x_low)
                            ly, lx = yc - f(y_low), xc - f(x_low)
                            hy, hx = f(1) - ly, f(1) - lx
                            p = [hy * hx * image[:, y_low, x_low], hy * lx * image[:, y_low, x_high],
                                 ly * hx * image[:, y_high, x_low], ly * lx * image[:, y_high, x_high]]
                            value = (p[0] + p[1] + p[2] + p[3] if mode == "avg"
                                     else np.maximum(np.maximum(np.maximum(p[0], p[1]), p[2]), p[3]))
                        if mode == "avg":
                            acc = acc + value
                        else:
                            acc = value if first else np.maximum(acc, value)
                        first = False
                y[n, :, ph, pw] = acc / f(count) if mode == "avg" else acc
    return y


def build(name, opset, mode, coordinates, oh, ow, scale):
    attrs = {"mode": mode, "output_height": oh, "output_width": ow, "sampling_ratio": 0,
             "spatial_scale": scale}
    if coordinates is not None:
        attrs["coordinate_transformation_mode"] = coordinates
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], name=name,
                            **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", CHANNELS, "h", "w"]),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, ["num_rois", 4]),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT64, ["num_rois"])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["num_rois", CHANNELS, oh, ow])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model


def random_rois(rng, num_rois, height, width, scale):
    """Corners in input pixels (1 / scale per feature pixel): some past the edges, some
    reversed, some far larger than the image."""
    span = np.array([width, height, width, height], np.float64) / scale
    start = rng.uniform(-0.3, 1.0, (num_rois, 2)) * span[:2]
    size = rng.uniform(-0.1, 1.4, (num_rois, 2)) * span[:2]
    return np.concatenate([start, start + size], axis=1).astype(np.float32)


def main():
    if not ort_check.ort_available():
        sys.exit("ONNX Runtime (onnxruntime-node) is needed: sh /work/shared/peer/setup.sh")
    rng = np.random.default_rng(19)
    for name, opset, mode, coordinates, oh, ow, scale in MODELS:
        model = build(name, opset, mode, coordinates, oh, ow, scale)
        out_dir = os.path.join(ROOT, "tests", "e2e", "models", name)
        os.makedirs(out_dir, exist_ok=True)
        onnx.save(model, os.path.join(out_dir, "model.onnx"))
        half_pixel = opset >= 16 if coordinates is None else coordinates == "half_pixel"
        for k, (n, h, w, num_rois) in enumerate(CASES):
            feeds = {
                "X": rng.uniform(-1, 1, (n, CHANNELS, h, w)).astype(np.float32),
                "rois": random_rois(rng, num_rois, h, w, scale).reshape(num_rois, 4),
                "batch_indices": rng.integers(0, n, num_rois).astype(np.int64),
            }
            want = numpy_reference(feeds["X"], feeds["rois"], feeds["batch_indices"], mode,
                                   half_pixel, oh, ow, scale)
            got = ort_check.ort_run(os.path.join(out_dir, "model.onnx"), feeds)
            diff = ort_check.compare(f"{name} case {k} Y", got["Y"], want, rtol=1e-5, atol=1e-6)
            ort_check.save_case(os.path.join(out_dir, "cases", str(k)), feeds, got)
            print(f"{name} n={n} h={h} w={w} num_rois={num_rois}: "
                  f"ORT vs numpy max abs diff {diff:.2e}")


if __name__ == "__main__":
    main()
