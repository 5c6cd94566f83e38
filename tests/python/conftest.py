"""Shared helpers of the Python tests: where things are, the test models' cases, and the
comparison every model test uses (the end-to-end tests' tolerance: rtol 1e-3, atol 1e-4,
integers and shapes exactly).

ctest runs these with PYTHONPATH=build/python and the tools' paths in VMC and VMRUN; run
them by hand the same way:

    PYTHONPATH=build/python VMC=build/tools/vmc VMRUN=build/tools/vmrun \
        /usr/bin/python3 -m pytest tests/python
"""
import glob
import os
import pathlib

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
BUILD_DIR = SOURCE_DIR / "build"
VMC = os.environ.get("VMC", str(BUILD_DIR / "tools" / "vmc"))
VMRUN = os.environ.get("VMRUN", str(BUILD_DIR / "tools" / "vmrun"))
MODELS = SOURCE_DIR / "tests" / "e2e" / "models"
CORPUS_DIR = MODELS / "dynamic"
REAL_MODELS = pathlib.Path(os.environ.get("DYNVM_MODELS_DIR", SOURCE_DIR / ".models"))


def read_npys(folder):
    return {pathlib.Path(f).stem: np.load(f) for f in sorted(glob.glob(f"{folder}/*.npy"))}


def cases(model_dir):
    """[(case folder, inputs, reference outputs)] of a model of tests/e2e/models."""
    out = []
    for c in sorted(glob.glob(f"{model_dir}/cases/*"), key=lambda p: int(pathlib.Path(p).name)):
        out.append((c, read_npys(f"{c}/inputs"), read_npys(f"{c}/outputs")))
    return out


def assert_matches(got, want, what):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.fixture(scope="session")
def compiled():
    """compiled(path, **options): dynvm.compile, once per model and options in a session."""
    import dynvm

    cache = {}

    def get(path, **options):
        key = (str(path), repr(sorted(options.items())))
        if key not in cache:
            cache[key] = dynvm.compile(str(path), progress=False, **options)
        return cache[key]

    return get
