#!/usr/bin/python3
"""Exports the dynamic-shape corpus of the end-to-end tests (tests/e2e/models/dynamic/) from
PyTorch (Debian's python3-torch 1.13) and writes PyTorch references for every case.

Seventeen small models whose shapes vary at run time: symbolic dims from dynamic_axes, sizes
computed from shapes (Shape -> arithmetic -> ConstantOfShape / Range / Pad / Reshape), and
sizes computed from *values* (NonZero, TopK with a data-dependent k, a Slice bound read from
an input, a decode loop that stops on a token). Models without data-dependent control flow
are traced; the two that need it (greedy_decode_early_exit, threshold_nonzero) are scripted.

  gru_encoder              x f32[seq, batch, 8] -> y f32[seq, batch, 16], h f32[1, batch, 16]
  transformer_encoder      tokens i64[batch, seq], lengths i64[batch] -> y f32[batch, seq, 16]
  greedy_decode_early_exit src f32[src_len, 8], max_steps i64[] -> tokens i64[n_tokens], h f32[16]
  threshold_nonzero        scores f32[n] -> indices i64[n_above], top_scores f32[k]
  lengths_from_values      x f32[batch, seq, 6], lengths i64[batch]
                             -> out_lengths i64[batch], mask bool[batch, seq], mean f32[batch, 6]
  unet_skip                x f32[1, 4, height, width] -> y f32[1, 4, height, width]
  audio_frontend           wave f32[batch, samples] -> mel f32[batch, frames, 8]
  quantized_linear         x f32[batch, 12] -> y f32[batch, 10]
  causal_attention         x f32[batch, seq, 16] -> y f32[batch, seq, 16]
  pad_to_multiple          x f32[batch, seq, 5] -> y f32[batch, n_blocks, 5]
  cnn_text_classifier      tokens i64[batch, seq] -> logits f32[batch, 5]
  slice_by_value           x f32[seq, 4], n i64[] -> y f32[n_kept, 4]
  detect_and_count         x f32[batch, 3, height, width], ids i64[n]
                             -> points i64[n_points, 3], values f32[n_points], hist f32[10],
                                classes i64[n_classes], inverse i64[n]
  segment_crop             x f32[batch, 3, height, width] -> y f32[batch, 2, out_h, out_w]
  vit_patches              x f32[batch, 3, height, width] -> y f32[batch, 5]
  conformer_topk           feats f32[batch, time, 16] -> y f32[batch, frames_out, 24],
                             top f32[batch, 3], frames i64[batch, 3]
  expert_mixture           x f32[batch, seq, 8] -> y f32[batch, seq, 8], sim f32[batch, seq],
                             pooled f32[batch, 1]

Opset 17 for all (the newest torch 1.13 exports). The declared shapes of the graph outputs
are rewritten to the dynamic_axes names (static sizes elsewhere), as export_loop_models.py
does, because the exporter invents names for dims it cannot name. Nothing else is touched.

For every case the references are the outputs of the exported module (traced or scripted)
run by PyTorch, checked equal to eager execution; when onnxruntime-node is installed they
are also checked against ONNX Runtime (rtol 1e-4, atol 1e-5; integers exactly). Weights and
inputs are seeded, so the files come out byte-identical on every run. Layout and the
status in dynvm: tests/e2e/models/README.md ("Dynamic corpus"); check dynvm against the
references with scripts/models/check_dynamic_corpus.py.

Run from the repository root: /usr/bin/python3 scripts/models/export_dynamic_corpus.py
[NAME ...] (default: all models)."""
import math
import os
import shutil
import sys
import warnings

import onnx
import torch
import torch.nn.functional as F
from torch import Tensor, nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402
from export_loop_models import op_census  # noqa: E402

OPSET = 17
OUT_ROOT = "tests/e2e/models/dynamic"
MAX_MODEL_BYTES = 200 * 1024


def gen(seed):
    return torch.Generator().manual_seed(seed)


def seeded(seed, *shape, scale=1.0):
    return torch.randn(*shape, generator=gen(seed)) * scale


def init_seeded(module, seed, scale=0.5):
    """Overwrites every parameter of `module` with seeded normal values * scale (biases
    * scale / 4), in named_parameters order, so nothing depends on torch's global RNG."""
    with torch.no_grad():
        for i, (name, p) in enumerate(module.named_parameters()):
            s = scale / 4 if name.endswith("bias") else scale
            if p.dim() >= 2 and not name.endswith("bias"):
                s = scale / math.sqrt(p.shape[-1] if p.dim() == 2 else p[0].numel())
            p.copy_(seeded(seed * 100 + i, *p.shape) * s)
    for p in module.parameters():
        p.requires_grad_(False)
    return module


# ---------------------------------------------------------------- 1. gru_encoder

