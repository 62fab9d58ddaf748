"""Figures a step produced reach the model, the record, the events and the disk.

The executor here is a LocalExecutor that adds a real PNG to every step whose code says
`# figure` (the executors' own capture lands separately; this is the contract the agent reads:
`ExecutionResult.attachments`). A model that can see gets the image as a content part; any other
reads one line per figure; the memory drops old images before old steps.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, RunResult, ScriptedModel, ToolCallingAgent
from codeagent.agent.memory import IMAGES_DROPPED, Memory, estimate_tokens
from codeagent.events import Observation
from codeagent.models.openai_model import ModelReply, ToolCall, merge_system_into_user
from codeagent.tools.attachments import IMAGE_TOKENS, AttachmentRecord, content_text, vision_capable
from executors import Attachment, LocalExecutor


def png(width: int = 3, height: int = 2) -> bytes:
    """A valid RGB PNG of the given size (one grey image, no library needed)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = png()


class FigureExecutor(LocalExecutor):
    """Adds one figure per `# figure` comment in the code, as the executors' capture will."""

    def execute(self, code):
        result = super().execute(code)
        figures = tuple(Attachment("image/png", PNG, f"figure {i}", 3, 2)
                        for i in range(1, code.count("# figure") + 1))
        return dataclasses.replace(result, attachments=result.attachments + figures)


def code(body: str) -> str:
    return f"Thought: plot.\n<code>\n{body}\n</code>"


def run(replies, *, vision=False, **agent_options):
    model = ScriptedModel(replies, vision=vision)
    with FigureExecutor() as ex, CodeAgent(model, executor=ex, **agent_options) as agent:
        events = list(agent.stream("Plot the data."))
    return model, events, events[-1].result


def image_parts(message) -> list[dict]:
    content = message["content"]
    return [p for p in content if p["type"] == "image_url"] if isinstance(content, list) else []


def test_a_model_without_vision_reads_one_line_per_figure():
    model, events, result = run([code("x = 1  # figure"), code("final_answer(x)")])
    assert result.success and result.output == 1
    observation = result.steps[0].observation
    assert "[figure 1: 3×2 PNG, 1 kB, not saved]" in observation
    second = model.calls[1]
    assert all(isinstance(m["content"], str) for m in second), "no image part for a model that cannot see"
    assert "[figure 1: 3×2 PNG, 1 kB, not saved]" in second[-1]["content"]
    (record,) = result.attachments
    assert (record.step, record.index, record.media_type, record.size) == (1, 1, "image/png", len(PNG))
    assert record.data() == PNG and record.file is None


def test_a_vision_model_gets_the_image_as_a_content_part():
    model, _, result = run([code("x = 2  # figure"), code("final_answer(x)")], vision=True)
    last = model.calls[1][-1]
    assert last["role"] == "user" and isinstance(last["content"], list)
    assert last["content"][0]["type"] == "text" and "the image follows" in last["content"][0]["text"]
    (part,) = image_parts(last)
    prefix = "data:image/png;base64,"
    assert part["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(part["image_url"]["url"][len(prefix):]) == PNG
    # the scripted model's usage counts the image at its fixed cost, not its base64 length
    assert result.steps[1].usage.prompt_tokens < IMAGE_TOKENS + 3000


def test_an_observation_of_figures_alone_names_them_instead_of_saying_nothing_printed():
    _, _, result = run([code("y = 3  # figure # figure"), code("final_answer(y)")])
    observation = result.steps[0].observation
    assert "printed nothing" not in observation
    assert "[figure 1:" in observation and "[figure 2:" in observation


def test_figures_are_numbered_across_the_run_and_saved_in_the_output_dir(tmp_path):
    _, events, result = run([code("a = 1  # figure"), code("b = 2  # figure"), code("final_answer(a + b)")],
                            output_dir=tmp_path)
    records = result.attachments
    assert [(r.step, r.index) for r in records] == [(1, 1), (2, 2)]
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == [f"{result.run_id}.figure-1.png", f"{result.run_id}.figure-2.png"]
    assert all(f.read_bytes() == PNG for f in files)
    assert f"saved as {files[1]}" in result.steps[1].observation
    # events carry the metadata and the file, never the bytes
    observations = [e for e in events if isinstance(e, Observation)]
    meta = observations[1].attachments[0]
    assert meta["file"] == str(files[1]) and meta["size"] == len(PNG) and meta["width"] == 3
    line = observations[1].to_json()
    assert base64.b64encode(PNG).decode()[:20] not in line and json.loads(line)["attachments"][0]["index"] == 2


def test_save_writes_the_figures_beside_the_json_and_load_finds_them(tmp_path):
    _, _, result = run([code("v = 5  # figure"), code("final_answer(v)")])
    saved = result.save(tmp_path / "run.json")
    assert (tmp_path / "run.figure-1.png").read_bytes() == PNG
    data = json.loads(saved.read_text())
    assert data["steps"][0]["attachments"][0]["file"] == "run.figure-1.png"
    assert "iVBOR" not in saved.read_text(), "the PNG bytes stay out of the JSON"
    moved = tmp_path / "moved"
    moved.mkdir()
    for f in tmp_path.glob("run.*"):
        f.rename(moved / f.name)
    loaded = RunResult.load(moved / "run.json")
    (record,) = loaded.attachments
    assert record.path == moved / "run.figure-1.png" and record.data() == PNG
    assert loaded.saved_files() == [moved / "run.figure-1.png"]
    # replay still works: the same replies, the same answer
    with FigureExecutor() as ex, CodeAgent(ScriptedModel.from_run(loaded), executor=ex) as agent:
        again = agent.run(loaded.task)
    assert again.output == 5 and len(again.attachments) == 1


def test_save_into_the_output_dir_reuses_the_files_written_during_the_run(tmp_path):
    _, _, result = run([code("v = 5  # figure"), code("final_answer(v)")], output_dir=tmp_path)
    result.save(tmp_path / f"{result.run_id}.json")
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"{result.run_id}.figure-1.png", f"{result.run_id}.json"]
    assert RunResult.load(tmp_path / f"{result.run_id}.json").attachments[0].data() == PNG


