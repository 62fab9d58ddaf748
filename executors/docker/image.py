"""Build the default worker image offline: a host Python interpreter, its stdlib and shared libraries.

No registry is needed (images cannot be pulled everywhere this runs). The root filesystem is
assembled as a tar stream and handed to `docker import`: the interpreter is relocated to
/usr/local (bin/pythonX.Y, lib/pythonX.Y), every shared library the interpreter and its extension
modules link against (per `ldd`) is copied at its host path, and /etc/passwd names user 65534.
About 75 MB and a few seconds. `codeagent docker setup` builds it when missing (and can start an
engine first); so does the first DockerExecutor that needs it.

`build_image(packages=["numpy", "pandas", "matplotlib"])` adds the named distributions and the
installed ones they require, file for file from this Python's environment (RECORD lists them;
`packages.resolve`), into the image's site-packages, with the shared libraries their
extension modules link against; their test suites are left out. Still no registry. The tag
names the recipe and a digest of the packages and their versions
(`codeagent-python:3.11.7-r2-pkgs-<digest>`), so an image is built once per set of versions;
labels list the versions (`org.codeagent.packages`) and the top-level modules
(`org.codeagent.modules`) the image provides, which DockerExecutor reads to check
authorized_imports at construction.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .packages import Distribution, PackageError, resolve

__all__ = ["DEFAULT_IMAGE_REPO", "ImagePlan", "build_image", "connect", "default_image",
           "ensure_image", "image_modules", "plan_image"]

DEFAULT_IMAGE_REPO = "codeagent-python"
# Bumped whenever the recipe below changes, so an old default image is not reused.
RECIPE = "r2"
LABEL = "org.codeagent.image"
LABEL_PACKAGES = "org.codeagent.packages"  # name==version,... of the added distributions
LABEL_MODULES = "org.codeagent.modules"  # the top-level modules they provide, comma-separated

# Stdlib parts that a sandboxed worker never needs: tests, GUIs, installers, the static libpython.
_SKIP_DIRS = {"test", "tests", "idlesave", "idlelib", "tkinter", "turtledemo", "ensurepip",
              "lib2to3", "site-packages", "dist-packages", "__phello__", "pydoc_data"}
_SKIP_PREFIXES = ("config-",)

# Where the dynamic loader looks without ld.so.cache (glibc's built-in and multiarch dirs).
_LOADER_DIRS = {"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}

_PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/tmp:/sbin/nologin\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"
_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


# The engine scripts/docker-engine.sh starts: found without DOCKER_HOST when it is running.
PROJECT_ENGINE_SOCKET = "/run/codeagent-docker.sock"


def engine_url(docker_url: str | None = None) -> str | None:
    """The engine to use: `docker_url`, else DOCKER_HOST, else the project's own engine when its
    socket exists (it is the one the project's scripts start), else None (the platform default,
    /var/run/docker.sock)."""
    if docker_url:
        return docker_url
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    if os.path.exists(PROJECT_ENGINE_SOCKET):
        return f"unix://{PROJECT_ENGINE_SOCKET}"
    return None


def connect(docker_url: str | None = None, *, timeout: float = 60):
    """A docker SDK client for `engine_url(docker_url)` (see there)."""
    try:
        import docker
    except ImportError as e:  # pragma: no cover - depends on the install
        from ..base import ExecutorError

        raise ExecutorError("the docker SDK is missing: pip install 'codeagent[docker]'") from e
    url = engine_url(docker_url)
    if url:
        return docker.DockerClient(base_url=url, timeout=timeout)
    return docker.from_env(timeout=timeout)


@functools.lru_cache(maxsize=8)
def _describe(python: str) -> dict[str, Any]:
    """Ask the interpreter itself where its pieces are (works for any Python, not just ours)."""
    probe = (
        "import json, os, sys, sysconfig\n"
        "v = sys.version_info\n"
        "print(json.dumps({'version': '%d.%d.%d' % v[:3], 'short': '%d.%d' % v[:2],\n"
        "  'executable': os.path.realpath(sys.executable), 'prefix': sys.base_prefix,\n"
        "  'stdlib': sysconfig.get_path('stdlib'),\n"
        "  'dynload': sysconfig.get_config_var('DESTSHARED') or '',\n"
        "  'libdir': sysconfig.get_config_var('LIBDIR') or '',\n"
        "  'ldlibrary': sysconfig.get_config_var('LDLIBRARY') or ''}))\n"
    )
    out = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True)
    info = json.loads(out.stdout)
    if tuple(int(p) for p in info["short"].split(".")) < (3, 10):
        raise ValueError(f"{python} is Python {info['version']}; the worker needs >= 3.10")
    return info


def _host_python() -> str:
    """The interpreter behind this one (a venv's base), so the image runs the host's version."""
    return getattr(sys, "_base_executable", None) or sys.executable


def default_image(python: str | None = None) -> str:
    info = _describe(python or _host_python())
    return f"{DEFAULT_IMAGE_REPO}:{info['version']}-{RECIPE}"


@dataclass(frozen=True)
class ImagePlan:
    """What an image with `packages` holds: its tag, the distributions, the modules they add."""

    tag: str
    distributions: tuple[Distribution, ...] = ()

    @property
    def modules(self) -> frozenset[str]:
        return frozenset(m for d in self.distributions for m in d.modules)

    @property
    def versions(self) -> str:
        return ",".join(f"{d.name}=={d.version}" for d in self.distributions)


def _resolve(packages: list[str], python: str | None) -> tuple[Distribution, ...]:
    """The distributions, resolved in this environment or (python=) in that interpreter's."""
    if python is None:
        return tuple(resolve(list(packages)))
    script = str(Path(__file__).with_name("packages.py"))
    out = subprocess.run([python, "-I", script, *packages], capture_output=True, text=True,
                         timeout=120, cwd="/")
    try:
        data = json.loads(out.stdout)
    except ValueError:
        raise ValueError(f"python={python!r} could not list its packages: "
                         f"{(out.stderr.strip().splitlines() or ['no output'])[-1][:300]}") from None
    if isinstance(data, dict):
        raise PackageError(str(data.get("error")))
    return tuple(Distribution.from_dict(d) for d in data)


def plan_image(packages: list[str] | None = None, python: str | None = None) -> ImagePlan:
    """The image for `packages` (None or []: the default image), without building it.

    python: the interpreter whose environment provides the packages (default: this one; the
    image runs the interpreter behind it, a venv's base, at the same version). Plans are
    remembered for the process (reading the distributions' RECORDs takes a moment).
    """
    if isinstance(packages, str):
        raise TypeError("packages must be a list of distribution names, not a string")
    return _plan(tuple(packages or ()), python)


@functools.lru_cache(maxsize=32)
def _plan(packages: tuple[str, ...], python: str | None) -> ImagePlan:
    base = default_image(python)
    if not packages:
        return ImagePlan(base)
    distributions = _resolve(list(packages), python)
    digest = hashlib.sha256("\n".join(f"{d.name}=={d.version}" for d in distributions)
                            .encode()).hexdigest()[:12]
    return ImagePlan(f"{base}-pkgs-{digest}", distributions)


# Standard-library modules the image leaves out (see _SKIP_DIRS).
_SKIPPED_MODULES = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                              "pydoc_data", "__phello__", "_tkinter"})


