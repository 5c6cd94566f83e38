#!/usr/bin/env python3
"""A pixel-shuffle super-resolution net dynvm was not written for (bench/README.md, "Session 25"):
ESPCN-style, a 5x5 conv 3 -> 64 (tanh), 3x3 convs 64 -> 64 -> 32 (ReLU), a 3x3 conv to 27
channels, PixelShuffle x3 (DepthToSpace), plus the bilinear x3 upsampling of the input.
sr.onnx with N, H, W dynamic, and references x0/y0 (1x3x64x80) and x1/y1 (1x3x240x320).
Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_superres.py DIR"""
import os, sys
import numpy as np
import torch
import torch.nn.functional as F
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
path = lambda f: os.path.join(OUT, f)
torch.manual_seed(0)
nn = torch.nn


class SuperResolution(nn.Module):
    def __init__(s, r=3):
        super().__init__()
        s.r = r
        s.c1 = nn.Conv2d(3, 64, 5, padding=2)
        s.c2 = nn.Conv2d(64, 64, 3, padding=1)
        s.c3 = nn.Conv2d(64, 32, 3, padding=1)
        s.c4 = nn.Conv2d(32, 3 * r * r, 3, padding=1)

    def forward(s, x):
        y = torch.relu(s.c3(torch.relu(s.c2(torch.tanh(s.c1(x))))))
        y = F.pixel_shuffle(s.c4(y), s.r)
        return y + F.interpolate(x, scale_factor=s.r, mode="bilinear", align_corners=False)


m = SuperResolution().eval()
torch.onnx.export(m, torch.randn(1, 3, 64, 80), path("sr.onnx"), input_names=["x"],
                  output_names=["y"], dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}},
                  opset_version=17)
with torch.no_grad():
    for i, shape in enumerate([(1, 3, 64, 80), (1, 3, 240, 320)]):
        x = torch.randn(*shape)
        np.save(path(f"x{i}.npy"), x.numpy())
        np.save(path(f"y{i}.npy"), m(x).numpy())
