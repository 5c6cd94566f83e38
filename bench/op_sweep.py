#!/usr/bin/python3
"""Single-op PyTorch models through dynvm with no flags (session 30, bench/README.md): each case
is exported with its dynamic axes, compiled by dynvm.compile and run at three sizes against
PyTorch's own output. Prints one line per case: ok with the max abs difference, or where it
failed (torch's export, dynvm's compile, a run, a shape). Not a test: torch's exporter decides
what each case becomes, and some cases document what it cannot export.
Usage: PYTHONPATH=build/python /usr/bin/python3 bench/op_sweep.py [DIR] [CASE ...]"""
import os, sys, tempfile, numpy as np, torch, torch.nn as nn, torch.nn.functional as F, warnings
warnings.filterwarnings('ignore')
import dynvm
torch.manual_seed(0)


# A module whose forward is f(self, x), over the submodules mods.
class M(nn.Module):
    def __init__(s, f, mods=None):
        super().__init__(); s.f = f; s.m = nn.ModuleList(mods or [])
    def forward(s, x): return s.f(s, x)
cases = {
 'interp_nearest2x': (lambda s, x: F.interpolate(x, scale_factor=2.0, mode='nearest'), [], (1,3,10,13), {2:'h',3:'w'}),
 'interp_bicubic': (lambda s, x: F.interpolate(x, scale_factor=2.0, mode='bicubic', align_corners=False), [], (1,3,10,13), {2:'h',3:'w'}),
 'adaptive_pool': (lambda s, x: F.adaptive_avg_pool2d(x, (1, 1)) + F.adaptive_max_pool2d(x, 1), [], (2,3,10,13), {2:'h',3:'w'}),
 'unfold': (lambda s, x: F.unfold(x, 3, padding=1), [], (1,3,10,13), {2:'h',3:'w'}),
 'normalize': (lambda s, x: F.normalize(x, dim=1) * torch.logsumexp(x, 1, keepdim=True), [], (2,5,7), {2:'t'}),
 'var_std': (lambda s, x: x.var(-1, keepdim=True) + x.std(1, keepdim=True), [], (2,5,7), {2:'t'}),
 'sort_argmin': (lambda s, x: torch.sort(x, -1)[0] + x.argmin(-1, keepdim=True).float(), [], (2,5,7), {2:'t'}),
 'acts': (lambda s, x: F.mish(x) + F.celu(x) + F.hardswish(x) + s.m[0](x) + F.softsign(x) + torch.pow(x.abs(), 1.7), [nn.PReLU(5)], (2,5,7), {2:'t'}),
 'one_hot': (lambda s, x: F.one_hot((x.abs() * 3).long().clamp(max=9), 10).float().sum(1), [], (2,5,7), {2:'t'}),
 'convT1d': (lambda s, x: s.m[0](x), [nn.ConvTranspose1d(5, 4, 4, 2, 1, output_padding=1, groups=1)], (2,5,7), {2:'t'}),
 'conv3d': (lambda s, x: s.m[0](x), [nn.Conv3d(2, 4, 3, padding=1)], (1,2,4,6,6), {2:'d',3:'h',4:'w'}),
 'conv3d_s2': (lambda s, x: F.relu(s.m[0](x)), [nn.Conv3d(2, 20, (3, 5, 3), stride=(1, 2, 2), padding=(1, 2, 0), dilation=(2, 1, 1))], (1,2,6,9,11), {2:'d',3:'h',4:'w'}),
 'conv3d_dw': (lambda s, x: s.m[0](x), [nn.Conv3d(8, 8, 3, padding=1, groups=8, bias=False)], (2,8,5,7,6), {2:'d',3:'h',4:'w'}),
 'conv3d_static': (lambda s, x: s.m[0](x), [nn.Conv3d(4, 16, (2, 3, 3), stride=2)], (1,4,6,10,18), {}),
 'conv3d_pw': (lambda s, x: s.m[0](x), [nn.Conv3d(16, 24, 1)], (1,16,3,5,40), {2:'d',4:'w'}),
 'maxunpool': (lambda s, x: F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2), [], (2,5,8), {2:'t'}),
 'index_select': (lambda s, x: torch.index_select(x, 2, torch.arange(0, x.shape[2], 2)), [], (2,5,9), {2:'t'}),
 'repeat_interleave': (lambda s, x: torch.repeat_interleave(x, 2, dim=2), [], (2,5,7), {2:'t'}),
 'scatter_add': (lambda s, x: torch.zeros_like(x).scatter_add(2, (x.abs()*3).long().clamp(max=x.shape[2]-1), x), [], (2,5,7), {2:'t'}),
 'gru_cell_loop': (lambda s, x: s.m[0](x.transpose(1, 2))[0], [nn.GRU(5, 6, 2, batch_first=True)], (2,5,7), {2:'t'}),
 'group_convT': (lambda s, x: s.m[0](x), [nn.ConvTranspose2d(4, 8, 3, 2, 1, groups=2)], (1,4,5,6), {2:'h',3:'w'}),
 'triu_dyn': (lambda s, x: torch.triu(x @ x.transpose(1, 2), 1) + torch.tril(torch.ones(x.shape[1], x.shape[1])), [], (2,7,5), {1:'t'}),
 'cumprod_flip': (lambda s, x: torch.flip(torch.cumsum(x, 2), [2]) * x.cummax(2)[0], [], (2,5,7), {2:'t'}),
 'einsum3': (lambda s, x: torch.einsum('bct,bdt,cd->bt', x, x, torch.eye(5)), [], (2,5,7), {2:'t'}),
 'atan_ceil': (lambda s, x: torch.atan(x) + torch.ceil(x) - torch.floor(x) + torch.round(x) + torch.sign(x) + torch.fmod(x, 0.7), [], (2,5,7), {2:'t'}),
 'layernorm_2d': (lambda s, x: F.layer_norm(x, x.shape[-2:]), [], (2,5,7), {}),
 'instnorm1d': (lambda s, x: s.m[0](x), [nn.InstanceNorm1d(5, affine=True)], (2,5,7), {2:'t'}),
 'pixelshuffle': (lambda s, x: F.pixel_shuffle(x, 2), [], (1,8,5,6), {2:'h',3:'w'}),
 'avgpool_ceil': (lambda s, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True) + 0, [], (1,3,11,14), {2:'h',3:'w'}),
 'lppool': (lambda s, x: F.lp_pool1d(x, 2, 3, 2), [], (2,5,11), {2:'t'}),
 'topk_dyn': (lambda s, x: torch.topk(x, x.shape[2] // 2, 2)[0], [], (2,5,11), {2:'t'}),
 'where_nan': (lambda s, x: torch.nan_to_num(torch.where(x > 0, x.log(), x)), [], (2,5,7), {2:'t'}),
 'expand_mask': (lambda s, x: x.masked_fill(torch.arange(x.shape[2])[None, None] > x.shape[2] // 2, 0.5), [], (2,5,7), {2:'t'}),
 'bilinear_ac': (lambda s, x: F.interpolate(x, size=(x.shape[2] * 2 + 1, 17), mode='bilinear', align_corners=True), [], (1,3,10,13), {2:'h',3:'w'}),
 'grid_sample': (lambda s, x: F.grid_sample(x, torch.tanh(x[:, :2].permute(0, 2, 3, 1)), align_corners=False), [], (1,3,8,9), {2:'h',3:'w'}),
 'lstm_proj': (lambda s, x: s.m[0](x.transpose(1, 2))[0], [nn.LSTM(5, 8, batch_first=True, bidirectional=True)], (2,5,7), {2:'t'}),
 'embbag': (lambda s, x: s.m[0]((x.abs()*3).long().clamp(max=9).flatten(1)), [nn.EmbeddingBag(10, 4, mode='mean')], (2,5,7), {2:'t'}),
}
out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
only = sys.argv[2:] or list(cases)
for name in only:
    f, mods, shape, axes = cases[name]
    m = M(f, mods).eval()
    x = torch.randn(*shape)
    try:
        torch.onnx.export(m, (x,), f'{out}/{name}.onnx', input_names=['x'], output_names=['y'],
                          dynamic_axes={'x': {0: 'n', **axes}}, opset_version=17)
    except Exception as e:
        print(f'{name:18s} EXPORT-FAIL {str(e)[:80]}'); continue
    try:
        exe = dynvm.compile(f'{out}/{name}.onnx')
    except Exception as e:
        print(f'{name:18s} COMPILE-FAIL {str(e)[:160]}'); continue
    worst = 0
    for k in range(3):
        sh = list(shape)
        for a in axes: sh[a] = shape[a] + 3 * k + (k == 2) * 5
        if name == 'maxunpool': sh = [s_ + (s_ % 2) for s_ in sh]
        sh[0] = 1 + k % 2
        x = torch.randn(*sh)
        with torch.no_grad(): r = m(x).numpy()
        try:
            o = list(exe.run([x.numpy()]).values())[0]
        except Exception as e:
            print(f'{name:18s} RUN-FAIL {sh} {str(e)[:160]}'); worst = None; break
        if o.shape != r.shape: print(f'{name:18s} SHAPE {sh} {o.shape} vs {r.shape}'); worst = None; break
        worst = max(worst, float(np.nanmax(np.abs(o.astype(np.float64) - r))) if r.size else 0)
    if worst is not None: print(f'{name:18s} ok maxabs {worst:.2e}' + ('   <-- MISMATCH' if worst > 1e-3 else ''))
