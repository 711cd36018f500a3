# test_module_hooks_state.py - nn.Module's hooks and state protocol against torch's: forward
# hooks with kwargs / prepend / always_call, RemovableHandle, state_dict's _metadata and
# extra state, _save_to_state_dict / _load_from_state_dict overrides, the four state_dict
# hooks, PyTorch's load_state_dict errors word for word, BatchNorm's version-1 checkpoints,
# and the small methods (cuda, type, get_parameter, get_buffer, set_submodule, _apply).
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
import pygpu.utils.hooks

torch = pytest.importorskip("torch")


def _model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Flatten(),
                         nn.Linear(12, 4))


def _same_state(ours, ref):
    assert list(ours) == list(ref)
    for k in ref:
        np.testing.assert_array_equal(ours[k].numpy(), ref[k].numpy())


def test_forward_hooks_kwargs_prepend_and_always_call_as_torch():
    def run(lib):
        log = []

        class M(lib.nn.Module):
            def forward(self, x, scale=1.0):
                if scale < 0:
                    raise ValueError("negative scale")
                return x * scale

        m = M()
        m.register_forward_pre_hook(lambda mod, a: log.append(("pre", len(a))))
        m.register_forward_pre_hook(lambda mod, a, kw: (a, {**kw, "scale": 2.0}),
                                    with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, a: log.append(("first",)), prepend=True)
        h = m.register_forward_hook(lambda mod, a, kw, out: out + kw["scale"], with_kwargs=True)
        m.register_forward_hook(lambda mod, a, out: log.append(("always", out is None)),
                                always_call=True)
        out = m(lib.ones(2), scale=5.0)
        with pytest.raises(ValueError):
            m._forward_pre_hooks.clear()
            m(lib.ones(2), scale=-1.0)
        h.remove()
        assert h.id not in m._forward_hooks_with_kwargs
        return out.tolist(), log

    assert run(pygpu) == run(torch)


def test_removable_handle_as_torch():
    d = OrderedDict()  # weakly held: an OrderedDict, as a module's hook dicts are
    for lib in (pygpu, torch):
        h = lib.utils.hooks.RemovableHandle(d, extra_dict=[OrderedDict(), OrderedDict()])
        d[h.id] = "hook"
        with h:
            assert h.id in d
        assert h.id not in d
        h2 = pickle.loads(pickle.dumps(lib.utils.hooks.RemovableHandle(d)))
        assert isinstance(h2, lib.utils.hooks.RemovableHandle)


def test_state_dict_metadata_and_keys_equal_torch():
    ours, ref = _model(pygpu).state_dict(), _model(torch).state_dict()
    assert list(ours) == list(ref)
    assert dict(ours._metadata) == dict(ref._metadata)  # versions: BatchNorm's is 2
    assert _model(pygpu).state_dict(prefix="p.").keys() == _model(torch).state_dict(
        prefix="p.").keys()


def _extra(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.note = {"steps": 3}

        def get_extra_state(self):
            return dict(self.note)

        def set_extra_state(self, state):
            self.note = dict(state)
    return WithExtra()


def test_extra_state_round_trips_both_ways_with_torch(tmp_path):
    ours, ref = _extra(pygpu), _extra(torch)
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["_extra_state", "lin.weight",
                                                                "lin.bias"]
    ours.note = {"steps": 7}
    pygpu.save(ours.state_dict(), tmp_path / "o.pt")
    ref.load_state_dict(torch.load(tmp_path / "o.pt"))
    assert ref.note == {"steps": 7}
    ref.note = {"steps": 11}
    torch.save(ref.state_dict(), tmp_path / "r.pt")
    ours.load_state_dict(pygpu.load(tmp_path / "r.pt"))
    assert ours.note == {"steps": 11}
    sd = ours.state_dict()
    del sd["_extra_state"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "_extra_state"'):
        ours.load_state_dict(sd)


def test_save_and_load_overrides_and_the_four_hooks_as_torch():
    def run(lib):
        calls = []

        class Renamed(lib.nn.Linear):  # an old checkpoint's names, mapped on load
            def _load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected,
                                      errors):
                if prefix + "w" in sd:
                    sd[prefix + "weight"] = sd.pop(prefix + "w")
                super()._load_from_state_dict(sd, prefix, meta, strict, missing, unexpected,
                                              errors)

        lib.manual_seed(0)
        m = lib.nn.Sequential(Renamed(2, 2))
        m.register_state_dict_pre_hook(lambda mod, prefix, kv: calls.append(("pre", prefix)))
        m.register_state_dict_post_hook(
            lambda mod, sd, prefix, meta: calls.append(("post", sorted(sd))))
        m.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, *rest: calls.append(("lpre", sorted(sd))))

        def forgive(mod, keys):
            calls.append(("lpost", list(keys.missing_keys), list(keys.unexpected_keys)))
            keys.missing_keys.clear()
        m.register_load_state_dict_post_hook(forgive)
        sd = m.state_dict()
        old = {"0.w": sd["0.weight"] * 2}  # no bias: the post hook forgives it
        res = m.load_state_dict(old)
        assert (m[0].weight.detach() == old["0.w"]).all()  # loaded under its new name
        return calls, res.missing_keys

    assert run(pygpu) == run(torch)