class GruEncoder(nn.Module):
    FEAT, HIDDEN = 8, 16

    def __init__(self):
        super().__init__()
        self.gru = init_seeded(nn.GRU(self.FEAT, self.HIDDEN), 1, scale=1.0)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(1), self.HIDDEN)
        y, h = self.gru(x, h0)
        return y, h


def gru_encoder_cases():
    return [{"x": torch.randn(s, b, GruEncoder.FEAT, generator=gen(100 + k))}
            for k, (s, b) in enumerate([(1, 1), (5, 3), (12, 2), (3, 0)])]


# ---------------------------------------------------------------- 2. transformer_encoder

class TransformerEncoder(nn.Module):
    VOCAB, D, HEADS, FF, MAX_SEQ = 20, 16, 2, 32, 64

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.VOCAB, self.D)
        self.pos = nn.Embedding(self.MAX_SEQ, self.D)
        self.layer = nn.TransformerEncoderLayer(self.D, self.HEADS, self.FF, dropout=0.0,
                                                batch_first=True)
        init_seeded(self, 2, scale=1.0)
        with torch.no_grad():  # LayerNorm weights near 1, not random around 0
            for norm in (self.layer.norm1, self.layer.norm2):
                norm.weight.add_(1.0)
        # torch 1.13's fast paths (torch._transformer_encoder_layer_fwd and
        # torch._native_multi_head_attention) have no ONNX export. They are skipped when grad
        # is enabled and a weight requires grad, which is how the exporter traces this module
        # (and the traced module, which computes the references, keeps the ordinary path).
        for p in self.parameters():
            p.requires_grad_(True)

    def forward(self, tokens, lengths):
        seq = tokens.size(1)
        positions = torch.arange(seq)
        h = self.embed(tokens) + self.pos(positions)[None]
        pad = positions[None] >= lengths[:, None]  # [batch, seq], True = padding
        y = self.layer(h, src_key_padding_mask=pad)
        # Zero the padded positions: PyTorch's fast path (nested tensors) and its slow path
        # (what the exporter traces) differ there, and the values are meaningless anyway.
        return y * (~pad)[:, :, None].to(y.dtype)


def transformer_encoder_cases():
    cases = []
    # No empty case, although PyTorch runs batch 0 and seq 0: the exported attention
    # reshapes to shapes computed from the input's dims, and an ONNX Reshape reads a 0 in
    # its shape as "copy the input's dim" (the exporter leaves allowzero 0) or meets a -1
    # with zero elements, so the graph does not mean PyTorch's result there (ONNX Runtime:
    # batch 0 fails in Reshape '/layer/self_attn/Reshape_5', seq 0 dies with SIGFPE).
    for k, (b, s, lens) in enumerate([(1, 1, [1]), (3, 7, [7, 3, 1]), (2, 12, [12, 9])]):
        cases.append({"tokens": torch.randint(0, TransformerEncoder.VOCAB, (b, s),
                                              generator=gen(200 + k)),
                      "lengths": torch.tensor(lens, dtype=torch.int64).reshape(b)})
    return cases


# ---------------------------------------------------------------- 3. greedy_decode_early_exit

class GreedyDecodeEarlyExit(nn.Module):
    VOCAB, EMBED, HIDDEN, FEAT = 10, 8, 16, 8
    BOS, EOS = 0, 1

    def __init__(self):
        super().__init__()
        v, e, h, f = self.VOCAB, self.EMBED, self.HIDDEN, self.FEAT
        self.embedding = nn.Parameter(seeded(301, v, e), requires_grad=False)
        self.w_init = nn.Parameter(seeded(302, f, h, scale=0.6), requires_grad=False)
        self.w_x = nn.Parameter(seeded(303, e, h, scale=0.5), requires_grad=False)
        self.w_h = nn.Parameter(seeded(304, h, h, scale=0.4), requires_grad=False)
        self.b = nn.Parameter(seeded(305, h, scale=0.1), requires_grad=False)
        self.w_out = nn.Parameter(seeded(306, h, v, scale=0.8), requires_grad=False)
        b_out = torch.zeros(v)
        b_out[self.EOS] = 0.3
        self.b_out = nn.Parameter(b_out, requires_grad=False)
        self.bos = self.BOS
        self.eos = self.EOS

    def forward(self, src: Tensor, max_steps: Tensor):
        h = torch.tanh(torch.matmul(src.mean(0), self.w_init))
        tok = torch.full([], self.bos, dtype=torch.long)
        # The tokens grow by one per step: a loop-carried value whose shape changes.
        tokens = torch.zeros([0], dtype=torch.long)
        step = torch.zeros([], dtype=torch.long)
        done = torch.zeros([], dtype=torch.bool)
        while bool(step < max_steps) and not bool(done):
            h = torch.tanh(torch.matmul(self.embedding[tok], self.w_x)
                           + torch.matmul(h, self.w_h) + self.b)
            tok = torch.argmax(torch.matmul(h, self.w_out) + self.b_out)
            tokens = torch.cat([tokens, tok.unsqueeze(0)])
            done = tok == self.eos
            step = step + 1
        return tokens, h


