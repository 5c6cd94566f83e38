"""The same .vmexe run by vmrun and from Python gives the same bits, and one compiled from
Python is the file vmc writes."""
import subprocess

import numpy as np
import pytest

import dynvm
from conftest import CORPUS_DIR, VMC, VMRUN, cases, read_npys


@pytest.mark.parametrize("name", ["gru_encoder", "transformer_encoder", "detect_and_count"])
def test_outputs_equal_vmruns_bit_for_bit(name, tmp_path):
    model = CORPUS_DIR / name / "model.onnx"
    exe_path = tmp_path / f"{name}.vmexe"
    subprocess.run([VMC, str(model), "-o", str(exe_path), "-q"], check=True)
    exe = dynvm.load(exe_path)
    for folder, inputs, _ in cases(CORPUS_DIR / name):
        out_dir = tmp_path / "out"
        args = [VMRUN, str(exe_path), "--output-dir", str(out_dir)]
        for input_name in inputs:
            args += ["--input", f"{input_name}={folder}/inputs/{input_name}.npy"]
        subprocess.run(args, check=True, capture_output=True)
        theirs = read_npys(out_dir)
        ours = exe.run(inputs)
        assert set(ours) == set(theirs), folder
        for out, value in ours.items():
            assert value.dtype == theirs[out].dtype and value.shape == theirs[out].shape
            assert value.tobytes() == theirs[out].tobytes(), f"{folder}: {out}"


def test_compiling_from_python_writes_what_vmc_writes(tmp_path):
    model = CORPUS_DIR / "cnn_text_classifier" / "model.onnx"
    subprocess.run([VMC, str(model), "-o", str(tmp_path / "vmc.vmexe"), "-q",
                    "--dim", "seq=1..512"], check=True)
    exe = dynvm.compile(model, dims={"seq": (1, 512)}, progress=False)
    exe.save(tmp_path / "python.vmexe")
    assert (tmp_path / "python.vmexe").read_bytes() == (tmp_path / "vmc.vmexe").read_bytes()
