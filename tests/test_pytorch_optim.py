# test_pytorch_optim.py - pygpu.optim against torch.optim as the oracle: every optimizer
# (SGD with momentum/dampening/nesterov/weight_decay, Adam with amsgrad/weight_decay, AdamW,
# RMSprop plain/momentum/centered, Adagrad, Adadelta) over several steps with param groups,
# state_dict round trips, each update one fused op per parameter, and every lr_scheduler's
# learning rate step by step against torch's.
import math

import numpy as np
import pytest

import pygpu
from pygpu import optim

torch = pytest.importorskip("torch")

_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True, betas=(0.8, 0.9))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, alpha=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.01)),
]


def _grads(step, shapes, rng_seed=0):
    rng = np.random.default_rng(rng_seed + step)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("name,kw", _CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_CASES)])
def test_optimizer_matches_torch_over_steps(device, name, kw):
    shapes = [(4, 3), (3,)]
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s) for s in shapes]
    ps = [pygpu.tensor(a, device=device).requires_grad_() for a in init]
    ts = [torch.tensor(a).requires_grad_() for a in init]
    # two param groups: the second with its own lr, as PyTorch allows
    ours = getattr(optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}], **kw)
    ref = getattr(torch.optim, name)([{"params": ts[:1]}, {"params": ts[1:], "lr": 0.05}], **kw)
    for step in range(5):
        for p, t, g in zip(ps, ts, _grads(step, shapes)):
            p.grad = pygpu.tensor(g, device=device)
            t.grad = torch.tensor(g)
        ours.step()
        ref.step()
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    # state carries PyTorch's names
    st = ours.state_dict()["state"].get(0, {})
    ref_st = ref.state_dict()["state"].get(0, {})
    ref_st = {k: v for k, v in ref_st.items() if v is not None}
    assert set(k for k in ref_st if k != "step") <= set(st)
    for k, v in ref_st.items():
        if k != "step":
            np.testing.assert_allclose(st[k].numpy(), v.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,kw", [c for c in _CASES if c[0] != "SGD"],
                         ids=[n + "".join(f"-{k}" for k in kw if k != "lr")
                              for n, kw in _CASES if n != "SGD"])
def test_float32_update_is_one_fused_op_and_close_to_torch(name, kw, device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 33)).astype(np.float32)
    p = pygpu.tensor(a, device=device).requires_grad_()
    t = torch.tensor(a).requires_grad_()
    ours, ref = getattr(optim, name)([p], **kw), getattr(torch.optim, name)([t], **kw)
    for step in range(3):
        g = rng.standard_normal(a.shape).astype(np.float32)
        p.grad, t.grad = pygpu.tensor(g, device=device), torch.tensor(g)
        ours.step()
        ref.step()
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=2e-5, atol=2e-6)
    pygpu.synchronize()
    before = pygpu.stats().ops
    ours.step()
    pygpu.synchronize()
    assert pygpu.stats().ops - before == 1  # one fused launch for the parameter


# NAdam (a few in-place ops per parameter), RAdam and Adamax (one fused op each, or a
# multi-tensor node: tests/test_optim_fused.py), checked the same way; torch's default dtype is
# float64 here so its scalar state (NAdam's mu_product) is too
_COMPOSED = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.8, 0.9))),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
]


