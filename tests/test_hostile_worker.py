"""A hostile worker: open-policy code that gets hold of the protocol descriptors and writes
garbage, huge frames, forged results and tool calls for tools that do not exist. The host must
survive every one: `execute` returns an ExecutionResult (never raises), and `1 + 1` answers 2
right after (possibly in a fresh worker, which the result then reports as state_lost).
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executors import ExecutionResult, ExecutorError, Limits
from executors.process import SubprocessExecutor

TIMEOUT = 1.0

# Model code that finds the worker object and defines `send(bytes)` on its private channel.
PRELUDE = (
    "import gc, os, json, struct\n"
    "W = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker')\n"
    "def send(data):\n"
    "    os.write(W.fd_out, data)\n"
    "def frame(obj):\n"
    "    body = json.dumps(obj).encode()\n"
    "    return struct.pack('>I', len(body)) + body\n"
)

calls: list[tuple] = []


def add(a, b):
    calls.append((a, b))
    return a + b


@pytest.fixture(scope="module")
def ex():
    ex = SubprocessExecutor(tools={"add": add}, policy="open", limits=Limits(timeout_s=TIMEOUT),
                            max_frame_bytes=1024 * 1024)
    yield ex
    ex.close()


def survives(ex, code: str) -> ExecutionResult:
    t0 = time.monotonic()
    r = ex.execute(PRELUDE + code)
    assert isinstance(r, ExecutionResult)
    assert time.monotonic() - t0 < TIMEOUT + 1.5
    assert len(r.logs) <= ex.limits.max_output_chars + 200
    time.sleep(0.1)  # let whatever the worker still writes after its (possibly forged) answer land
    after = ex.execute("1 + 1")
    assert after.error is None and after.output == 2, after
    assert ex.execute("add(2, 3)").output == 5
    return r


ATTACKS = {
    "garbage bytes": "send(b'\\xff' * 64)",
    "declared 100 MB frame": "send(struct.pack('>I', 100 * 1024 * 1024))",
    "real frame over the limit": "send(frame({'op': 'result', 'id': W.exec_id, 'logs': 'x' * (2 * 1024 * 1024)}))",
    "not JSON": "send(struct.pack('>I', 8) + b'not json')",
    "JSON but not an object": "send(frame([1, 2, 3]))",
    "unknown op": "send(frame({'op': 'launch_missiles', 'id': W.exec_id}))",
    "host-side op": "send(frame({'op': 'execute', 'id': W.exec_id, 'code': 'import os'}))",
    "forged result, wrong id": "send(frame({'op': 'result', 'id': W.exec_id + 1000, 'output': 'forged'}))",
    "forged result, extra field": "send(frame({'op': 'result', 'id': W.exec_id, 'pickle': 'gASV'}))",
    "forged result, bad types": "send(frame({'op': 'result', 'id': W.exec_id, 'is_final_answer': 'yes'}))",
    "forged result, unknown tag": "send(frame({'op': 'result', 'id': W.exec_id, 'output': {'$t': 'pickle', 'v': 'gASV'}}))",
    "forged result, deep value": "send(frame({'op': 'result', 'id': W.exec_id, 'output': json.loads('[' * 900 + ']' * 900)}))",
    "unsolicited pongs": "for i in range(100):\n    send(frame({'op': 'pong', 'id': i, 'pid': 1}))",
    "tool call for a missing tool": "send(frame({'op': 'tool_call', 'id': W.exec_id, 'call': 99, 'name': 'rm_rf', 'args': [], 'kwargs': {}}))",
    "tool call with a bad argument": "send(frame({'op': 'tool_call', 'id': W.exec_id, 'call': 99, 'name': 'add', 'args': [{'$t': 'bytes', 'v': 7}], 'kwargs': {}}))",
    "tool call with the wrong id": "send(frame({'op': 'tool_call', 'id': -5, 'call': 1, 'name': 'add', 'args': [1, 2], 'kwargs': {}}))",
    "half a frame": "send(struct.pack('>I', 50) + b'{\"op\": ')",
    "half a frame, then silence": "send(struct.pack('>I', 50) + b'{\"op\": ')\nimport time\ntime.sleep(30)",
    "close the channel, keep running": "os.close(W.fd_out)\nimport time\ntime.sleep(30)",
    "forged variables reply": "send(frame({'op': 'variables', 'id': W.exec_id, 'values': {'forged': 1}}))",
    "a Decimal with an exponent in the billions": "send(frame({'op': 'result', 'id': W.exec_id, 'output': {'$t': 'decimal', 'v': '1E+999999999'}}))",
    "an int literal of 100,000 digits": "send(struct.pack('>I', 100_020) + b'{\"op\":\"result\",\"id\":1,\"output\":' + b'9' * 100_000 + b'}')",
    "a tool call with a Decimal bomb": "send(frame({'op': 'tool_call', 'id': W.exec_id, 'call': 99, 'name': 'add', 'args': [{'$t': 'decimal', 'v': '1E+999999999'}, 1], 'kwargs': {}}))",
    "a PNG claiming 60,000 x 60,000": (
        "import zlib, base64\n"
        "def chunk(kind, body):\n"
        "    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))\n"
        "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 60000, 60000, 8, 2, 0, 0, 0)) + "
        "chunk(b'IDAT', zlib.compress(b'\\x00' * 4)) + chunk(b'IEND', b'')\n"
        "send(frame({'op': 'result', 'id': W.exec_id, 'attachments': [{'media_type': 'image/png', 'name': 'f', "
        "'data': {'$t': 'bytes', 'v': base64.b64encode(png).decode()}}]}))"),
    "frame on fd 1 and 2": "os.write(1, frame({'op': 'result', 'id': W.exec_id, 'output': 'forged'}))\nos.write(2, b'\\x00' * 10)",
}


@pytest.mark.parametrize("code", list(ATTACKS.values()), ids=list(ATTACKS))
def test_host_survives(ex, code):
    survives(ex, code)


def test_values_over_the_bounds_are_protocol_breaks(ex):
    r = survives(ex, "send(frame({'op': 'result', 'id': W.exec_id, 'output': {'$t': 'decimal', 'v': '1E+999999999'}}))")
    assert r.error is not None and r.error.type == "WorkerProtocolError" and "exponent" in r.error.message, r.error
    assert r.state_lost


def test_a_worker_that_stalls_mid_frame_is_killed_without_a_time_limit():
    """With no time limit the host waits for a step as long as the worker lives, but not for a
    frame it has begun: half a frame, then nothing for Bounds.stall_s, kills the worker."""
    with SubprocessExecutor(policy="open", limits=Limits(timeout_s=None)) as ex:
        ex._link.stall_s = 1.0
        t0 = time.monotonic()
        r = ex.execute(PRELUDE + "send(struct.pack('>I', 50) + b'{\"op\": ')\nimport time\ntime.sleep(60)")
        assert time.monotonic() - t0 < 20
        assert r.error is not None and r.error.type == "WorkerProtocolError" and "stalled mid-frame" in r.error.message
        assert r.state_lost and ex.execute("1 + 1").output == 2


def test_protocol_breaks_are_reported_as_such(ex):
    r = survives(ex, "send(b'\\xff' * 64)")
    assert r.error is not None and r.error.type == "WorkerProtocolError" and r.state_lost
    r = survives(ex, "send(frame({'op': 'launch_missiles', 'id': W.exec_id}))")
    assert r.error is not None and r.error.type == "WorkerProtocolError"


def test_forged_result_with_the_right_id(ex):
    """Open-policy code *is* the worker, so it may answer for itself; the real answer that follows
    is stale and must not leak into the next execute."""
    r = ex.execute(PRELUDE + "send(frame({'op': 'result', 'id': W.exec_id, 'output': 'forged', 'logs': 'x' * 10**6}))\n'real'")
    assert r.output in ("forged", "real")
    assert len(r.logs) <= ex.limits.max_output_chars + 200  # the host truncates whatever arrives
    time.sleep(0.2)  # the real result lands in the pipe
    after = ex.execute("1 + 1")
    assert after.output == 2 and after.error is None
    if r.output == "forged":
        assert after.state_lost  # the stale real result forced a fresh worker


def test_frame_between_requests_replaces_the_worker(ex):
    r = ex.execute(PRELUDE + "import threading\n"
                   "threading.Timer(0.05, lambda: send(frame({'op': 'pong', 'id': 1, 'pid': 1}))).start()\n7")
    assert r.output == 7
    time.sleep(0.5)  # the forged frame is now waiting in the pipe
    after = ex.execute("1 + 1")
    assert after.output == 2 and after.error is None and after.state_lost


def test_missing_tool_is_a_tool_error_for_the_caller(ex):
    code = (
        "W.call_seq += 0\n"
        "try:\n"
        "    W.call_tool('rm_rf', ('/',), {})\n"
        "except Exception as e:\n"
        "    msg = str(e)\n"
        "msg"
    )
    r = ex.execute(PRELUDE + code)
    assert r.error is None and "no tool named 'rm_rf'" in r.output


# Model code replaces the worker's send() so that its next `variables` reply is a lie.
FORGED_VARIABLES = {
    "a value with an unknown tag": ("{'$t': 'pickle', 'v': 'gASV'}", ExecutorError),
    "not a dict": ("[1, 2]", ExecutorError),
    "a name left out": ("{}", KeyError),
}


@pytest.mark.parametrize("values, refusal", list(FORGED_VARIABLES.values()), ids=list(FORGED_VARIABLES))
def test_forged_variables_reply(ex, values, refusal):
    ex.execute(PRELUDE + (
        "real_send = W.send\n"
        "def lying_send(message):\n"
        "    if message.get('op') == 'variables':\n"
        f"        message = dict(message, values={values})\n"
        "    real_send(message)\n"
        "W.send = lying_send\n"
        "asked = 1"
    ))
    # The host checks the names itself and refuses a value it cannot decode (and replaces the
    # worker that sent it); a lie never comes back as the model's variables.
    with pytest.raises(refusal):
        ex.get_variables(["asked"])
    assert ex.execute("1 + 1").output == 2


def test_forged_variables_between_requests_are_dropped(ex):
    ex.execute(PRELUDE + (
        "import threading\n"
        "def forge():\n"
        "    for i in range(W.exec_id, W.exec_id + 20):\n"
        "        send(frame({'op': 'variables', 'id': i, 'values': {'forged': 1}}))\n"
        "threading.Timer(0.05, forge).start()\n"
        "secret = 1"
    ))
    time.sleep(0.5)  # the forged frames now wait in the pipe
    assert "forged" not in ex.get_variables()  # the unclean worker was replaced first
    assert ex.execute("1 + 1").state_lost


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_fuzz_random_bytes_on_the_channel(ex, data):
    survives(ex, f"send({data!r})")


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.sampled_from(["op", "id", "call", "name", "output", "logs", "error", "args"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=5), st.sampled_from(
                           ["result", "tool_call", "ok", "pong", "error"])), max_size=6))
def test_fuzz_random_messages(ex, msg):
    survives(ex, f"send(frame(json.loads({json.dumps(msg)!r})))")
