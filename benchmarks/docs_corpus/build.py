"""Build the documentation-example corpus (corpus.json) from the installed libraries' docstrings.

Every `>>>` block of a docstring (doctest's examples, the libraries' own documentation and user
guide snippets that live in their sources) becomes one program, as a user would paste it: the
examples in order, each expression statement shown the way the interactive prompt shows it
(`show(value)`: the repr, nothing for None), the library's conventional imports prepended where
the examples rely on them (numpy's docs assume `import numpy as np`). Examples marked
`+SKIP` and examples that demonstrate an exception are left out.

A program enters the corpus only if plain CPython runs it cleanly (no error, no file made, within
a few seconds) and prints the same thing in five processes with different hash seeds (addresses,
timings, set orders and unseeded randomness would make any comparison noise; `--recheck N` holds
the committed corpus to it again). Each entry names its source (the
docstring's object, file and line, and the library's version).

    .venv/bin/python benchmarks/docs_corpus/build.py [--per-library N]   # ~15 min on 2 idle cores

The corpus is data, committed: tests and the benchmark never build it.
"""

from __future__ import annotations

import argparse
import ast
import doctest
import hashlib
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from reference import Reference  # noqa: E402

LIBRARIES = ("numpy", "pandas", "scipy", "sklearn", "statsmodels", "networkx", "sympy",
             "polars", "pyarrow")
# The names each library's documentation assumes are imported (its doctest namespace).
CONVENTIONS = {
    "np": "import numpy as np", "pd": "import pandas as pd", "pl": "import polars as pl",
    "pa": "import pyarrow as pa", "pc": "import pyarrow.compute as pc", "nx": "import networkx as nx",
    "sm": "import statsmodels.api as sm", "smf": "import statsmodels.formula.api as smf",
    "sp": "import scipy as sp",
}
# Modules the reference imports before it forks (a child then does not pay for them, and a
# program is not dropped as slow for its library's import: statsmodels.api takes seconds).
PRELOAD = {"statsmodels": ["statsmodels.api", "statsmodels.formula.api"],
           "scipy": ["scipy.stats", "scipy.optimize"], "sklearn": ["sklearn.base", "sklearn.utils"]}
SHOW = "def show(value):\n    if value is not None:\n        print(repr(value))\n\n"
_SKIPPED_PARTS = frozenset({"tests", "test", "conftest", "setup", "benchmarks", "_build_utils",
                            "__main__"})
_OUT_OF_SCOPE = ("matplotlib", "plt.", "seaborn", "input(", "IPython", "tkinter", "getpass",
                 "webbrowser", "urllib", "http", "requests", "sqlalchemy", "sqlite3", "pytest",
                 "dask", "ray", "joblib.Parallel", "multiprocessing", "doctest", "timeit")
MAX_LINES = 150


def modules_of(library: str) -> list[str]:
    package = importlib.import_module(library)
    names = [library]
    for info in pkgutil.walk_packages(package.__path__, library + ".", onerror=lambda _n: None):
        if not _SKIPPED_PARTS & set(info.name.split(".")):
            names.append(info.name)
    return names


