"""dynvm.InferenceSession: ONNX Runtime's InferenceSession interface over an Executable, so
that code written for ONNX Runtime switches by changing one line:

    sess = dynvm.InferenceSession("model.onnx")   # was onnxruntime.InferenceSession(...)
    outputs = sess.run(None, {"x": x})
"""

import os

from . import _core


class InferenceSession:
    """Compiles (an .onnx path, bytes or ModelProto) or loads (a .vmexe path) a model.

    sess_options: an onnxruntime.SessionOptions-like object; its intra_op_num_threads,
    when above 0, sets the threads each run uses. providers is accepted and ignored:
    dynvm runs on its own kernels. Other keyword arguments go to dynvm.compile
    (dims=..., tuning_log=..., ...).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 threads=None, **compile_options):
        from . import compile as _compile_model

        if hasattr(path_or_bytes, "SerializeToString"):
            path_or_bytes = path_or_bytes.SerializeToString()
        if isinstance(path_or_bytes, (str, os.PathLike)) and \
                os.fspath(path_or_bytes).endswith(".vmexe"):
            if compile_options:
                raise _core.UserError(
                    "a .vmexe is already compiled; compile options do not apply: "
                    + ", ".join(sorted(compile_options)))
            self._exe = _core.load(path_or_bytes)
        else:
            self._exe = _compile_model(path_or_bytes, **compile_options)
        self._threads = threads
        n = getattr(sess_options, "intra_op_num_threads", 0) if sess_options is not None else 0
        if threads is None and n and n > 0:
            self._threads = int(n)

    @property
    def executable(self):
        """The dynvm.Executable this session runs."""
        return self._exe

    def get_inputs(self):
        return self._exe.inputs

    def get_outputs(self):
        return self._exe.outputs

    def get_providers(self):
        return ["DynvmCPU"]

    def run(self, output_names, input_feed, run_options=None):
        """Returns the outputs named in `output_names` (all of them for None or []), in
        that order, as a list."""
        results = self._exe.run(input_feed, self._threads)
        if not output_names:
            return list(results.values())
        missing = [n for n in output_names if n not in results]
        if missing:
            raise _core.UserError(
                f"unknown output '{missing[0]}'; the model's outputs are: "
                + ", ".join(results))
        return [results[n] for n in output_names]
