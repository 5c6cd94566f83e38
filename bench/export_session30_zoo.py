#!/usr/bin/python3
"""Nine small dynamic models written for session 30 (bench/README.md, "Session 30"), of kinds
the earlier bench/export_*.py do not cover: a Conformer (2-D conv subsampling, macaron feed
forwards, a GLU / depthwise Conv1d / BatchNorm conv module), a CRNN text-line recognizer (VGG
convs with BatchNorm and pools, a bidirectional GRU), a wav2vec2-style encoder (a strided Conv1d
feature stack with GroupNorm, a grouped positional conv, nn.TransformerEncoderLayer), a 2-D U-Net
with transposed-conv upsampling and skip concats, a T5-style encoder (RMSNorm, a relative
position bias bucketed with a log at run time from the sequence length, gated GELU feed
forwards), a length-masked text classifier (the mask built from a lengths input), detection
post-processing whose output size depends on the data (NonZero), a pooling mix (ceil-mode max
pool, average pool without pads, reflect pad, pixel unshuffle) and a 3-D conv video classifier.
Weights are seeded per model. Needs Debian's python3-torch (1.13).
Usage: /usr/bin/python3 bench/export_session30_zoo.py DIR [NAME ...]   (writes DIR/NAME.onnx)
       import export_session30_zoo as z; z.build(name)                 (the same torch model)"""
import sys, math, os
import torch
import torch.nn as nn
import torch.nn.functional as F
import zoo_export


# 1. Conformer
class FFN(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.ln = nn.LayerNorm(d); s.a = nn.Linear(d, 4 * d); s.b = nn.Linear(4 * d, d)
    def forward(s, x):
        return s.b(F.silu(s.a(s.ln(x))))
class ConvModule(nn.Module):
    def __init__(s, d, k=15):
        super().__init__()
        s.ln = nn.LayerNorm(d); s.pw1 = nn.Conv1d(d, 2 * d, 1)
        s.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d); s.bn = nn.BatchNorm1d(d)
        s.pw2 = nn.Conv1d(d, d, 1)
    def forward(s, x):                      # x: N x T x D
        y = s.ln(x).transpose(1, 2)
        y = F.glu(s.pw1(y), dim=1)
        y = s.pw2(F.silu(s.bn(s.dw(y))))
        return y.transpose(1, 2)
class CBlock(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.f1 = FFN(d); s.ln = nn.LayerNorm(d); s.att = nn.MultiheadAttention(d, h, batch_first=True)
        s.conv = ConvModule(d); s.f2 = FFN(d); s.out = nn.LayerNorm(d)
    def forward(s, x):
        x = x + 0.5 * s.f1(x)
        y = s.ln(x)
        x = x + s.att(y, y, y, need_weights=False)[0]
        x = x + s.conv(x)
        x = x + 0.5 * s.f2(x)
        return s.out(x)
class Conformer(nn.Module):
    def __init__(s, nmel=80, d=144, h=4, L=2):
        super().__init__()
        s.sub = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        f = ((nmel - 1) // 2 - 1) // 2
        s.proj = nn.Linear(d * f, d)
        s.blocks = nn.ModuleList([CBlock(d, h) for _ in range(L)])
    def forward(s, x):                      # x: N x T x 80
        y = s.sub(x.unsqueeze(1))            # N x D x T' x F'
        n, c, t, f = y.shape
        y = s.proj(y.transpose(1, 2).reshape(n, t, c * f))
        for b in s.blocks: y = b(y)
        return y


# 2. CRNN text-line recognizer
def cbr(i, o):
    return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]
class CRNN(nn.Module):
    def __init__(s, classes=40, hid=96):
        super().__init__()
        s.cnn = nn.Sequential(*cbr(1, 32), nn.MaxPool2d(2), *cbr(32, 64), nn.MaxPool2d(2),
                              *cbr(64, 128), *cbr(128, 128), nn.MaxPool2d((2, 1)),
                              *cbr(128, 192), nn.MaxPool2d((4, 1)))
        s.rnn = nn.GRU(192, hid, bidirectional=True, batch_first=True)
        s.fc = nn.Linear(2 * hid, classes)
    def forward(s, x):                      # x: N x 1 x 32 x W
        y = s.cnn(x).squeeze(2).transpose(1, 2)   # N x W/4 x 192
        y, _ = s.rnn(y)
        return F.log_softmax(s.fc(y), -1)


# 3. wav2vec2-style encoder
class Wav2Vec(nn.Module):
    def __init__(s, c=128, d=128, h=4, L=2):
        super().__init__()
        spec = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        layers, i = [], 1
        for j, (k, st) in enumerate(spec):
            layers.append(nn.Conv1d(i, c, k, st, bias=False))
            if j == 0: layers.append(nn.GroupNorm(c, c))
            layers.append(nn.GELU()); i = c
        s.feat = nn.Sequential(*layers)
        s.ln = nn.LayerNorm(c); s.proj = nn.Linear(c, d)
        s.pos = nn.Conv1d(d, d, 32, padding=16, groups=8)
        s.enc = nn.ModuleList([nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, activation='gelu',
                                                          batch_first=True) for _ in range(L)])
        s.out = nn.LayerNorm(d)
    def forward(s, wav):                    # wav: N x L
        y = s.feat(wav.unsqueeze(1)).transpose(1, 2)
        y = s.proj(s.ln(y))
        p = s.pos(y.transpose(1, 2))[:, :, :-1]
        y = y + F.gelu(p).transpose(1, 2)
        for e in s.enc: y = e(y)
        return s.out(y)


