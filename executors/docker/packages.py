"""Which files of this Python environment an image needs for the packages a user names. Stdlib only.

`resolve(["numpy", "pandas", "matplotlib"])` walks each named distribution and, recursively, the
requirements it declares that are installed here (markers evaluated for this interpreter, extras
only when named: "pandas[plot]"), and returns one `Distribution` per package: its name, version,
site-packages directory, the files its RECORD lists there, and the top-level modules those files
provide. `image.build_image(packages=...)` copies exactly those files into the image;
no registry is asked, so the image holds the versions this environment has.

Run as a script by another interpreter (`python -I packages.py numpy pandas`), it prints
the same as JSON: that is how an image for another Python is resolved.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import json
import os
import platform
import re
import sys
from dataclasses import dataclass, field

__all__ = ["Distribution", "PackageError", "evaluate_marker", "parse_requirement", "resolve",
           "top_level_modules"]


class PackageError(ValueError):
    """A named package is not installed here, or its files cannot be listed."""


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    root: str  # the site-packages directory its files are relative to
    files: tuple[str, ...]  # relative paths, each inside root
    modules: tuple[str, ...] = field(default=())  # top-level importable names

    def to_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "root": self.root,
                "files": list(self.files), "modules": list(self.modules)}

    @classmethod
    def from_dict(cls, data: dict) -> Distribution:
        return cls(str(data["name"]), str(data["version"]), str(data["root"]),
                   tuple(map(str, data["files"])), tuple(map(str, data["modules"])))


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*([^;]*?)\s*(?:;\s*(.*))?$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> tuple[str, frozenset[str], str | None]:
    """(name, extras, marker) of a PEP 508 requirement ("pandas[plot]>=2; python_version>'3'")."""
    match = _REQUIREMENT.match(text)
    if match is None:
        raise PackageError(f"cannot read the requirement {text!r}")
    name, extras, _spec, marker = match.groups()
    wanted = frozenset(canonical(e.strip()) for e in (extras or "").split(",") if e.strip())
    return name, wanted, (marker.strip() if marker else None)


# -- markers: PEP 508 environment markers, evaluated for this interpreter ---------------------
_VERSION_VARIABLES = {"python_version", "python_full_version", "implementation_version"}


def _environment() -> dict[str, str]:
    info = sys.implementation.version
    return {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_version": "{}.{}".format(*sys.version_info[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name,
        "implementation_version": f"{info.major}.{info.minor}.{info.micro}",
    }


def _version(text: str) -> tuple:
    parts = []
    for piece in re.split(r"[.+-]", text):
        digits = re.match(r"\d+", piece)
        parts.append(int(digits.group()) if digits else -1)
    return tuple(parts)


def evaluate_marker(marker: str, extras: frozenset[str] = frozenset(),
                    environment: dict[str, str] | None = None) -> bool:
    """Does `marker` hold here, with `extras` requested? Unknown syntax counts as true unless
    it names an extra (an extra nobody asked for must not pull its packages in)."""
    env = environment or _environment()
    text = marker.replace("===", "==").replace("~=", ">=")
    try:
        tree = ast.parse(text, mode="eval").body
        return bool(_evaluate(tree, env, extras))
    except (SyntaxError, ValueError, KeyError):
        return "extra" not in marker


def _evaluate(node: ast.AST, env: dict[str, str], extras: frozenset[str]) -> object:
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, env, extras) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = node.left, node.comparators[0]
        if "extra" in (_name(left), _name(right)):
            value = _literal(right if _name(left) == "extra" else left)
            found = canonical(value) in extras
            return found if isinstance(node.ops[0], (ast.Eq, ast.In)) else not found
        a, b = _value(left, env), _value(right, env)
        if {_name(left), _name(right)} & _VERSION_VARIABLES and not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            a, b = _version(a), _version(b)
        return _COMPARE[type(node.ops[0])](a, b)
    raise ValueError("unsupported marker")


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _literal(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ValueError("expected a string")


def _value(node: ast.AST, env: dict[str, str]) -> str:
    name = _name(node)
    return env[name] if name is not None else _literal(node)


_COMPARE = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


# -- distributions ---------------------------------------------------------------------------
def top_level_modules(files: list[str]) -> list[str]:
    """The importable top-level names a distribution's files provide."""
    names: set[str] = set()
    for path in files:
        parts = path.split("/")
        first = parts[0]
        if len(parts) > 1:
            if not first.endswith((".dist-info", ".data", ".libs", ".egg-info")) and first.isidentifier():
                names.add(first)
        elif first.endswith(".py"):
            names.add(first[:-3])
        elif first.endswith((".so", ".pyd")):
            names.add(first.split(".")[0])
    return sorted(n for n in names if n.isidentifier() and n != "__pycache__")


def _files(dist: metadata.Distribution, name: str) -> tuple[str, list[str]]:
    listed = dist.files
    if listed is None:
        raise PackageError(f"cannot list the files of {name} (its installation has no RECORD); "
                           "reinstall it with pip")
    root = os.path.realpath(str(dist.locate_file("")))
    files = []
    for item in listed:
        relative = os.path.normpath(str(item))
        if relative.startswith("..") or os.path.isabs(relative):
            continue  # scripts in bin/, data outside site-packages: not needed to import it
        if "tests" in relative.split(os.sep)[1:-1]:
            continue  # the libraries' own test suites: a quarter of the size, never imported
        if os.path.isfile(os.path.join(root, relative)):
            files.append(relative.replace(os.sep, "/"))
    return root, sorted(files)


def resolve(packages: list[str]) -> list[Distribution]:
    """The named distributions and the installed ones they require, in a stable order."""
    if isinstance(packages, str):
        raise TypeError("packages must be a list of distribution names, not a string")
    queue: list[tuple[str, frozenset[str], bool]] = []
    for text in packages:
        name, extras, _marker = parse_requirement(str(text))
        queue.append((name, extras, True))
    found: dict[str, tuple[metadata.Distribution, set[str]]] = {}
    while queue:
        name, extras, named = queue.pop(0)
        key = canonical(name)
        known = found.get(key)
        if known is not None and extras <= known[1]:
            continue
        try:
            dist = known[0] if known is not None else metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if named:
                raise PackageError(f"{name} is not installed for {sys.executable}; the image is "
                                   f"built from this environment: pip install {name}") from None
            continue  # a requirement that is not installed here: optional for this platform
        seen = found.setdefault(key, (dist, set()))[1]
        new = frozenset(extras - seen)
        seen.update(extras)
        for requirement in dist.requires or []:
            sub, sub_extras, marker = parse_requirement(requirement)
            if known is None:  # first visit: the base requirements and those of the extras
                take = marker is None or evaluate_marker(marker, frozenset(extras))
            else:  # a revisit for more extras: only what those add
                take = marker is not None and "extra" in marker and evaluate_marker(marker, new)
            if take:
                queue.append((sub, sub_extras, False))
    out = []
    for key in sorted(found):
        dist = found[key][0]
        root, files = _files(dist, key)
        out.append(Distribution(dist.metadata["Name"] or key, dist.version, root, tuple(files),
                                tuple(top_level_modules(files))))
    return out


def main(argv: list[str]) -> int:
    try:
        print(json.dumps([d.to_dict() for d in resolve(argv)]))
    except PackageError as exc:
        print(json.dumps({"error": str(exc)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
