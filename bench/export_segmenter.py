#!/usr/bin/env python3
"""A small segmentation CNN as U-Net exports write it (N, H, W dynamic), exported from PyTorch
with reference outputs at three sizes: a model dynvm was not written for (bench/README.md,
"Session 15"). A stride-2 stem, depthwise-separable blocks with BatchNorm and Hardswish, two
ConvTranspose x2 upsamplings cropped to the skip's size (`up(c)[:, :, :b.shape[2],
:b.shape[3]]`: Slices whose ends come from Shape -> Gather -> Unsqueeze) and a softmax over
the channels. Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_segmenter.py DIR   (writes seg.onnx, x{0,1,2}.npy, y*.npy)"""
import os, sys
import numpy as np
import torch
import torch.nn as nn
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(5)
def dsep(cin, cout, s):
    return nn.Sequential(nn.Conv2d(cin, cin, 3, s, 1, groups=cin), nn.BatchNorm2d(cin), nn.Hardswish(),
                         nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU())
class Seg(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU())
        s.b1 = dsep(16, 32, 2); s.b2 = dsep(32, 64, 2); s.b3 = dsep(64, 64, 1)
        s.up1 = nn.ConvTranspose2d(64, 32, 2, 2); s.up2 = nn.ConvTranspose2d(32, 16, 2, 2)
        s.head = nn.Conv2d(16, 2, 1)
    def forward(s, x):
        a = s.stem(x); b = s.b1(a); c = s.b3(s.b2(b))
        u = torch.relu(s.up1(c)[:, :, :b.shape[2], :b.shape[3]] + b)
        v = torch.relu(s.up2(u)[:, :, :a.shape[2], :a.shape[3]])
        return torch.softmax(s.head(v), dim=1)
m = Seg().eval()
for mod in m.modules():
    if isinstance(mod, nn.BatchNorm2d):
        mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
torch.onnx.export(m, torch.randn(1, 3, 64, 64), os.path.join(OUT, "seg.onnx"), input_names=["x"],
                  output_names=["y"], opset_version=13,
                  dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}, "y": {0: "n", 2: "oh", 3: "ow"}})
for i, shape in enumerate([(1, 3, 100, 150), (2, 3, 72, 200), (1, 3, 320, 480)]):
    x = torch.randn(*shape)
    with torch.no_grad(): y = m(x)
    np.save(os.path.join(OUT, f"x{i}.npy"), x.numpy()); np.save(os.path.join(OUT, f"y{i}.npy"), y.numpy())