def image_modules(plan: ImagePlan) -> frozenset[str]:
    """The top-level modules an image of `plan` can import (its stdlib and its packages)."""
    return frozenset(sys.stdlib_module_names) - _SKIPPED_MODULES | plan.modules


def _ldd(paths: list[str]) -> set[str]:
    """Every shared library (and the dynamic loader) that these ELF files need."""
    libs: set[str] = set()
    for i in range(0, len(paths), 64):
        out = subprocess.run(["ldd", *paths[i:i + 64]], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(0x", line)
            if m:
                libs.add(m.group(1))
    return libs


class _Tree:
    """The image's root filesystem as tar members, each path added once, parents first."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.seen: set[str] = set()

    def _info(self, name: str, kind: bytes, mode: int, mtime: float | None = None) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name.lstrip("/"))
        info.type, info.mode, info.uid, info.gid = kind, mode, 0, 0
        info.mtime = int(mtime if mtime is not None else time.time())
        return info

    def dir(self, path: str, mode: int = 0o755) -> None:
        path = path.rstrip("/") or "/"
        if path == "/" or path in self.seen:
            return
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        self.tar.addfile(self._info(path, tarfile.DIRTYPE, mode))

    def symlink(self, path: str, target: str) -> None:
        if path in self.seen:
            return
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        info.linkname = target
        self.tar.addfile(info)

    def text(self, path: str, content: str, mode: int = 0o644) -> None:
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        data = content.encode()
        info = self._info(path, tarfile.REGTYPE, mode)
        info.size = len(data)
        self.tar.addfile(info, io.BytesIO(data))

    def file(self, path: str, source: str) -> None:
        """Copy a host file to `path`; keep its mtime (pyc validation), drop setuid bits."""
        if path in self.seen:
            return
        st = os.stat(source)
        self.dir(os.path.dirname(path))
        self.seen.add(path)
        info = self._info(path, tarfile.REGTYPE, stat.S_IMODE(st.st_mode) & 0o755, st.st_mtime)
        info.size = st.st_size
        with open(source, "rb") as f:
            self.tar.addfile(info, f)

    def host_path(self, path: str) -> None:
        """Copy a host file at the same path, recreating every symlink along the way."""
        parts = Path(path).parts
        current = "/"
        for i, part in enumerate(parts[1:], start=1):
            current = os.path.join(current, part)
            if os.path.islink(current):
                target = os.readlink(current)
                self.symlink(current, target)
                resolved = os.path.normpath(os.path.join(os.path.dirname(current), target))
                rest = os.path.join(resolved, *parts[i + 1:]) if i + 1 < len(parts) else resolved
                self.host_path(rest)
                return
        self.file(path, path)


def _stdlib_files(stdlib: str) -> Iterator[tuple[str, str]]:
    """(relative path, host path) for the stdlib minus the parts a worker never needs."""
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith(_SKIP_PREFIXES))
        for name in sorted(files):
            if ".opt-" in name or name.endswith((".exe", ".a")):
                continue  # optimized pycs are never used (no -O); Windows launchers; static libs
            full = os.path.join(root, name)
            if os.path.isfile(full):
                yield os.path.relpath(full, stdlib), full


def write_rootfs(out: io.BufferedIOBase, python: str | None = None,
                 distributions: tuple[Distribution, ...] = ()) -> dict[str, Any]:
    """Write the root filesystem tar to `out` (with `distributions` in its site-packages);
    returns the interpreter's description."""
    info = _describe(python or _host_python())
    short = info["short"]
    lib = f"/usr/local/lib/python{short}"
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        tree = _Tree(tar)
        for d in ("/etc", "/usr/local/bin", "/dev", "/proc", "/sys", "/work", "/root"):
            tree.dir(d, 0o700 if d == "/root" else 0o755)
        tree.dir("/tmp", 0o1777)
        tree.text("/etc/passwd", _PASSWD)
        tree.text("/etc/group", _GROUP)
        tree.text("/etc/hosts", _HOSTS)

        tree.file(f"/usr/local/bin/python{short}", info["executable"])
        for alias in ("python3", "python"):
            tree.symlink(f"/usr/local/bin/{alias}", f"python{short}")
        elf = [info["executable"]]
        for rel, full in _stdlib_files(info["stdlib"]):
            tree.file(f"{lib}/{rel}", full)
            if full.endswith(".so"):
                elf.append(full)
        dynload = info["dynload"]
        if dynload and not dynload.startswith(info["stdlib"] + os.sep) and os.path.isdir(dynload):
            for name in sorted(os.listdir(dynload)):  # distributions that keep it elsewhere
                tree.file(f"{lib}/lib-dynload/{name}", os.path.join(dynload, name))
                elf.append(os.path.join(dynload, name))

        shipped = _add_distributions(tree, f"{lib}/site-packages", distributions, elf)
        for so in sorted(_ldd(elf)):
            real = os.path.realpath(so)
            if any(real.startswith(root + os.sep) for root in shipped):
                continue  # a library the distribution ships itself (numpy.libs/, pillow.libs/)
            if os.path.dirname(so) in _LOADER_DIRS or os.path.dirname(real) in _LOADER_DIRS:
                tree.host_path(so)  # system libraries (and the loader) where the host has them
            else:
                # libpython from the interpreter's own prefix, /usr/local/lib, ...: the image has
                # no ld.so.cache or RUNPATH target, so put them on the loader's default path.
                tree.file(f"/usr/lib/{os.path.basename(so)}", real)
    return info


def _add_distributions(tree: _Tree, site: str, distributions: tuple[Distribution, ...],
                       elf: list[str]) -> set[str]:
    """Copy each distribution's files into `site`; their extension modules join `elf`. Returns
    the host directories they came from."""
    roots = set()
    for dist in distributions:
        roots.add(dist.root)
        for relative in dist.files:
            source = os.path.join(dist.root, relative)
            tree.file(f"{site}/{relative}", source)
            if relative.endswith(".so") or ".so." in os.path.basename(relative):
                elf.append(source)
    return roots


def build_image(
    tag: str | None = None,
    *,
    python: str | None = None,
    docker_url: str | None = None,
    client: Any = None,
    packages: list[str] | None = None,
    plan: ImagePlan | None = None,
) -> str:
    """Build a worker image offline with `docker import`; returns its name.

    python: the interpreter to package (default: the one behind the running Python).
    packages: distributions to add from that environment, with the installed ones they
    require (see the module docstring); the default tag then names their versions.
    """
    client = client or connect(docker_url, timeout=600)
    t0 = time.perf_counter()
    plan = plan or plan_image(packages, python)
    with tempfile.TemporaryFile(prefix="codeagent-rootfs-") as f:
        info = write_rootfs(f, python, plan.distributions)
        tag = tag or plan.tag
        size = f.tell()
        f.seek(0)
        repo, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        changes = [
            "ENV PATH=/usr/local/bin:/usr/bin:/bin",
            "ENV LANG=C.UTF-8",
            "ENV PYTHONDONTWRITEBYTECODE=1",
            "WORKDIR /work",
            "USER 65534:65534",
            f'LABEL {LABEL}="{info["version"]}-{RECIPE}"',
            'CMD ["python3"]',
        ]
        if plan.distributions:
            changes += [f'LABEL {LABEL_PACKAGES}="{plan.versions}"',
                        f'LABEL {LABEL_MODULES}="{",".join(sorted(plan.modules))}"',
                        # figures: matplotlib's font cache in the container's own /tmp, not the workdir
                        "ENV MPLCONFIGDIR=/tmp/matplotlib"]
        # A generator makes requests send a chunked body, which is what the engine expects here.
        chunks = iter(lambda: f.read(1 << 20), b"")
        client.api.import_image_from_stream(chunks, repository=repo, tag=version, changes=changes)
    client.images.get(tag)  # raises if the import did not produce it
    print(f"docker image: built {tag} from {info['executable']} "
          f"({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return tag


def ensure_image(tag: str | None = None, *, python: str | None = None,
                 docker_url: str | None = None, client: Any = None,
                 packages: list[str] | None = None, plan: ImagePlan | None = None) -> str:
    """`tag` (default: the image for `packages`, else the default image) if the engine has it,
    else build it now."""
    import docker

    client = client or connect(docker_url, timeout=600)
    if tag is None:
        plan = plan or plan_image(packages, python)
        tag = plan.tag
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        return build_image(tag, python=python, client=client, packages=packages, plan=plan)