def greedy_decode_cases():
    cases = []
    # (seed, src_len, max_steps), picked for decodes of 0 (max_steps 0), 12, 7, 20 (runs
    # to max_steps), 1 and 3 (cut by max_steps 3) tokens; checked in check_facts.
    for seed, src_len, max_steps in [(320, 1, 0), (320, 9, 20), (328, 1, 20), (330, 1, 20),
                                     (324, 9, 20), (330, 1, 3)]:
        cases.append({"src": torch.randn(src_len, GreedyDecodeEarlyExit.FEAT,
                                         generator=gen(seed)),
                      "max_steps": torch.tensor(max_steps, dtype=torch.int64)})
    return cases


# ---------------------------------------------------------------- 4. threshold_nonzero

class ThresholdNonzero(nn.Module):
    def forward(self, scores: Tensor):
        above = scores > 0.5
        indices = torch.nonzero(above).squeeze(1)
        k = min(3, int(indices.size(0)))
        top_scores, _ = torch.topk(scores, k)
        return indices, top_scores


def threshold_nonzero_cases():
    cases = []
    for k, n in enumerate([10, 4, 0, 30]):
        scores = torch.rand(n, generator=gen(400 + k))
        if k == 1:
            scores = scores * 0.45  # nothing above the threshold: empty results
        cases.append({"scores": scores})
    return cases


# ---------------------------------------------------------------- 5. lengths_from_values

class LengthsFromValues(nn.Module):
    FEAT = 6

    def forward(self, x, lengths):
        out_lengths = torch.div(lengths + 1, 2, rounding_mode="floor")
        mask = torch.arange(x.size(1))[None] < out_lengths[:, None]
        total = (x * mask[:, :, None].to(x.dtype)).sum(1)
        mean = total / torch.clamp(out_lengths, min=1)[:, None].to(x.dtype)
        return out_lengths, mask, mean


def lengths_from_values_cases():
    cases = []
    for k, (b, s, lens) in enumerate([(1, 1, [1]), (3, 8, [16, 5, 0]), (0, 4, []),
                                      (2, 13, [25, 2])]):
        cases.append({"x": torch.randn(b, s, LengthsFromValues.FEAT, generator=gen(500 + k)),
                      "lengths": torch.tensor(lens, dtype=torch.int64).reshape(b)})
    return cases


# ---------------------------------------------------------------- 6. unet_skip

class UnetSkip(nn.Module):
    C, MID = 4, 8

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(self.C, self.MID, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(self.MID, self.MID, 3, padding=1)
        self.up = nn.Conv2d(self.MID, self.C, 1)
        init_seeded(self, 6, scale=1.0)

    def forward(self, x):
        d = torch.relu(self.down(x))
        m = torch.relu(self.mid(d))
        u = F.interpolate(m, scale_factor=2.0, mode="nearest")
        return self.up(u) + x


def unet_skip_cases():
    return [{"x": torch.randn(1, UnetSkip.C, h, w, generator=gen(600 + k))}
            for k, (h, w) in enumerate([(2, 2), (8, 8), (6, 10), (16, 12)])]


# ---------------------------------------------------------------- 7. audio_frontend

class AudioFrontend(nn.Module):
    WIN, HOP, BINS, MELS = 32, 16, 12, 8

    def __init__(self):
        super().__init__()
        self.filters = nn.Conv1d(1, 2 * self.BINS, self.WIN, stride=self.HOP, bias=False)
        init_seeded(self, 7, scale=1.0)
        mel = torch.rand(self.BINS, self.MELS, generator=gen(701))
        self.mel = nn.Parameter(mel / mel.sum(0, keepdim=True), requires_grad=False)

    def forward(self, wave):
        frames = self.filters(wave.unsqueeze(1))  # [batch, 2 * bins, frames]
        re, im = frames[:, :self.BINS], frames[:, self.BINS:]
        magnitude = torch.sqrt(re * re + im * im)
        logpow = torch.log(magnitude * magnitude + 1e-6)
        return torch.matmul(logpow.transpose(1, 2), self.mel)  # [batch, frames, mels]


def audio_frontend_cases():
    return [{"wave": torch.randn(b, n, generator=gen(710 + k)) * 0.3}
            for k, (b, n) in enumerate([(1, 32), (2, 400), (1, 1000), (3, 47), (0, 100)])]


# ---------------------------------------------------------------- 8. quantized_linear

class QuantizedLinear(nn.Module):
    IN, OUT = 12, 10
    X_SCALE, W_SCALE = 0.02, 0.01

    def __init__(self):
        super().__init__()
        self.linear = init_seeded(nn.Linear(self.IN, self.OUT), 8, scale=1.0)

    def forward(self, x):
        xq = torch.fake_quantize_per_tensor_affine(x, self.X_SCALE, 0, -128, 127)
        wq = torch.fake_quantize_per_tensor_affine(self.linear.weight, self.W_SCALE, 0, -128,
                                                   127)
        return F.linear(xq, wq, self.linear.bias)


def quantized_linear_cases():
    cases = []
    for k, b in enumerate([1, 5, 0, 17]):
        x = torch.randn(b, QuantizedLinear.IN, generator=gen(800 + k)) * 1.5
        # Keep clear of rounding ties (x / scale = m + 0.5), where implementations that
        # divide or multiply by the reciprocal could round differently.
        q = x / QuantizedLinear.X_SCALE
        frac = (q - torch.floor(q) - 0.5).abs()
        x = torch.where(frac < 0.05, x + 0.2 * QuantizedLinear.X_SCALE, x)
        cases.append({"x": x})
    return cases


# ---------------------------------------------------------------- 9. causal_attention

class CausalAttention(nn.Module):
    D = 16

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(self.D, self.D)
        self.k = nn.Linear(self.D, self.D)
        self.v = nn.Linear(self.D, self.D)
        init_seeded(self, 9, scale=1.0)

    def forward(self, x):
        s = x.size(1)
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.D)
        causal = torch.triu(torch.ones(s, s), 1).bool()
        scores = scores.masked_fill(causal, float("-inf"))
        return torch.matmul(torch.softmax(scores, -1), v)