def test_load_state_dict_errors_are_torchs_words():
    for bad in ({"weight": np.zeros((4, 3), np.float32)},  # no bias, wrong shape
                {"weight": np.zeros((2, 3), np.float32), "bias": np.zeros(2, np.float32),
                 "extra.x": np.zeros(1, np.float32)}):
        msgs = []
        for lib in (pygpu, torch):
            lib.manual_seed(0)
            m = lib.nn.Linear(3, 2)
            with pytest.raises(RuntimeError) as e:
                m.load_state_dict({k: lib.tensor(v) for k, v in bad.items()})
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        pygpu.nn.Linear(3, 2).load_state_dict([1, 2])


def test_batch_norm_loads_a_version_1_checkpoint_as_torch():
    for lib in (pygpu, torch):
        bn = lib.nn.BatchNorm1d(3)
        sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
        bn.load_state_dict(sd)  # no _metadata: version None, num_batches_tracked kept
        assert int(bn.num_batches_tracked) == 0


def test_small_module_methods_as_torch():
    for lib in (pygpu, torch):
        m = _model(lib)
        assert m.get_parameter("0.weight") is m[0].weight
        assert m.get_buffer("1.running_mean") is m[1].running_mean
        with pytest.raises(AttributeError, match="is not an nn.Parameter"):
            m.get_parameter("1.running_mean")
        with pytest.raises(AttributeError, match="is not a buffer"):
            m.get_buffer("0.weight")
        m.set_submodule("2", lib.nn.Identity())
        assert isinstance(m[2], lib.nn.Identity)
        with pytest.raises(ValueError, match="without a target name"):
            m.set_submodule("", lib.nn.Identity())
        m.register_module("extra", lib.nn.ReLU())
        assert m.extra._get_name() == "ReLU"
        assert m.type(lib.float64)[0].weight.dtype == lib.float64
    seen = []

    class Tracked(pygpu.nn.Linear):
        def _apply(self, fn, recurse=True):
            seen.append(type(self).__name__)
            return super()._apply(fn, recurse)

    t = Tracked(2, 2)
    p = t.weight
    t.to("sim")
    assert seen == ["Tracked"] and t.weight is p and t.weight.device.type == "sim"
    try:
        pygpu.ones(1).cuda()
    except Exception as e:  # no usable GPU here: Module.cuda raises what Tensor.cuda raises
        with pytest.raises(type(e)):
            pygpu.nn.Linear(2, 2).cuda()
    else:
        assert pygpu.nn.Linear(2, 2).cuda().weight.device.type == "cuda"


def test_sequential_item_assignment_deletion_and_pop_as_torch():
    def run(lib):
        nn = lib.nn
        s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2), nn.Tanh())
        s[1] = nn.Sigmoid()
        del s[2:3]
        popped = s.pop(0)
        return [type(m).__name__ for m in s], list(dict(s.named_children())), \
            type(popped).__name__
    assert run(pygpu) == run(torch)
