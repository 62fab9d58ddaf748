"""The model flags `run` and `demo` share (which server, which model, how long to wait for it, how
often to ask again) and the `OpenAIModel` they make. Their names and defaults are the API's:
--model-timeout is `OpenAIModel(timeout=)`, --model-retries `max_retries=`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ...models.constrain.request import SPELLINGS
from ...models.openai_model import CONNECT_TIMEOUT_S
from ...models.openai_model import DEFAULT_MAX_RETRIES as DEFAULT_MODEL_RETRIES
from ...models.openai_model import DEFAULT_TIMEOUT_S as DEFAULT_MODEL_TIMEOUT_S
from ..wait import show_waiting
from .options import count, number, seconds

__all__ = ["ModelSetupError", "add_model_options", "make_model", "DEFAULT_MODEL_TIMEOUT_S", "DEFAULT_MODEL_RETRIES"]


class ModelSetupError(Exception):
    """A model setting the user must fix (the command says it and exits with status 2)."""


def add_model_options(p: argparse.ArgumentParser, *, constrain: bool = False) -> None:
    g = p.add_argument_group("the model (OpenAIModel)")
    g.add_argument("--model", help="the model's name on the server, e.g. gpt-4o-mini or qwen2.5-coder:7b "
                                   "(default: $CODEAGENT_MODEL)")
    g.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 "
                                                     "(default: $OPENAI_BASE_URL, else OpenAI itself)")
    g.add_argument("--api-key-env", metavar="VAR", help="the environment variable that holds the API key "
                                                        "(default: OPENAI_API_KEY; local servers need none)")
    g.add_argument("--no-system-role", action="store_true",
                   help="the endpoint has no system role: the system prompt goes into the first user message")
    g.add_argument("--no-stop", action="store_true",
                   help="the endpoint rejects `stop`: replies are cut at the stop text here instead")
    g.add_argument("--temperature", type=number(0), default=None, metavar="T",
                   help="sampling temperature (default: the server's)")
    g.add_argument("--model-timeout", type=seconds, default=DEFAULT_MODEL_TIMEOUT_S, metavar="SECONDS",
                   help="how long the model server may stay silent (before the first byte of its reply, or "
                        "between two) before the request ends; a reply that keeps coming is never cut; "
                        f"connecting may take {CONNECT_TIMEOUT_S:g} s (default: {DEFAULT_MODEL_TIMEOUT_S:g})")
    g.add_argument("--model-retries", "--retries", dest="model_retries", type=count(0, 20),
                   default=DEFAULT_MODEL_RETRIES, metavar="N",
                   help="how many times one model request is sent again after a dropped connection, HTTP "
                        "408, 409, 429 or 5xx (not after a silent server; code that fails is not retried: "
                        f"the model sees the error and fixes it in its next step) (default: {DEFAULT_MODEL_RETRIES})")
    if constrain:
        g.add_argument("--constrain", choices=("none", "auto", *SPELLINGS), default="none",
                       help="constrained decoding, so that a weak model cannot write a malformed reply: auto "
                            "probes what the endpoint honours; json_schema, json_object, grammar, guided_json, "
                            "guided_grammar force a spelling (default: none)")


def make_model(args: argparse.Namespace, *, default_model: str | None = None) -> Any:
    """The OpenAIModel the flags ask for; a missing name or key is a ModelSetupError."""
    from ...models.openai_model import OpenAIModel

    model_id = args.model or os.environ.get("CODEAGENT_MODEL") or default_model
    if not model_id:
        raise ModelSetupError("no model name: pass --model NAME (or set CODEAGENT_MODEL)")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ModelSetupError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    if not (api_key or os.environ.get("OPENAI_API_KEY") or args.base_url or os.environ.get("OPENAI_BASE_URL")):
        raise ModelSetupError(
            "no API key for OpenAI: set OPENAI_API_KEY (or name another variable with --api-key-env VAR), "
            "or pass --base-url URL of a local OpenAI-compatible server (e.g. http://localhost:11434/v1)"
        )
    options: dict[str, Any] = {}
    if getattr(args, "temperature", None) is not None:
        options["temperature"] = args.temperature
    try:
        model = OpenAIModel(
            model_id, base_url=args.base_url, api_key=api_key, system_role=not args.no_system_role,
            supports_stop=not args.no_stop, request_options=options,
            timeout=getattr(args, "model_timeout", DEFAULT_MODEL_TIMEOUT_S),
            max_retries=getattr(args, "model_retries", DEFAULT_MODEL_RETRIES),
            constrain=None if getattr(args, "constrain", "none") in (None, "none") else args.constrain,
        )
    except Exception as exc:
        raise ModelSetupError(str(exc))
    show_waiting(model, sys.stderr)
    return model
