# test_public_names.py - moving files inside pygpu/ changes no public name.
#
# The package's layout is free to change (pygpu/_tensor/, pygpu/_ops/, pygpu/cuda/: issue 44),
# its surface is not: every public name of `pygpu`, of each public submodule (no component
# starting with "_") and of `pygpu.Tensor` is compared with the snapshot in
# tests/public_names.json, taken before the move. A name lost fails; a name gained fails too,
# unless it is added to the snapshot on purpose:
#     PYGPU_WRITE_PUBLIC_NAMES=1 python -m pytest -q tests/test_public_names.py
# Pickles written before a move still load: the modules they name are aliases now
# (test_old_pickle_paths_still_load).
import importlib
import json
import os
import pathlib
import pickle
import pkgutil

import pygpu

SNAPSHOT = pathlib.Path(__file__).with_name("public_names.json")


def _public_modules():
    names = ["pygpu"]
    for m in pkgutil.walk_packages(pygpu.__path__, "pygpu."):
        parts = m.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] == "tools":
            continue  # private modules, and the command-line programs (python -m pygpu.tools.x)
        names.append(m.name)
    return sorted(names)


def _surface():
    out = {}
    mods = [importlib.import_module(name) for name in _public_modules()]  # all first: a
    for mod in mods:  # package's names include its submodules, whichever test imported them
        out[mod.__name__] = sorted(n for n in dir(mod) if not n.startswith("_"))
    out["pygpu.Tensor"] = sorted(dir(pygpu.Tensor))
    return out


def test_public_names_are_the_snapshot():
    now = _surface()
    if os.environ.get("PYGPU_WRITE_PUBLIC_NAMES"):
        SNAPSHOT.write_text(json.dumps(now, indent=0, sort_keys=True) + "\n")
    was = json.loads(SNAPSHOT.read_text())
    lost = {m: sorted(set(names) - set(now.get(m, ()))) for m, names in was.items()}
    gained = {m: sorted(set(names) - set(was.get(m, ()))) for m, names in now.items()}
    lost = {m: v for m, v in lost.items() if v or m not in now}
    gained = {m: v for m, v in gained.items() if v or m not in was}
    assert not lost, f"public names gone: {lost}"
    assert not gained, f"public names added (write the snapshot if on purpose): {gained}"


# pickle.dumps([pygpu.tensor([1., 2.]), nn.CrossEntropyLoss(), pygpu.stack, F.nll_loss],
# protocol=4), written before issue 44 moved the modules it names: pygpu._tensor_objects
# (_rebuild_tensor), pygpu.nn._losses (_DefaultIgnore, nll_loss) and pygpu._tensor_join (stack).
_OLD_PICKLE = (
    "gASV2gEAAAAAAABdlCiMFXB5Z3B1Ll90ZW5zb3Jfb2JqZWN0c5SMD19yZWJ1aWxkX3RlbnNvcpSTlCiMA2NwdZSMB2Zs"
    "b2F0MzKUQwgAAIA/AAAAQJRLAoWUSwGFlEsAiYl0lFKUjA1weWdwdS5ubi5sb3NzlIwQQ3Jvc3NFbnRyb3B5TG9zc5ST"
    "lCmBlH2UKIwLX3BhcmFtZXRlcnOUjAtjb2xsZWN0aW9uc5SMC09yZGVyZWREaWN0lJOUKVKUjAhfYnVmZmVyc5RoEylS"
    "lIwGd2VpZ2h0lE5zjBtfbm9uX3BlcnNpc3RlbnRfYnVmZmVyc19zZXSUj5SMCF9tb2R1bGVzlGgTKVKUjBJfZm9yd2Fy"
    "ZF9wcmVfaG9va3OUaBMpUpSMDl9mb3J3YXJkX2hvb2tzlGgTKVKUjAh0cmFpbmluZ5SIjAlyZWR1Y3Rpb26UjARtZWFu"
    "lIwMaWdub3JlX2luZGV4lIwQcHlncHUubm4uX2xvc3Nlc5SMDl9EZWZhdWx0SWdub3JllJOUSpz///+FlIGUjA9sYWJl"
    "bF9zbW9vdGhpbmeURwAAAAAAAAAAdWKMEnB5Z3B1Ll90ZW5zb3Jfam9pbpSMBXN0YWNrlJOUaCSMCG5sbF9sb3NzlJOU"
    "ZS4=")


def test_old_pickle_paths_still_load():
    import base64

    t, loss, stack, nll_loss = pickle.loads(base64.b64decode(_OLD_PICKLE))
    assert isinstance(t, pygpu.Tensor) and t.tolist() == [1.0, 2.0]
    assert isinstance(loss, pygpu.nn.CrossEntropyLoss) and repr(loss.ignore_index) == "-100"
    assert stack is pygpu.stack and nll_loss is pygpu.nn.functional.nll_loss
    x = pygpu.tensor([[0.0, 1.0]])
    assert abs(loss(x, pygpu.tensor([1])).item() - 0.31326) < 1e-4
    again = pickle.loads(pickle.dumps([t, loss, stack, nll_loss]))  # and pickles written now
    assert again[0].tolist() == [1.0, 2.0] and again[2] is pygpu.stack
