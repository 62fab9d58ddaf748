"""Which PEP 578 audit events does each library-escape route raise? (plain CPython, with a hook)

    .venv/bin/python tests/audit_event_probe.py                 # a table, one line per attempt
    .venv/bin/python tests/audit_event_probe.py --only pd- --raw # every event with its arguments
    .venv/bin/python tests/audit_event_probe.py --json events.json

Each attempt runs in a fresh forked child of the harness runner with an audit hook that records
the events raised while the step's code runs (the step's own compile/exec are left out). Noise
is set aside: `import` events, events raised while the import system loads a module, and path
events (open, os.listdir, ...) on files that are not the attempt's canaries or /proc (the
libraries reading their own files: a guard lets those through). Paths are normalized first.

What is left is split by what a capability guard would key on; an attempt whose canary kind has
no matching event ("NONE") needs a table rule (a refused member, a checked argument, a
snapshot/restore), because an audit hook cannot see it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import library_escape_harness as harness  # noqa: E402
from library_escapes import ATTEMPTS  # noqa: E402

# Events whose arguments name a path: relevant only when the path is a canary or under /proc.
PATH_EVENTS = {
    "open", "os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.mkdir", "os.symlink", "os.link",
    "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.utime",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.make_archive", "tempfile.mkstemp",
    "tempfile.mkdtemp", "os.chdir", "os.startfile",
}
NOISE = {"import", "builtins.id", "cpython._PySys_ClearAuditHooks", "cpython.PyInterpreterState_Clear"}

# What a guard would key on, by the canary an attempt aims at.
GOVERNING = {
    "secret": ("open", "os.listdir", "os.scandir", "glob.glob", "ctypes.", "shutil.copyfile"),
    "target": ("open", "os.mkdir", "os.symlink", "os.link", "shutil.", "tempfile.mkstemp", "sqlite3.connect", "os.rename"),
    "marker": ("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork", "ctypes.",
               "pickle.find_class", "marshal.loads", "exec", "compile", "code.__new__", "function.__new__",
               "cpython.run_"),
    "env": ("open", "ctypes.", "subprocess.Popen", "os.posix_spawn"),
    "port": ("socket.connect", "socket.__new__", "urllib.Request", "http.client.connect",
             "ftplib.connect", "smtplib.connect", "poplib.connect", "socket.getaddrinfo"),
    "stdout": (),
    "tamper": ("os.chdir", "os.putenv", "os.unsetenv", "sys.settrace", "sys.setprofile", "sys.addaudithook",
               "sys.set_asyncgen_hooks", "os.umask", "signal.", "resource.setrlimit", "gc.",
               "sys.setrecursionlimit", "threading.settrace", "setopencodehook", "os.chmod",
               "sys.unraisablehook", "sys.excepthook"),
}


def relevant(events: list, canary_root: str) -> list:
    kept = []
    for name, args in events:
        if name in NOISE:
            continue
        if name in ("exec", "eval") and any('"<step>"' in a for a in args):
            continue  # the harness running the step itself
        if name in PATH_EVENTS:
            # normpath: pkgutil.get_data opens "<package dir>/../../<anywhere>"
            text = " ".join(os.path.normpath(a) if a.startswith("/") else a for a in args)
            if canary_root not in text and "/proc/" not in text:
                continue
        kept.append([name, args])
    return kept


def governed(kind: str, events: list) -> list[str]:
    prefixes = GOVERNING[kind]
    return sorted({name for name, _ in events if any(name == p or (p.endswith(".") and name.startswith(p)) or
                                                     name.startswith(p + "/") for p in prefixes)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma list of attempt id prefixes")
    parser.add_argument("--raw", action="store_true", help="print every relevant event with its arguments")
    parser.add_argument("--json", help="write {id: {events, governing}} to this file")
    args = parser.parse_args(argv)
    prefixes = [p for p in args.only.split(",") if p]
    attempts = [a for a in ATTEMPTS if not prefixes or any(a.id.startswith(p) for p in prefixes)]
    with tempfile.TemporaryDirectory(prefix="audit-probe-") as tmp:
        raw = harness.audit_events(attempts, Path(tmp))
        rows = {}
        for a in attempts:
            events = relevant(raw.get(a.id, []), str(Path(tmp) / a.id))
            names = list(dict.fromkeys(name for name, _ in events))
            rows[a.id] = {"klass": a.klass, "canary": a.canary, "route": a.route,
                          "events": names, "governing": governed(a.canary, events), "raw": events}
    width = max(len(a.id) for a in attempts)
    for a in attempts:
        row = rows[a.id]
        mark = ",".join(row["governing"]) or "NONE"
        others = [n for n in row["events"] if n not in row["governing"]]
        print(f"{a.id:{width}}  {mark:40}  {' '.join(others)[:90]}")
        if args.raw:
            for name, ev_args in row["raw"]:
                print(f"    {name}: {ev_args}")
    silent = [a.id for a in attempts if not rows[a.id]["events"]]
    ungoverned = [a.id for a in attempts if not rows[a.id]["governing"]]
    print(f"\n{len(ungoverned)} of {len(attempts)} attempts raise no event a guard could key on for their canary;")
    print(f"{len(silent)} raise no relevant audit event at all: {' '.join(silent)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