@pytest.mark.parametrize("name,kw", _COMPOSED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_COMPOSED)])
def test_composed_optimizer_matches_torch_over_steps(device, name, kw):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        shapes = [(4, 3), (3,)]
        rng = np.random.default_rng(1)
        init = [rng.standard_normal(s) for s in shapes]
        ps = [pygpu.tensor(a, device=device).requires_grad_() for a in init]
        ts = [torch.tensor(a).requires_grad_() for a in init]
        ours = getattr(optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}], **kw)
        ref = getattr(torch.optim, name)([{"params": ts[:1]}, {"params": ts[1:], "lr": 0.05}], **kw)
        for step in range(8):  # RAdam's rectified step starts at step 6
            for p, t, g in zip(ps, ts, _grads(step, shapes)):
                p.grad = pygpu.tensor(g, device=device)
                t.grad = torch.tensor(g)
            ours.step()
            ref.step()
        for p, t in zip(ps, ts):
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                                       atol=1e-12)
        st, ref_st = ours.state_dict()["state"][0], ref.state_dict()["state"][0]
        for k, v in ref_st.items():
            if k not in ("step", "mu_product"):
                np.testing.assert_allclose(st[k].numpy(), v.numpy(), rtol=1e-10, atol=1e-12)
        assert float(st["step"]) == float(ref_st["step"])
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch_step_by_step(device, line_search):
    """A least-squares fit (well conditioned: the iterates agree to rounding) and the
    Rosenbrock function's first steps, with a closure, as PyTorch runs them."""
    rng = np.random.default_rng(4)
    A, b, w0 = rng.standard_normal((20, 5)), rng.standard_normal(20), rng.standard_normal(5)
    problems = [
        (w0, lambda m, w, A_, b_: ((A_ @ w - b_) ** 2).mean(), 1e-9),
        (np.array([-1.5, 2.0]), lambda m, w, A_, b_: (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2, 1e-7),
    ]
    for start, loss_fn, tol in problems:
        p = pygpu.tensor(start, device=device).requires_grad_()
        t = torch.tensor(start).requires_grad_()
        kw = dict(lr=1, max_iter=5, history_size=3, line_search_fn=line_search)
        ours, ref = optim.LBFGS([p], **kw), torch.optim.LBFGS([t], **kw)
        Ap, bp = pygpu.tensor(A, device=device), pygpu.tensor(b, device=device)
        At, bt = torch.tensor(A), torch.tensor(b)

        def closure_p():
            ours.zero_grad()
            loss = loss_fn(pygpu, p, Ap, bp)
            loss.backward()
            return loss

        def closure_t():
            ref.zero_grad()
            loss = loss_fn(torch, t, At, bt)
            loss.backward()
            return loss
        for step in range(3):
            lp, lt = ours.step(closure_p), ref.step(closure_t)
            np.testing.assert_allclose(float(lp), float(lt.detach()), rtol=tol)
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
        assert ours.state[p]["func_evals"] == ref.state[t]["func_evals"]
        assert ours.state[p]["n_iter"] == ref.state[t]["n_iter"]
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [pygpu.zeros(1).requires_grad_()]}])


def test_sparse_adam_on_a_sparse_embedding_matches_torch(device):
    rng = np.random.default_rng(5)
    table = rng.standard_normal((10, 3))
    emb = pygpu.nn.Embedding(10, 3, sparse=True).to(device)
    with pygpu.no_grad():
        emb.weight.copy_(pygpu.tensor(table.astype(np.float32), device=device))
    temb = torch.nn.Embedding(10, 3, sparse=True)
    with torch.no_grad():
        temb.weight.copy_(torch.tensor(table.astype(np.float32)))
    ours = optim.SparseAdam(emb.parameters(), lr=0.1)
    ref = torch.optim.SparseAdam(temb.parameters(), lr=0.1)
    for step in range(4):
        idx = rng.integers(0, 10, size=6)
        target = rng.standard_normal((6, 3)).astype(np.float32)
        ours.zero_grad()
        ref.zero_grad()
        ((emb(pygpu.tensor(idx, device=device)) - pygpu.tensor(target, device=device)) ** 2).sum().backward()
        ((temb(torch.tensor(idx)) - torch.tensor(target)) ** 2).sum().backward()
        ours.step()
        ref.step()
    np.testing.assert_allclose(emb.weight.detach().numpy(), temb.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_optimizer_state_dict_round_trip_continues_identically():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(5)
    p1, p2 = pygpu.tensor(a).requires_grad_(), pygpu.tensor(a).requires_grad_()
    o1 = optim.AdamW([p1], lr=0.1, amsgrad=True)
    for s in range(2):
        p1.grad = pygpu.tensor(_grads(s, [(5,)])[0])
        o1.step()
    p2.data = p1.detach().clone() if hasattr(p1, "clone") else pygpu.tensor(p1.numpy())
    o2 = optim.AdamW([p2], lr=0.5)
    o2.load_state_dict(o1.state_dict())
    assert o2.param_groups[0]["lr"] == 0.1 and o2.param_groups[0]["amsgrad"] is True
    for s in range(2, 4):
        g = _grads(s, [(5,)])[0]
        p1.grad, p2.grad = pygpu.tensor(g), pygpu.tensor(g)
        o1.step()
        o2.step()
    np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())


