#!/usr/bin/python3
"""The NumPy side of dynvm's .npy tests (run with Debian's /usr/bin/python3 + python3-numpy).

  npy_numpy.py write DIR   NumPy writes the samples (and format variants) into DIR, for
                           npy_test to read and compare against values it computes itself.
  npy_numpy.py check DIR   NumPy reads the files dynvm wrote into DIR and compares them
                           against the values computed here.

The sample list and value formulas mirror tests/tools/npy_samples.h.
"""
import os
import sys

import numpy as np

SAMPLES = [
    ("f32_2x3", "<f4", (2, 3)),
    ("f64_5", "<f8", (5,)),
    ("f16_4x2", "<f2", (4, 2)),
    ("i8_7", "|i1", (7,)),
    ("i16_3x3", "<i2", (3, 3)),
    ("i32_2x2x2", "<i4", (2, 2, 2)),
    ("i64_6", "<i8", (6,)),
    ("u8_10", "|u1", (10,)),
    ("u16_4", "<u2", (4,)),
    ("u32_3", "<u4", (3,)),
    ("u64_5", "<u8", (5,)),
    ("bool_9", "|b1", (9,)),
    ("c64_3", "<c8", (3,)),
    ("c128_2", "<c16", (2,)),
    ("f32_scalar", "<f4", ()),
    ("i64_empty_0x3", "<i8", (0, 3)),
    ("f32_empty_0", "<f4", (0,)),
    ("i32_2x1x3x2", "<i4", (2, 1, 3, 2)),
    ("f32_3x300x100", "<f4", (3, 300, 100)),
]

MULTIPLIERS = {8: 37, 16: 4099, 32: 2654435761, 64: 0x9E3779B97F4A7C15}


def expected(descr, shape):
    dtype = np.dtype(descr)
    n = int(np.prod(shape, dtype=np.int64))
    i = list(range(n))
    if dtype.kind == "f":
        values = [(k - 3) * 0.25 for k in i]
    elif dtype.kind == "c":
        values = [complex((k - 3) * 0.25, k * 0.5) for k in i]
    elif dtype.kind in "iu":
        bits = dtype.itemsize * 8
        offset = 2 ** (bits - 1) if dtype.kind == "i" else 0
        values = [(k * MULTIPLIERS[bits]) % 2**bits - offset for k in i]
    elif dtype.kind == "b":
        values = [k % 3 == 0 for k in i]
    else:
        raise ValueError(descr)
    return np.array(values, dtype=dtype.newbyteorder("<")).reshape(shape)


def write(directory):
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name + ".npy")
    for name, descr, shape in SAMPLES:
        np.save(path(name), expected(descr, shape))
    a = expected("<f4", (2, 3))
    for version in [(2, 0), (3, 0)]:
        with open(path("v%d_f32_2x3" % version[0]), "wb") as f:
            np.lib.format.write_array(f, a, version=version)
    # Big-endian data: the reader byte-swaps it.
    for name, descr, shape in [("big_i32_2x2x2", "<i4", (2, 2, 2)), ("big_f64_5", "<f8", (5,)),
                               ("big_c128_2", "<c16", (2,)), ("big_u16_4", "<u2", (4,))]:
        np.save(path(name), expected(descr, shape).astype(np.dtype(descr).newbyteorder(">")))
    # Fortran order: refused for a true 2-d layout, read when it equals C order.
    np.save(path("fortran_f32_2x3"), np.asfortranarray(a))
    with open(path("fortran_f32_1x5"), "wb") as f:
        header = {"descr": "<f4", "fortran_order": True, "shape": (1, 5)}
        np.lib.format.write_array_header_1_0(f, header)
        f.write(expected("<f4", (1, 5)).tobytes())
    # Types dynvm has no equivalent for.
    np.save(path("unsupported_structured"), np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]))
    np.save(path("unsupported_unicode"), np.array(["ab", "c"]))
    np.save(path("unsupported_object"), np.array([1, "x", None], dtype=object),
            allow_pickle=True)
    np.save(path("unsupported_datetime"), np.array(["2024-01-01"], dtype="datetime64[D]"))


def check(directory):
    failures = []
    for name, descr, shape in SAMPLES:
        file = os.path.join(directory, name + ".npy")
        want = expected(descr, shape)
        try:
            with open(file, "rb") as f:
                version = np.lib.format.read_magic(f)
                np.lib.format._check_version(version)
                header = np.lib.format._read_array_header(f, version)
                if f.tell() % 64 != 0:
                    failures.append("%s: data starts at %d, not 64-byte aligned" % (name, f.tell()))
                if header[1]:
                    failures.append("%s: written in Fortran order" % name)
            got = np.load(file, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 -- any failure to read is a test failure
            failures.append("%s: numpy cannot read it: %s" % (name, e))
            continue
        if got.dtype != want.dtype:
            failures.append("%s: dtype %s, want %s" % (name, got.dtype, want.dtype))
        elif got.shape != want.shape:
            failures.append("%s: shape %s, want %s" % (name, got.shape, want.shape))
        elif not np.array_equal(got, want):
            failures.append("%s: values differ: %s vs %s"
                            % (name, got.ravel()[:8], want.ravel()[:8]))
    for failure in failures:
        print("FAIL " + failure)
    print("%d of %d files as expected" % (len(SAMPLES) - len(failures), len(SAMPLES)))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit("usage: npy_numpy.py write|check DIR")
    if sys.argv[1] == "write":
        write(sys.argv[2])
        sys.exit(0)
    sys.exit(check(sys.argv[2]))
