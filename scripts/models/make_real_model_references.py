#!/usr/bin/env python3
"""Reference outputs of the real models (fetched by scripts/fetch-models.sh into .models/)
from ONNX Runtime, small enough to commit:

  tests/e2e/models/ppocrv4_rec/cases/<k>/   input x [N, 3, 48, W] made by a formula the C++
      test recomputes exactly (x = ((7n + 5c + 3h + w) mod 17) / 8 - 1, exact in f32), and
      ORT's output summarized per time step: the 5 most likely classes (top5_index, i64)
      and their probabilities (top5_prob, f32), for (N, W) = (1, 100), (1, 320), (4, 320)
  tests/e2e/models/silero_vad/cases/<k>/   streaming, 3 chunks per stream: cases 0-5 at
      8 kHz with 256-sample chunks, 6-11 at 16 kHz with 512-sample chunks, batch 1 then 4
      each: chunk k's input, sr and the state ORT carried in (its stateN of chunk k-1,
      zeros first), and ORT's output and stateN

  /usr/bin/python3 scripts/models/make_real_model_references.py   # from the repository root
Needs numpy and onnxruntime-node (/work/shared/peer/setup.sh)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, ".models")


def ocr_input(n, w):
    i = np.indices((n, 3, 48, w))
    return (((7 * i[0] + 5 * i[1] + 3 * i[2] + i[3]) % 17) / 8.0 - 1.0).astype(np.float32)


def ppocr():
    model = os.path.join(MODELS, "ppocrv4_rec.onnx")
    out = os.path.join(ROOT, "tests", "e2e", "models", "ppocrv4_rec", "cases")
    for k, (n, w) in enumerate(((1, 100), (1, 320), (4, 320))):
        y = ort_check.ort_run(model, {"x": ocr_input(n, w)})["softmax_11.tmp_0"]
        top = np.argsort(-y, axis=-1, kind="stable")[..., :5]
        prob = np.take_along_axis(y, top, axis=-1)
        case = os.path.join(out, str(k))
        ort_check.save_case(case, outputs={"top5_index": top.astype(np.int64), "top5_prob": prob})
        with open(os.path.join(case, "shape.txt"), "w") as f:
            f.write(f"{n} {w}\n")
        print(f"ppocr N={n} W={w}: output {y.shape}, top1 p in [{prob[..., 0].min():.3f}, "
              f"{prob[..., 0].max():.3f}]")


def ocr_det():
    model = os.path.join(MODELS, "ppocrv4_det.onnx")
    out = os.path.join(ROOT, "tests", "e2e", "models", "ppocrv4_det", "cases")
    for k, (n, h, w) in enumerate(((1, 96, 160), (2, 64, 96), (1, 160, 320))):
        # Dark bars of dashes on a light page (every channel alike), so that the map has
        # text-like regions: -0.8 where h mod 32 is in [10, 20) and (7w + h + 3n) mod 11 < 5.
        i = np.indices((n, 3, h, w))
        dark = ((i[2] % 32 >= 10) & (i[2] % 32 < 20) & ((7 * i[3] + i[2] + 3 * i[0]) % 11 < 5))
        x = np.where(dark, -0.8, 0.9).astype(np.float32)
        y = ort_check.ort_run(model, {"x": x})["sigmoid_0.tmp_0"]
        case = os.path.join(out, str(k))
        ort_check.save_case(case, outputs={"y_every7": y[:, :, ::7, ::7]})
        with open(os.path.join(case, "shape.txt"), "w") as f:
            f.write(f"{n} {h} {w}\n")
        print(f"ppocr det N={n} H={h} W={w}: output {y.shape}, {100 * (y > 0.3).mean():.1f}% "
              f"above 0.3")


def silero():
    model = os.path.join(MODELS, "silero_vad_v5.onnx")
    out = os.path.join(ROOT, "tests", "e2e", "models", "silero_vad", "cases")
    rng = np.random.default_rng(5)
    k = 0
    for rate, chunk_len in ((8000, 256), (16000, 512)):
        for batch in (1, 4):
            state = np.zeros((2, batch, 128), np.float32)
            t = np.arange(3 * chunk_len) / rate
            for chunk in range(3):
                # a tone with noise: the detector's probability moves between chunks
                audio = (0.3 * np.sin(2 * np.pi * 440 * t[chunk * chunk_len:(chunk + 1) * chunk_len])
                         + 0.05 * rng.standard_normal((batch, chunk_len))).astype(np.float32)
                feeds = {"input": audio, "state": state, "sr": np.array(rate, dtype=np.int64)}
                got = ort_check.ort_run(model, feeds)
                case = os.path.join(out, str(k))
                ort_check.save_case(case, feeds, {"output": got["output"], "stateN": got["stateN"]})
                print(f"silero {rate} Hz batch={batch} chunk={chunk}: output {got['output'].ravel()}")
                state = got["stateN"]
                k += 1


if __name__ == "__main__":
    if not ort_check.ort_available():
        sys.exit("ONNX Runtime (onnxruntime-node) is needed: sh /work/shared/peer/setup.sh")
    ppocr()
    ocr_det()
    silero()