def causal_attention_cases():
    return [{"x": torch.randn(b, s, CausalAttention.D, generator=gen(900 + k))}
            for k, (b, s) in enumerate([(1, 1), (2, 6), (1, 19), (2, 0)])]


# ---------------------------------------------------------------- 10. pad_to_multiple

class PadToMultiple(nn.Module):
    FEAT, BLOCK = 5, 8

    def forward(self, x):
        seq = x.size(1)
        pad = (self.BLOCK - seq % self.BLOCK) % self.BLOCK
        padded = F.pad(x, [0, 0, 0, pad])
        blocks = padded.reshape(x.size(0), -1, self.BLOCK, x.size(2))
        return blocks.mean(2)


def pad_to_multiple_cases():
    return [{"x": torch.randn(b, s, PadToMultiple.FEAT, generator=gen(1000 + k))}
            for k, (b, s) in enumerate([(1, 1), (2, 8), (3, 13), (1, 30), (2, 0)])]


# ---------------------------------------------------------------- 11. cnn_text_classifier

class CnnTextClassifier(nn.Module):
    VOCAB, EMBED, CHANNELS, CLASSES = 30, 16, 24, 5

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.VOCAB, self.EMBED)
        self.conv = nn.Conv1d(self.EMBED, self.CHANNELS, 3, padding=1)
        self.out = nn.Linear(self.CHANNELS, self.CLASSES)
        init_seeded(self, 11, scale=1.0)

    def forward(self, tokens):
        e = self.embed(tokens).transpose(1, 2)  # [batch, embed, seq]
        c = torch.relu(self.conv(e))
        pooled = c.max(dim=2).values
        return self.out(pooled)


def cnn_text_classifier_cases():
    return [{"tokens": torch.randint(0, CnnTextClassifier.VOCAB, (b, s),
                                     generator=gen(1100 + k))}
            for k, (b, s) in enumerate([(1, 1), (3, 7), (2, 20), (0, 5)])]


# ---------------------------------------------------------------- 12. slice_by_value

class SliceByValue(nn.Module):
    def forward(self, x, n):
        return torch.cumsum(x[:n], 0)


def slice_by_value_cases():
    cases = []
    for k, (s, n) in enumerate([(5, 3), (6, 0), (6, 10), (9, 9), (1, 1)]):
        cases.append({"x": torch.randn(s, 4, generator=gen(1200 + k)),
                      "n": torch.tensor(n, dtype=torch.int64)})
    return cases


# ---------------------------------------------------------------- 13. detect_and_count

