"""Inputs are read where the caller keeps them, outputs are handed over without a copy,
and neither lets one value change another: checked through data pointers and mutation."""
import gc

import numpy as np
import pytest

import dynvm
import tiny_models


@pytest.fixture(scope="module")
def add_one():
    return dynvm.compile(tiny_models.add_one(), progress=False)


@pytest.fixture(scope="module")
def add_rows():
    return dynvm.compile(tiny_models.add_rows(), progress=False)


def test_contiguous_input_is_read_in_place(add_one):
    x = np.arange(6, dtype=np.float32)
    bound = add_one.bind({"x": x})
    assert bound.copies == 0
    assert bound.data_ptrs == {"x": x.ctypes.data}
    y = add_one.run(bound)["y"]
    np.testing.assert_array_equal(y, x + 1)
    # A read-only array is borrowed too: the VM never writes its inputs.
    x.setflags(write=False)
    assert add_one.bind({"x": x}).data_ptrs == {"x": x.ctypes.data}
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32))


def test_mutating_the_input_after_run_leaves_the_outputs(add_one):
    x = np.arange(4, dtype=np.float32)
    y = add_one.run({"x": x})["y"]
    x[:] = -100
    np.testing.assert_array_equal(y, [1, 2, 3, 4])


def test_strided_fortran_and_big_endian_inputs_are_copied(add_rows):
    base = np.arange(24, dtype=np.float32).reshape(8, 3)
    want = base[::2] + [1, 2, 3]
    for x in (base[::2], np.asfortranarray(base[::2]), base[::2].astype(">f4")):
        bound = add_rows.bind({"x": x})
        assert bound.copies == 1
        assert bound.data_ptrs["x"] != x.ctypes.data
        np.testing.assert_array_equal(add_rows.run(bound)["y"], want)


def test_misaligned_input_is_copied(add_one):
    raw = np.zeros(4 * 5 + 1, np.uint8)
    x = raw[1:].view(np.float32)  # 1 byte off a float's alignment
    x[:] = [1, 2, 3, 4, 5]
    bound = add_one.bind({"x": x})
    assert bound.copies == 1
    np.testing.assert_array_equal(add_one.run(bound)["y"], [2, 3, 4, 5, 6])


def test_lists_and_numbers_take_the_inputs_dtype(add_one):
    np.testing.assert_array_equal(add_one.run({"x": [1, 2, 3]})["y"], [2, 3, 4])
    np.testing.assert_array_equal(add_one.run([[0.5]])["y"], [1.5])


def test_outputs_are_numpy_arrays_over_dynvms_buffer(add_one):
    y = add_one.run({"x": np.ones(3, np.float32)})["y"]
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    assert not y.flags["OWNDATA"]  # a view of the VM's buffer, kept alive by the array
    assert np.asarray(y).ctypes.data == y.ctypes.data
    assert y.__dlpack_device__() == (1, 0)
    z = np.from_dlpack(y)
    assert z.ctypes.data == y.ctypes.data
    del z
    gc.collect()
    np.testing.assert_array_equal(y, [2, 2, 2])


def test_outputs_that_would_alias_an_input_are_copied():
    exe = dynvm.compile(tiny_models.identity_twice(), progress=False)
    x = np.arange(5, dtype=np.float32)
    out = exe.run({"x": x})
    y, z = out["y"], out["z"]
    assert not np.shares_memory(y, x) and not np.shares_memory(z, x)
    assert not np.shares_memory(y, z)
    x[:] = 0
    np.testing.assert_array_equal(y, np.arange(5))
    np.testing.assert_array_equal(z, np.arange(5))


def test_a_constant_output_cannot_be_changed_through_the_result():
    exe = dynvm.compile(tiny_models.constant_output(), progress=False)
    x = np.ones(2, np.float32)
    c = exe.run({"x": x})["out_c"]
    np.testing.assert_array_equal(c, [1, 2, 3])
    c[:] = 0
    np.testing.assert_array_equal(exe.run({"x": x})["out_c"], [1, 2, 3])


class DLPackOnly:
    """A producer that offers nothing but the DLPack protocol (as a GPU library's or a
    framework's tensor would), over a NumPy array."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_producer_is_borrowed_and_kept_alive(add_one):
    x = np.arange(5, dtype=np.float32)
    address = x.ctypes.data
    bound = add_one.bind({"x": DLPackOnly(x)})
    assert bound.copies == 0
    assert bound.data_ptrs == {"x": address}
    del x
    gc.collect()  # the bound inputs hold the capsule, which holds the array
    np.testing.assert_array_equal(add_one.run(bound)["y"], [1, 2, 3, 4, 5])
    # A strided producer is read through NumPy and copied once.
    strided = np.arange(10, dtype=np.float32)[::2]
    bound = add_one.bind({"x": DLPackOnly(strided)})
    assert bound.copies == 1
    np.testing.assert_array_equal(add_one.run(bound)["y"], strided + 1)


def test_bfloat16_output_is_a_dlpack_tensor():
    exe = dynvm.compile(tiny_models.to_bfloat16(), progress=False)
    t = exe.run({"x": np.array([1.0, -2.5, 3.0], np.float32)})["y"]
    assert isinstance(t, dynvm.Tensor)
    assert t.shape == (3,) and t.dtype == "bfloat16"
    assert t.__dlpack_device__() == (1, 0)
    assert "dltensor" in repr(t.__dlpack__())
    torch = pytest.importorskip("torch")
    assert torch.from_dlpack(t).float().tolist() == [1.0, -2.5, 3.0]


def test_torch_tensors_round_trip_through_dlpack(add_rows):
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    bound = add_rows.bind({"x": x})
    assert bound.copies == 0 and bound.data_ptrs == {"x": x.data_ptr()}
    y = add_rows.run(bound)["y"]
    yt = torch.from_dlpack(y)
    assert yt.data_ptr() == y.ctypes.data  # no copy on the way out either
    assert torch.equal(yt, x + torch.tensor([1.0, 2.0, 3.0]))
    # A transposed view is not row-major: copied, and still right.
    xt = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    bound = add_rows.bind({"x": xt})
    assert bound.copies == 1
    assert torch.equal(torch.from_dlpack(add_rows.run(bound)["y"]),
                       xt + torch.tensor([1.0, 2.0, 3.0]))
