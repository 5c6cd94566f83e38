#!/usr/bin/env python3
"""A BERT-style text encoder (batch and sequence length dynamic), exported from PyTorch with
reference outputs at three sizes: a model dynvm was not written for (bench/README.md, "Session
16"). Written out op by op as Hugging Face's BERT exports: token and learned position
embeddings (positions from Range over the input's length), LayerNorm, 4 layers of multi-head
self-attention with an additive padding mask from attention_mask, GELU (erf) feed-forward, a
tanh pooler. Needs Debian's python3-torch.
Usage: /usr/bin/python3 bench/export_bert.py DIR
  (writes bert.onnx, ids{0,1,2}.npy, mask{0,1,2}.npy, y{0,1,2}.npy)"""
import math, os, sys
import numpy as np
import torch
import torch.nn as nn
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(5)
D, HEADS, FF, LAYERS, VOCAB, MAXPOS = 256, 4, 1024, 4, 8000, 2048
class Layer(nn.Module):
    def __init__(s):
        super().__init__()
        s.q, s.k, s.v, s.o = (nn.Linear(D, D) for _ in range(4))
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.f1, s.f2 = nn.Linear(D, FF), nn.Linear(FF, D)
    def heads(s, x):
        n, t, _ = x.shape
        return x.view(n, t, HEADS, D // HEADS).transpose(1, 2)
    def forward(s, x, bias):
        n, t, _ = x.shape
        q, k, v = s.heads(s.q(x)), s.heads(s.k(x)), s.heads(s.v(x))
        a = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // HEADS) + bias
        c = torch.matmul(torch.softmax(a, -1), v).transpose(1, 2).reshape(n, t, D)
        x = s.ln1(x + s.o(c))
        return s.ln2(x + s.f2(nn.functional.gelu(s.f1(x))))
class Bert(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok, s.pos = nn.Embedding(VOCAB, D), nn.Embedding(MAXPOS, D)
        s.ln = nn.LayerNorm(D)
        s.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        s.pool = nn.Linear(D, D)
    def forward(s, ids, mask):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = s.ln(s.tok(ids) + s.pos(pos))
        bias = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in s.layers:
            x = layer(x, bias)
        return x, torch.tanh(s.pool(x[:, 0]))
m = Bert().eval()
ids = torch.randint(0, VOCAB, (2, 16))
torch.onnx.export(m, (ids, torch.ones_like(ids)), os.path.join(OUT, "bert.onnx"),
                  input_names=["ids", "mask"], output_names=["hidden", "pooled"],
                  dynamic_axes={"ids": {0: "n", 1: "t"}, "mask": {0: "n", 1: "t"},
                                "hidden": {0: "n", 1: "t"}, "pooled": {0: "n"}}, opset_version=14)
for i, (n, t) in enumerate([(1, 7), (4, 128), (1, 512)]):
    ids = torch.randint(0, VOCAB, (n, t))
    mask = torch.ones(n, t, dtype=torch.int64)
    mask[n - 1, t - t // 4:] = 0  # the last row padded
    with torch.no_grad(): y, _ = m(ids, mask)
    for name, a in (("ids", ids), ("mask", mask), ("y", y)):
        np.save(os.path.join(OUT, f"{name}{i}.npy"), a.numpy())
