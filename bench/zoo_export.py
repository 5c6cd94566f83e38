"""What the session zoos (bench/export_session28_zoo.py, bench/export_session30_zoo.py) share:
torch set up for export, and the command line that writes DIR/NAME.onnx for the models named.
A zoo's MODELS maps name -> (class, example inputs, input names, output names, dynamic axes)."""
import os
import sys
import torch

try:  # keeps nn.MultiheadAttention off its (unexportable) fast path
    torch.backends.mha.set_fastpath_enabled(False)
except Exception:
    pass


def main(models, build, argv=None):
    argv = sys.argv if argv is None else argv
    out = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name in argv[2:] or list(models):
        cls, ex, ins, outs, axes = models[name]
        m = build(name)
        # grad mode on: keeps nn.MultiheadAttention off its fast path in torch 1.13 as well
        torch.onnx.export(m, ex(), f"{out}/{name}.onnx", input_names=ins, output_names=outs,
                          dynamic_axes=axes, opset_version=17)
        print(name, sum(p.numel() for p in m.parameters()), 'params')