def show_expressions(source: str) -> str | None:
    """The example as a script: each top-level expression statement wrapped in `show(...)`, as
    the prompt shows it. None when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    edits = []
    for node in tree.body:
        if isinstance(node, ast.Expr):
            bare = isinstance(node.value, ast.Tuple)  # (`a, b` is one value to show)
            edits.append((node.end_lineno, node.end_col_offset, "))" if bare else ")"))
            edits.append((node.lineno, node.col_offset, "show((" if bare else "show("))
    for line, col, text in sorted(edits, reverse=True):
        row = lines[line - 1].encode()
        lines[line - 1] = (row[:col] + text.encode() + row[col:]).decode()
    return "".join(lines)


def program_of(test: doctest.DocTest) -> str | None:
    parts = []
    for example in test.examples:
        if example.options.get(doctest.SKIP) or example.exc_msg is not None:
            continue
        shown = show_expressions(example.source)
        if shown is None:
            return None
        parts.append(shown if shown.endswith("\n") else shown + "\n")
    body = "".join(parts)
    if not body.strip() or "show(" not in body and "print(" not in body:
        return None  # nothing to compare
    if any(marker in body for marker in _OUT_OF_SCOPE) or body.count("\n") > MAX_LINES:
        return None
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    bound = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
             if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    preamble = "".join(line + "\n" for name, line in CONVENTIONS.items()
                       if name in used and name not in bound)
    return SHOW + preamble + body


def imports_of(code: str) -> list[str]:
    """The top-level packages the program imports (its authorization)."""
    tops = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            tops.add(node.module.split(".")[0])
    return sorted(tops)


def candidates(library: str) -> list[dict]:
    """Every docstring program of the library, with its source."""
    warnings.simplefilter("ignore")
    finder = doctest.DocTestFinder(exclude_empty=True)
    site = Path(importlib.import_module(library).__file__).resolve().parents[1]
    found: dict[str, dict] = {}
    for name in modules_of(library):
        try:
            module = importlib.import_module(name)
            tests = finder.find(module, name)
        except BaseException:  # noqa: BLE001 - optional dependencies, platform modules
            continue
        for test in tests:
            inner = test.name[len(name) + 1:].split(".") if test.name != name else []
            if any(part.startswith("_") for part in inner):
                continue  # a private object's examples run in its module's namespace: not docs
            code = program_of(test)
            if code is None or test.name in found:
                continue
            where = Path(test.filename).resolve() if test.filename else None
            first = test.examples[0].lineno if test.examples else 0
            found[test.name] = {
                "name": test.name, "library": library, "code": code, "imports": imports_of(code),
                "source": {"object": test.name,
                           "file": str(where.relative_to(site)) if where and where.is_relative_to(site) else None,
                           "line": (test.lineno or 0) + first + 1},
            }
    unique: dict[str, dict] = {}
    for entry in found.values():  # (one docstring shared by several names: keep one)
        unique.setdefault(entry["code"], entry)
    return sorted(unique.values(), key=lambda e: e["name"])


def _order(entry: dict) -> str:
    return hashlib.sha256(entry["name"].encode()).hexdigest()


def _clean(result: dict | None) -> bool:
    return result is not None and not result["error"] and not result["files"] and \
        bool(result["out"].strip()) and result["seconds"] <= 4 and " at 0x" not in result["out"]


def select(library: str, found: list[dict], per_library: int) -> list[dict]:
    """The first `per_library` programs, in the order of a hash of their names, that run
    cleanly in CPython and print the same in a second process (another hash seed)."""
    kept: list[dict] = []
    ordered = sorted(found, key=_order)
    batch = max(20, per_library // 3)
    preload = [library, *PRELOAD.get(library, [])]
    with Reference(preload) as first:
        for start in range(0, len(ordered), batch):
            chunk = ordered[start:start + batch]
            clean = []
            for entry in chunk:
                result = first.run(entry["code"], timeout_s=8)
                if _clean(result):
                    entry["cpython_seconds"] = round(result["seconds"], 4)
                    clean.append((entry, result["out"]))
            kept += [e for e, out in clean if _stable(e["code"], out, preload)]
            if len(kept) >= per_library:
                break
    return sorted(kept[:per_library], key=lambda e: e["name"])


AGAIN = 4  # processes of their own (hash seeds of their own) that must print the same again


def _stable(code: str, out: str, preload: list[str], again: int = AGAIN) -> bool:
    """Does the program print `out` again in `again` other processes? (Two processes let a set
    of three strings through one time in six: scipy's DisjointSet example did.)"""
    for _ in range(again):
        with Reference(preload) as other:
            if other.run(code, timeout_s=8)["out"] != out:
                return False
    return True


def recheck(again: int) -> list[str]:
    """The committed corpus held to `_stable` again: the programs that vary are dropped (their
    names returned); CPython's output of the first run is the one compared."""
    corpus = json.loads((HERE / "corpus.json").read_text())
    dropped = []
    for library in LIBRARIES:
        programs = [p for p in corpus["programs"] if p["library"] == library]
        preload = [library, *PRELOAD.get(library, [])]
        with Reference(preload) as first:
            outs = [first.run(p["code"], timeout_s=8)["out"] for p in programs]
        varying = set()
        for _ in range(again):
            with Reference(preload) as other:
                varying |= {p["name"] for p, out in zip(programs, outs, strict=True) if other.run(p["code"], timeout_s=8)["out"] != out}
        dropped += sorted(varying)
        print(library, sorted(varying), file=sys.stderr, flush=True)
    corpus["programs"] = [p for p in corpus["programs"] if p["name"] not in dropped]
    for library in LIBRARIES:
        corpus["counts"][library]["kept"] = sum(p["library"] == library for p in corpus["programs"])
    corpus.setdefault("dropped as varying in CPython", []).extend(dropped)
    (HERE / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")
    return dropped


def build(per_library: int, cache: Path, only: list[str] | None = None) -> dict:
    corpus: list[dict] = []
    counts = {}
    cache.mkdir(parents=True, exist_ok=True)
    for library in only or LIBRARIES:
        done = cache / f"{library}.json"
        if not done.exists():
            with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
                # (a child of its own: importing every module of a library leaves a lot behind;
                # a module that prints as it loads must not mix into the result)
                subprocess.run([sys.executable, __file__, "--candidates", library, "--out", out.name],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                found = json.load(out)
            kept = select(library, found, per_library)
            done.write_text(json.dumps({"docstrings": len(found), "kept": kept}))
        saved = json.loads(done.read_text())
        counts[library] = {"docstring programs": saved["docstrings"], "kept": len(saved["kept"])}
        print(library, counts[library], file=sys.stderr, flush=True)
        corpus.extend(saved["kept"])
    versions = {lib: importlib.import_module(lib).__version__ for lib in LIBRARIES}
    return {"about": __doc__.split("\n\n")[0], "python": sys.version.split()[0],
            "versions": versions, "counts": counts, "programs": corpus}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--candidates", metavar="LIBRARY")
    parser.add_argument("--out", metavar="FILE")
    parser.add_argument("--only", action="append", metavar="LIBRARY",
                        help="select only this library (into the cache; several runs can share it)")
    parser.add_argument("--per-library", type=int, default=150)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "docs-corpus-build"),
                        help="each library's selection is kept here (a rerun starts where it stopped)")
    parser.add_argument("--recheck", type=int, metavar="N",
                        help="run the committed corpus in N more processes; drop what varies")
    args = parser.parse_args()
    if args.recheck:
        print(f"dropped: {recheck(args.recheck)}", file=sys.stderr)
        return
    if args.candidates:
        os.environ.setdefault("MPLBACKEND", "Agg")
        Path(args.out).write_text(json.dumps(candidates(args.candidates)))
        return
    corpus = build(args.per_library, Path(args.cache), args.only)
    if args.only:
        return  # (the selection of these libraries is in the cache; a full run writes the corpus)
    (HERE / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")
    print(f"{len(corpus['programs'])} programs", file=sys.stderr)


if __name__ == "__main__":
    main()
