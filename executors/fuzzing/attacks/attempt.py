"""`EscapeAttempt`: one generated escape program and its label (shared by escapes.py and
library_escapes.py, which both build them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EscapeAttempt:
    """One generated escape program.

    family: the primitive it uses (dunder_walk, format_string, frames, module_pivot, builtins,
        tool_internals, refused_import, direct, library; hooks are carriers, fullwidth an encoding).
    effect: what it tries to do — "marker" (create `marker_path`, or change anything beside it),
        "canary" (print the value of the `canary_env` environment variable), "read" (print the
        secret of the canary file beside the marker), "reach" (print REACH_TOKEN after calling a
        real `os.getpid()`) or "tamper" (change process-wide state of the host).
    route: for the library family, the library carrier and the payload route it was fed
        ("pandas.read_csv+symlink:os", "numpy.load:bytes+os.mkdir", "matplotlib.rcParams").
    """

    code: str
    family: str
    effect: str
    carrier: str = "plain"
    encoding: str = "literal"
    route: str = ""

    @property
    def label(self) -> str:
        if self.route:
            return f"{self.family}/{self.effect}/{self.route}/{self.carrier}/{self.encoding}"
        return f"{self.family}/{self.effect}/{self.carrier}/{self.encoding}"
