#!/usr/bin/env python3
"""Recurrent models dynvm was not written for (bench/README.md, "Session 24"), exported from
PyTorch with reference outputs: a 2-layer bidirectional LSTM tagger (embedding, hidden 128,
x int64 [batch, time]), a 2-layer GRU acoustic model (x [batch, time, 80]), a CRNN (conv stack,
2-layer bidirectional LSTM over the width, CTC log-softmax; x [batch, 1, 32, width]) and a
bidirectional GRU into an RNN with h0 given (x [batch, time, 40], h0 [2, batch, 64]).
Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_recurrent.py DIR
  (writes tagger.onnx, gru.onnx, crnn.onnx, gru2.onnx and *_x.npy / *_y.npy references)"""
import os, sys
import numpy as np
import torch
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
path = lambda f: os.path.join(OUT, f)
torch.manual_seed(0)
class Tagger(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = torch.nn.Embedding(5000, 128)
        s.lstm = torch.nn.LSTM(128, 128, num_layers=2, bidirectional=True, batch_first=True)
        s.out = torch.nn.Linear(256, 20)
    def forward(s, x):
        y, _ = s.lstm(s.emb(x))
        return s.out(y)
class Gru(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.gru = torch.nn.GRU(80, 192, num_layers=2, batch_first=True)
        s.out = torch.nn.Linear(192, 30)
    def forward(s, x):
        y, _ = s.gru(x)
        return s.out(y).log_softmax(-1)
m = Tagger().eval()
x = torch.randint(0, 5000, (1, 60))
torch.onnx.export(m, (x,), path("tagger.onnx"), input_names=["x"], output_names=["y"],
    dynamic_axes={"x": {0: "b", 1: "t"}, "y": {0: "b", 1: "t"}}, opset_version=17)
np.save(path("tagger_x.npy"), x.numpy()); np.save(path("tagger_y.npy"), m(x).detach().numpy())
g = Gru().eval()
x = torch.randn(1, 60, 80)
torch.onnx.export(g, (x,), path("gru.onnx"), input_names=["x"], output_names=["y"],
    dynamic_axes={"x": {0: "b", 1: "t"}, "y": {0: "b", 1: "t"}}, opset_version=17)
np.save(path("gru_x.npy"), x.numpy()); np.save(path("gru_y.npy"), g(x).detach().numpy())
class Crnn(torch.nn.Module):
    def __init__(s):
        super().__init__()
        c = lambda i, o: torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU())
        s.cnn = torch.nn.Sequential(c(1, 32), torch.nn.MaxPool2d(2), c(32, 64), torch.nn.MaxPool2d(2), c(64, 128), torch.nn.MaxPool2d((2, 1)), c(128, 128), torch.nn.MaxPool2d((4, 1)))
        s.rnn = torch.nn.LSTM(128, 96, num_layers=2, bidirectional=True)
        s.fc = torch.nn.Linear(192, 80)
    def forward(s, x):
        f = s.cnn(x).squeeze(2).permute(2, 0, 1)
        y, _ = s.rnn(f)
        return s.fc(y).log_softmax(-1)
class Gru2(torch.nn.Module):  # bidirectional GRU speech model, batch 2 with h0 given
    def __init__(s):
        super().__init__()
        s.gru = torch.nn.GRU(40, 64, bidirectional=True, batch_first=True)
        s.rnn = torch.nn.RNN(128, 48, batch_first=True)
        s.fc = torch.nn.Linear(48, 10)
    def forward(s, x, h0):
        y, _ = s.gru(x, h0)
        z, hn = s.rnn(y)
        return s.fc(z), hn
m = Crnn().eval()
for mod in m.modules():
    if isinstance(mod, torch.nn.BatchNorm2d):
        mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
x = torch.randn(1, 1, 32, 160)
torch.onnx.export(m, (x,), path("crnn.onnx"), input_names=["x"], output_names=["y"],
    dynamic_axes={"x": {0: "b", 3: "w"}, "y": {0: "t", 1: "b"}}, opset_version=17)
np.save(path("crnn_x.npy"), x.numpy()); np.save(path("crnn_y.npy"), m(x).detach().numpy())
g = Gru2().eval()
x = torch.randn(2, 33, 40); h0 = torch.randn(2, 2, 64)
torch.onnx.export(g, (x, h0), path("gru2.onnx"), input_names=["x", "h0"], output_names=["y", "hn"],
    dynamic_axes={"x": {0: "b", 1: "t"}, "h0": {1: "b"}, "y": {0: "b", 1: "t"}, "hn": {1: "b"}}, opset_version=17)
np.save(path("gru2_x.npy"), x.numpy()); np.save(path("gru2_h0.npy"), h0.numpy())
y, hn = g(x, h0); np.save(path("gru2_y.npy"), y.detach().numpy()); np.save(path("gru2_hn.npy"), hn.detach().numpy())
