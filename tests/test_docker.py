"""DockerExecutor on a real engine: contract, hardening read back from inside, faults, sweep.

Runs (never skips) when CI=true: no reachable engine is then a failure. Elsewhere the module skips
with the reason when no engine answers. The engine is the one DOCKER_HOST points at;
`source <(scripts/docker-engine.sh --env)` starts the project's own and sets it (scripts/test
does so when CI=true or CODEAGENT_DOCKER=1).

Most tests share one executor (a container start costs ~0.2 s): tests that kill it (bombs) rely on
the executor restarting its container, which is itself under test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from unavailable import unavailable

from executors import ExecutionResult, Limits

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"
MEMORY_MB = 256
TIMEOUT_S = 2.0


def _engine_or_skip():
    where = os.environ.get("DOCKER_HOST") or "the default socket (DOCKER_HOST is not set)"
    try:
        from executors.docker.image import connect

        client = connect(timeout=10)
        client.ping()
        return client
    except Exception as e:
        reason = (f"no Docker engine reachable at {where}: {type(e).__name__}: {e}. "
                  "Start one with `source <(scripts/docker-engine.sh --env)`.")
        unavailable(reason)


@pytest.fixture(scope="module")
def client():
    return _engine_or_skip()


@pytest.fixture(scope="module")
def image(client):
    from executors.docker.image import ensure_image

    return ensure_image(client=client)


def add(a, b):
    return a + b


def echo(*args, **kwargs):
    return {"args": args, "kwargs": kwargs}


def broken_tool():
    raise ValueError("the tool broke")


@pytest.fixture(scope="module")
def ex(client, image):
    from executors import DockerExecutor

    limits = Limits(timeout_s=TIMEOUT_S, max_memory_mb=MEMORY_MB, max_output_chars=2000)
    with DockerExecutor(tools={"add": add, "echo": echo, "broken_tool": broken_tool},
                        limits=limits, image=image) as executor:
        yield executor


def run(ex, code: str) -> ExecutionResult:
    return ex.execute(textwrap.dedent(code))


def ok(ex, code: str):
    r = run(ex, code)
    assert r.error is None, (r.error, r.logs)
    return r.output


def assert_alive(ex):
    r = ex.execute("1 + 1")
    assert r.error is None and r.output == 2, r


# --- the contract ------------------------------------------------------------------------------


def test_output_logs_and_state(ex):
    r = ex.execute("x = add(1, 2)\nprint(x)\nx * 10")
    assert (r.output, r.logs, r.is_final_answer, r.error) == (30, "3\n", False, None)
    assert ex.execute("x + 1").output == 4  # state persists between calls


def test_final_answer_and_reset(ex):
    ex.execute("y = 41")
    r = ex.execute("final_answer(y + 1)")
    assert r.is_final_answer and r.output == 42
    r = ex.execute("try:\n    final_answer('kept')\nexcept BaseException:\n    pass\n'not final'")
    assert r.is_final_answer and r.output == "kept"  # a bare except cannot swallow it
    ex.reset()
    r = ex.execute("y")
    assert r.error is not None and r.error.type == "NameError"


def test_errors_come_back_as_results(ex):
    r = ex.execute("def f(:\n  pass")
    assert r.error.type == "SyntaxError"
    r = ex.execute("a = 1\nprint('before')\n1 / 0")
    assert r.error.type == "ZeroDivisionError" and r.error.lineno == 3 and r.logs == "before\n"


def test_tool_round_trip_types(ex):
    out = ok(ex, """
        import datetime, decimal
        r = echo((1, 2), {3}, b"\\x00\\xff", 1.5, None, when=datetime.date(2024, 1, 2),
                 d=decimal.Decimal("1.10"), nested={"k": [1, (2, 3)]})
        r
    """)
    import datetime
    import decimal

    assert out["args"] == ((1, 2), {3}, b"\x00\xff", 1.5, None)
    assert out["kwargs"] == {"when": datetime.date(2024, 1, 2), "d": decimal.Decimal("1.10"),
                             "nested": {"k": [1, (2, 3)]}}


def test_tool_error_is_catchable(ex):
    out = ok(ex, """
        try:
            broken_tool()
        except Exception as e:
            caught = type(e).__name__ + ": " + str(e)
        caught
    """)
    assert "the tool broke" in out


def test_set_variables_and_register_tools(ex):
    ex.set_variables({"data": [1, 2, 3], "t": (4, 5)})
    ex.register_tools({"mul": lambda a, b: a * b})
    assert ok(ex, "mul(sum(data), t[1])") == 30


def test_open_policy_has_full_python(ex):
    assert ok(ex, "import sqlite3, ctypes, subprocess; sqlite3.connect(':memory:').execute('select 6*7').fetchone()[0]") == 42


# --- hardening, read back from inside the container -----------------------------------------


def test_hardening_read_back(ex):
    facts = ok(ex, r"""
        import os, json
        def read(*paths):
            for p in paths:
                try:
                    return open(p).read().strip()
                except OSError:
                    pass
            return None
        status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
        mounts = [l.split() for l in open("/proc/mounts")]
        json.dumps({
            "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
            "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
            "cap_prm": status["CapPrm"].strip(),
            "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
            "net": sorted(os.listdir("/sys/class/net")),
            "mounts": {m[1]: [m[2], m[3]] for m in mounts},
            "mem": read("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
            "memsw": read("/sys/fs/cgroup/memory.swap.max", "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"),
            "pids": read("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"),
            "cpu_max": read("/sys/fs/cgroup/cpu.max"),
            "cfs": [read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")],
            "pid1": open("/proc/1/cmdline").read().split("\0")[0],
            "me": os.getpid(), "cwd": os.getcwd(),
        })
    """)
    f = json.loads(facts)
    assert (f["uid"], f["gid"], f["euid"]) == (65534, 65534, 65534)
    assert int(f["cap_eff"], 16) == int(f["cap_bnd"], 16) == int(f["cap_prm"], 16) == 0
    assert f["no_new_privs"] == "1"
    assert f["seccomp"] == "2"  # the engine's default seccomp filter is on
    assert f["net"] == ["lo"]  # network none: loopback only
    mounts = f["mounts"]
    assert "ro" in mounts["/"][1].split(",")
    kind, opts = mounts["/tmp"]
    assert kind == "tmpfs" and "size=" in opts and "nosuid" in opts, mounts["/tmp"]
    # the working directory is the Access workdir: a host directory mounted read-write at its own path
    assert f["cwd"] == ex.access.workdir and "rw" in mounts[f["cwd"]][1].split(",")
    assert int(f["mem"]) == MEMORY_MB * 2**20
    if f["memsw"] is not None:  # memory+swap equal to memory: no swap (v1 needs swap accounting)
        assert int(f["memsw"]) in (MEMORY_MB * 2**20, 0)
    assert f["pids"] not in (None, "max") and int(f["pids"]) <= 512
    if f["cpu_max"]:
        quota, period = f["cpu_max"].split()
    else:
        quota, period = f["cfs"]
    assert quota not in ("max", "-1") and int(quota) / int(period) <= 2
    assert f["pid1"].endswith("docker-init") and f["me"] != 1


def test_container_labels_and_settings(ex, client):
    from executors.docker.container import LABEL_EXECUTOR, LABEL_PID

    info = client.api.inspect_container(ex.container_id)
    labels = info["Config"]["Labels"]
    assert labels[LABEL_EXECUTOR] == "DockerExecutor" and labels[LABEL_PID] == str(os.getpid())
    hc = info["HostConfig"]
    assert hc["NetworkMode"] == "none" and hc["ReadonlyRootfs"] and hc["CapDrop"] == ["ALL"]
    assert hc["Init"] is True and hc["Memory"] == hc["MemorySwap"] == MEMORY_MB * 2**20
    assert not any("unconfined" in opt for opt in hc["SecurityOpt"] or [])
    assert not hc["Privileged"] and info["Config"]["User"] == "65534:65534"


# --- bombs: each comes back as an error, and the executor answers afterwards ----------------


def test_infinite_loop_times_out(ex):
    t = time.monotonic()
    r = ex.execute("while True:\n    pass")
    assert r.error is not None and r.error.type == "TimeoutError"
    assert time.monotonic() - t < TIMEOUT_S + 3
    assert_alive(ex)


def test_sleep_times_out(ex):
    t = time.monotonic()
    r = ex.execute("import time\ntime.sleep(60)")
    assert r.error is not None and r.error.type == "TimeoutError"
    assert time.monotonic() - t < TIMEOUT_S + 3
    assert_alive(ex)


def test_timeout_that_ignores_the_worker_signal_kills_the_worker(ex):
    # Model code that blocks SIGALRM defeats the worker's own deadline: the host must kill it.
    t = time.monotonic()
    r = ex.execute("import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
                   "keep = 1\ntime.sleep(60)")
    assert r.error is not None and r.error.type == "TimeoutError", r
    assert r.state_lost
    assert time.monotonic() - t < TIMEOUT_S + 5
    assert_alive(ex)
    assert ex.execute("keep").error.type == "NameError"  # the result told the truth


# The interrupt that enforces the deadline is swallowed (Python ignores every exception raised in
# `__del__`, and a bare `except:` catches it): the step still overran, so it is a TimeoutError.
SWALLOWED_DEADLINES = {
    "__del__ loops forever": "class Slow:\n    def __del__(self):\n        while True:\n            pass\n"
                             "s = Slow()\ndel s\n'done'",
    "bare except": "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\n'done'",
}


@pytest.mark.parametrize("code", list(SWALLOWED_DEADLINES.values()), ids=list(SWALLOWED_DEADLINES))
def test_a_swallowed_deadline_is_still_a_timeout(ex, code):
    ex.execute("kept = 'still here'")
    t = time.monotonic()
    r = ex.execute(code)
    assert r.error is not None and r.error.type == "TimeoutError" and r.output is None, r
    assert time.monotonic() - t < TIMEOUT_S + ex.kill_grace_s + 1
    assert not r.state_lost and ex.get_variables(["kept"]) == {"kept": "still here"}


def test_memory_bomb_is_a_memory_error(ex):
    r = ex.execute(f"x = b'x' * ({MEMORY_MB * 2} * 2**20)")
    assert r.error is not None and r.error.type == "MemoryError", r
    assert_alive(ex)


def test_growing_memory_bomb(ex):
    r = ex.execute("a = []\nwhile True:\n    a.append(b'y' * 2**20)")
    assert r.error is not None and r.error.type in ("MemoryError", "TimeoutError"), r
    assert_alive(ex)


def test_fork_bomb(ex):
    t = time.monotonic()
    r = ex.execute("import os\nwhile True:\n    os.fork()")
    assert r.error is not None, r
    assert time.monotonic() - t < TIMEOUT_S + 5
    assert_alive(ex)
    # No leftover forks keep running in the container.
    assert ok(ex, "import os\nlen([p for p in os.listdir('/proc') if p.isdigit()])") <= 3


def test_print_flood_is_truncated(ex):
    r = ex.execute("print('x' * 10_000_000)\nprint('end')")
    assert r.error is None and len(r.logs) <= 2000 + 200 and r.logs.rstrip().endswith("end")
    r = ex.execute("while True:\n    print('flood' * 100)")
    assert r.error is not None and r.error.type == "TimeoutError" and len(r.logs) <= 2200
    assert_alive(ex)


# --- what the code may not reach -------------------------------------------------------------


@pytest.fixture
def host_server():
    """A TCP server on the host's loopback; the container must not reach it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    hits = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            hits.append(1)
            conn.sendall(b"hello from the host\n")
            conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield srv.getsockname()[1], hits
    stop.set()
    th.join()
    srv.close()


# Only the host's loopback server and a documentation address (RFC 5737) are ever probed: with
# network none the kernel refuses the latter with ENETUNREACH before any packet exists.
LOOPBACK_PROBE = """
import socket
try:
    s = socket.create_connection(("127.0.0.1", {port}), timeout=1)
    reply = s.recv(100).decode()
except OSError as e:
    reply = type(e).__name__
reply
"""

NO_ROUTE_PROBE = """
import errno, socket
res = []
try:
    socket.create_connection(("192.0.2.1", 80), timeout=1)
    res.append("connected")
except OSError as e:
    res.append(errno.errorcode.get(e.errno, type(e).__name__))
try:
    socket.getaddrinfo("example.invalid", 80)
    res.append("resolved")
except OSError as e:
    res.append(type(e).__name__)
routes = open("/proc/net/route").read().splitlines()[1:]
res.append(len(routes))
res
"""


def test_network_is_unreachable(ex, host_server):
    port, hits = host_server
    assert ok(ex, LOOPBACK_PROBE.format(port=port)) == "ConnectionRefusedError"  # its own lo
    assert hits == []
    out = ok(ex, NO_ROUTE_PROBE)
    assert out[0] == "ENETUNREACH" and out[1] != "resolved" and out[2] == 0, out


def test_network_option_is_explicit(client, image, host_server):
    from executors import DockerExecutor

    port, hits = host_server
    with DockerExecutor(image=image, network="host") as net:
        assert ok(net, LOOPBACK_PROBE.format(port=port)) == "hello from the host\n"
    assert hits == [1]


def test_writes_outside_tmp_fail(ex):
    out = ok(ex, """
        import os
        res = {}
        for p in ["/etc/passwd", "/usr/local/bin/evil", "/root/x", "/x", "/usr/local/lib/evil.py"]:
            try:
                with open(p, "a") as f:
                    f.write("pwned")
                res[p] = "written"
            except OSError as e:
                res[p] = type(e).__name__
        with open("/tmp/ok.txt", "w") as f:
            f.write("fine")
        with open("here.txt", "w") as f:
            f.write("fine too")
        res["tmp"] = open("/tmp/ok.txt").read() + "/" + open("here.txt").read()
        res
    """)
    assert out.pop("tmp") == "fine/fine too"
    assert "written" not in out.values(), out


def test_tmp_is_size_limited(ex):
    out = ok(ex, """
        written = 0
        try:
            with open("/tmp/big", "wb") as f:
                for _ in range(1000):
                    f.write(b"z" * 2**20)
                    written += 1
            r = "no limit"
        except OSError as e:
            r = type(e).__name__
        import os
        os.remove("/tmp/big")
        (r, written)
    """)
    assert out[0] == "OSError" and out[1] < 1000, out


def test_host_files_are_not_reachable(ex, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.environ["CODEAGENT_TEST_SECRET"] = "env-secret"
    try:
        out = ok(ex, f"""
            import os
            res = []
            for p in [{str(secret)!r}, {str(REPO / 'pyproject.toml')!r}, "/root/.bash_history",
                      "/etc/shadow", "/var/lib/codeagent-docker", "/run/codeagent-docker.sock"]:
                res.append(os.path.exists(p))
            res.append("CODEAGENT_TEST_SECRET" in os.environ)
            res
        """)
    finally:
        del os.environ["CODEAGENT_TEST_SECRET"]
    assert out == [False] * 7, out


def test_chown_and_setuid_are_refused(ex):
    out = ok(ex, """
        import os
        open("/tmp/mine", "w").close()
        res = {}
        for name, call in [("chown", lambda: os.chown("/tmp/mine", 0, 0)),
                           ("setuid", lambda: os.setuid(0)),
                           ("setgid", lambda: os.setgid(0)),
                           ("setgroups", lambda: os.setgroups([0])),
                           ("chmod_suid", lambda: (os.chmod("/tmp/mine", 0o4755), os.stat("/tmp/mine").st_mode & 0o4000)[1]),
                           ("mknod", lambda: os.mknod("/tmp/dev", 0o600 | 0o020000, os.makedev(1, 3))),
                           ("unshare", lambda: os.unshare(os.CLONE_NEWUSER) if hasattr(os, "unshare") else (_ for _ in ()).throw(PermissionError()))]:
            try:
                res[name] = call()
            except OSError as e:
                res[name] = type(e).__name__
        res["uid"] = os.getuid()
        res
    """)
    assert out.pop("uid") == 65534
    # chmod on one's own file succeeds but a setuid bit on a nosuid tmpfs is worthless; the rest fail.
    suid = out.pop("chmod_suid")
    assert suid in (0, 0o4000, "PermissionError")
    assert all(v == "PermissionError" for v in out.values()), out


def test_read_only_and_read_write_mounts(client, image, tmp_path):
    from executors import DockerExecutor

    data, outdir = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    outdir.mkdir()
    (data / "input.csv").write_text("a,b\n1,2\n")
    outdir.chmod(0o777)  # the container user (65534) writes here
    with DockerExecutor(image=image, mounts_ro={data: "/data"}, mounts_rw={outdir: "/out"}) as dx:
        out = ok(dx, """
            text = open("/data/input.csv").read()
            try:
                open("/data/new", "w")
                ro = "writable"
            except OSError as e:
                ro = type(e).__name__
            open("/out/result.txt", "w").write(text.upper())
            (text, ro)
        """)
    assert out == ("a,b\n1,2\n", "OSError")
    assert (outdir / "result.txt").read_text() == "A,B\n1,2\n"


# --- a hostile worker: container code writing garbage to the channel --------------------------


@pytest.mark.parametrize("payload", [
    "b'garbage that is not a frame' * 100",
    "(2**31).to_bytes(4, 'big') + b'{'",  # a huge announced frame
    "frame({'op': 'result', 'id': 10**9, 'output': 'forged'})",  # forged result, wrong id
    "frame({'op': 'tool_call', 'id': 10**9, 'call': 1, 'name': 'add', 'args': [1, 2]})",
    "frame({'op': 'surprise'})",  # unknown op
    "frame([])",  # not an object
])
def test_hostile_worker_garbage(ex, payload):
    # The protocol descriptors are among fds 1..19 (the worker moved them off 0/1): hit them all.
    code = textwrap.dedent(f"""
        import json, os
        def frame(obj):
            body = json.dumps(obj).encode()
            return len(body).to_bytes(4, "big") + body
        data = {payload}
        for fd in range(1, 20):
            try:
                os.write(fd, data)
            except OSError:
                pass
        'done'
    """)
    r = ex.execute(code)
    assert isinstance(r, ExecutionResult)  # never raises into the caller
    assert r.error is not None and r.error.type == "WorkerProtocolError" and r.state_lost, r
    assert r.output is None  # nothing forged made it through
    assert_alive(ex)


def test_hostile_worker_closes_channel(ex):
    r = ex.execute("import os\nfor fd in range(0, 20):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\n")
    assert isinstance(r, ExecutionResult)
    assert_alive(ex)


def test_worker_exit_is_reported(ex):
    r = ex.execute("import os\nos._exit(7)")
    assert r.error is not None and r.state_lost
    assert_alive(ex)


# --- policies --------------------------------------------------------------------------------


def test_no_time_limit(client, image):
    """Limits(timeout_s=None): no deadline; the step runs as long as it needs."""
    from executors import DockerExecutor

    with DockerExecutor(image=image, limits=Limits(timeout_s=None, max_memory_mb=MEMORY_MB)) as nx:
        r = nx.execute("import time\ntime.sleep(0.3)\n'slept'")
        assert r.error is None and r.output == "slept", r


@pytest.mark.parametrize("code", [b"1", None, "x = 1\n" * 20_000])
def test_code_it_cannot_take_is_an_error_like_everywhere(ex, code):
    from executors.base import check_code

    r = ex.execute(code)
    assert r.error is not None and r.error == check_code(code), r
    assert_alive(ex)


def test_final_answer_keyword(ex):
    r = ex.execute("final_answer(answer={'a': 1})")
    assert r.is_final_answer and r.output == {"a": 1}, r
    r = ex.execute("final_answer()")
    assert r.error is not None and r.error.type == "TypeError" and not r.is_final_answer


def test_get_variables(ex):
    from executors.remote.protocol import Repr

    ex.reset()
    assert ex.execute("import math\nn = 3\npair = (n, 'x')\nobj = object()").error is None
    got = ex.get_variables()
    assert set(got) == {"n", "pair", "obj"} and got["pair"] == (3, "x") and isinstance(got["obj"], Repr)
    assert ex.get_variables(["n"]) == {"n": 3}
    with pytest.raises(KeyError, match="'add'"):
        ex.get_variables(["n", "add"])


def test_restricted_policy_in_container(client, image):
    pytest.importorskip("executors.restricted")
    from executors import DockerExecutor

    with DockerExecutor(image=image, policy="restricted", tools={"add": add}) as rx:
        assert rx.execute("import os").error.type == "ImportError"
        assert rx.execute("().__class__.__bases__").error.type == "PolicyError"
        assert rx.execute("open('/etc/passwd')").error.type == "PolicyError"
        assert rx.execute("import math\nmath.sqrt(16)").output == 4.0
        assert rx.execute("add(2, 3) * 2").output == 10  # tools through the restricted runtime


# --- owners, close, sweep --------------------------------------------------------------------


def _ours(client):
    from executors.docker.container import LABEL_EXECUTOR

    return {c["Id"] for c in client.api.containers(all=True, filters={"label": LABEL_EXECUTOR})}


def test_close_removes_the_container(client, image):
    from executors import DockerExecutor

    dx = DockerExecutor(image=image)
    assert ok(dx, "6 * 7") == 42
    cid = dx.container_id
    assert cid in _ours(client)
    dx.close()
    assert cid not in _ours(client)
    dx.close()  # idempotent


ORPHAN_HOST = """
import sys, time
from executors import DockerExecutor
ex = DockerExecutor(image=sys.argv[1])
assert ex.execute("1 + 1").output == 2
print(ex.container_id, flush=True)
time.sleep(600)
"""


def _start_host(image: str) -> tuple[subprocess.Popen, str]:
    """A separate host process with a live executor; returns it and its container id."""
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_HOST, image], stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), text=True)
    cid = proc.stdout.readline().strip()
    if not cid:
        proc.kill()
        proc.wait()
        pytest.fail("the host process did not start its executor")
    return proc, cid