class DetectAndCount(nn.Module):
    """A feature map upsampled to the skip's run-time size (Resize with sizes from Shape),
    points above a threshold (NonZero, a boolean-mask gather: sizes the data decides), a
    histogram by scatter_add (ScatterElements with reduction add) and the distinct ids
    (Unique with inverse indices)."""
    MID = 8

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, self.MID, 3, stride=2, padding=1)
        self.skip = nn.Conv2d(3, self.MID, 1)
        init_seeded(self, 13, scale=0.5)

    def forward(self, x, ids):
        d = torch.relu(self.down(x))
        up = F.interpolate(d, size=x.shape[2:], mode="bilinear", align_corners=False)
        score = (up + self.skip(x)).mean(1)
        points = torch.nonzero(score > 0.1)
        values = score[score > 0.1]
        hist = torch.zeros(10).scatter_add(0, ids, torch.ones_like(ids, dtype=torch.float32))
        classes, inverse = torch.unique(ids, sorted=True, return_inverse=True)
        return points, values, hist, classes, inverse


def detect_and_count_cases():
    cases = []
    for k, (b, h, w, n) in enumerate([(1, 5, 7, 1), (2, 16, 12, 9), (1, 1, 1, 0), (1, 9, 4, 20)]):
        cases.append({"x": torch.randn(b, 3, h, w, generator=gen(1300 + k)),
                      "ids": torch.randint(0, 10, (n,), generator=gen(1310 + k))})
    return cases


# ---------------------------------------------------------------- 14. segment_crop

class SegmentCrop(nn.Module):
    """A small segmentation net as U-Net exports write it: stride-2 convolutions down
    (depthwise-separable, hard-swish), ConvTranspose x2 up, each upsampled map cropped to
    its skip's size (odd sizes make it one larger) with `up[:, :, :skip.shape[2],
    :skip.shape[3]]`, and a softmax over the classes (the channel axis)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.dw = nn.Conv2d(8, 8, 3, 2, 1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.up1 = nn.ConvTranspose2d(16, 8, 2, 2)
        self.up2 = nn.ConvTranspose2d(8, 4, 2, 2)
        self.head = nn.Conv2d(4, 2, 1)
        init_seeded(self, 13, scale=1.0)

    def forward(self, x):
        a = torch.relu(self.stem(x))
        b = torch.relu(self.pw(F.hardswish(self.dw(a))))
        u = torch.relu(self.up1(b)[:, :, :a.shape[2], :a.shape[3]] + a)
        v = self.up2(u)[:, :, :x.shape[2] // 2 * 2, :x.shape[3] // 2 * 2]
        return torch.softmax(self.head(torch.relu(v)), dim=1)


def segment_crop_cases():
    return [{"x": torch.randn(b, 3, h, w, generator=gen(1400 + k))}
            for k, (b, h, w) in enumerate([(1, 9, 13), (2, 16, 20), (1, 33, 47), (1, 2, 3)])]


# ---------------------------------------------------------------- 15. vit_patches

class VitPatches(nn.Module):
    """A vision transformer over any image size: 8x8 patches from a strided conv, a class
    token `expand(batch, -1, -1)`-ed and concatenated (torch exports the expand as a Where
    over the shape), learned positions sliced to the patch count, one pre-norm encoder
    layer of 2-head self-attention and a GELU feed-forward (written out, as Hugging Face's
    ViT exports it), the class token's LayerNorm and a linear head."""

    D, HEADS, POSITIONS = 32, 2, 64

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, self.D, 8, 8)
        self.cls = nn.Parameter(torch.zeros(1, 1, self.D))
        self.pos = nn.Parameter(torch.zeros(1, self.POSITIONS, self.D))
        self.norm1, self.norm2, self.norm = (nn.LayerNorm(self.D) for _ in range(3))
        self.qkv = nn.Linear(self.D, 3 * self.D)
        self.proj = nn.Linear(self.D, self.D)
        self.ff1, self.ff2 = nn.Linear(self.D, 64), nn.Linear(64, self.D)
        self.head = nn.Linear(self.D, 5)
        init_seeded(self, 15, scale=1.0)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], 1) + self.pos[:, :p.shape[1] + 1]
        n, s, d = t.shape
        q, k, v = self.qkv(self.norm1(t)).view(n, s, 3, self.HEADS, d // self.HEADS).permute(
            2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.HEADS), -1) @ v
        t = t + self.proj(a.transpose(1, 2).reshape(n, s, d))
        t = t + self.ff2(F.gelu(self.ff1(self.norm2(t))))
        return self.head(self.norm(t)[:, 0])


def vit_patches_cases():
    return [{"x": torch.randn(b, 3, h, w, generator=gen(1500 + k))}
            for k, (b, h, w) in enumerate([(1, 16, 24), (2, 32, 32), (1, 8, 8), (1, 40, 16)])]


# ---------------------------------------------------------------- 16. conformer_topk

