#!/usr/bin/python3
"""Exports the PyTorch control-flow models of the end-to-end tests (tests/e2e/models/) with
Debian's python3-torch (torch.jit.script + torch.onnx.export) and writes their references.

  greedy_decoder   src f32[src_len, 8] -> tokens i64[n_tokens], h f32[16]
                   h0 = tanh(mean(src) @ Wi); then a GRU cell (written with MatMul, so no
                   GRU op) fed the embedding of the previous token, greedy argmax, until
                   the end token (1) or 16 tokens: a Loop with a data-dependent condition
                   whose scan output (the tokens) has a data-dependent length; the `break`
                   becomes an If inside the body.
  sign_branch_rnn  x f32[seq, 8], h0 f32[8] -> ys f32[seq, 8], h f32[8]
                   a Loop over the symbolic seq; each step s = x[t] @ Wx + h @ Wh + b and
                   If sum(s) > 0 then h = tanh(s) else h = 0.5 h - sigmoid(s); ys stacks h.

Opset 12: torch 1.13 turns a list appended to in a scripted loop into a Loop scan output
only below opset 13 (ConvertSequenceDependencies); at 13..16 it exports SequenceEmpty /
SequenceInsert / ConcatFromSequence, which dynvm does not support.

For each model and input (4 decoder cases, 3 rnn cases) the script writes the PyTorch
outputs (the scripted module, checked equal to eager execution), checks an independent
numpy implementation and, when available, ONNX Runtime (onnxruntime-node) against them
within rtol 1e-4 (token ids exactly), and checks that the graphs hold Loop and If and only
operators of dynvm's importer table. Layout: tests/e2e/models/README.md.

Run from the repository root: /usr/bin/python3 scripts/models/export_loop_models.py"""
import os
import sys
from typing import List

import numpy as np
import onnx
import torch
from torch import Tensor, nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

OPSET = 12
OUT_ROOT = "tests/e2e/models"
# frontends/onnx/normalize.cc, supported_ops(): kept in step by hand.
SUPPORTED_OPS = {
    "Abs", "Acos", "Add", "And", "Asin", "Atan", "Ceil", "Clip", "Cos", "Div", "Elu", "Equal",
    "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "LeakyRelu",
    "Less", "LessOrEqual", "Log", "Max", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow", "PRelu",
    "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Sub",
    "Sum", "Tanh", "Where", "Xor", "Cast",
    "ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "Softmax", "LogSoftmax", "LayerNormalization",
    "BatchNormalization",
    "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool",
    "Concat", "Constant", "ConstantOfShape", "CumSum", "Expand", "Flatten", "Gather",
    "GatherElements", "Identity", "Dropout", "Pad", "Range", "Reshape", "Resize", "Shape", "Size",
    "Slice", "Split", "Squeeze", "Tile", "Transpose", "Unsqueeze",
    "If", "Loop", "Scan", "LSTM", "GRU", "RNN"}


