"""Runs a model with ONNX Runtime (onnxruntime-node, through /work/shared/peer/ort_run.mjs)
and compares its outputs with references, for the model scripts in this folder; and
writes a test case the way tests/e2e reads it (`save_case`).

ONNX Runtime is optional: `ort_available()` is False when node, the runner or
onnxruntime-node is missing, and the scripts then skip the comparison (saying so)."""
import os
import shutil
import subprocess
import tempfile

import numpy as np

RUNNER = os.environ.get("DYNVM_ORT_RUN", "/work/shared/peer/ort_run.mjs")
ORT_DIR = os.environ.get("ORT_NODE_DIR",
                         os.path.join(os.path.expanduser("~"), ".cache", "onnxruntime-node"))


def ort_available():
    return (shutil.which("node") is not None and os.path.exists(RUNNER)
            and os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")))


def ort_run(model_path, inputs):
    """inputs: {name: np.ndarray}; returns {output name: np.ndarray}."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["node", RUNNER, model_path, "--warmup", "0", "--iters", "1", "--out-dir",
                os.path.join(tmp, "run")]
        for name, value in inputs.items():
            path = os.path.join(tmp, f"in_{name}.npy")
            np.save(path, np.array(value, order="C"))  # keeps 0-d arrays 0-d
            args += ["--input", f"{name}={path}"]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ort_run failed on {model_path}: {done.stderr.strip()}")
        out_dir = os.path.join(tmp, "run", "outputs")
        return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir)}


def compare(label, got, want, rtol=1e-4, atol=1e-6):
    """Asserts same shape and dtype kind and allclose; returns the max abs difference."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != reference {want.shape}"
    if want.dtype.kind in "iub":
        assert np.array_equal(got, want), f"{label}: {got} != reference {want}"
        return 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    assert np.allclose(got, want, rtol=rtol, atol=atol), \
        f"{label}: max abs diff {diff} exceeds rtol {rtol} / atol {atol}"
    return diff


def save_case(case_dir, inputs=None, outputs=None):
    """Writes CASE_DIR/inputs/NAME.npy and CASE_DIR/outputs/NAME.npy (C order; a 0-d
    array stays 0-d), the layout tests/e2e reads."""
    for kind, values in (("inputs", inputs), ("outputs", outputs)):
        if values is None:
            continue
        os.makedirs(os.path.join(case_dir, kind), exist_ok=True)
        for name, value in values.items():
            np.save(os.path.join(case_dir, kind, f"{name}.npy"), np.array(value, order="C"))
