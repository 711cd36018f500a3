# test_hub.py - torch.hub as PyTorch has it (pygpu/hub): a local hubconf.py's entry points,
# a GitHub repository's zipball cached once (served here from a file:// URL in place of
# GitHub, the only network step), checkpoints downloaded once into <hub>/checkpoints with the
# name's hash prefix checked, and PyTorch's cache directory. torch.hub is the oracle where
# the same call needs no network.
import hashlib
import io
import os
import pathlib
import sys
import zipfile

import numpy as np
import pytest
import torch

import pygpu

HUBCONF = '''
"""A repository whose entry points need no deep learning library."""
dependencies = ["numpy"]
import helper  # the repository's own module: its directory is on sys.path while it loads


def tiny(width=3, *, scale=1.0):
    """A tiny model's configuration."""
    return {"width": width, "scale": scale, "helper": helper.NAME}


def needs_missing():
    return None


not_callable = 42


def _private():
    return None
'''


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF)
    (d / "helper.py").write_text('NAME = "helper"\n')
    return d


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(pygpu.hub, "_hub_dir", str(tmp_path / "hub"))
    sys.modules.pop("helper", None)
    yield tmp_path / "hub"
    sys.modules.pop("helper", None)


def test_a_local_hubconf_loads_as_torch_hub_loads_it(repo, hub_dir):
    got = pygpu.hub.load(str(repo), "tiny", 5, source="local", scale=2.0)
    sys.modules.pop("helper", None)
    want = torch.hub.load(str(repo), "tiny", 5, source="local", scale=2.0)
    assert got == want == {"width": 5, "scale": 2.0, "helper": "helper"}
    with pytest.raises(RuntimeError, match="Cannot find callable not_callable in hubconf"):
        pygpu.hub.load(str(repo), "not_callable", source="local")
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        pygpu.hub.load(str(repo), "nothing", source="local")
    with pytest.raises(ValueError, match='Unknown source: "svn"'):
        pygpu.hub.load(str(repo), "tiny", source="svn")
    with pytest.raises(ValueError, match="model should be a string"):
        pygpu.hub.load(str(repo), 3, source="local")
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_pkg_x"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_x"):
        pygpu.hub.load(str(repo), "tiny", source="local")


def test_the_cache_directory_is_torchs(tmp_path, monkeypatch):
    for env in ({"TORCH_HOME": str(tmp_path / "th")}, {"XDG_CACHE_HOME": str(tmp_path / "x")}):
        monkeypatch.delenv("TORCH_HOME", raising=False)
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setattr(pygpu.hub, "_hub_dir", None)
        assert pygpu.hub.get_dir() == torch.hub.get_dir()
    pygpu.hub.set_dir(tmp_path / "elsewhere")
    try:
        assert pygpu.hub.get_dir() == str(tmp_path / "elsewhere")
    finally:
        pygpu.hub._hub_dir = None


def _zipball(repo, top="owner-tinyrepo-0123abc"):
    """The repository as GitHub serves a zipball: every file under one top directory."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(top + "/", "")
        for f in sorted(repo.iterdir()):
            z.write(f, f"{top}/{f.name}")
    return buf.getvalue()


def test_a_github_repository_is_downloaded_once_and_cached(repo, hub_dir, tmp_path, monkeypatch,
                                                           capsys):
    ball = tmp_path / "ball.zip"
    ball.write_bytes(_zipball(repo))
    asked = []
    real_urlopen = pygpu.hub.urlopen

    def fake_github(req):
        url = req if isinstance(req, str) else req.full_url
        asked.append(url)
        if url.endswith("/tree/main/"):  # the default branch's probe: no main here
            raise pygpu.hub.HTTPError(url, 404, "Not Found", {}, None)
        assert url == "https://github.com/owner/tinyrepo/zipball/master", url
        return real_urlopen(ball.as_uri())
    monkeypatch.setattr(pygpu.hub, "urlopen", fake_github)
    assert pygpu.hub.list("owner/tinyrepo", trust_repo=True) == ["needs_missing", "tiny"]
    cached = hub_dir / "owner_tinyrepo_master"
    assert (cached / "hubconf.py").is_file() and not list(hub_dir.glob("*.zip"))
    assert "owner_tinyrepo" in (hub_dir / "trusted_list").read_text().split()
    assert pygpu.hub.help("owner/tinyrepo", "tiny") == "A tiny model's configuration."
    n = len(asked)
    got = pygpu.hub.load("owner/tinyrepo:master", "tiny", width=7)
    assert got["width"] == 7 and len(asked) == n  # the cached copy served: no request
    assert "Using cache found in" in capsys.readouterr().err
    pygpu.hub.load("owner/tinyrepo:master", "tiny", force_reload=True)
    assert asked[-1].endswith("/zipball/master")
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(Exception, match="Untrusted repository"):
        pygpu.hub.load("stranger/tinyrepo:dev", "tiny")


def test_a_zip_entry_outside_the_hub_is_refused(hub_dir, tmp_path):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("top/ok.py", "")
        z.writestr("top/../../escaped.py", "")
    hub_dir.mkdir()
    with zipfile.ZipFile(evil) as z, pytest.raises(ValueError, match="escapes"):
        pygpu.hub._extract_zip(z, hub_dir)
    assert not (tmp_path / "escaped.py").exists()


def test_download_checks_the_hash_prefix_and_leaves_nothing_behind(tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(300_000))  # more than one read chunk
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dst = tmp_path / "out" / "copy.bin"
    dst.parent.mkdir()
    pygpu.hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix=digest[:8], progress=False)
    assert dst.read_bytes() == src.read_bytes()
    bad = tmp_path / "out" / "bad.bin"
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000"'):
        pygpu.hub.download_url_to_file(src.as_uri(), str(bad), hash_prefix="00000000",
                                       progress=False)
    assert sorted(p.name for p in dst.parent.iterdir()) == ["copy.bin"]


def test_a_checkpoint_from_a_url_is_torchs_file_read_by_pygpu(hub_dir, tmp_path):
    sd = torch.nn.Linear(3, 2).state_dict()
    raw = tmp_path / "raw.pth"
    torch.save(sd, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()[:8]
    named = tmp_path / f"linear-{digest}.pth"
    raw.rename(named)
    got = pygpu.hub.load_state_dict_from_url(named.as_uri(), check_hash=True, progress=False)
    assert (hub_dir / "checkpoints" / named.name).is_file()
    m = pygpu.nn.Linear(3, 2)
    m.load_state_dict(got)
    np.testing.assert_array_equal(m.weight.detach().numpy(), sd["weight"].numpy())
    named.unlink()  # the cached copy serves the second call
    again = pygpu.hub.load_state_dict_from_url(named.as_uri(), progress=False)
    np.testing.assert_array_equal(again["bias"].numpy(), sd["bias"].numpy())
    wrong = tmp_path / "linear-deadbeef.pth"
    torch.save(sd, wrong)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        pygpu.hub.load_state_dict_from_url(wrong.as_uri(), check_hash=True, progress=False)
    mapped = pygpu.hub.load_state_dict_from_url(wrong.as_uri(), model_dir=str(tmp_path / "md"),
                                                map_location="sim", progress=False)
    assert mapped["weight"].device == pygpu.device("sim:0")


def test_hub_is_torch_hub_by_name():
    assert sorted(pygpu.hub.__all__) == sorted(torch.hub.__all__)
    assert pathlib.Path(pygpu.hub.__file__).parent.name == "hub"
