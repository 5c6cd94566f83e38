"""The Python API's surface: what an executable says about itself, compile's inputs and
options, save and load, benchmark, sequences, and the ONNX Runtime-shaped session."""
import pathlib

import numpy as np
import pytest

import dynvm
import tiny_models
from conftest import CORPUS_DIR, cases


def test_signature_shows_symbolic_dims_and_their_ranges():
    exe = dynvm.compile(CORPUS_DIR / "cnn_text_classifier" / "model.onnx",
                        dims={"seq": (1, 512)}, progress=False)
    (tokens,) = exe.inputs
    assert tokens.name == "tokens" and tokens.dtype == "int64"
    assert tokens.shape == ["batch", "seq"]
    assert tokens.dim_ranges == {"batch": (0, None), "seq": (1, 512)}
    assert tokens.form == "tensor" and tokens.type == "tensor(int64)"
    assert repr(tokens) == "<dynvm.TensorInfo tokens: i64 [batch, seq:1..512]>"
    (logits,) = exe.outputs
    assert logits.shape == ["batch", 5] and exe.output_names == ["logits"]
    assert exe.num_kernels > 0 and exe.target and exe.producer == "vmc 0.1 from model.onnx"
    assert repr(exe).startswith("<dynvm.Executable inputs=[tokens: i64 [batch, seq:1..512]]")


def test_model_as_path_pathlike_bytes_or_modelproto_compiles_the_same():
    x = {"x": np.arange(3, dtype=np.float32)}
    for model in (tiny_models.add_one(), tiny_models.onnx_model(tiny_models.add_one),
                  bytearray(tiny_models.add_one()), memoryview(tiny_models.add_one())):
        np.testing.assert_array_equal(dynvm.compile(model, progress=False).run(x)["y"],
                                      [1, 2, 3])
    path = CORPUS_DIR / "cnn_text_classifier" / "model.onnx"
    feeds = cases(CORPUS_DIR / "cnn_text_classifier")[0][1]
    a = dynvm.compile(path, progress=False).run(feeds)["logits"]
    b = dynvm.compile(str(path), progress=False).run(feeds)["logits"]
    c = dynvm.compile(path.read_bytes(), progress=False).run(feeds)["logits"]
    assert a.tobytes() == b.tobytes() == c.tobytes()


def test_dims_forms_reach_vmc():
    # A fixed value makes the dim a constant; versions and ranges keep it a symbol.
    fixed = dynvm.compile(tiny_models.add_one(), dims={"n": 4}, progress=False)
    assert fixed.inputs[0].shape == [4]
    ranged = dynvm.compile(tiny_models.add_one(), dims={"n": range(2, 9)}, progress=False)
    assert ranged.inputs[0].dim_ranges == {"n": (2, 8)}
    with pytest.raises(dynvm.UserError, match=r"^input 'x' dim 0 \(n\) = 1 is outside the declared range 2\.\.8$"):
        ranged.run({"x": np.zeros(1, np.float32)})
    versions = dynvm.compile(tiny_models.add_one(), dims={"n": [3, 5]}, progress=False)
    np.testing.assert_array_equal(versions.run({"x": np.zeros(5, np.float32)})["y"], [1] * 5)
    static = dynvm.compile(tiny_models.add_one(), static={"x": (2,)}, progress=False)
    assert static.inputs[0].shape == [2]
    plain = dynvm.compile(tiny_models.add_one(), fuse=False, plan_memory=False,
                          rank_schedules=False, block_channels=False, winograd=False,
                          specialize={"n": [4, 8]}, progress=False)
    np.testing.assert_array_equal(plain.run({"x": np.zeros(4, np.float32)})["y"], [1] * 4)


def test_save_and_load_round_trip(tmp_path):
    exe = dynvm.compile(CORPUS_DIR / "gru_encoder" / "model.onnx", progress=False)
    exe.save(tmp_path / "m.vmexe")
    exe.save(str(tmp_path / "m2.vmexe"))
    loaded = dynvm.load(tmp_path / "m.vmexe")
    assert [i.shape for i in loaded.inputs] == [i.shape for i in exe.inputs]
    for _, inputs, _ in cases(CORPUS_DIR / "gru_encoder"):
        a, b = exe.run(inputs), loaded.run(inputs)
        assert all(a[k].tobytes() == b[k].tobytes() for k in a)


def test_benchmark_reports_latency_statistics():
    exe = dynvm.compile(tiny_models.add_one(), progress=False)
    stats = exe.benchmark({"x": np.ones(16, np.float32)}, repeat=25)
    assert stats.runs == 25
    assert 0 < stats.min_ms <= stats.median_ms <= stats.p90_ms <= stats.max_ms
    bound = exe.bind({"x": np.ones(16, np.float32)})
    assert exe.benchmark(bound, repeat=3, warmup=0, threads=1).runs == 3


def test_sequences_in_and_out():
    construct = dynvm.compile(tiny_models.construct_sequence(), progress=False)
    assert construct.outputs[0].form == "sequence"
    out = construct.run({"x": np.arange(3, dtype=np.float32)})
    assert isinstance(out["parts"], list) and len(out["parts"]) == 2
    np.testing.assert_array_equal(out["parts"][0], [0, 1, 2])
    np.testing.assert_array_equal(out["parts"][1], [0, 2, 4])
    assert out["count"].dtype == np.int64 and out["count"] == 2
    last = dynvm.compile(tiny_models.last_of_sequence(), progress=False)
    assert last.inputs[0].form == "sequence" and last.inputs[0].type == "seq(tensor(float))"
    parts = [np.ones((1, 2), np.float32), np.full((2, 2), 3, np.float32)]
    bound = last.bind({"xs": parts})
    assert bound.copies == 0 and bound.data_ptrs["xs"] == [p.ctypes.data for p in parts]
    out = last.run(bound)
    np.testing.assert_array_equal(out["y"], parts[1])
    assert not np.shares_memory(out["last"], parts[1])  # the element itself: copied
    np.testing.assert_array_equal(out["last"], parts[1])
    with pytest.raises(dynvm.UserError, match="is a sequence: give a list of arrays"):
        last.run({"xs": parts[0]})


class SessionOptions:
    intra_op_num_threads = 1


def test_inference_session_runs_like_onnx_runtime(tmp_path):
    path = CORPUS_DIR / "detect_and_count" / "model.onnx"
    sess = dynvm.InferenceSession(str(path), SessionOptions(),
                                  providers=["CPUExecutionProvider"], progress=False)
    names = [o.name for o in sess.get_outputs()]
    assert len(names) >= 2 and sess.get_providers()
    for _, inputs, refs in cases(CORPUS_DIR / "detect_and_count"):
        every = sess.run(None, inputs)
        assert [e.shape for e in every] == [refs[n].shape for n in names]
        reversed_pick = sess.run(names[::-1], inputs)
        assert [r.tobytes() for r in reversed_pick] == [e.tobytes() for e in every[::-1]]
    sess.executable.save(tmp_path / "d.vmexe")
    loaded = dynvm.InferenceSession(tmp_path / "d.vmexe")
    assert [o.name for o in loaded.get_outputs()] == names