def seeded(seed, *shape, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return nn.Parameter(torch.randn(*shape, generator=g) * scale, requires_grad=False)


# ---------------------------------------------------------------- greedy_decoder

class GreedyDecoder(nn.Module):
    VOCAB, EMBED, HIDDEN, FEATURES = 12, 8, 16, 8
    BOS, EOS, MAX_LEN = 0, 1, 16

    def __init__(self):
        super().__init__()
        v, e, h, f = self.VOCAB, self.EMBED, self.HIDDEN, self.FEATURES
        self.embedding = seeded(1, v, e)
        self.w_init = seeded(2, f, h, scale=0.6)
        # GRU gates r, z, n side by side: x @ w_x + b_x and h @ w_h + b_h, each [3h].
        self.w_x = seeded(3, e, 3 * h, scale=0.4)
        self.w_h = seeded(4, h, 3 * h, scale=0.4)
        self.b_x = seeded(5, 3 * h, scale=0.1)
        self.b_h = seeded(6, 3 * h, scale=0.1)
        self.w_out = seeded(7, h, v, scale=0.7)
        b_out = torch.zeros(v)
        b_out[self.EOS] = 0.8  # the end token wins often enough to end some decodes early
        self.b_out = nn.Parameter(b_out, requires_grad=False)
        self.max_len = self.MAX_LEN
        self.eos = self.EOS
        self.bos = self.BOS
        self.hidden = h

    def forward(self, src: Tensor):
        h = torch.tanh(torch.matmul(src.mean(0), self.w_init))
        tok = torch.full([], self.bos, dtype=torch.long)
        tokens: List[Tensor] = []
        n = self.hidden
        for _ in range(self.max_len):
            gx = torch.matmul(self.embedding[tok], self.w_x) + self.b_x
            gh = torch.matmul(h, self.w_h) + self.b_h
            r = torch.sigmoid(gx[0:n] + gh[0:n])
            z = torch.sigmoid(gx[n:2 * n] + gh[n:2 * n])
            cand = torch.tanh(gx[2 * n:3 * n] + r * gh[2 * n:3 * n])
            h = (1.0 - z) * cand + z * h
            tok = torch.argmax(torch.matmul(h, self.w_out) + self.b_out)
            tokens.append(tok)
            if bool(tok == self.eos):
                break
        return torch.stack(tokens), h


def greedy_decoder_numpy(p, src):
    """p: the parameters as float32 arrays. Returns (outputs, min top-2 logit gap)."""
    sig = lambda v: (1.0 / (1.0 + np.exp(-v))).astype(np.float32)  # noqa: E731
    n = GreedyDecoder.HIDDEN
    h = np.tanh(src.mean(0, dtype=np.float32) @ p["w_init"])
    tok, tokens, gap = GreedyDecoder.BOS, [], np.inf
    for _ in range(GreedyDecoder.MAX_LEN):
        gx = p["embedding"][tok] @ p["w_x"] + p["b_x"]
        gh = h @ p["w_h"] + p["b_h"]
        r = sig(gx[:n] + gh[:n])
        z = sig(gx[n:2 * n] + gh[n:2 * n])
        cand = np.tanh(gx[2 * n:] + r * gh[2 * n:])
        h = ((1.0 - z) * cand + z * h).astype(np.float32)
        logits = h @ p["w_out"] + p["b_out"]
        top2 = np.sort(logits)[-2:]
        gap = min(gap, float(top2[1] - top2[0]))
        tok = int(np.argmax(logits))
        tokens.append(tok)
        if tok == GreedyDecoder.EOS:
            break
    return {"tokens": np.array(tokens, dtype=np.int64), "h": h}, gap


def greedy_decoder_cases():
    # (src_len, seed): seeds picked so the decodes end at different lengths, one of them
    # only at MAX_LEN (checked below).
    cases = []
    for k, (src_len, seed) in enumerate([(1, 21), (5, 10), (23, 30), (1, 9)]):
        g = torch.Generator().manual_seed(seed)
        cases.append({"src": torch.randn(src_len, GreedyDecoder.FEATURES, generator=g)})
    return cases


# ---------------------------------------------------------------- sign_branch_rnn

class SignBranchRnn(nn.Module):
    FEATURES = 8

    def __init__(self):
        super().__init__()
        f = self.FEATURES
        self.w_x = seeded(21, f, f, scale=0.5)
        self.w_h = seeded(22, f, f, scale=0.4)
        self.b = seeded(23, f, scale=0.1)

    def forward(self, x: Tensor, h0: Tensor):
        h = h0
        ys: List[Tensor] = []
        for t in range(x.size(0)):
            s = torch.matmul(x[t], self.w_x) + torch.matmul(h, self.w_h) + self.b
            if bool(s.sum() > 0.0):
                h = torch.tanh(s)
            else:
                h = 0.5 * h - torch.sigmoid(s)
            ys.append(h)
        return torch.stack(ys), h


def sign_branch_rnn_numpy(p, x, h0):
    """Returns (outputs, smallest |sum(s)|, set of branches taken)."""
    h, ys, margin, taken = h0, [], np.inf, set()
    for t in range(x.shape[0]):
        s = x[t] @ p["w_x"] + h @ p["w_h"] + p["b"]
        total = float(s.sum(dtype=np.float32))
        margin = min(margin, abs(total))
        taken.add(total > 0.0)
        if total > 0.0:
            h = np.tanh(s)
        else:
            h = (0.5 * h - 1.0 / (1.0 + np.exp(-s))).astype(np.float32)
        ys.append(h)
    return {"ys": np.stack(ys), "h": h}, margin, taken


def sign_branch_rnn_cases():
    cases = []
    for seq, seed in [(1, 31), (6, 32), (40, 33)]:
        g = torch.Generator().manual_seed(seed)
        cases.append({"x": torch.randn(seq, SignBranchRnn.FEATURES, generator=g),
                      "h0": 0.5 * torch.randn(SignBranchRnn.FEATURES, generator=g)})
    return cases


# ---------------------------------------------------------------- export and check

def op_census(graph, ops=None):
    ops = {} if ops is None else ops
    for node in graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                op_census(attr.g, ops)
    return ops


def declare_output_shapes(model, example_outputs, dynamic_axes):
    """torch 1.13 declares Loop results with invented dims (`h: f32[Looph_dim_0]`, `ys:
    f32[seq, Loopys_dim_1]`), which an importer would take for new symbols; declare the
    real ones instead: the dynamic_axes names, the example's sizes elsewhere."""
    for value in model.graph.output:
        axes = dynamic_axes.get(value.name, {})
        dims = value.type.tensor_type.shape.dim
        shape = example_outputs[value.name].shape
        assert len(dims) == len(shape), f"{value.name}: rank {len(dims)} != {len(shape)}"
        for axis, dim in enumerate(dims):
            if axis in axes:
                dim.dim_param = axes[axis]
            else:
                dim.dim_value = shape[axis]


def export(module, example, input_names, output_names, dynamic_axes, path):
    scripted = torch.jit.script(module)
    torch.onnx.export(scripted, tuple(example), path, opset_version=OPSET,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes)
    model = onnx.load(path)
    with torch.no_grad():
        outputs = dict(zip(output_names, scripted(*example)))
    declare_output_shapes(model, outputs, dynamic_axes)
    onnx.save(model, path)
    onnx.checker.check_model(model, full_check=True)
    ops = op_census(model.graph)
    assert "Loop" in ops and "If" in ops, f"{path}: expected Loop and If, got {sorted(ops)}"
    unsupported = sorted(set(ops) - SUPPORTED_OPS)
    assert not unsupported, f"{path}: operators outside dynvm's table: {unsupported}"
    return scripted, ops


def run_model(name, module, cases, input_names, output_names, dynamic_axes, numpy_fn):
    out_dir = os.path.join(OUT_ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    module.eval()
    scripted, ops = export(module, [cases[0][n] for n in input_names], input_names,
                           output_names, dynamic_axes, path)
    params = {k: v.detach().numpy().astype(np.float32) for k, v in module.named_parameters()}
    have_ort = ort_check.ort_available()
    print(f"{name}: {path} ({os.path.getsize(path)} bytes), opset {OPSET}, ops "
          + ", ".join(f"{op}x{n}" for op, n in sorted(ops.items())))
    facts = []
    for k, case in enumerate(cases):
        args = [case[n] for n in input_names]
        with torch.no_grad():
            scripted_out = scripted(*args)
            eager_out = module(*args)
        want = {}
        for out_name, s, e in zip(output_names, scripted_out, eager_out):
            assert torch.equal(s, e), f"{name} case {k}: scripted != eager for {out_name}"
            want[out_name] = s.numpy()
        inputs = {n: case[n].numpy() for n in input_names}
        ort_check.save_case(os.path.join(out_dir, "cases", str(k)), inputs, want)

        mine, fact = numpy_fn(params, *inputs.values())
        facts.append(fact)
        np_diff = {o: ort_check.compare(f"{name} case {k} numpy {o}", mine[o], want[o])
                   for o in output_names}
        line = (f"  case {k}: " + ", ".join(f"{n}{list(v.shape)}" for n, v in inputs.items())
                + " -> " + ", ".join(f"{o}{list(v.shape)}" for o, v in want.items())
                + "\n    numpy vs torch max abs diff: "
                + ", ".join(f"{o} {d:.2e}" for o, d in np_diff.items()))
        if have_ort:
            got = ort_check.ort_run(path, inputs)
            ort_diff = {o: ort_check.compare(f"{name} case {k} ORT {o}", got[o], want[o])
                        for o in output_names}
            ort_np = {o: ort_check.compare(f"{name} case {k} ORT vs numpy {o}", got[o], mine[o])
                      for o in output_names}
            line += ("\n    ORT vs torch max abs diff:   "
                     + ", ".join(f"{o} {d:.2e}" for o, d in ort_diff.items())
                     + "\n    ORT vs numpy max abs diff:   "
                     + ", ".join(f"{o} {d:.2e}" for o, d in ort_np.items()))
        print(line)
    if not have_ort:
        print("  ONNX Runtime (onnxruntime-node) not found: not cross-checked")
    return facts


def main():
    torch.manual_seed(0)
    facts = run_model(
        "greedy_decoder", GreedyDecoder(), greedy_decoder_cases(), ["src"], ["tokens", "h"],
        {"src": {0: "src_len"}, "tokens": {0: "n_tokens"}},
        lambda p, src: (lambda out, gap: (out, (gap, len(out["tokens"]))))(
            *greedy_decoder_numpy(p, src)))
    lengths = [n for _, n in facts]
    gap = min(g for g, _ in facts)
    print(f"  decoded lengths {lengths}, smallest top-2 logit gap {gap:.3g}")
    assert gap > 1e-3, "an argmax is nearly tied; pick other seeds"
    assert len(set(lengths)) == len(lengths), "the cases should stop at different lengths"
    assert GreedyDecoder.MAX_LEN in lengths and min(lengths) < GreedyDecoder.MAX_LEN, \
        "one case should run to MAX_LEN and another stop at the end token"

    facts = run_model(
        "sign_branch_rnn", SignBranchRnn(), sign_branch_rnn_cases(), ["x", "h0"], ["ys", "h"],
        {"x": {0: "seq"}, "ys": {0: "seq"}},
        lambda p, x, h0: (lambda out, margin, taken: (out, (margin, taken)))(
            *sign_branch_rnn_numpy(p, x, h0)))
    margin = min(m for m, _ in facts)
    taken = set().union(*(t for _, t in facts))
    print(f"  smallest |sum(s)| {margin:.3g}, branches taken {sorted(taken)}")
    assert margin > 1e-3, "a branch condition is nearly tied; pick other seeds"
    assert taken == {True, False}, "the cases should take both branches"


if __name__ == "__main__":
    main()