def test_a_run_loaded_from_json_alone_keeps_its_metadata(tmp_path):
    _, _, result = run([code("v = 5  # figure"), code("final_answer(v)")])
    loaded = RunResult.from_json(result.to_json())
    (record,) = loaded.attachments
    assert record.data() is None and record.describe() == "figure 1: 3×2 PNG, 1 kB"
    loaded.save(tmp_path / "r.json")  # nothing to write: the record keeps no file
    assert not list(tmp_path.glob("*.png"))


# -- the memory: images cost a fixed amount, and go before steps do ----------------------------

def _memory(steps: int, images_per_step: int = 1) -> Memory:
    memory = Memory("system", "Task: t")
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    for i in range(steps):
        memory.add_step(f"reply {i}", f"Observation:\nstep {i}", [part] * images_per_step)
    return memory


def test_old_images_are_dropped_before_old_steps():
    memory = _memory(3)
    text_cost = sum(estimate_tokens(m) for m in ("system", "Task: t")) + 60
    text_cost += sum(estimate_tokens(f"reply {i}") + estimate_tokens(f"Observation:\nstep {i}") for i in range(3))
    messages = memory.messages(text_cost + IMAGE_TOKENS + 10)
    assert memory.last_dropped == 0 and memory.last_images_dropped == 2
    observations = [m for m in messages if m["role"] == "user"][1:]
    assert [len(image_parts(m)) for m in observations] == [0, 0, 1]
    assert IMAGES_DROPPED in observations[0]["content"] and IMAGES_DROPPED not in content_text(observations[2]["content"])
    assert len(memory.messages(None)) == 8 and sum(len(image_parts(m)) for m in memory.messages(None)) == 3
    assert all(isinstance(m["content"], str) for m in memory.messages(None, images=False))


def test_the_note_goes_into_the_text_part_of_an_observation_with_images():
    messages = _memory(1).messages(None, note="last step")
    assert messages[-1]["content"][0]["text"].endswith("last step") and image_parts(messages[-1])


@settings(max_examples=60, deadline=None)
@given(steps=st.integers(1, 6), per_step=st.integers(0, 3), budget=st.integers(50, 8000))
def test_the_images_kept_are_the_newest_and_fit_when_the_text_does(steps, per_step, budget):
    memory = _memory(steps, per_step)
    messages = memory.messages(budget)
    kept = [len(image_parts(m)) for m in messages[2:] if m["role"] == "user"]
    flat = [n for n in kept]
    # images are dropped oldest first: once a step keeps an image, every later step keeps all of its own
    first = next((i for i, n in enumerate(flat) if n), len(flat))
    assert all(n == per_step for n in flat[first + 1:])
    text = sum(estimate_tokens(content_text(m["content"])) for m in messages)
    if memory.last_dropped == 0 and text + 60 <= budget:
        assert text + IMAGE_TOKENS * sum(flat) <= budget + 60 * 2


