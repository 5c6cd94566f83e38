#!/usr/bin/env python3
"""Five small dynamic models written for session 27 (bench/README.md, "Session 27"), none of
which dynvm was written for: a DenseNet (BatchNorm-ReLU-Conv dense blocks whose concatenations
grow by 16 channels a layer, average-pool transitions; N, H, W dynamic), a TCN (dilated Conv1d
with residuals; N, T), a 1-D U-Net (strided Conv1d down, ConvTranspose1d up, concatenated
skips; N, T), a BiLSTM tagger (Embedding, bidirectional LSTM, LogSoftmax; N, S) and a patch
transformer (8x8 patch Conv, two pre-norm blocks of 4-head attention written with matmuls,
whose scale is sqrt(D // heads) read off the Shape; N, H, W). Weights are seeded; BatchNorm
statistics are made non-trivial. Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_session27_zoo.py DIR   (writes the five .onnx files)"""
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
try:
    torch.backends.mha.set_fastpath_enabled(False)
except Exception: pass
out = sys.argv[1] if len(sys.argv) > 1 else "."
class Dense(nn.Module):
    def __init__(s, c, g=16, layers=4):
        super().__init__()
        s.l = nn.ModuleList()
        for i in range(layers):
            ci = c + i*g
            s.l.append(nn.Sequential(nn.BatchNorm2d(ci), nn.ReLU(), nn.Conv2d(ci, 4*g, 1, bias=False),
                                     nn.BatchNorm2d(4*g), nn.ReLU(), nn.Conv2d(4*g, g, 3, padding=1, bias=False)))
    def forward(s, x):
        for l in s.l: x = torch.cat([x, l(x)], 1)
        return x
class DenseNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        s.b1 = Dense(32); s.t1 = nn.Sequential(nn.BatchNorm2d(96), nn.ReLU(), nn.Conv2d(96, 48, 1), nn.AvgPool2d(2))
        s.b2 = Dense(48); s.t2 = nn.Sequential(nn.BatchNorm2d(112), nn.ReLU(), nn.Conv2d(112, 64, 1), nn.AvgPool2d(2))
        s.b3 = Dense(64); s.fc = nn.Linear(128, 10)
    def forward(s, x):
        x = s.t2(s.b2(s.t1(s.b1(s.stem(x)))))
        x = s.b3(x)
        return s.fc(x.mean((2, 3)))
class TCN(nn.Module):
    def __init__(s, c=64, levels=5):
        super().__init__()
        s.inp = nn.Conv1d(20, c, 1)
        s.l = nn.ModuleList([nn.Conv1d(c, c, 3, dilation=2**i, padding=2**i) for i in range(levels)])
        s.o = nn.Conv1d(c, 8, 1)
    def forward(s, x):
        x = s.inp(x)
        for l in s.l: x = x + F.relu(l(x))
        return s.o(x)
class UNet1D(nn.Module):
    def __init__(s):
        super().__init__()
        s.d1 = nn.Conv1d(1, 16, 5, padding=2); s.d2 = nn.Conv1d(16, 32, 5, stride=2, padding=2)
        s.d3 = nn.Conv1d(32, 64, 5, stride=2, padding=2)
        s.u2 = nn.ConvTranspose1d(64, 32, 4, stride=2, padding=1); s.c2 = nn.Conv1d(64, 32, 5, padding=2)
        s.u1 = nn.ConvTranspose1d(32, 16, 4, stride=2, padding=1); s.c1 = nn.Conv1d(32, 16, 5, padding=2)
        s.o = nn.Conv1d(16, 1, 1)
    def forward(s, x):
        a = F.leaky_relu(s.d1(x), 0.1); b = F.leaky_relu(s.d2(a), 0.1); c = F.leaky_relu(s.d3(b), 0.1)
        y = F.leaky_relu(s.c2(torch.cat([s.u2(c), b], 1)), 0.1)
        y = F.leaky_relu(s.c1(torch.cat([s.u1(y), a], 1)), 0.1)
        return torch.tanh(s.o(y))
class Tagger(nn.Module):
    def __init__(s):
        super().__init__()
        s.e = nn.Embedding(1000, 64); s.lstm = nn.LSTM(64, 96, batch_first=True, bidirectional=True); s.o = nn.Linear(192, 12)
    def forward(s, t):
        y, _ = s.lstm(s.e(t)); return F.log_softmax(s.o(y), -1)
class Block(nn.Module):
    def __init__(s, d, h=4):
        super().__init__()
        s.h = h; s.qkv = nn.Linear(d, 3*d); s.proj = nn.Linear(d, d); s.n1 = nn.LayerNorm(d); s.n2 = nn.LayerNorm(d)
        s.ff = nn.Sequential(nn.Linear(d, 2*d), nn.GELU(), nn.Linear(2*d, d))
    def forward(s, x):
        B, T, D = x.shape
        q, k, v = s.qkv(s.n1(x)).reshape(B, T, 3, s.h, D // s.h).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / (D // s.h) ** 0.5, -1) @ v
        x = x + s.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + s.ff(s.n2(x))
class PatchFormer(nn.Module):
    def __init__(s, d=96):
        super().__init__()
        s.p = nn.Conv2d(3, d, 8, 8); s.enc = nn.Sequential(Block(d), Block(d))
        s.o = nn.Linear(d, 5)
    def forward(s, x):
        y = s.p(x).flatten(2).transpose(1, 2)
        return s.o(s.enc(y).mean(1))
def exp(m, name, x, names, axes):
    m.eval()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
    with torch.no_grad():
        torch.onnx.export(m, x, f"{out}/{name}.onnx", input_names=names, output_names=['y'], dynamic_axes=axes, opset_version=17)
exp(DenseNet(), 'densenet', torch.randn(1,3,64,64), ['x'], {'x': {0:'n', 2:'h', 3:'w'}})
exp(TCN(), 'tcn', torch.randn(1,20,100), ['x'], {'x': {0:'n', 2:'t'}})
exp(UNet1D(), 'unet1d', torch.randn(1,1,256), ['x'], {'x': {0:'n', 2:'t'}})
exp(Tagger(), 'tagger', torch.randint(0,1000,(2,20)), ['t'], {'t': {0:'n', 1:'s'}})
exp(PatchFormer(), 'patchformer', torch.randn(1,3,64,128), ['x'], {'x': {0:'n', 2:'h', 3:'w'}})