class ConformerTopk(nn.Module):
    """A Conformer-style front end: two stride-2 convs subsample the features (time and
    frequency), their channels and frequencies flattened into one Linear, three blocks of
    sequence-first nn.MultiheadAttention (whose Reshapes read the Shape of tensors whose time
    dim is (t + 1) floordiv 4 - 1), then the 3 frames of largest norm (a constant-k TopK)."""
    FEAT, CH, D = 16, 32, 24

    def __init__(self):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, self.CH, 3, 2), nn.ReLU(),
                                 nn.Conv2d(self.CH, self.CH, 3, 2), nn.ReLU())
        self.lin = nn.Linear(self.CH * 3, self.D)
        self.att = nn.ModuleList([nn.MultiheadAttention(self.D, 4) for _ in range(3)])
        init_seeded(self, 16, scale=0.3)

    def forward(self, feats):
        x = self.sub(feats.unsqueeze(1))
        b, c, t, f = x.shape
        x = self.lin(x.permute(2, 0, 1, 3).reshape(t, b, c * f))  # [t', b, D]
        for att in self.att:
            x = x + att(x, x, x, need_weights=False)[0]
        top, frames = x.norm(dim=-1).transpose(0, 1).topk(3, dim=1)
        return x.transpose(0, 1), top, frames


def conformer_topk_cases():
    return [{"feats": torch.randn(b, t, ConformerTopk.FEAT, generator=gen(1600 + k))}
            for k, (b, t) in enumerate([(1, 15), (2, 40), (1, 101)])]


# ---------------------------------------------------------------- 17. expert_mixture

class ExpertMixture(nn.Module):
    """A mixture-of-experts layer written with einsums, as such layers often are: softmax
    gating, top-2 of 3 experts renormalised (TopK, ScatterElements), every expert's MLP over
    every position at once ("nsd,edh->nseh": the experts' e and h together one free dim of
    B; "nseh,ehd->nsed": e a batch letter in another place), the weighted sum over experts,
    and a per-position similarity ("nsd,nsd->ns": no free letter) and a pooled summary
    ("nsd,de->n": s summed over one operand first)."""
    D, E, H = 8, 3, 12

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(self.D, self.E)
        self.w1 = nn.Parameter(torch.zeros(self.E, self.D, self.H))
        self.w2 = nn.Parameter(torch.zeros(self.E, self.H, self.D))
        self.summary = nn.Parameter(torch.zeros(self.D, 1))
        init_seeded(self, 17, scale=0.5)

    def forward(self, x):
        g = self.gate(x).softmax(-1)
        tv, ti = g.topk(2, dim=-1)
        m = torch.zeros_like(g).scatter(-1, ti, tv)
        m = m / m.sum(-1, keepdim=True)
        h = torch.relu(torch.einsum("nsd,edh->nseh", x, self.w1))
        y = (torch.einsum("nseh,ehd->nsed", h, self.w2) * m[..., None]).sum(2)
        sim = torch.einsum("nsd,nsd->ns", x, y)
        pooled = torch.einsum("nsd,de->ne", y, self.summary)
        return y, sim, pooled


def expert_mixture_cases():
    return [{"x": torch.randn(b, s, ExpertMixture.D, generator=gen(1700 + k))}
            for k, (b, s) in enumerate([(1, 1), (2, 7), (1, 33)])]


# ---------------------------------------------------------------- the corpus

