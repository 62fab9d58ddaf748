"""Quick start: a CodeAgent with two tools.

Uses a real OpenAI-compatible endpoint when OPENAI_BASE_URL is set (model: $CODEAGENT_MODEL),
for example Ollama (`OPENAI_BASE_URL=http://localhost:11434/v1 CODEAGENT_MODEL=qwen2.5-coder:7b`);
otherwise it replays a scripted reply and says so.

    .venv/bin/python examples/quickstart.py
"""

from __future__ import annotations

import os

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, tool


@tool
def get_temperature(city: str) -> float:
    """Current temperature in a city, in degrees Celsius."""
    return {"Paris": 18.5, "Oslo": 7.0, "Cairo": 31.2}.get(city, 20.0)


@tool
def to_fahrenheit(celsius: float) -> float:
    """Convert Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


SCRIPTED = """Thought: I will read all three temperatures, find the warmest city and convert it.
<code>
temps = {city: get_temperature(city) for city in ["Paris", "Oslo", "Cairo"]}
warmest = max(temps, key=temps.get)
final_answer(f"{warmest}: {to_fahrenheit(temps[warmest]):.1f} °F")
</code>"""


def main() -> None:
    if os.environ.get("OPENAI_BASE_URL"):
        model = OpenAIModel(os.environ.get("CODEAGENT_MODEL", "gpt-4o-mini"))
    else:
        print("(no OPENAI_BASE_URL: replaying a scripted reply)")
        model = ScriptedModel([SCRIPTED])
    with CodeAgent(model, tools=[get_temperature, to_fahrenheit], max_steps=5) as agent:
        result = agent.run("Which of Paris, Oslo and Cairo is the warmest right now, in Fahrenheit?")
    print(f"{result.status}: {result.output}  ({len(result.steps)} step(s), {result.usage.total_tokens} tokens)")


if __name__ == "__main__":
    main()
