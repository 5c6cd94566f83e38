#!/usr/bin/env python3
"""Dense-conv CNNs with strided stages dynvm was not written for (bench/README.md, "Session 24"):
a RegNetX-style net (3x3 stride-2 stem, X blocks of 1x1 -> 3x3 group conv of group width 16 ->
1x1 with 1x1 stride-2 shortcuts, BatchNorm, mean pool, Linear; regnet.onnx with a reference at
1x3x64x96) and a small ResNet (7x7 stride-2 stem, max pool, four basic blocks; resnet.onnx).
N, H, W dynamic. Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_regnet.py DIR"""
import os, sys
import numpy as np
import torch
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
path = lambda f: os.path.join(OUT, f)
torch.manual_seed(2)
nn = torch.nn
def cbr(i, o, k=1, s=1, g=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o), nn.ReLU())
class XBlock(nn.Module):
    def __init__(s, i, o, stride, gw=16):
        super().__init__()
        s.a = cbr(i, o); s.b = cbr(o, o, 3, stride, o // gw)
        s.c = nn.Sequential(nn.Conv2d(o, o, 1, bias=False), nn.BatchNorm2d(o))
        s.proj = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o)) if (i != o or stride != 1) else None
    def forward(s, x):
        r = x if s.proj is None else s.proj(x)
        return torch.relu(s.c(s.b(s.a(x))) + r)
class RegNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = cbr(3, 32, 3, 2)
        layers = []; c = 32
        for o, d in [(32, 1), (64, 2), (160, 3), (384, 2)]:
            for j in range(d):
                layers.append(XBlock(c, o, 2 if j == 0 else 1)); c = o
        s.body = nn.Sequential(*layers)
        s.fc = nn.Linear(c, 100)
    def forward(s, x):
        return s.fc(s.body(s.stem(x)).mean((2, 3)))
m = RegNet().eval()
for mod in m.modules():
    if isinstance(mod, nn.BatchNorm2d):
        mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
x = torch.randn(1, 3, 64, 96)
torch.onnx.export(m, (x,), path("regnet.onnx"), input_names=["x"], output_names=["y"],
    dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}, "y": {0: "b"}}, opset_version=17)
np.save(path("regnet_x.npy"), x.numpy()); np.save(path("regnet_y.npy"), m(x).detach().numpy())

class Basic(nn.Module):
    def __init__(s, i, o, st):
        super().__init__()
        s.c1 = nn.Conv2d(i, o, 3, st, 1, bias=False); s.b1 = nn.BatchNorm2d(o)
        s.c2 = nn.Conv2d(o, o, 3, 1, 1, bias=False); s.b2 = nn.BatchNorm2d(o)
        s.sc = nn.Sequential(nn.Conv2d(i, o, 1, st, bias=False), nn.BatchNorm2d(o)) if st != 1 or i != o else nn.Identity()
    def forward(s, x):
        return torch.relu(s.b2(s.c2(torch.relu(s.b1(s.c1(x))))) + s.sc(x))
class Res(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        s.l = nn.Sequential(Basic(32, 32, 1), Basic(32, 64, 2), Basic(64, 128, 2), Basic(128, 256, 2))
        s.fc = nn.Linear(256, 10)
    def forward(s, x):
        return s.fc(s.l(s.stem(x)).mean((2, 3)))
m = Res().eval()
x = torch.randn(1, 3, 224, 224)
torch.onnx.export(m, (x,), path("resnet.onnx"), input_names=["x"], output_names=["y"],
    dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}, "y": {0: "b"}}, opset_version=17)