def test_add_param_group_and_bad_hyperparameters():
    p = pygpu.zeros(3).requires_grad_()
    q = pygpu.zeros(2).requires_grad_()
    o = optim.RMSprop([p], lr=0.1)
    o.add_param_group({"params": [q], "lr": 0.2})
    assert [g["lr"] for g in o.param_groups] == [0.1, 0.2]
    assert o.param_groups[1]["alpha"] == 0.99  # defaults fill the new group
    with pytest.raises(ValueError, match="more than one parameter group"):
        o.add_param_group({"params": [q]})
    with pytest.raises(ValueError, match="lr"):
        optim.Adagrad([p], lr=-1)
    with pytest.raises(ValueError, match="betas"):
        optim.AdamW([p], betas=(1.5, 0.9))
    assert "Parameter Group 0" in repr(o)
    p.grad = pygpu.ones(3)
    o.step()
    assert "square_avg" in o.state[p] and o.state[p] is o.state[id(p)]  # PyTorch's state[p]


# ---- lr_scheduler ------------------------------------------------------------------------

def _sched_pair(make, opt_name="SGD", opt_kw=None, groups=2, steps=30, metrics=None):
    opt_kw = opt_kw or dict(lr=0.5, momentum=0.9)
    ps = [pygpu.zeros(1).requires_grad_() for _ in range(groups)]
    ts = [torch.zeros(1, requires_grad=True) for _ in range(groups)]
    ours = getattr(optim, opt_name)([{"params": [p], "lr": 0.5 * (i + 1)}
                                    for i, p in enumerate(ps)], **opt_kw)
    ref = getattr(torch.optim, opt_name)([{"params": [t], "lr": 0.5 * (i + 1)}
                                         for i, t in enumerate(ts)], **opt_kw)
    s_ours, s_ref = make(optim.lr_scheduler, ours), make(torch.optim.lr_scheduler, ref)
    seq_ours, seq_ref = [s_ours.get_last_lr()], [s_ref.get_last_lr()]
    mom_ours, mom_ref = [], []
    for k in range(steps):
        ours.step()
        ref.step()
        if metrics is None:
            s_ours.step()
            s_ref.step()
        else:
            s_ours.step(metrics[k])
            s_ref.step(metrics[k])
        seq_ours.append(list(s_ours.get_last_lr()))
        seq_ref.append([float(x) for x in s_ref.get_last_lr()])
        key = "betas" if "betas" in ref.defaults else "momentum"
        mom_ours.append([g[key] for g in ours.param_groups])
        mom_ref.append([g[key] for g in ref.param_groups])
    return seq_ours, seq_ref, mom_ours, mom_ref


_SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e + 0.01 * (e % 3)),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=4), m.ExponentialLR(o, gamma=0.8),
            m.CosineAnnealingLR(o, T_max=5)], milestones=[4, 12]),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=9, power=2.0),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9)]),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001),
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.3], step_size_up=4,
                                        step_size_down=3),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, 0.01, 0.2, step_size_up=3,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, 0.01, 0.2, step_size_up=2,
                                                  mode="exp_range", gamma=0.97),
}


@pytest.mark.parametrize("name", sorted(_SCHEDULES))
def test_scheduler_lr_matches_torch_step_by_step(name):
    ours, ref, _, _ = _sched_pair(_SCHEDULES[name])
    for k, (a, b) in enumerate(zip(ours, ref)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0, err_msg=f"{name} at step {k}")


@pytest.mark.parametrize("kw", [dict(), dict(anneal_strategy="linear", three_phase=True)])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_one_cycle_matches_torch_lr_and_momentum(kw, opt):
    opt_kw = dict(lr=0.1, momentum=0.9) if opt == "SGD" else dict(lr=0.1)
    make = lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=20, **kw)  # noqa: E731
    ours, ref, mo, mr = _sched_pair(make, opt, opt_kw, steps=20)
    np.testing.assert_allclose(ours, ref, rtol=1e-13)
    if opt == "SGD":
        np.testing.assert_allclose(mo, mr, rtol=1e-13)
    else:
        np.testing.assert_allclose([[b[0] for b in r] for r in mo],
                                   [[b[0] for b in r] for r in mr], rtol=1e-13)


