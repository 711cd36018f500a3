"""core_objects.py - the object cache of the C core (pygpu._C), for setup.py's BuildExt.

CI builds _C with the same flags four times (.ci/run: the README's `pip install -e .` and
`pip install -e ".[test]"`, each in a temporary build directory of pip's, the CPU-only
wheel, and the emulated-CUDA lane's `setup.py build_ext --inplace`), and a developer's second
`pip install -e` rebuilt every file. Each object is kept in a cache outside the tree
(PYGPU_CORE_CACHE_DIR, else $XDG_CACHE_HOME/pygpu/core-objects or ~/.cache/pygpu/core-objects;
PYGPU_CORE_CACHE=0 turns it off), as build_support/cuda_build.py keeps the CUDA plugin's.

The key of an object is everything the compiler reads that can change it:
  - the whole command (compiler, every flag, macro and include directory, the source's path),
    with its output path left out; so flags that differ (the sanitizer build's, the SIMDe
    build's, -Werror or not) never share an object;
  - the checkout's absolute path, in the command as it is (the objects' debug information
    names it: another clone compiles its own);
  - each include directory (NumPy's, scipy-openblas32's, Python's) stood in for by a digest
    of the files it holds: under pip's build isolation NumPy lies in a new temporary
    directory (pip-build-env-XXXX) on every build, and in a venv's site-packages for
    `setup.py build_ext`, so a key with its path in it would miss every time, and a key
    without its headers would not see a new NumPy;
  - the compiler's version and the C library's;
  - the source's bytes and every header and table of csrc/ (the extension's `depends`: a
    changed header or pg_ops.def row recompiles every file, as setuptools' own rule does).
Builds that write more than the object (gcov's --coverage writes a .gcno beside it) are
never cached: a hit would leave that file out.
"""
import functools
import hashlib
import os
import shutil
import subprocess

from cuda_build import object_cache_dir


def cache_dir(env=None):
    """The cache's directory, or None when PYGPU_CORE_CACHE=0 (the rule cuda_build.py's
    cache follows too: object_cache_dir)."""
    return object_cache_dir("PYGPU_CORE_CACHE", "core-objects", env)


def cacheable(args):
    """False for a command whose compile writes files besides the object."""
    return not any(a in ("--coverage", "-ftest-coverage") or a.startswith(("-MD", "-MMD"))
                   for a in args)


@functools.lru_cache(maxsize=None)
def tree_digest(path):
    """A digest of every file under path (names relative to it, and bytes)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            h.update(os.path.relpath(full, path).encode() + b"\0")
            try:
                with open(full, "rb") as f:
                    h.update(f.read())
            except OSError:
                h.update(b"<unreadable>")
    return h.hexdigest()[:16]


def files_digest(paths):
    """A digest of the named files (names and bytes), e.g. an extension's `depends`."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def tool_version(tool):
    """The compiler's --version text, and the C library's version (glibc's headers are the
    compiler's system headers, in no -I directory)."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        text = ""
    try:
        text += "\n" + os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        pass
    return text


def object_key(cmd, src, repo_root, depends_digest):
    """The key of one object: cmd is the compile command without `-o OUT` (compiler first)."""
    root = os.path.abspath(repo_root)
    h = hashlib.sha256()
    for arg in cmd:
        if arg.startswith("-I") and os.path.isdir(arg[2:]):  # setuptools writes -I<dir>
            arg = "-I<headers {}>".format(tree_digest(os.path.abspath(arg[2:])))
        h.update(arg.encode() + b"\0")
    h.update(root.encode() + b"\0")
    h.update(tool_version(cmd[0]).encode() + b"\0")
    h.update(depends_digest.encode() + b"\0")
    with open(src, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def fetch(cache, key, obj):
    """Copy the cached object to obj; True when the cache held it."""
    cached = os.path.join(cache, key + ".o")
    if not os.path.isfile(cached):
        return False
    staged = "{}.{}.tmp".format(obj, os.getpid())
    shutil.copyfile(cached, staged)
    os.replace(staged, obj)
    return True


def store(cache, key, obj):
    """Keep obj under key (atomically: other builds may read the cache meanwhile)."""
    cached = os.path.join(cache, key + ".o")
    try:
        os.makedirs(cache, exist_ok=True)
        staged = "{}.{}.{}.tmp".format(cached, os.getpid(), id(obj))
        shutil.copyfile(obj, staged)
        os.replace(staged, cached)
    except OSError:
        pass  # a cache that cannot be written is only a slower next build