# name: (module factory, cases, input names, output names, dynamic_axes, export mode)
MODELS = {
    "gru_encoder": (
        GruEncoder, gru_encoder_cases, ["x"], ["y", "h"],
        {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}, "h": {1: "batch"}}, "trace"),
    "transformer_encoder": (
        TransformerEncoder, transformer_encoder_cases, ["tokens", "lengths"], ["y"],
        {"tokens": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}, "y": {0: "batch", 1: "seq"}},
        "trace"),
    "greedy_decode_early_exit": (
        GreedyDecodeEarlyExit, greedy_decode_cases, ["src", "max_steps"], ["tokens", "h"],
        {"src": {0: "src_len"}, "tokens": {0: "n_tokens"}}, "script"),
    "threshold_nonzero": (
        ThresholdNonzero, threshold_nonzero_cases, ["scores"], ["indices", "top_scores"],
        {"scores": {0: "n"}, "indices": {0: "n_above"}, "top_scores": {0: "k"}}, "script"),
    "lengths_from_values": (
        LengthsFromValues, lengths_from_values_cases, ["x", "lengths"],
        ["out_lengths", "mask", "mean"],
        {"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}, "out_lengths": {0: "batch"},
         "mask": {0: "batch", 1: "seq"}, "mean": {0: "batch"}}, "trace"),
    "unet_skip": (
        UnetSkip, unet_skip_cases, ["x"], ["y"],
        {"x": {2: "height", 3: "width"}, "y": {2: "height", 3: "width"}}, "trace"),
    "audio_frontend": (
        AudioFrontend, audio_frontend_cases, ["wave"], ["mel"],
        {"wave": {0: "batch", 1: "samples"}, "mel": {0: "batch", 1: "frames"}}, "trace"),
    "quantized_linear": (
        QuantizedLinear, quantized_linear_cases, ["x"], ["y"],
        {"x": {0: "batch"}, "y": {0: "batch"}}, "trace"),
    "causal_attention": (
        CausalAttention, causal_attention_cases, ["x"], ["y"],
        {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, "trace"),
    "pad_to_multiple": (
        PadToMultiple, pad_to_multiple_cases, ["x"], ["y"],
        {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "n_blocks"}}, "trace"),
    "cnn_text_classifier": (
        CnnTextClassifier, cnn_text_classifier_cases, ["tokens"], ["logits"],
        {"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch"}}, "trace"),
    "slice_by_value": (
        SliceByValue, slice_by_value_cases, ["x", "n"], ["y"],
        {"x": {0: "seq"}, "y": {0: "n_kept"}}, "trace"),
    "detect_and_count": (
        DetectAndCount, detect_and_count_cases, ["x", "ids"],
        ["points", "values", "hist", "classes", "inverse"],
        {"x": {0: "batch", 2: "height", 3: "width"}, "ids": {0: "n"},
         "points": {0: "n_points"}, "values": {0: "n_points"}, "classes": {0: "n_classes"},
         "inverse": {0: "n"}}, "trace"),
    "segment_crop": (
        SegmentCrop, segment_crop_cases, ["x"], ["y"],
        {"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch", 2: "out_h", 3: "out_w"}},
        "trace"),
    "vit_patches": (
        VitPatches, vit_patches_cases, ["x"], ["y"],
        {"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}}, "trace"),
    "conformer_topk": (
        ConformerTopk, conformer_topk_cases, ["feats"], ["y", "top", "frames"],
        {"feats": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "frames_out"},
         "top": {0: "batch"}, "frames": {0: "batch"}}, "trace"),
    "expert_mixture": (
        ExpertMixture, expert_mixture_cases, ["x"], ["y", "sim", "pooled"],
        {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}, "sim": {0: "batch", 1: "seq"},
         "pooled": {0: "batch"}}, "trace"),
}


