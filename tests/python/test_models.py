"""Real and PyTorch-exported models compiled and run from Python, against references from
PyTorch and ONNX Runtime (tests/e2e/models; the same cases the C++ end-to-end tests use)."""
import pathlib

import numpy as np
import pytest

import dynvm
from conftest import MODELS, REAL_MODELS, assert_matches, cases

CORPUS = MODELS / "dynamic"
EXPECTED_FAILURES = {
    line.split(" ", 1)[0]
    for line in (CORPUS / "expected_failures.txt").read_text().splitlines()
    if line and not line.startswith("#")
}
CORPUS_MODELS = sorted(p.name for p in CORPUS.iterdir()
                       if p.is_dir() and p.name not in EXPECTED_FAILURES)


@pytest.mark.parametrize("name", CORPUS_MODELS)
def test_dynamic_corpus_matches_pytorch(name, compiled):
    """Compiled once with no options; every case (empty results included) matches."""
    exe = compiled(CORPUS / name / "model.onnx")
    for folder, inputs, refs in cases(CORPUS / name):
        got = exe.run(inputs)
        assert list(got) == list(refs) or set(got) == set(refs), folder
        for out, want in refs.items():
            assert_matches(got[out], want, f"{folder}: {out}")


@pytest.mark.parametrize("name", ["lstm_bidirectional", "gru_reverse_lbr", "greedy_decoder"])
def test_recurrent_models_match_onnx_runtime_and_pytorch(name, compiled):
    exe = compiled(MODELS / name / "model.onnx")
    for folder, inputs, refs in cases(MODELS / name):
        got = exe.run(inputs)
        for out, want in refs.items():
            assert_matches(got[out], want, f"{folder}: {out}")


def test_silero_vad_streams_like_onnx_runtime_through_inference_session():
    """The ONNX Runtime-shaped API on a real model: Silero VAD v5, one executable for both
    sample rates (the chunk length versioned), each chunk fed the state our previous chunk
    produced; output and state match ONNX Runtime's stream."""
    model = REAL_MODELS / "silero_vad_v5.onnx"
    if not model.exists():
        pytest.fail(f"{model} is missing: run make models")
    sess = dynvm.InferenceSession(str(model), dims={"input_0": (1, 16), "input_1": [256, 512],
                                                    "state_1": "input_0"}, progress=False)
    assert [i.name for i in sess.get_inputs()] == ["input", "state", "sr"]
    assert sess.get_inputs()[0].type == "tensor(float)"
    all_cases = cases(MODELS / "silero_vad")
    for first in (0, 6):
        state = None
        for k in range(first, first + 6):
            folder, inputs, refs = all_cases[k]
            if (k - first) % 3 == 0:
                state = inputs["state"]  # a new stream
            output, state_n = sess.run(["output", "stateN"],
                                       {"input": inputs["input"], "state": state,
                                        "sr": inputs["sr"]})
            assert_matches(output, refs["output"], f"{folder}: output")
            assert_matches(state_n, refs["stateN"], f"{folder}: stateN")
            state = state_n
