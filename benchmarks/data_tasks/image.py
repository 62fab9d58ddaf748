"""A Docker image for the data tasks: the default worker image plus numpy, pandas and matplotlib.

The default image (executors.docker.image) holds the interpreter and its standard library only,
built offline from the host. This one adds the host's installed copies of the data packages (and
everything they require) under the image's own site-packages, plus the shared libraries their
extension modules link against, as one more layer (a container is created, the files are put in,
the container is committed; no registry, no build daemon features). Tagged by the package
versions, so it is built once per set of versions (~200 MB, ~20 s).

    .venv/bin/python benchmarks/data_tasks/image.py       # prints the tag, builds it when missing
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import os
import re
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator

from executors.docker.image import _ldd, _Tree, connect, ensure_image

PACKAGES = ("numpy", "pandas", "matplotlib")
REPO = "codeagent-python-data"


def _requirement_names(dist: metadata.Distribution) -> Iterator[str]:
    from packaging.requirements import Requirement

    for text in dist.requires or ():
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            yield req.name


def distributions(names: Iterable[str] = PACKAGES) -> list[metadata.Distribution]:
    """The installed distributions of `names` and of everything they require (no extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        todo.extend(_requirement_names(dist))
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def image_tag(dists: list[metadata.Distribution] | None = None) -> str:
    dists = dists if dists is not None else distributions()
    versions = ",".join(f"{d.metadata['Name']}=={d.version}" for d in dists)
    digest = hashlib.sha256(versions.encode()).hexdigest()[:10]
    return f"{REPO}:{sys.version_info.major}.{sys.version_info.minor}-{digest}"


def _files(dists: list[metadata.Distribution]) -> Iterator[tuple[str, str]]:
    """(path inside site-packages, host path) of every installed file, bytecode caches excluded."""
    for dist in dists:
        for entry in dist.files or ():
            if "__pycache__" in entry.parts or str(entry).startswith(".."):
                continue
            host = str(dist.locate_file(entry))
            if os.path.isfile(host):
                yield str(entry), host


def build(client, base: str, tag: str, dists: list[metadata.Distribution]) -> str:
    short = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = f"/usr/local/lib/python{short}/site-packages"
    with tempfile.TemporaryFile(prefix="codeagent-data-layer-") as f:
        with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tree = _Tree(tar)
            elf = []
            for rel, host in _files(dists):
                tree.file(f"{site}/{rel}", host)
                if ".so" in os.path.basename(host):
                    elf.append(host)
            sites = {str(d.locate_file("")).rstrip(os.sep) + os.sep for d in dists}
            for so in sorted(_ldd(elf)):
                if not any(os.path.realpath(so).startswith(s) for s in sites):
                    tree.host_path(so)  # system libraries (libstdc++, ...) where the host has them
        f.seek(0)
        container = client.containers.create(base, command=["true"])
        try:
            container.put_archive("/", f.read())
            container.commit(*tag.split(":"), changes=["USER 65534:65534", "WORKDIR /work"])
        finally:
            container.remove(force=True)
    return tag


def ensure_data_image(docker_url: str | None = None) -> str:
    """The data image's tag; built now when the engine does not have it."""
    import docker

    client = connect(docker_url, timeout=600)
    dists = distributions()
    tag = image_tag(dists)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        return build(client, ensure_image(client=client), tag, dists)


if __name__ == "__main__":
    print(ensure_data_image())
