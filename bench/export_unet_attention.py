#!/usr/bin/env python3
"""A small U-Net with self-attention at its bottleneck (N, H, W dynamic), exported from PyTorch
with reference outputs at three sizes: a model dynvm was not written for (bench/README.md,
"Session 13"). Needs Debian's python3-torch. Usage: /usr/bin/python3 bench/export_unet_attention.py DIR"""
import os, sys
import numpy as np
import torch
import torch.nn as nn
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)
class UNetAttn(nn.Module):
    def __init__(s):
        super().__init__()
        s.e1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        s.e2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.GELU())
        s.e3 = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.SiLU())
        s.attn = nn.MultiheadAttention(64, 4, batch_first=True)
        s.ln = nn.LayerNorm(64)
        s.up = nn.Upsample(scale_factor=2, mode="nearest")
        s.d2 = nn.Conv2d(64 + 32, 32, 3, padding=1)
        s.d1 = nn.Conv2d(32 + 16, 8, 3, padding=1)
        s.head = nn.Conv2d(8, 2, 1)
    def forward(s, x):
        a = s.e1(x); b = s.e2(a); c = s.e3(b)
        n, ch, h, w = c.shape
        t = c.flatten(2).transpose(1, 2)
        t = s.ln(t + s.attn(t, t, t, need_weights=False)[0])
        c = t.transpose(1, 2).reshape(n, ch, h, w)
        d = torch.relu(s.d2(torch.cat([s.up(c), b], 1)))
        d = torch.relu(s.d1(torch.cat([s.up(d), a], 1)))
        return torch.softmax(s.head(d), dim=1)
m = UNetAttn().eval()
x = torch.randn(1, 3, 64, 96)
torch.onnx.export(m, x, os.path.join(OUT, "unet.onnx"), input_names=["x"], output_names=["y"], opset_version=17,
                  dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}, "y": {0: "N", 2: "H", 3: "W"}})
for i, shp in enumerate([(1, 3, 64, 96), (2, 3, 32, 160), (1, 3, 128, 128)]):
    xi = torch.randn(*shp)
    np.save(os.path.join(OUT, f"x{i}.npy"), xi.numpy())
    with torch.no_grad(): np.save(os.path.join(OUT, f"y{i}.npy"), m(xi).numpy())