def test_cyclic_lr_cycles_momentum_as_torch():
    _, _, mo, mr = _sched_pair(lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3))
    np.testing.assert_allclose(mo, mr, rtol=1e-13)
    _, _, mo, mr = _sched_pair(lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3),
                               "Adam", dict(lr=0.1))
    np.testing.assert_allclose([[b[0] for b in r] for r in mo],
                               [[b[0] for b in r] for r in mr], rtol=1e-13)
    with pytest.raises(ValueError, match="momentum or beta1"):
        optim.lr_scheduler.CyclicLR(optim.Adagrad([pygpu.zeros(1).requires_grad_()]), 0.1, 1.0)
    with pytest.raises(ValueError, match="mode is invalid"):
        optim.lr_scheduler.CyclicLR(optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.1,
                                              momentum=0.9), 0.1, 1.0, mode="sawtooth")


def test_warm_restarts_fractional_epochs_and_state_dicts_as_torch():
    ours = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.5)
    ref = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    s_ours = optim.lr_scheduler.CosineAnnealingWarmRestarts(ours, T_0=2, T_mult=3)
    s_ref = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(ref, T_0=2, T_mult=3)
    for e in (0.0, 0.5, 1.25, 2.0, 3.7, 7.9, 8.0, 20.5, 1.0):
        s_ours.step(e)
        s_ref.step(e)
        assert s_ours.get_last_lr() == pytest.approx(s_ref.get_last_lr(), rel=1e-13)
    with pytest.raises(ValueError, match="non-negative epoch"):
        s_ours.step(-1)
    with pytest.raises(ValueError, match="positive integer T_0"):
        optim.lr_scheduler.CosineAnnealingWarmRestarts(ours, T_0=0)
    # a chained and a cyclic scheduler resume from their state_dict where they stopped
    for make in (lambda m, o: m.ChainedScheduler([m.StepLR(o, 2, 0.5), m.ExponentialLR(o, 0.9)]),
                 lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3)):
        o1 = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.5, momentum=0.9)
        s1 = make(optim.lr_scheduler, o1)
        for _ in range(5):
            o1.step()
            s1.step()
        o2 = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.5, momentum=0.9)
        s2 = make(optim.lr_scheduler, o2)
        o2.load_state_dict(o1.state_dict())
        s2.load_state_dict(s1.state_dict())
        for _ in range(4):
            s1.step()
            s2.step()
        assert s2.get_last_lr() == s1.get_last_lr()
    with pytest.raises(ValueError, match="at least one scheduler"):
        optim.lr_scheduler.ChainedScheduler([])


def test_one_cycle_refuses_a_step_past_total_steps():
    o = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.1, momentum=0.9)
    s = optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=2)
    s.step()
    s.step()
    with pytest.raises(ValueError, match="total steps is 2"):
        s.step()


def test_reduce_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.92, 0.93, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    make = lambda m, o: m.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1,  # noqa: E731
                                           min_lr=[0.05, 0.2])
    ours, ref, _, _ = _sched_pair(make, metrics=metrics, steps=len(metrics))
    np.testing.assert_allclose(ours, ref, rtol=1e-15)
    assert ours[-1] != ours[0]  # it did reduce


def test_scheduler_state_dict_round_trip_and_errors():
    o = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=1.0)
    s = optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
    for _ in range(3):
        o.step()
        s.step()
    sd = s.state_dict()
    o2 = optim.SGD([pygpu.zeros(1).requires_grad_()], lr=1.0)
    s2 = optim.lr_scheduler.StepLR(o2, step_size=7)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2.step_size == 2
    with pytest.raises(TypeError, match="not an Optimizer"):
        optim.lr_scheduler.StepLR(object(), step_size=1)
    with pytest.raises(ValueError, match="milestone"):
        optim.lr_scheduler.SequentialLR(o, [s], milestones=[3])
    assert math.isclose(o.param_groups[0]["lr"], 0.5)