# -- models ---------------------------------------------------------------------------------------

def test_vision_auto_knows_common_vision_model_names():
    for name in ("gpt-4o-mini", "gpt-4.1", "claude-3-5-sonnet", "gemini-1.5-flash", "llava:13b",
                 "Qwen/Qwen2.5-VL-7B-Instruct", "pixtral-12b", "llama3.2-vision"):
        assert vision_capable(name), name
    for name in ("qwen2.5-coder:7b", "gpt-3.5-turbo", "llama3.1:8b", "o1-mini", "mistral-7b-instruct"):
        assert not vision_capable(name), name
    assert OpenAIModel("qwen2.5-coder", base_url="http://x/v1").vision is False
    assert OpenAIModel("qwen2.5-coder", base_url="http://x/v1", vision=True).vision is True
    assert OpenAIModel("gpt-4o", base_url="http://x/v1", vision=False).vision is False
    with pytest.raises(ValueError, match="vision must be True, False or 'auto'"):
        OpenAIModel("m", base_url="http://x/v1", vision="yes")


def test_over_http_a_vision_model_sends_the_image_and_a_text_model_sends_the_line():
    replies = [code("z = 7  # figure"), code("final_answer(z)")]
    with OpenAIStub(list(replies) * 2) as stub:
        for vision in (True, False):
            model = OpenAIModel("m", base_url=stub.base_url, api_key="k", vision=vision)
            with FigureExecutor() as ex, CodeAgent(model, executor=ex) as agent:
                assert agent.run("t").output == 7
    seen, blind = stub.requests[1]["messages"][-1], stub.requests[3]["messages"][-1]
    assert image_parts(seen) and image_parts(seen)[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert isinstance(blind["content"], str) and "[figure 1: 3×2 PNG" in blind["content"]


def test_an_endpoint_that_rejects_images_is_adapted_to():
    replies = [code("z = 7  # figure"), {"status": 400, "error": "Invalid content type. image_url is only supported by certain models."},
               code("final_answer(z)")]
    with OpenAIStub(replies) as stub:
        model = OpenAIModel("gpt-4o", base_url=stub.base_url, api_key="k")
        with FigureExecutor() as ex, CodeAgent(model, executor=ex) as agent:
            assert agent.run("t").output == 7
    assert model.vision is False and any("images" in a for a in model.adaptations)
    assert image_parts(stub.requests[1]["messages"][-1]) and isinstance(stub.requests[2]["messages"][-1]["content"], str)


def test_no_system_role_keeps_the_images_of_the_first_user_message():
    merged = merge_system_into_user([{"role": "system", "content": "S"},
                                     {"role": "user", "content": [{"type": "text", "text": "T"}, {"type": "image_url", "image_url": {"url": "u"}}]}])
    assert merged == [{"role": "user", "content": [{"type": "text", "text": "S"}, {"type": "text", "text": "T"},
                                                   {"type": "image_url", "image_url": {"url": "u"}}]}]


# -- the tool-calling agent: a tool that returns a figure ------------------------------------------

def chart(title: str) -> Attachment:
    """Draw a chart."""
    return Attachment("image/png", PNG, "figure 1", 3, 2)


def _tool_run(vision: bool, tmp_path=None):
    replies = [ModelReply(text="", tool_calls=(ToolCall(id="c1", name="chart", arguments={"title": "t"}),)),
               ModelReply(text="", tool_calls=(ToolCall(id="c2", name="final_answer", arguments={"answer": "ok"}),))]
    model = ScriptedModel(replies, vision=vision)
    result = ToolCallingAgent(model, [chart], output_dir=tmp_path).run("chart it")
    return model, result


def test_a_tool_that_returns_a_figure_is_described_to_a_model_without_vision():
    model, result = _tool_run(False)
    assert result.success and len(result.attachments) == 1
    tool_message = next(m for m in model.calls[1] if m["role"] == "tool")
    assert tool_message["content"].startswith("[figure 1: 3×2 PNG, 1 kB, not saved")
    assert not any(image_parts(m) for m in model.calls[1])


def test_a_tool_that_returns_a_figure_is_shown_to_a_vision_model(tmp_path):
    model, result = _tool_run(True, tmp_path)
    last = model.calls[1][-1]
    assert last["role"] == "user" and len(image_parts(last)) == 1
    assert (tmp_path / f"{result.run_id}.figure-1.png").read_bytes() == PNG
    assert isinstance(result.attachments[0], AttachmentRecord) and "saved as" in result.steps[0].observation
