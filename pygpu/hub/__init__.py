"""torch.hub: load a model from a repository's hubconf.py, and checkpoints from a URL, cached.

PyTorch's semantics and cache layout, so that a cache torch filled serves pygpu and back:
  - the hub directory is set_dir()'s, else $TORCH_HOME/hub, $TORCH_HOME defaulting to
    $XDG_CACHE_HOME/torch (~/.cache/torch);
  - a GitHub repository "owner/name[:ref]" is downloaded once as GitHub's zipball of the ref
    into <hub>/<owner>_<name>_<ref> (the ref's "/" as "_"), after asking whether to trust an
    owner that is not in <hub>/trusted_list (trust_repo="check", True or False, as PyTorch);
    with no network, a cached copy of the ref (main, then master when no ref is given) serves;
  - checkpoints go to <hub>/checkpoints/<the URL's file name>; check_hash compares the file's
    sha256 with the hex digits after the last "-" of its name (resnet18-f37072fd.pth), and
    the file is read with pygpu.load (PyTorch's checkpoint format; issue 46);
  - download_url_to_file streams through a temporary file beside the destination and moves
    it into place only when complete (and its hash prefix matches): urllib, so file:// URLs
    work as well as https://.
hubconf.py is imported as PyTorch imports it (its directory first on sys.path while it
loads); its `dependencies` list is checked before the entry point is called, and the entry
point's own code decides what it imports (`import pygpu as torch` for a pygpu repository,
or plain `import torch` under pygpu.install_as_torch())."""
import contextlib
import errno
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # resnet18-f37072fd.pth -> f37072fd
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
READ_DATA_CHUNK = 128 * 1024
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
_hub_dir = None


def _torch_home():
    default = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.expanduser(os.getenv("TORCH_HOME", default))


def get_dir():
    """The hub's cache directory: set_dir()'s, else $TORCH_HOME/hub."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    return _hub_dir if _hub_dir is not None else os.path.join(_torch_home(), "hub")


def set_dir(d):
    """Use directory d for the hub's downloads from now on (this process)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# ---- repositories ---------------------------------------------------------------------------

@contextlib.contextmanager
def _on_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, f"No {MODULE_HUBCONF} in {repo_dir}", path)
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    with _on_sys_path(repo_dir):
        spec.loader.exec_module(module)
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    deps = getattr(module, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [d for d in deps if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    fn = getattr(module, model, None) if model in dir(module) else None
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def _parse_repo(github):
    repo, ref = github.split(":", 1) if ":" in github else (github, None)
    try:
        owner, name = repo.split("/")
    except ValueError:
        raise ValueError(f'Invalid repository "{github}": expected "owner/name[:ref]"') from None
    if ref is None:  # GitHub's default branch: main if it exists, else master
        try:
            with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
        except URLError as e:
            ref = next((r for r in ("main", "master")
                        if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{r}"))), None)
            if ref is None:
                raise RuntimeError("It looks like there is no internet connection and the repo "
                                   f"could not be found in the cache ({get_dir()})") from e
    return owner, name, ref


def _check_trusted(owner, name, owner_name_ref, trust_repo):
    hub = get_dir()
    listing = os.path.join(hub, "trusted_list")
    Path(listing).touch()
    with open(listing) as f:
        trusted = {line.strip() for line in f}
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or owner in _TRUSTED_REPO_OWNERS
                  or os.path.isdir(os.path.join(hub, owner_name_ref)))  # cached before the list
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input(f"The repository {owner_name} does not belong to the list of trusted "
                       "repositories and as such cannot be downloaded. Do you trust this "
                       "repository and wish to add it to the trusted list of repositories (y/N)?")
        if answer.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif answer.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {answer}.")
    if not is_trusted:
        with open(listing, "a") as f:
            f.write(owner_name + "\n")


def _extract_zip(archive, into):
    """Extract, refusing an entry that would land outside `into` (a zip-slip)."""
    into = Path(into).resolve()
    for member in archive.infolist():
        name = os.path.normpath(member.filename)
        if os.path.isabs(name) or ".." in re.split(r"[/\\]", name) or \
                not (into / name).resolve().is_relative_to(into):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, into)


def _repo_dir(github, force_reload, trust_repo, verbose=True):
    """The cached copy of `github`'s ref, downloaded first if needed."""
    hub = get_dir()
    os.makedirs(hub, exist_ok=True)
    owner, name, ref = _parse_repo(github)
    ref_name = ref.replace("/", "_")
    owner_name_ref = f"{owner}_{name}_{ref_name}"
    repo_dir = os.path.join(hub, owner_name_ref)
    _check_trusted(owner, name, owner_name_ref, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    archive = os.path.join(hub, ref_name + ".zip")
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {archive}\n')
    download_url_to_file(url, archive, progress=False)
    with zipfile.ZipFile(archive) as z:
        top = os.path.join(hub, z.infolist()[0].filename)
        shutil.rmtree(top, ignore_errors=True)
        _extract_zip(z, hub)
    os.remove(archive)
    shutil.rmtree(repo_dir, ignore_errors=True)
    shutil.move(top, repo_dir)
    return repo_dir


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entry points (public callables) of a GitHub repository's hubconf.py."""
    module = _import_hubconf(_repo_dir(github, force_reload, trust_repo, verbose))
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entry point `model` of a GitHub repository's hubconf.py."""
    module = _import_hubconf(_repo_dir(github, force_reload, trust_repo))
    return _entry(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entry point `model` of hubconf.py (a GitHub repository "owner/name[:ref]", or a
    local directory with source="local") with *args and **kwargs, and return what it
    returns."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    repo_dir = repo_or_dir
    if source == "github":
        repo_dir = _repo_dir(repo_or_dir, force_reload, trust_repo, verbose)
    module = _import_hubconf(repo_dir)
    with _on_sys_path(repo_dir):  # the entry point may import its repository's modules
        return _entry(module, model)(*args, **kwargs)


# ---- files ----------------------------------------------------------------------------------

def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download `url` to the file `dst` through a temporary file beside it; with hash_prefix,
    the sha256 of the content must start with it (RuntimeError otherwise, nothing written)."""
    dst = os.path.expanduser(os.fspath(dst))
    for _ in range(tempfile.TMP_MAX):
        partial = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(partial, "xb")
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as u:
            size = u.info().get("Content-Length")
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            from tqdm import tqdm
            with tqdm(total=int(size) if size else None, disable=not progress, unit="B",
                      unit_scale=True, unit_divisor=1024) as bar:
                while chunk := u.read(READ_DATA_CHUNK):
                    f.write(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    bar.update(len(chunk))
        f.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
        shutil.move(partial, dst)
    finally:
        f.close()
        if os.path.exists(partial):
            os.remove(partial)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """The object saved at `url` (a checkpoint), downloaded once into model_dir (default
    <hub>/checkpoints) and read with pygpu.load."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    from ..serialization import load as _load
    if zipfile.is_zipfile(cached):
        with zipfile.ZipFile(cached) as z:
            members = z.infolist()
        if len(members) == 1 and not members[0].is_dir():  # PyTorch < 1.6's zipped file
            warnings.warn("Falling back to the old format < 1.6. This support will be deprecated "
                          "in favor of default zipfile format introduced in 1.6. Please redo "
                          "torch.save() to save it in the new zipfile format.", FutureWarning,
                          stacklevel=2)
            with zipfile.ZipFile(cached) as z:
                _extract_zip(z, model_dir)
            cached = os.path.join(model_dir, members[0].filename)
    return _load(cached, map_location=map_location, weights_only=weights_only)