# 4. 2-D U-Net with transposed convs
def dc(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                         nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
class UNet2D(nn.Module):
    def __init__(s, c=16):
        super().__init__()
        s.d1 = dc(3, c); s.d2 = dc(c, 2 * c); s.d3 = dc(2 * c, 4 * c)
        s.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2); s.c2 = dc(4 * c, 2 * c)
        s.u1 = nn.ConvTranspose2d(2 * c, c, 2, 2); s.c1 = dc(2 * c, c)
        s.head = nn.Conv2d(c, 1, 1)
    def forward(s, x):                      # x: N x 3 x H x W, H and W multiples of 4
        a = s.d1(x); b = s.d2(F.max_pool2d(a, 2)); m = s.d3(F.max_pool2d(b, 2))
        b = s.c2(torch.cat([s.u2(m), b], 1))
        a = s.c1(torch.cat([s.u1(b), a], 1))
        return torch.sigmoid(s.head(a))


# 5. T5-style encoder
class RMSNorm(nn.Module):
    def __init__(s, d):
        super().__init__(); s.w = nn.Parameter(1 + 0.1 * torch.randn(d))
    def forward(s, x):
        return s.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
class T5Block(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h; s.n1 = RMSNorm(d); s.qkv = nn.Linear(d, 3 * d, bias=False); s.o = nn.Linear(d, d, bias=False)
        s.n2 = RMSNorm(d); s.wi0 = nn.Linear(d, 2 * d, bias=False); s.wi1 = nn.Linear(d, 2 * d, bias=False)
        s.wo = nn.Linear(2 * d, d, bias=False)
    def forward(s, x, bias):
        B, S, D = x.shape
        q, k, v = s.qkv(s.n1(x)).split(D, dim=2)
        q, k, v = (t.view(B, S, s.h, D // s.h).transpose(1, 2) for t in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2) + bias, -1) @ v
        x = x + s.o(a.transpose(1, 2).reshape(B, S, D))
        y = s.n2(x)
        return x + s.wo(F.gelu(s.wi0(y)) * s.wi1(y))
class T5Enc(nn.Module):
    def __init__(s, vocab=1000, d=128, h=4, L=2, buckets=32, maxd=128):
        super().__init__()
        s.buckets, s.maxd = buckets, maxd
        s.emb = nn.Embedding(vocab, d); s.rel = nn.Embedding(buckets, h)
        s.blocks = nn.ModuleList([T5Block(d, h) for _ in range(L)]); s.n = RMSNorm(d)
    def bias(s, S):
        pos = torch.arange(S)
        rel = pos[None, :] - pos[:, None]                      # S x S
        half = s.buckets // 2
        side = (rel > 0).long() * half
        a = rel.abs(); exact = half // 2
        big = exact + (torch.log(a.float().clamp(min=1) / exact) / math.log(s.maxd / exact)
                       * (half - exact)).long()
        big = torch.clamp(big, max=half - 1)
        b = side + torch.where(a < exact, a, big)
        return s.rel(b).permute(2, 0, 1)[None]                 # 1 x h x S x S
    def forward(s, ids):                    # ids: N x S
        x = s.emb(ids); bias = s.bias(ids.shape[1])
        for b in s.blocks: x = b(x, bias)
        return s.n(x)


# 6. Length-masked text classifier: a lengths input builds the mask at run time
class Masked(nn.Module):
    def __init__(s, vocab=500, d=64, h=4):
        super().__init__()
        s.h = h; s.emb = nn.Embedding(vocab, d); s.qkv = nn.Linear(d, 3 * d); s.o = nn.Linear(d, d)
        s.ln = nn.LayerNorm(d); s.cls = nn.Linear(d, 5)
    def forward(s, ids, lens):              # ids: N x S (i64), lens: N (i64)
        B, S = ids.shape
        x = s.emb(ids)
        keep = torch.arange(S)[None, :] < lens[:, None]                      # N x S
        q, k, v = s.qkv(x).chunk(3, -1)
        q, k, v = (t.reshape(B, S, s.h, -1).transpose(1, 2) for t in (q, k, v))
        sc = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        sc = sc.masked_fill(~keep[:, None, None, :], float('-inf'))
        x = s.ln(x + s.o((sc.softmax(-1) @ v).transpose(1, 2).reshape(B, S, -1)))
        w = keep.float()[..., None]
        pooled = (x * w).sum(1) / w.sum(1).clamp(min=1)
        return s.cls(pooled).log_softmax(-1)


# 7. Detection post-processing: the boxes whose score passes a threshold (NonZero), scaled by it
class Detect(nn.Module):
    def __init__(s, c=32):
        super().__init__()
        s.body = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        s.score = nn.Conv2d(c, 1, 1); s.box = nn.Conv2d(c, 4, 1)
    def forward(s, x):                      # x: 1 x 3 x H x W
        f = s.body(x)
        sc = torch.sigmoid(s.score(f)).flatten()                             # H/4 * W/4
        bx = s.box(f).flatten(2)[0].t()                                      # H/4*W/4 x 4
        idx = torch.nonzero(sc > 0.5).squeeze(1)
        kept = bx[idx] * sc[idx, None]
        return kept, idx


# 8. Pooling variety: ceil-mode max pool, avg pool without the pads, reflect pad, pixel unshuffle
class Pools(nn.Module):
    def __init__(s, c=16):
        super().__init__()
        s.a = nn.Conv2d(3, c, 3, padding=1); s.b = nn.Conv2d(4 * c, c, 1); s.fc = nn.Linear(c, 7)
    def forward(s, x):                      # x: N x 3 x H x W, H and W even
        y = F.relu(s.a(F.pad(x, (1, 1, 1, 1), mode='reflect')))
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)
        y = F.avg_pool2d(y, 3, 1, padding=1, count_include_pad=False)
        y = F.pixel_unshuffle(F.pad(y, (0, y.shape[3] % 2, 0, y.shape[2] % 2)), 2)
        y = F.relu(s.b(y))
        return s.fc(y.amax((2, 3))), y


# 9. A 3-D conv classifier over video clips (T, H and W symbolic)
class Video3D(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv3d(3, 16, 3, padding=1), nn.BatchNorm3d(16), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
                            nn.Conv3d(16, 32, 3, padding=1), nn.BatchNorm3d(32), nn.ReLU(), nn.AdaptiveAvgPool3d(1))
        s.fc = nn.Linear(32, 10)
    def forward(s, x):                      # x: N x 3 x T x H x W
        return s.fc(s.f(x).flatten(1))


# name: (class, example inputs, input names, output names, dynamic axes)
MODELS = {
    'conformer': (Conformer, lambda: (torch.randn(1, 200, 80),),            ['feats'], ['y'],
                  {'feats': {0: 'n', 1: 't'}, 'y': {0: 'n', 1: 't4'}}),
    'crnn':      (CRNN,      lambda: (torch.randn(1, 1, 32, 128),),         ['x'],     ['y'],
                  {'x': {0: 'n', 3: 'w'}, 'y': {0: 'n', 1: 'w4'}}),
    'wav2vec':   (Wav2Vec,   lambda: (torch.randn(1, 16000),),              ['wav'],   ['y'],
                  {'wav': {0: 'n', 1: 'l'}, 'y': {0: 'n', 1: 'frames'}}),
    'unet2d':    (UNet2D,    lambda: (torch.randn(1, 3, 64, 64),),          ['x'],     ['y'],
                  {'x': {0: 'n', 2: 'h', 3: 'w'}, 'y': {0: 'n', 2: 'h', 3: 'w'}}),
    't5enc':     (T5Enc,     lambda: (torch.randint(0, 1000, (1, 16)),),    ['ids'],   ['y'],
                  {'ids': {0: 'n', 1: 's'}, 'y': {0: 'n', 1: 's'}}),
    'masked':    (Masked,    lambda: (torch.randint(0, 500, (2, 16)), torch.tensor([16, 9])), ['ids', 'lens'], ['y'],
                  {'ids': {0: 'n', 1: 's'}, 'lens': {0: 'n'}, 'y': {0: 'n'}}),
    'detect':    (Detect,    lambda: (torch.randn(1, 3, 64, 64),),          ['x'],     ['boxes', 'idx'],
                  {'x': {2: 'h', 3: 'w'}, 'boxes': {0: 'k'}, 'idx': {0: 'k'}}),
    'pools':     (Pools,     lambda: (torch.randn(1, 3, 32, 32),),          ['x'],     ['y', 'f'],
                  {'x': {0: 'n', 2: 'h', 3: 'w'}, 'y': {0: 'n'}, 'f': {0: 'n', 2: 'h2', 3: 'w2'}}),
    'video3d':   (Video3D,   lambda: (torch.randn(1, 3, 8, 32, 32),),       ['x'],     ['y'],
                  {'x': {0: 'n', 2: 't', 3: 'h', 4: 'w'}, 'y': {0: 'n'}}),
}


def build(name):
    torch.manual_seed(sum(map(ord, name)))
    m = MODELS[name][0]()
    for mod in m.modules():   # trained-looking BatchNorm statistics, not the identity
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5); mod.bias.data.uniform_(-0.2, 0.2)
    m.eval()
    return m


if __name__ == '__main__':
    zoo_export.main(MODELS, build)
