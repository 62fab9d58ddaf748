"""Check every GBNF grammar codeagent.models.constrain emits with llama.cpp's own grammar parser.

llama-cpp-python is not in the test venv (it builds from source), so this is a script:

    .venv/bin/python tests/constrain_grammar_check.py \\
        --llama-python .models/venv/bin/python --model-file .models/SmolLM2-135M-Instruct.Q4_1.gguf

It builds the grammars with the project venv (single-call schemas of a few tool sets, through our
converter and through llama.cpp's json-schema-to-grammar, the code-action grammar for three tag
pairs, the probe's grammar), then runs itself under the llama venv with `--load FILE`, where only
llama_cpp and the standard library are imported. There each grammar must load as a llama.cpp
grammar sampler (llama_sampler_init_grammar returns NULL on a parse error), every text it must
accept (a few-shot reply, a rendered code action) must pass token by token through the sampler
and end where the grammar may end, and every text it must refuse (prose, a copied signature) must
be cut off. Exit status 0 only if all hold. Where llama_cpp is importable in the same python, both
halves run in process (the test suite's `test_grammars_load_in_llama_cpp` does that).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / ".models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


# -- half 1 (project venv): the grammars and the texts each must accept or refuse ----------------


def build_cases() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    import enum
    from typing import Literal

    from pydantic import BaseModel

    from codeagent import tool
    from codeagent.models.constrain import (
        code_action_grammar,
        code_action_text,
        fewshot_messages,
        schema_to_gbnf,
        single_call_grammar,
        single_call_schema,
    )
    from codeagent.models.constrain.probe import PROBE_SCHEMA

    class Unit(enum.Enum):
        C = "celsius"
        F = "fahrenheit"

    class Place(BaseModel):
        city: str
        country: str | None = None

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def capital_of(country: str) -> str:
        """The capital city of a country."""
        return "Paris"

    @tool
    def forecast(place: Place, days: int = 1, unit: Unit = Unit.C, hourly: bool = False) -> list[float]:
        """A weather forecast."""
        return [20.0]

    @tool
    def search(query: str, tags: list[str] | None = None, mode: Literal["fast", "exact"] = "fast") -> str:
        """Search the notes for "quoted" text\\n and a backslash."""
        return query

    prose = ["The capital of Japan is Tokyo.", 'capital(country: "Japan")', "def add(a: int, b: int) -> int:"]
    cases: list[dict[str, Any]] = []
    for label, tools in (("no tools", []), ("add", [add]), ("capital_of+add", [capital_of, add]),
                         ("typed tools", [forecast, search, add])):
        schema = single_call_schema(tools)
        shots = [m["content"] for m in fewshot_messages(tools, "json") if m["role"] == "assistant"]
        for converter, use_llama in (("ours", False), ("llama.cpp's", True)):
            try:
                grammar = schema_to_gbnf(schema, use_llama_cpp=use_llama)
            except ImportError:
                continue
            if use_llama and grammar == schema_to_gbnf(schema, use_llama_cpp=False):
                continue  # llama_cpp not importable here: the same grammar as ours
            cases.append({"name": f"single call [{label}], {converter} converter", "grammar": grammar,
                          "accept": shots, "refuse": prose})
        calls = [m["content"] for m in fewshot_messages(tools, "call", ("<code>", "</code>"))
                 if m["role"] == "assistant"]
        cases.append({"name": f"single call as Python [{label}]", "grammar": single_call_grammar(tools),
                      "accept": calls, "refuse": [f"<code>{p}</code>" for p in prose]})
    forbid = {"capital_of": {"country": "Japan"}, "add": {"a": 2, "b": -40}}
    cases.append({"name": "single call as Python, a refused call forbidden",
                  "grammar": single_call_grammar([capital_of, add], forbid=forbid),
                  "accept": ['<code>capital_of(country="Peru")</code>', "<code>add(a=2, b=40)</code>",
                             '<code>final_answer("Tokyo")</code>'],
                  "refuse": ['<code>capital_of(country="Japan")</code>', "<code>add(a=2, b=-40)</code>"]})
    for tags in (("<code>", "</code>"), ("```python", "```"), ("<code>", "<end_code>")):
        text = code_action_text({"thought": "add them", "code": "x = add(2, 40)\nfinal_answer(x)"}, tags)
        cases.append({"name": f"code action {tags}", "grammar": code_action_grammar(tags),
                      "accept": [text, text.replace("add them", 'a "quoted" <b> `x`')],
                      "refuse": [f"{tags[0]}\nfinal_answer(1)\n{tags[1]}", text + "\nmore"]})
    cases.append({"name": "probe schema", "grammar": schema_to_gbnf(PROBE_SCHEMA, use_llama_cpp=False),
                  "accept": ['{"animal": "zebra", "legs": 4}'], "refuse": ["The sea is blue."]})
    return cases


# -- half 2 (llama venv): load each grammar in llama.cpp and walk the texts through it ------------


class LlamaGrammarChecker:
    def __init__(self, model_file: str) -> None:
        import llama_cpp
        from llama_cpp import Llama

        self.C = llama_cpp
        self.llm = Llama(model_path=model_file, vocab_only=True, verbose=False)
        self.vocab = self.llm._model.vocab
        self.eos = llama_cpp.llama_vocab_eos(self.vocab)

    def sampler(self, grammar: str):
        smpl = self.C.llama_sampler_init_grammar(self.vocab, grammar.encode("utf-8"), b"root")
        return smpl if smpl else None

    def allows(self, smpl, token: int) -> bool:
        C = self.C
        data = (C.llama_token_data * 1)(C.llama_token_data(id=token, logit=0.0, p=0.0))
        arr = C.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
        C.llama_sampler_apply(smpl, C.ctypes.byref(arr))
        return data[0].logit != float("-inf")

    def derives(self, grammar: str, text: str) -> bool:
        """True if the grammar takes `text` token by token and may end right after it."""
        smpl = self.sampler(grammar)
        try:
            for token in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
                if not self.allows(smpl, token):
                    return False
                self.C.llama_sampler_accept(smpl, token)
            return self.allows(smpl, self.eos)
        finally:
            self.C.llama_sampler_free(smpl)

    def check(self, case: dict[str, Any]) -> list[str]:
        smpl = self.sampler(case["grammar"])
        if smpl is None:
            return [f"{case['name']}: llama.cpp could not parse the grammar"]
        self.C.llama_sampler_free(smpl)
        problems = [f"{case['name']}: refuses {t!r}" for t in case["accept"] if not self.derives(case["grammar"], t)]
        problems += [f"{case['name']}: accepts {t!r}" for t in case["refuse"] if self.derives(case["grammar"], t)]
        return problems


def load_and_check(cases: list[dict[str, Any]], model_file: str) -> int:
    checker = LlamaGrammarChecker(model_file)
    failures = 0
    for case in cases:
        problems = checker.check(case)
        failures += bool(problems)
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {case['name']} ({len(case['accept'])} accepted, {len(case['refuse'])} refused)")
        for p in problems:
            print(f"     {p}")
    print(f"{len(cases) - failures} of {len(cases)} grammars pass in llama.cpp")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-python", help="python of a venv with llama-cpp-python (default: this one)")
    parser.add_argument("--model-file", default=str(DEFAULT_MODEL), help="a GGUF file (only its vocabulary is read)")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # half 2 only, cases from this JSON file
    args = parser.parse_args(argv)
    if args.load:
        return load_and_check(json.loads(Path(args.load).read_text()), args.model_file)
    if not Path(args.model_file).is_file():
        print(f"no model file {args.model_file} (scripts/weak-model-e2e fetches it)", file=sys.stderr)
        return 2
    cases = build_cases()
    if not args.llama_python:
        return load_and_check(cases, args.model_file)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
    try:
        return subprocess.run([args.llama_python, __file__, "--load", f.name, "--model-file", args.model_file],
                              check=False).returncode
    finally:
        Path(f.name).unlink()


if __name__ == "__main__":
    raise SystemExit(main())
