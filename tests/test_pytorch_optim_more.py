# test_pytorch_optim_more.py - optim.ASGD, Rprop, Adafactor and Muon (issue 43, item 7)
# against torch.optim step by step: five steps on two parameter groups in float64 (the
# iterates and the state, under PyTorch's state names), on cpu and sim; Muon, whose
# Newton-Schulz iteration runs in bfloat16, to bfloat16's precision.
import numpy as np
import pytest

import pygpu
from pygpu import optim

torch = pytest.importorskip("torch")

CASES = [
    ("ASGD", dict(lr=0.05), ("eta", "mu", "ax")),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1), ("eta", "mu", "ax")),
    ("Rprop", dict(lr=0.01), ("prev", "step_size")),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05)), ("prev", "step_size")),
    ("Adafactor", dict(lr=0.05), ("row_var", "col_var", "variance")),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1),
     ("row_var", "col_var", "variance")),
]


def _grads(step, shapes):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("name,kw,names", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_optimizer_matches_torch_over_steps(device, name, kw, names):
    shapes = [(4, 3), (3,), (2, 2, 3)]
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s) for s in shapes]
    ps = [pygpu.tensor(a, device=device).requires_grad_() for a in init]
    ts = [torch.tensor(a).requires_grad_() for a in init]
    ours = getattr(optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.03}], **kw)
    ref = getattr(torch.optim, name)([{"params": ts[:1]}, {"params": ts[1:], "lr": 0.03}], **kw)
    for step in range(5):
        for p, t, g in zip(ps, ts, _grads(step, shapes)):
            p.grad = pygpu.tensor(g, device=device)
            t.grad = torch.tensor(g)
        ours.step()
        ref.step()
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    for i in range(len(ps)):
        st, ref_st = ours.state[ps[i]], ref.state[ts[i]]
        assert int(st["step"]) == int(ref_st["step"]) == 5
        for k in names:
            if k not in ref_st:
                continue
            v = ref_st[k]
            ours_v = st[k]
            ours_v = ours_v.cpu().numpy() if hasattr(ours_v, "cpu") else np.asarray(ours_v)
            np.testing.assert_allclose(ours_v, np.asarray(v.detach()), rtol=1e-10, atol=1e-12)


def test_muon_matches_torch_to_bfloat16s_precision(device):
    rng = np.random.default_rng(3)
    init = rng.standard_normal((6, 4)).astype(np.float32)
    p = pygpu.tensor(init, device=device).requires_grad_()
    t = torch.tensor(init).requires_grad_()
    ours, ref = optim.Muon([p], lr=0.02), torch.optim.Muon([t], lr=0.02)
    for step in range(3):
        g = rng.standard_normal(init.shape).astype(np.float32)
        p.grad, t.grad = pygpu.tensor(g, device=device), torch.tensor(g)
        ours.step()
        ref.step()
    moved_ours = p.detach().cpu().numpy() - init
    moved_ref = t.detach().numpy() - init
    np.testing.assert_allclose(moved_ours, moved_ref, rtol=0.05, atol=2e-3)
    np.testing.assert_allclose(ours.state[p]["momentum_buffer"].cpu().numpy(),
                               ref.state[t]["momentum_buffer"].numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([pygpu.ones(3, requires_grad=True)])


def test_argument_errors_match_torch():
    for name, kw in [("ASGD", dict(lr=-1)), ("Rprop", dict(etas=(1.5, 1.2))),
                     ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(d=0.5)),
                     ("Muon", dict(adjust_lr_fn="other"))]:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([torch.ones(2, 2, requires_grad=True)], **kw)
        with pytest.raises(ValueError) as ours:
            getattr(optim, name)([pygpu.ones(2, 2, requires_grad=True)], **kw)
        assert str(theirs.value) == str(ours.value)