def test_sweep_removes_containers_of_a_killed_host(client, image):
    from executors.docker import sweep

    first, first_cid = _start_host(image)
    try:
        assert first_cid in _ours(client)
        assert first_cid not in sweep(client=client)  # its owner is alive: left alone
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first_cid in _ours(client)  # nothing could clean up after a SIGKILL...

    second, second_cid = _start_host(image)  # ...until the next start (its first executor sweeps)
    try:
        assert first_cid not in _ours(client) and second_cid in _ours(client)
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait()
    assert second_cid in sweep(client=client)  # or an explicit sweep()
    assert second_cid not in _ours(client)


def test_interpreter_exit_removes_containers(client, image):
    code = ("import sys\nfrom executors import DockerExecutor\nex = DockerExecutor(image=sys.argv[1])\n"
            "assert ex.execute('1').output == 1\nprint(ex.container_id)\n")  # no close(): atexit
    out = subprocess.run([sys.executable, "-c", code, image], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60)
    cid = out.stdout.strip()
    assert out.returncode == 0 and cid, out.stderr
    assert cid not in _ours(client)


# --- images ------------------------------------------------------------------------------------


def test_any_image_with_python(client, tmp_path):
    """build_image() from another interpreter (Debian's), then use it through image=."""
    from executors import DockerExecutor
    from executors.docker.image import build_image

    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 10))"],
                           capture_output=True, text=True) if os.path.exists(python) else None
    if probe is None or probe.stdout.strip() != "True":
        unavailable(f"{python} with Python >= 3.10 is not on this machine")
    tag = f"codeagent-test-other-python:{os.getpid()}"
    build_image(tag, python=python, client=client)
    try:
        with DockerExecutor(image=tag, tools={"add": add}) as dx:
            out = ok(dx, "import sys\n(sys.executable, add(20, 22))")
        assert out == ("/usr/local/bin/python3", 42)
    finally:
        client.api.remove_image(tag, force=True)


