#!/usr/bin/python3
"""Eight small dynamic models written for session 28 (bench/README.md, "Session 28"), of kinds
the earlier bench/export_*.py do not cover: a Whisper-style audio encoder, a GPT-style causal
decoder (triu mask, tied head), a ConvNeXt-style net (depthwise 7x7, LayerNorm over channels,
layer scale), a squeeze-excite ResNet with GroupNorm, a 2-D op mix (reflect pad, bilinear x2
Resize, pixel shuffle, einsums), a sequence op mix (cumsum, flip, roll, TopK, GatherElements,
ArgMax), a mel-spectrogram front end (STFT as strided Conv1d) and a two-layer mixture of experts
written with einsums. Weights are seeded per model. Needs Debian's python3-torch (1.13: no
scaled_dot_product_attention; nn.MultiheadAttention is exported with grad mode on, which keeps
it off its unexportable fast path).
Usage: /usr/bin/python3 bench/export_session28_zoo.py DIR [NAME ...]   (writes DIR/NAME.onnx)
       import export_session28_zoo as z; z.build(name)                 (the same torch model)"""
import sys, math, os
import torch
import torch.nn as nn
import torch.nn.functional as F
import zoo_export


# 1. Whisper-style audio encoder
class WBlock(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.ln1 = nn.LayerNorm(d); s.att = nn.MultiheadAttention(d, h, batch_first=True)
        s.ln2 = nn.LayerNorm(d); s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    def forward(s, x):
        y = s.ln1(x)
        x = x + s.att(y, y, y, need_weights=False)[0]
        return x + s.mlp(s.ln2(x))
class Whisper(nn.Module):
    def __init__(s, nmel=80, d=128, h=4, L=2, maxpos=1500):
        super().__init__()
        s.c1 = nn.Conv1d(nmel, d, 3, padding=1); s.c2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        t = torch.arange(maxpos).float()[:, None]; i = torch.arange(d // 2).float()[None]
        ang = t * torch.exp(-math.log(10000.0) * i / (d // 2 - 1))
        s.register_buffer('pos', torch.cat([ang.sin(), ang.cos()], 1))
        s.blocks = nn.ModuleList([WBlock(d, h) for _ in range(L)]); s.ln = nn.LayerNorm(d)
    def forward(s, x):                      # x: N x 80 x T
        x = F.gelu(s.c1(x)); x = F.gelu(s.c2(x))
        x = x.permute(0, 2, 1)
        x = x + s.pos[: x.shape[1]]
        for b in s.blocks: x = b(x)
        return s.ln(x)


# 2. GPT-style causal decoder with tied embeddings
class GBlock(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h; s.ln1 = nn.LayerNorm(d); s.qkv = nn.Linear(d, 3 * d); s.proj = nn.Linear(d, d)
        s.ln2 = nn.LayerNorm(d); s.fc = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)
    def forward(s, x, mask):
        B, S, D = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        q = q.view(B, S, s.h, D // s.h).transpose(1, 2)
        k = k.view(B, S, s.h, D // s.h).transpose(1, 2)
        v = v.view(B, S, s.h, D // s.h).transpose(1, 2)
        a = (q @ k.transpose(-2, -1)) / math.sqrt(D // s.h)
        a = a.masked_fill(mask, float('-inf')).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(B, S, D)
        x = x + s.proj(y)
        return x + s.fc2(F.gelu(s.fc(s.ln2(x)), approximate='tanh'))
class GPT(nn.Module):
    def __init__(s, vocab=1000, d=128, h=4, L=2, maxpos=512):
        super().__init__()
        s.wte = nn.Embedding(vocab, d); s.wpe = nn.Embedding(maxpos, d)
        s.blocks = nn.ModuleList([GBlock(d, h) for _ in range(L)]); s.ln = nn.LayerNorm(d)
        s.head = nn.Linear(d, vocab, bias=False); s.head.weight = s.wte.weight
    def forward(s, ids):                    # ids: N x S int64
        S = ids.shape[1]
        pos = torch.arange(S, device=ids.device)
        x = s.wte(ids) + s.wpe(pos)[None]
        mask = torch.triu(torch.ones(S, S, dtype=torch.bool, device=ids.device), 1)
        for b in s.blocks: x = b(x, mask)
        return s.head(s.ln(x))


# 3. ConvNeXt-style 2-D network
class CNBlock(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dw = nn.Conv2d(c, c, 7, padding=3, groups=c); s.ln = nn.LayerNorm(c)
        s.pw1 = nn.Linear(c, 4 * c); s.pw2 = nn.Linear(4 * c, c)
        s.gamma = nn.Parameter(torch.rand(c) * 0.5 + 0.1)
    def forward(s, x):
        y = s.dw(x).permute(0, 2, 3, 1)
        y = s.pw2(F.gelu(s.pw1(s.ln(y)))) * s.gamma
        return x + y.permute(0, 3, 1, 2)
class LN2d(nn.Module):
    def __init__(s, c):
        super().__init__(); s.ln = nn.LayerNorm(c)
    def forward(s, x):
        return s.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
class ConvNeXt(nn.Module):
    def __init__(s, dims=(32, 64, 128)):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LN2d(dims[0]))
        st = []
        for i, c in enumerate(dims):
            if i: st.append(nn.Sequential(LN2d(dims[i - 1]), nn.Conv2d(dims[i - 1], c, 2, 2)))
            st.append(nn.Sequential(CNBlock(c), CNBlock(c)))
        s.stages = nn.Sequential(*st); s.norm = nn.LayerNorm(dims[-1]); s.head = nn.Linear(dims[-1], 10)
    def forward(s, x):
        x = s.stages(s.stem(x))
        return s.head(s.norm(x.mean((2, 3))))


# 4. Squeeze-excite ResNet with GroupNorm
class SEBlock(nn.Module):
    def __init__(s, ci, co, stride):
        super().__init__()
        s.c1 = nn.Conv2d(ci, co, 3, stride, 1, bias=False); s.g1 = nn.GroupNorm(8, co)
        s.c2 = nn.Conv2d(co, co, 3, 1, 1, bias=False); s.g2 = nn.GroupNorm(8, co)
        s.se1 = nn.Conv2d(co, co // 4, 1); s.se2 = nn.Conv2d(co // 4, co, 1)
        s.sc = None if (ci == co and stride == 1) else nn.Sequential(nn.Conv2d(ci, co, 1, stride, bias=False), nn.GroupNorm(8, co))
    def forward(s, x):
        y = F.relu(s.g1(s.c1(x))); y = s.g2(s.c2(y))
        w = torch.sigmoid(s.se2(F.relu(s.se1(F.adaptive_avg_pool2d(y, 1)))))
        y = y * w
        return F.relu(y + (x if s.sc is None else s.sc(x)))
class SEResNetGN(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.GroupNorm(8, 32), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        s.body = nn.Sequential(SEBlock(32, 32, 1), SEBlock(32, 64, 2), SEBlock(64, 128, 2), SEBlock(128, 128, 1))
        s.fc = nn.Linear(128, 10)
    def forward(s, x):
        return s.fc(torch.flatten(F.adaptive_avg_pool2d(s.body(s.stem(x)), 1), 1))


# 5. 2-D op mix: reflect pad, bilinear upsample, pixel_shuffle, einsum
class Ops2D(nn.Module):
    def __init__(s, c=8):
        super().__init__()
        s.c1 = nn.Conv2d(c, 16, 3); s.c2 = nn.Conv2d(16, 64, 3, padding=1); s.mix = nn.Parameter(torch.randn(16, 16) * 0.25)
        s.c3 = nn.Conv2d(16, 3, 3, padding=1)
    def forward(s, x):                      # N x 8 x H x W
        y = F.relu(s.c1(F.pad(x, (1, 1, 1, 1), mode='reflect')))
        u = F.interpolate(y, scale_factor=2.0, mode='bilinear', align_corners=False)
        p = F.pixel_shuffle(s.c2(y), 2)     # N x 16 x 2H x 2W
        z = torch.einsum('nchw,dc->ndhw', u * torch.sigmoid(p), s.mix)
        g = torch.einsum('nchw,nchw->nc', z, p) / (z.shape[2] * z.shape[3])
        return s.c3(z + g[:, :, None, None]), g


# 6. Sequence op mix: cumsum, flip, roll, topk (const k), argmax, gather
class OpsSeq(nn.Module):
    def __init__(s, d=32, k=4):
        super().__init__()
        s.k = k; s.inp = nn.Linear(d, d); s.score = nn.Linear(d, 1); s.out = nn.Linear(3 * d, d)
    def forward(s, x):                      # N x S x D
        h = torch.tanh(s.inp(x))
        c = torch.cumsum(h, 1) / torch.arange(1, h.shape[1] + 1, dtype=h.dtype)[None, :, None]
        r = torch.flip(h, [1]) + torch.roll(h, 3, 1)
        sc = s.score(h).squeeze(-1)         # N x S
        val, idx = torch.topk(sc, s.k, dim=1)
        top = torch.gather(h, 1, idx[:, :, None].expand(-1, -1, h.shape[2]))   # N x k x D
        ctx = (top * val.softmax(-1)[:, :, None]).sum(1, keepdim=True)
        y = s.out(torch.cat([c, r, ctx.expand_as(h)], 2))
        am = torch.argmax(y, dim=2)
        return y, am, idx


# 7. Mel-spectrogram front end (conv1d STFT, power, mel linear, log) + small classifier
class MelFront(nn.Module):
    def __init__(s, nfft=400, hop=160, nmel=64):
        super().__init__()
        n = torch.arange(nfft).float(); f = torch.arange(nfft // 2 + 1).float()
        win = 0.5 - 0.5 * torch.cos(2 * math.pi * n / nfft)
        ang = 2 * math.pi * f[:, None] * n[None] / nfft
        s.register_buffer('kr', (torch.cos(ang) * win)[:, None]); s.register_buffer('ki', (-torch.sin(ang) * win)[:, None])
        s.hop = hop; s.pad = nfft // 2
        fb = torch.relu(1 - torch.abs(torch.linspace(0, nmel + 1, nfft // 2 + 1)[None] - torch.arange(1, nmel + 1).float()[:, None]))
        s.mel = nn.Linear(nfft // 2 + 1, nmel, bias=False); s.mel.weight.data = fb
        s.conv = nn.Sequential(nn.Conv1d(nmel, 96, 3, padding=1), nn.ReLU(), nn.Conv1d(96, 96, 3, stride=2, padding=1), nn.ReLU())
        s.fc = nn.Linear(96, 12)
    def forward(s, wav):                    # N x L
        x = F.pad(wav[:, None], (s.pad, s.pad), mode='reflect')
        re = F.conv1d(x, s.kr, stride=s.hop); im = F.conv1d(x, s.ki, stride=s.hop)
        mag = torch.sqrt(re * re + im * im + 1e-10)            # N x F x T
        logmel = torch.log(s.mel(mag.transpose(1, 2)) + 1e-6)  # N x T x M
        h = s.conv(logmel.transpose(1, 2))
        return s.fc(h.mean(2)), logmel


# 8. Mixture-of-experts layer stack (softmax gating, top-2 renormalised, weighted sum)
class MoE(nn.Module):
    def __init__(s, d=64, e=4, hdim=128):
        super().__init__()
        s.gate = nn.Linear(d, e)
        s.w1 = nn.Parameter(torch.randn(e, d, hdim) / math.sqrt(d)); s.b1 = nn.Parameter(torch.randn(e, hdim) * 0.1)
        s.w2 = nn.Parameter(torch.randn(e, hdim, d) / math.sqrt(hdim))
        s.ln = nn.LayerNorm(d)
    def forward(s, x):                      # N x S x D
        g = s.gate(s.ln(x)).softmax(-1)                        # N x S x E
        tv, ti = g.topk(2, dim=-1)
        m = torch.zeros_like(g).scatter(-1, ti, tv)
        m = m / m.sum(-1, keepdim=True)
        h = F.silu(torch.einsum('nsd,edh->nseh', x, s.w1) + s.b1)
        y = torch.einsum('nseh,ehd->nsed', h, s.w2)
        return x + (y * m[..., None]).sum(2)
class MoENet(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.ModuleList([MoE(), MoE()])
    def forward(s, x):
        for l in s.l: x = l(x)
        return x


# name: (class, example inputs, input names, output names, dynamic axes)
MODELS = {
    'whisper':   (Whisper,    lambda: (torch.randn(1, 80, 100),),            ['x'],   ['y'],
                  {'x': {0: 'n', 2: 't'}, 'y': {0: 'n', 1: 't2'}}),
    'gpt':       (GPT,        lambda: (torch.randint(0, 1000, (1, 16)),),   ['ids'], ['logits'],
                  {'ids': {0: 'n', 1: 's'}, 'logits': {0: 'n', 1: 's'}}),
    'convnext':  (ConvNeXt,   lambda: (torch.randn(1, 3, 64, 64),),          ['x'],   ['y'],
                  {'x': {0: 'n', 2: 'h', 3: 'w'}, 'y': {0: 'n'}}),
    'seresnet':  (SEResNetGN, lambda: (torch.randn(1, 3, 64, 64),),          ['x'],   ['y'],
                  {'x': {0: 'n', 2: 'h', 3: 'w'}, 'y': {0: 'n'}}),
    'ops2d':     (Ops2D,      lambda: (torch.randn(1, 8, 16, 16),),          ['x'],   ['y', 'g'],
                  {'x': {0: 'n', 2: 'h', 3: 'w'}, 'y': {0: 'n', 2: 'h2', 3: 'w2'}, 'g': {0: 'n'}}),
    'opsseq':    (OpsSeq,     lambda: (torch.randn(1, 16, 32),),             ['x'],   ['y', 'am', 'idx'],
                  {'x': {0: 'n', 1: 's'}, 'y': {0: 'n', 1: 's'}, 'am': {0: 'n', 1: 's'}, 'idx': {0: 'n'}}),
    'melfront':  (MelFront,   lambda: (torch.randn(1, 16000),),              ['wav'], ['y', 'logmel'],
                  {'wav': {0: 'n', 1: 'l'}, 'y': {0: 'n'}, 'logmel': {0: 'n', 1: 'frames'}}),
    'moe':       (MoENet,     lambda: (torch.randn(1, 16, 64),),             ['x'],   ['y'],
                  {'x': {0: 'n', 1: 's'}, 'y': {0: 'n', 1: 's'}}),
}


def build(name):
    torch.manual_seed(sum(map(ord, name)))
    m = MODELS[name][0]()
    m.eval()
    return m


if __name__ == '__main__':
    zoo_export.main(MODELS, build)
