#!/usr/bin/env python3
"""A MobileNetV3-style classifier (N, H, W dynamic), exported from PyTorch with reference outputs
at three sizes: a model dynvm was not written for (bench/README.md, "Session 15"). Inverted
residual blocks (pointwise expansion, 3x3 depthwise, stride 1 or 2, Hardswish, BatchNorm),
squeeze-and-excitation (ReduceMean -> 1x1 convs -> HardSigmoid -> Mul), a global average pool
and a Linear head. Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_mobilenet.py DIR   (writes mnv.onnx, x{0,1,2}.npy, y*.npy)"""
import os, sys
import numpy as np
import torch
import torch.nn as nn
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(3)
class SE(nn.Module):
    def __init__(s, c):
        super().__init__(); s.f1 = nn.Conv2d(c, c // 4, 1); s.f2 = nn.Conv2d(c // 4, c, 1)
    def forward(s, x):
        w = x.mean((2, 3), keepdim=True)
        return x * nn.functional.hardsigmoid(s.f2(torch.relu(s.f1(w))))
class IR(nn.Module):
    def __init__(s, cin, cout, stride, exp, se):
        super().__init__()
        mid = cin * exp
        s.use_res = stride == 1 and cin == cout
        layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish(),
                  nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.Hardswish()]
        if se: layers.append(SE(mid))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        s.body = nn.Sequential(*layers)
    def forward(s, x):
        y = s.body(x)
        return x + y if s.use_res else y
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        cfg = [(16, 24, 2, 4, False), (24, 24, 1, 3, False), (24, 40, 2, 3, True), (40, 40, 1, 3, True),
               (40, 80, 2, 6, False), (80, 80, 1, 2, False), (80, 112, 1, 6, True), (112, 160, 2, 6, True)]
        s.blocks = nn.Sequential(*[IR(*c) for c in cfg])
        s.head = nn.Sequential(nn.Conv2d(160, 480, 1), nn.Hardswish())
        s.fc = nn.Linear(480, 100)
    def forward(s, x):
        x = s.head(s.blocks(s.stem(x)))
        return s.fc(x.mean((2, 3)))
m = Net().eval()
for mod in m.modules():
    if isinstance(mod, nn.BatchNorm2d):
        mod.running_mean.uniform_(-0.1, 0.1); mod.running_var.uniform_(0.5, 1.5)
torch.onnx.export(m, torch.randn(1, 3, 224, 224), os.path.join(OUT, "mnv.onnx"), input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}, "y": {0: "n"}}, opset_version=13)
for i, shape in enumerate([(1, 3, 224, 224), (4, 3, 160, 160), (1, 3, 300, 200)]):
    x = torch.randn(*shape)
    with torch.no_grad(): y = m(x)
    np.save(os.path.join(OUT, f"x{i}.npy"), x.numpy()); np.save(os.path.join(OUT, f"y{i}.npy"), y.numpy())
