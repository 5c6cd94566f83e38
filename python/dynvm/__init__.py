"""dynvm: compile a dynamic ONNX model once, run it at every input size.

    import dynvm, numpy as np
    exe = dynvm.compile("rec.onnx", dims={"x_3": (32, 2048)})
    out = exe.run({"x": np.random.rand(1, 3, 48, 320).astype(np.float32)})
    exe.save("rec.vmexe")                      # vmrun and dynvm.load read it

    sess = dynvm.InferenceSession("rec.onnx")  # code written for ONNX Runtime
    (y,) = sess.run(None, {"x": x})

See docs/python.md.
"""

import os as _os

from ._core import (
    Error,
    Executable,
    LatencyStats,
    Tensor,
    TensorInfo,
    UserError,
    __version__,
    format_version,
    load,
)
from ._core import _compile
from .session import InferenceSession

__all__ = [
    "Error", "Executable", "InferenceSession", "LatencyStats", "Tensor", "TensorInfo",
    "UserError", "compile", "load", "__version__",
]


def _dim_arg(name, value):
    if isinstance(value, str):  # the same dim as another
        return f"{name}={value}"
    if isinstance(value, tuple):
        if len(value) != 2:
            raise UserError(f"dims[{name!r}]: a range is (min, max), got {value!r}")
        return f"{name}={int(value[0])}..{int(value[1])}"
    if isinstance(value, range):
        if value.step != 1 or len(value) == 0:
            raise UserError(f"dims[{name!r}]: a range must be non-empty with step 1, got {value!r}")
        return f"{name}={value.start}..{value.stop - 1}"
    if isinstance(value, list):
        return f"{name}=" + ",".join(str(int(v)) for v in value)
    return f"{name}={int(value)}"


def _vmc_args(dims, static, specialize, specialize_from, tuning_log, cost_model,
              rank_schedules, fuse, plan_memory, block_channels=True, winograd=True):
    args = []
    for name, value in (dims or {}).items():
        args += ["--dim", _dim_arg(name, value)]
    for name, shape in (static or {}).items():
        args += ["--static", f"{name}=" + "x".join(str(int(d)) for d in shape)]
    for name, values in (specialize or {}).items():
        for v in values if isinstance(values, (list, tuple)) else [values]:
            args += ["--specialize", f"{name}={int(v)}"]
    if specialize_from is not None:
        args += ["--specialize-from", _os.fspath(specialize_from)]
    if tuning_log is not None:
        args += ["--tuning-log", _os.fspath(tuning_log)]
    if cost_model is not None:
        args += ["--cost-model", _os.fspath(cost_model)]
    if not rank_schedules:
        args.append("--no-cost-model")
    if not fuse:
        args.append("--no-fuse")
    if not plan_memory:
        args.append("--no-plan-memory")
    if not block_channels:
        args.append("--no-block-channels")
    if not winograd:
        args.append("--no-winograd")
    return args


def compile(model, dims=None, static=None, specialize=None, specialize_from=None,
            tuning_log=None, cost_model=None, rank_schedules=True, fuse=True,
            plan_memory=True, progress=True, block_channels=True, winograd=True):
    """Compiles an ONNX model into an Executable, as `vmc` does.

    model            a path to an .onnx file, the model's bytes, or an onnx.ModelProto
    dims             {dim: range}: (lo, hi) or range(lo, hi + 1) bounds a symbolic dim
                     (vmc --dim NAME=LO..HI), an int fixes it, a list [v1, v2] compiles one
                     version per value (NAME=V1,V2), a str makes it the same dim as another
    static           {input: shape}: compile that input for exactly one shape (--static)
    specialize       {dim: value or [values]}: extra kernel variants (--specialize)
    specialize_from  a shapes file vmserve wrote, "FILE" or "FILE:MODEL"
    tuning_log       vmtune's records (--tuning-log)
    cost_model       a cost model from vmtune --fit-model (--cost-model)
    rank_schedules   False keeps every template's default schedule (--no-cost-model)
    fuse, plan_memory  False turns fusion or memory planning off (--no-fuse, ...)
    block_channels   False keeps depthwise-separable convs in NCHW (--no-block-channels)
    winograd         False runs blocked 3x3 convs directly, not by Winograd (--no-winograd)
    progress         show kernel compilation progress on stderr when it is a terminal

    Raises dynvm.UserError (a ValueError) with vmc's one-line message for a model or an
    option vmc would reject.
    """
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        model = model.SerializeToString()
    elif isinstance(model, (bytearray, memoryview)):
        model = bytes(model)
    args = _vmc_args(dims, static, specialize, specialize_from, tuning_log, cost_model,
                     rank_schedules, fuse, plan_memory, block_channels, winograd)
    return _compile(model, args, bool(progress))
