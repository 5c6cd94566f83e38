"""Every error is a Python exception with the one-line message the tools print: a
dynvm.UserError (also a ValueError) for the user's model, input, option or file."""
import os
import subprocess

import numpy as np
import pytest

import dynvm
import tiny_models
from conftest import CORPUS_DIR, VMRUN


@pytest.fixture(scope="module")
def add_one(tmp_path_factory):
    exe = dynvm.compile(tiny_models.add_one(), dims={"n": (1, 8)}, progress=False)
    path = tmp_path_factory.mktemp("exe") / "add_one.vmexe"
    exe.save(path)
    return exe, path


def raises(match, fn, *args, **kwargs):
    with pytest.raises(dynvm.UserError, match=match) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, dynvm.Error)
    assert "\n" not in str(info.value)
    return str(info.value)


def vmrun_error(*args):
    r = subprocess.run([VMRUN, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 1, r
    line = r.stderr.strip()
    assert line.startswith("vmrun: ") and "\n" not in line, line
    return line[len("vmrun: "):]


def test_run_errors_name_the_input(add_one):
    exe, _ = add_one
    raises(r"^unknown input 'y'; the model's inputs are: x$", exe.run, {"y": [1.0]})
    raises(r"^missing input 'x' \(x: f32 \[n:1\.\.8\]\)$", exe.run, {})
    raises(r"takes 1 input \(x\), and 2 were given", exe.run, [[1.0], [2.0]])
    raises(r"inputs are a dict of name to array or a list", exe.run, "x")
    raises(r"input names are strings", exe.run, {1: [1.0]})
    raises(r"input 'x' is None", exe.run, {"x": None})
    raises(r"input 'x' has NumPy dtype object", exe.run, {"x": np.array([object()])})
    raises(r"input 'x' cannot be made an array", exe.run, {"x": [[1.0], [1.0, 2.0]]})
    raises(r"threads must be at least 1", exe.run, {"x": [1.0]}, threads=0)
    raises(r"repeat must be at least 1", exe.benchmark, {"x": [1.0]}, repeat=0)


def test_run_errors_are_vmruns_messages(add_one, tmp_path):
    exe, path = add_one
    for value in (np.zeros(3, np.int64), np.zeros((2, 2), np.float32),
                  np.zeros(9, np.float32)):
        np.save(tmp_path / "x.npy", value)
        expected = vmrun_error(path, "--input", f"x={tmp_path}/x.npy")
        assert raises("", exe.run, {"x": value}) == expected


def test_load_errors_are_vmruns_messages(tmp_path, add_one):
    _, path = add_one
    data = path.read_bytes()
    truncated = tmp_path / "truncated.vmexe"
    truncated.write_bytes(data[: len(data) // 2])
    flipped = tmp_path / "flipped.vmexe"
    flipped.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    for bad in (tmp_path / "missing.vmexe", truncated, flipped, CORPUS_DIR / "gru_encoder"):
        expected = vmrun_error(bad)
        assert raises("", dynvm.load, bad) == expected, bad


def test_compile_errors(tmp_path):
    raises(r"cannot open", dynvm.compile, tmp_path / "missing.onnx")
    raises(r"not an ONNX model", dynvm.compile, b"not a model")
    raises(r"the model's bytes are empty", dynvm.compile, b"")
    raises(r"--dim zzz: the model has no symbolic dim", dynvm.compile,
           tiny_models.add_one(), dims={"zzz": (1, 4)})
    raises(r"--dim n: empty or negative range 5\.\.3", dynvm.compile, tiny_models.add_one(),
           dims={"n": (5, 3)})
    raises(r"a range is \(min, max\)", dynvm.compile, tiny_models.add_one(), dims={"n": (1,)})
    raises(r"cannot open", dynvm.compile, tiny_models.add_one(), tuning_log=tmp_path / "none")
    with pytest.raises(TypeError):
        dynvm.compile(tiny_models.add_one(), no_such_option=1)


def test_session_and_binding_errors(add_one, tmp_path):
    exe, path = add_one
    other = dynvm.compile(tiny_models.add_one(), progress=False)
    raises(r"bound for another executable", other.run, exe.bind({"x": [1.0]}))
    sess = dynvm.InferenceSession(path)
    raises(r"unknown output 'nope'; the model's outputs are: y", sess.run, ["nope"],
           {"x": [1.0]})
    raises(r"compile options do not apply: dims", dynvm.InferenceSession, path,
           dims={"n": 2})
    raises(r"cannot write", exe.save, tmp_path / "no" / "such" / "dir.vmexe")
    assert not os.path.exists(tmp_path / "no")