def test_image_without_python_is_an_executor_error(client):
    import io
    import tarfile

    from executors import DockerExecutor, ExecutorError

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("etc/hostname")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"empty"))
    tag = f"codeagent-test-no-python:{os.getpid()}"
    client.api.import_image_from_data(buf.getvalue(), repository=tag.split(":")[0],
                                      tag=tag.split(":")[1])
    before = _ours(client)
    try:
        dx = DockerExecutor(image=tag)
        with pytest.raises(ExecutorError, match="python3"):
            dx.execute("1")
        dx.close()
    finally:
        client.api.remove_image(tag, force=True)
    assert _ours(client) == before  # the failed container was removed


# --- reaching the engine -------------------------------------------------------------------------


def test_docker_url_without_docker_host(client, image, monkeypatch):
    from executors import DockerExecutor
    from executors.docker.image import engine_url

    # the engine the `client` fixture reached, whether the shell set DOCKER_HOST or not
    url = engine_url() or "unix:///var/run/docker.sock"
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    with DockerExecutor(image=image, docker_url=url) as dx:
        assert ok(dx, "21 * 2") == 42


@pytest.mark.timeout(420)
def test_the_docker_tests_pass_without_docker_host(client, tmp_path):
    """The suite finds the engine as the library does, so a shell with no DOCKER_HOST (the
    project's engine up, the variable never exported) runs the engine tests the same."""
    from executors.docker.image import PROJECT_ENGINE_SOCKET

    if not os.path.exists(PROJECT_ENGINE_SOCKET):
        unavailable(f"the project's Docker engine is not up ({PROJECT_ENGINE_SOCKET}): `scripts/docker-engine.sh`")
    # a temp root of its own: a pytest sharing this run's would prune this run's directories
    env = {**{k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}, "PYTEST_DEBUG_TEMPROOT": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--basetemp={tmp_path / 'bt'}",
                           "tests/test_docker.py::test_docker_url_without_docker_host",
                           "tests/test_docker.py::test_unreachable_engine_is_an_executor_error"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-1000:]


def test_docker_setup_builds_the_image_and_status_reports_it(client):
    """`codeagent docker setup` (what an installed wheel runs; scripts/docker-engine.sh too) finds
    the engine and makes sure the worker image is there; `status` says so."""
    from executors.docker import default_image

    setup = subprocess.run([sys.executable, "-m", "codeagent", "docker", "setup"], cwd=REPO, capture_output=True,
                           text=True, timeout=110)
    assert setup.returncode == 0, setup.stderr
    assert setup.stdout.split() == [default_image()]
    status = subprocess.run([sys.executable, "-m", "codeagent", "docker", "status"], cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0 and f"worker image: {default_image()} present" in status.stdout, status.stdout


def test_unreachable_engine_is_an_executor_error(tmp_path):
    from executors import DockerExecutor, ExecutorError

    dx = DockerExecutor(docker_url=f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(ExecutorError, match="docker_url"):
        dx.execute("1")
    dx.close()
