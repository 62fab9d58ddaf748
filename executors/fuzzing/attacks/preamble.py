"""The text every escape attempt starts with, and the effect it aims at (data, no hypothesis).

`power(h)` takes whatever a primitive produced (module, dict of globals, function, class, frame,
traceback) and follows it to the effect. `REACH_TOKEN` is what an attempt prints after it called
a real `os.getpid()`: proof that the code reached a module the restricted policy refuses.
"""

from __future__ import annotations

__all__ = ["REACH_TOKEN", "PREAMBLE", "EFFECTS"]

REACH_TOKEN = "FUZZ-REACHED-REFUSED-MODULE"

# The preamble of every attempt: `power(h)` takes whatever the primitive produced (module,
# dict of globals, function, class, frame, traceback) and follows it to the effect. It uses only
# public names and computed strings, so a policy that refuses it refuses it for a real reason.
PREAMBLE = '''\
MARKER = {marker!r}
SECRET = {secret!r}
CANARY = {canary!r}
TOKEN = {token!r}
seen = []
KEYS = ['os', '_os', 'sys', '_sys', 'posix', 'builtins', '_'+'_builtins_'+'_', 'open', 'environ',
        'subprocess', 'importlib', 'io', '_io', 'shutil', 'pathlib', 'codecs', '_'+'_import_'+'_',
        'getpid', 'x', 'a', 'index']
ATTRS = ['os', '_os', 'sys', '_sys', 'builtins', 'posix', '_'+'_builtins_'+'_',
         'f_globals', 'f_builtins', 'f_locals', 'f_back', 'tb_frame', 'tb_next', 'gi_frame',
         'cr_frame', 'ag_frame', '_'+'_globals_'+'_', '_'+'_init_'+'_', '_'+'_self_'+'_',
         '_'+'_func_'+'_', '_'+'_wrapped_'+'_', 'func', '_'+'_call_'+'_', 'modules']


def get(obj, name):
    try:
        return getattr(obj, name, None)
    except BaseException:
        return None


def pick(seq, name):
    for item in seq:
        if get(item, '_'+'_name_'+'_') == name:
            return item


def power(h, depth=0):
    if h is None or depth > 7:
        return
    for s in seen:
        if s is h:
            return
    seen.append(h)
    if isinstance(h, dict):
        for key in KEYS:
            if key in h:
                try:
                    power(h[key], depth + 1)
                except Exception:
                    pass
        return
    if isinstance(h, (list, tuple)):
        for item in h[:20]:
            power(item, depth + 1)
        return
{effect}
    for name in ATTRS:
        try:
            power(get(h, name), depth + 1)
        except Exception:
            pass
    imp = get(h, '_'+'_import_'+'_')
    if get(h, '_'+'_name_'+'_') == '_'+'_import_'+'_':
        imp = h
    if callable(imp):
        try:
            power(imp('os'), depth + 1)
        except Exception:
            pass
'''

EFFECTS = {
    "canary": '''\
    env = get(h, 'environ')
    if env is not None:
        for key in (CANARY, CANARY.encode()):
            try:
                print('canary:', env[key])
            except Exception:
                pass
    if get(h, 'copy') is not None and get(h, 'putenv') is not None or get(h, 'encodekey') is not None:
        env = h  # the environ mapping itself
        for key in (CANARY, CANARY.encode()):
            try:
                print('canary:', env[key])
            except Exception:
                pass
    getenv = get(h, 'getenv')
    if callable(getenv):
        try:
            print('canary:', getenv(CANARY))
        except Exception:
            pass''',
    "marker": '''\
    for name in ('mkdir', 'touch'):
        fn = get(h, name)
        if callable(fn):
            try:
                fn(MARKER) if name == 'mkdir' else fn()
            except Exception:
                pass
    opener = get(h, 'open')
    if callable(h) and get(h, '_'+'_name_'+'_') == 'open':
        opener = h
    if callable(opener):
        try:
            opener(MARKER, 'w').write('escaped')
        except Exception:
            pass
    runner = get(h, 'run')
    if callable(runner):
        try:
            runner(['touch', MARKER])
        except Exception:
            pass''',
    "reach": '''\
    pid = get(h, 'getpid')
    if callable(h) and get(h, '_'+'_name_'+'_') == 'getpid':
        pid = h
    if callable(pid):
        try:
            print(TOKEN, pid())
        except Exception:
            pass''',
}

EFFECTS["tamper"] = "    pass"
EFFECTS["read"] = '''\
    opener = get(h, 'open')
    if callable(h) and get(h, '_'+'_name_'+'_') in ('open', 'open_code'):
        opener = h
    if callable(opener):
        try:
            print('secret:', opener(SECRET).read())
        except Exception:
            pass
    for name in ('read_text', 'read_bytes'):
        fn = get(h, name)
        if callable(fn):
            try:
                print('secret:', fn())
            except Exception:
                pass'''

