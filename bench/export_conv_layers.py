#!/usr/bin/env python3
"""Single-layer ONNX models for the session-14 kernel table in bench/README.md.

    /usr/bin/python3 bench/export_conv_layers.py DIR

writes DIR/{ct,dw,dw2,dw3}.onnx (N, H, W dynamic), exported from PyTorch:
  ct   ConvTranspose 24 -> 24 channels, kernel = stride = 2 (det's upsampling)
  dw   depthwise 5x5, 192 channels, + ReLU
  dw2  depthwise 5x5 stride 2, 192 channels, + ReLU
  dw3  depthwise 3x3 stride 2, 32 channels, + ReLU
Measure each with `vmbench MODEL --sizes 'x=1xCxHxW' --ort` or vmrun --repeat.
"""
import os
import sys

import torch
import torch.nn as nn


class Depthwise(nn.Module):
    def __init__(self, channels, kernel, stride):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel, stride=stride, padding=kernel // 2,
                              groups=channels)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Upsample(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(24, 24, 2, stride=2)

    def forward(self, x):
        return self.conv(x)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_conv_layers.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    layers = [("ct", Upsample(), 24), ("dw", Depthwise(192, 5, 1), 192),
              ("dw2", Depthwise(192, 5, 2), 192), ("dw3", Depthwise(32, 3, 2), 32)]
    for name, model, channels in layers:
        torch.onnx.export(model.eval(), torch.randn(1, channels, 6, 10),
                          os.path.join(out, name + ".onnx"), input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}},
                          opset_version=13)
        print(os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