def declare_output_shapes(model, example_outputs, dynamic_axes):
    """Declares each graph output's dims as the dynamic_axes names and the example's sizes
    elsewhere (the exporter invents names such as `Loopy_dim_0` for dims it cannot name,
    which an importer would take for new symbols)."""
    for value in model.graph.output:
        axes = dynamic_axes.get(value.name, {})
        dims = value.type.tensor_type.shape.dim
        shape = example_outputs[value.name].shape
        if len(dims) != len(shape):  # rank unknown to the exporter: declare it
            value.type.tensor_type.shape.ClearField("dim")
            for _ in shape:
                value.type.tensor_type.shape.dim.add()
        for axis, dim in enumerate(dims):
            if axis in axes:
                dim.dim_param = axes[axis]
            else:
                dim.dim_value = shape[axis]


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def export(name, module, example, input_names, output_names, dynamic_axes, mode, path):
    if mode == "script":
        runner = torch.jit.script(module)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner = torch.jit.trace(module, tuple(example), check_trace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(runner if mode == "script" else module, tuple(example), path,
                          opset_version=OPSET, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes)
    model = onnx.load(path)
    with torch.no_grad():
        outputs = dict(zip(output_names, as_tuple(runner(*example))))
    declare_output_shapes(model, outputs, dynamic_axes)
    onnx.save(model, path)
    onnx.checker.check_model(model, full_check=True)
    size = os.path.getsize(path)
    assert size < MAX_MODEL_BYTES, f"{path}: {size} bytes, over {MAX_MODEL_BYTES}"
    return runner, op_census(model.graph)


def close(label, got, want, rtol=1e-4, atol=1e-5):
    return ort_check.compare(label, got, want, rtol=rtol, atol=atol)


def run_model(name, factory, make_cases, input_names, output_names, dynamic_axes, mode,
              have_ort):
    torch.manual_seed(0)
    module = factory().eval()
    cases = make_cases()
    out_dir = os.path.join(OUT_ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    shutil.rmtree(os.path.join(out_dir, "cases"), ignore_errors=True)  # no stale cases
    path = os.path.join(out_dir, "model.onnx")
    # Export with the largest non-empty case as the example (tracing bakes nothing from it,
    # but a size-1 example would let the exporter fold dims that happen to be 1).
    example_case = max(cases, key=lambda c: sum(v.numel() for v in c.values()))
    example = [example_case[n] for n in input_names]
    runner, ops = export(name, module, example, input_names, output_names, dynamic_axes, mode,
                         path)
    print(f"{name}: {path} ({os.path.getsize(path)} bytes), opset {OPSET}, {mode}, ops "
          + ", ".join(f"{op}x{n}" for op, n in sorted(ops.items())))
    for k, case in enumerate(cases):
        args = [case[n] for n in input_names]
        with torch.no_grad():
            got = as_tuple(runner(*args))
            eager = as_tuple(module(*args))
        want = {}
        for out_name, r, e in zip(output_names, got, eager):
            assert r.shape == e.shape and r.dtype == e.dtype, f"{name} case {k}: {out_name}"
            assert torch.allclose(r, e, rtol=1e-5, atol=1e-6) if r.is_floating_point() \
                else torch.equal(r, e), f"{name} case {k}: exported module != eager ({out_name})"
            want[out_name] = r.numpy()
        inputs = {n: case[n].numpy() for n in input_names}
        case_dir = os.path.join(out_dir, "cases", str(k))
        ort_check.save_case(case_dir, inputs, want)
        line = (f"  case {k}: " + ", ".join(f"{n}{list(v.shape)}" for n, v in inputs.items())
                + " -> " + ", ".join(f"{o}{list(v.shape)}" for o, v in want.items()))
        if have_ort:
            empty = any(v.size == 0 for v in inputs.values()) or \
                any(v.size == 0 for v in want.values())
            try:
                ort = ort_check.ort_run(path, inputs)
            except RuntimeError as e:
                # ONNX Runtime 1.30 fails on some empty tensors PyTorch handles; the case
                # stays (the reference is PyTorch's), the failure is reported.
                if not empty:
                    raise
                first = [ln.strip() for ln in str(e).splitlines() if "ort_run:" in ln
                         or "terminate" in ln]
                line += "; ORT fails: " + (first[0] if first else str(e).splitlines()[0])
                ort = None
            if ort is not None:
                diffs = {o: close(f"{name} case {k} ORT {o}", ort[o], want[o])
                         for o in output_names}
                line += "; ORT max abs diff " + ", ".join(f"{o} {d:.1e}"
                                                          for o, d in diffs.items())
        print(line)
    return cases


def check_facts(name, cases):
    """Case properties the corpus promises (empty results, early exits, no near-ties)."""
    if name == "greedy_decode_early_exit":
        m = GreedyDecodeEarlyExit().eval()
        lengths, gap = [], math.inf
        for c in cases:
            with torch.no_grad():
                tokens, _ = m(c["src"], c["max_steps"])
            lengths.append(int(tokens.numel()))
            # smallest top-2 logit gap along the decode
            h = torch.tanh(torch.matmul(c["src"].mean(0), m.w_init))
            for t in [m.bos] + tokens.tolist()[:-1]:
                h = torch.tanh(m.embedding[t] @ m.w_x + h @ m.w_h + m.b)
                top2 = torch.topk(h @ m.w_out + m.b_out, 2).values
                gap = min(gap, float(top2[0] - top2[1]))
        print(f"  decoded lengths {lengths}, smallest top-2 logit gap {gap:.3g}")
        assert 0 in lengths, "one case should decode nothing (max_steps 0)"
        assert len(set(lengths)) == len(lengths), "the cases should stop at different lengths"
        assert gap > 1e-3, "an argmax is nearly tied; pick other seeds"
    if name == "threshold_nonzero":
        counts = [int((c["scores"] > 0.5).sum()) for c in cases]
        margin = min([float((c["scores"] - 0.5).abs().min()) for c in cases
                      if c["scores"].numel()])
        print(f"  scores above 0.5 per case {counts}, smallest |score - 0.5| {margin:.3g}")
        assert 0 in counts and any(n > 3 for n in counts) and margin > 1e-4
    if name == "detect_and_count":
        m = DetectAndCount().eval()
        margins = []
        for c in cases:
            with torch.no_grad():
                d = torch.relu(m.down(c["x"]))
                up = F.interpolate(d, size=c["x"].shape[2:], mode="bilinear", align_corners=False)
                margins.append(float(((up + m.skip(c["x"])).mean(1) - 0.1).abs().min()))
        print(f"  smallest |score - 0.1| {min(margins):.3g}")
        assert min(margins) > 1e-4, "a score is nearly at the threshold; pick other seeds"
        assert any(c["ids"].numel() == 0 for c in cases), "one case should have no ids"


def main():
    names = sys.argv[1:] or list(MODELS)
    have_ort = ort_check.ort_available()
    if not have_ort:
        print("ONNX Runtime (onnxruntime-node) not found: references not cross-checked")
    for name in names:
        factory, make_cases, inputs, outputs, axes, mode = MODELS[name]
        cases = run_model(name, factory, make_cases, inputs, outputs, axes, mode, have_ort)
        check_facts(name, cases)


if __name__ == "__main__":
    main()
