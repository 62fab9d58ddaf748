"""The libraries' documentation examples print what CPython prints, in process and in the worker
(issue 44): a fixed sample of the corpus (benchmarks/docs_corpus/corpus.json: docstring examples
of numpy, pandas, scipy, scikit-learn, statsmodels, networkx, sympy, polars and pyarrow, each
naming its source), each compared with a fresh CPython child's output — stdout and stderr in
order, warnings included. The whole corpus is `benchmarks/library_docs.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "docs_corpus"))

from harness import load_corpus, run_corpus, sample  # noqa: E402

PER_LIBRARY = 5
# Refusals the sample meets, each right (the note of issue 44 gives the reasons in full).
EXPECTED_REFUSALS: dict[str, str] = {
    # none at present: pl.Config's display variables are set in the step and put back after it,
    # and the statsmodels example that died in the worker (OpenBLAS could not map its buffer
    # once pyarrow's allocator had reserved 1 GiB under the memory cap) runs (issue 44's note)
}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], object]:
    corpus = load_corpus()
    chosen = sample(corpus["programs"], PER_LIBRARY)
    return {(o.name, o.kind): o for o in run_corpus(chosen, by_library=True)}


def test_the_corpus_is_large_and_names_its_sources() -> None:
    corpus = load_corpus()
    programs = corpus["programs"]
    assert len(programs) >= 1000
    assert {p["library"] for p in programs} == set(corpus["versions"])
    for entry in programs:
        assert entry["source"]["object"] and entry["source"]["line"], entry["name"]
        # (a few docstrings show their library through another: scipy.fft's fftshift with numpy's)
        assert set(entry["imports"]) & set(corpus["versions"]), entry["name"]


def test_the_sample_agrees_with_cpython(outcomes: dict) -> None:
    wrong = [f"{o.kind} {o.name}: {o.verdict}: {o.reason}" for o in outcomes.values()
             if o.verdict != "agree" and EXPECTED_REFUSALS.get(o.name, "\0") not in o.reason]
    assert not wrong, "\n".join(wrong)
