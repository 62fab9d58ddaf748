"""Single-call mode: `SingleCallAgent` is `CodeAgent(action_format=SingleCall(bundleable))`.

The format itself (the one-call shape, bundles, the immediate-repeat refusal, the lessons) is
`codeagent.agent.formats.SingleCall`; its checks are re-exported here under their old names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .code_agent import CodeAgent
from .formats import (
    ParsedCall,
    SingleCall,
    call_fingerprint,
    check_single_call,
    colon_call_fix,
    render_tool_line,
)

__all__ = ["SingleCallAgent", "ParsedCall", "check_single_call", "call_fingerprint", "colon_call_fix", "render_tool_line"]


class SingleCallAgent(CodeAgent):
    """CodeAgent in single-call mode: one literal tool call per turn (RA.Aid's CIAYN style).

    bundleable: tool names (read-only lookups, say) that may come several to a reply; their results
        come back together, keyed by the call. Any other tool must be called alone.
    Everything else (model, tools, executor, max_steps, limits, events, RunResult) is CodeAgent's.
    """

    last_step_note = ("This is your last step. Call final_answer(...) now with your best answer, "
                      "as your one call.")

    def __init__(
        self,
        model: Any,
        tools: Iterable[Any] | Mapping[str, Any] = (),
        executor: Any = None,
        max_steps: int = 10,
        *,
        bundleable: Iterable[str] = (),
        **options: Any,
    ) -> None:
        super().__init__(model, tools, executor, max_steps, action_format=SingleCall(bundleable), **options)

    @property
    def bundleable(self) -> frozenset[str]:
        return self.action_format.bundleable  # type: ignore[attr-defined, no-any-return]
