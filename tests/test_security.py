"""Adversarial security suite for the in-process restricted executor (`LocalExecutor`).

Every attempt in ATTEMPTS tries to escape: write a marker file, read the canary secret (from
os.environ, a secret file, or a host tool's globals/closure/attributes), or reach host
internals (frames, builtins, real modules). Each must come back with `result.error` set, no
marker written, no secret and no sign of a host object in what the model sees; the executor
must still work afterwards.

`test_attempt_really_escapes_plain_cpython` keeps the table honest: run without the sandbox
(plain `exec` in a forked child), each attempt marked `cpython=True` really does write the
marker or leak the secret, so a refusal is a refusal of a working attack, not of a typo.

`ALLOWED` holds the harmless neighbours of the attacks (public attributes, `__class__`, format
fields, authorized submodules): they must keep working, so "refuse everything" cannot pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import CANARY, CANARY_ENV, assert_ok, assert_refused
from cpython_routes import open_here

from executors import Limits

pytestmark = pytest.mark.timeout(60)

# Strings that only appear in what the model sees if a host object leaked.
LEAK_SIGNS = (
    "<module 'os'",
    "<module 'sys'",
    "<module 'posix'",
    "<module 'builtins'",
    "<built-in function open>",
    "<built-in function __import__>",
    "<built-in function system>",
    "<frame at",
    "<code object",
    "<cell at",
    "HOST_SECRET",
)


@dataclass(frozen=True)
class Attempt:
    id: str
    code: str
    # True: without the sandbox this snippet really writes the marker / leaks the secret.
    cpython: bool = True


def A(id: str, code: str, cpython: bool = True) -> Attempt:
    return Attempt(id, textwrap.dedent(code).strip("\n") + "\n", cpython)


# Payloads: given an expression for a host object, do something observable with it.
def OS(expr: str) -> str:
    """`expr` is the os module (or posix): write the marker and print the canary."""
    return f"o = {expr}\no.system('touch ' + MARKER)\nprint(o.environ.get(ENV))\n"


def SYS(expr: str) -> str:
    return OS(f"({expr}).modules['os']")


def SUBCLASSES(expr: str) -> str:
    """`expr` lists object's subclasses: find os._wrap_close and use its globals."""
    return (
        f"for c in {expr}:\n"
        "    if c.__name__ == '_wrap_close':\n"
        "        g = c.__init__.__globals__\n"
        "        g['system']('touch ' + MARKER)\n"
        "        print(g['environ'].get(ENV))\n"
    )


def FRAME(expr: str, indent: str = "") -> str:
    """`expr` is a live frame: climb to the host's outermost frame and import os from its builtins."""
    lines = [
        f"fr = {expr}",
        "while fr.f_back is not None:",
        "    fr = fr.f_back",
        "imp = fr.f_builtins['__import__']",
    ]
    return "\n".join(indent + line for line in lines) + "\n" + textwrap.indent(OS("imp('os')"), indent)


def BUILTINS(expr: str) -> str:
    """`expr` is the real builtins (module or dict): open a file with it."""
    return (
        f"b = {expr}\n"
        "opener = b['open'] if isinstance(b, dict) else b.open\n"
        "opener(MARKER, 'w').write('x')\n"
    )


def READ(expr: str) -> str:
    """`expr` is a function that reads a file's bytes: print the secret file."""
    return f"reader = {expr}\nprint(reader(SECRET_FILE))\n"


def FMT(call: str, field: str = "0", pre: str = "") -> str:
    """Try one formatting entry point with templates that walk into host objects.

    `call` formats template T with object O. Successes are printed (the canary or a host repr
    shows up in the logs); the probe ends with an error either way, so only a leak can pass.
    """
    f = field
    pairs = [
        (f"{{{f}.__globals__[HOST_SECRET]}}", "add"),
        (f"{{{f}.__globals__[os]}}", "add"),
        (f"{{{f}.api_key}}", "search"),
        (f"{{{f}.__init__.__globals__[HOST_SECRET]}}", "search"),
    ] + [(f"{{{f}.__closure__[{i}].cell_contents.api_key}}", "search") for i in range(5)] + [
        (f"{{{f}.__closure__[{i}].cell_contents}}", "lookup") for i in range(3)
    ]
    listing = ", ".join(f"({t!r}, {o})" for t, o in pairs)
    return (
        f"for T, O in [{listing}]:\n"
        "    try:\n"
        + textwrap.indent(pre + "\n" if pre else "", "        ")
        + f"        print({call})\n"
        "    except Exception:\n"
        "        pass\n"
        "raise LookupError('format probe finished')\n"
    )


WALK_TO_BUILTINS_IN_GEN = """
def g():
    fr = x.gi_frame
    while fr.f_back is not None:
        fr = fr.f_back
    yield fr.f_builtins
x = g()
b = next(x)
"""

SINGLEDISPATCH = """
import functools
@functools.singledispatch
def f(x):
    return 0
@f.register
def g(x: "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__['system']('touch ' + MARKER)"):
    return 1
"""

SINGLEDISPATCH_VARIABLE = """
import functools
ANN = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__['system']('touch ' + MARKER)"
@functools.singledispatch
def f(x):
    return 0
@f.register
def g(x: ANN):
    return 1
"""

TYPE_HINTS = """
import typing
def g(x: "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__['system']('touch ' + MARKER)"):
    return 1
typing.get_type_hints(g)
"""

STR_SUBCLASS_NAME = """
class S(str):
    def __str__(self):
        return 'name'
    def __format__(self, spec):
        return 'name'
    def startswith(self, *args):
        return False
    def __getitem__(self, index):
        return 'a'
    def __contains__(self, item):
        return False
    def lower(self):
        return 'name'
    def strip(self, *args):
        return 'name'
print(getattr(add, S('__globals__'))['HOST_SECRET'])
"""

ATTEMPTS: list[Attempt] = [
    # ---------------------------------------------------------------- imports
    A("import_os", "import os\n" + OS("os")),
    A("import_os_alias", "import os as operating\n" + OS("operating")),
    A("from_os_import", "from os import system, environ\nsystem('touch ' + MARKER)\nprint(environ.get(ENV))"),
    A("import_posix", "import posix\n" + OS("posix")),
    A("import_sys", "import sys\n" + SYS("sys")),
    A("import_subprocess", "import subprocess\nsubprocess.run(['touch', MARKER])\nprint(subprocess.check_output(['env']).decode())"),
    A("import_importlib", "import importlib\n" + OS("importlib.import_module('os')")),
    A("import_builtins", "import builtins\n" + BUILTINS("builtins")),
    A("import_ctypes", "import ctypes\nctypes.CDLL(None).system(('touch ' + MARKER).encode())"),
    A("dunder_import_call", OS("__import__('os')")),
    A("import_os_path", "import os.path\n" + OS("os")),
    A("from_os_import_path", "from os import path\n" + OS("path.os")),
    A("relative_import", "from . import os\n" + OS("os"), cpython=False),
    A("relative_import_parent", "from .. import executors\nprint(executors)", cpython=False),
    A("import_codecs_open", "import codecs\ncodecs.open(MARKER, 'w').write('x')"),
    A("import_pathlib", "import pathlib\npathlib.Path(MARKER).write_text('x')"),
    A("import_shutil", "import shutil\nshutil.copyfile(SECRET_FILE, MARKER)"),
    A("import_pickle", "import pickle\npickle.loads(b'cos\\nsystem\\n(S' + repr('touch ' + MARKER).encode() + b'\\ntR.')"),
    A("import_inspect_frame", "import inspect\n" + FRAME("inspect.currentframe()")),
    A("import_traceback_stack", "import traceback\ndef f():\n    return [fr for fr, n in traceback.walk_stack(None)][-1]\n" + FRAME("f()")),
    A("import_gc_objects", "import gc\nfor o in gc.get_objects():\n    if type(o).__name__ == 'module' and getattr(o, '__name__', '') == 'os':\n        os_mod = o\n" + OS("os_mod")),
    A("import_re_private_submodule", "import re._compiler as c\n" + BUILTINS("c.__builtins__")),
    A("from_re_import_private", "from re import _compiler\n" + BUILTINS("_compiler.__builtins__")),
    A("from_collections_import_sys", "from collections import _sys\n" + SYS("_sys")),
    A("import_json_decoder_submodule", "import json.decoder\n" + SYS("json.decoder.re.enum.sys")),
    A("from_json_import_decoder", "from json import decoder\n" + SYS("decoder.re.enum.sys")),
    A("from_uuid_import_os", "from uuid import os\n" + OS("os")),
    A("star_import_uuid_pivot", "from uuid import *\n" + OS("os")),
    A("star_import_math_self_loader", "from math import *\n" + READ("floor.__self__.__loader__.get_data")),
    # ---------------------------------------------------------------- module attribute pivots
    A("random_os", "import random\n" + OS("random._os")),
    A("random_os_getattr", "import random\n" + OS("getattr(random, '_' + 'os')")),
    A("re_enum_sys", "import re\n" + SYS("re.enum.sys")),
    A("re_copyreg_builtins", "import re\n" + BUILTINS("re.copyreg.__builtins__")),
    A("json_decoder_re", "import json\n" + SYS("json.decoder.re.enum.sys")),
    A("json_class_init_globals", "import json\n" + SYS("json.JSONEncoder.__init__.__globals__['re'].enum.sys")),
    A("collections_sys", "import collections\n" + SYS("collections._sys")),
    A("collections_abc_private_sys", "import collections.abc\n" + SYS("collections._collections_abc.sys")),
    A("typing_sys", "import typing\n" + SYS("typing.sys")),
    A("dataclasses_sys", "import dataclasses\n" + SYS("dataclasses.sys")),
    A("dataclasses_builtins", "import dataclasses\n" + BUILTINS("dataclasses.builtins")),
    A("enum_builtins", "import enum\n" + BUILTINS("enum.bltns")),
    A("statistics_sys", "import statistics\n" + SYS("statistics.sys")),
    A("datetime_sys", "import datetime\n" + SYS("datetime.sys")),
    A("calendar_sys", "import calendar\n" + SYS("calendar.sys")),
    A("fractions_sys", "import fractions\n" + SYS("fractions.sys")),
    A("textwrap_re_pivot", "import textwrap\n" + SYS("textwrap.re.enum.sys")),
    A("csv_re_pivot", "import csv\n" + SYS("csv.re.enum.sys")),
    A("pprint_sys", "import pprint\n" + SYS("pprint._sys")),
    A("string_re_pivot", "import string\n" + SYS("string._re.enum.sys")),
    A("uuid_os", "import uuid\n" + OS("uuid.os")),
    A("uuid_platform_os", "import uuid\n" + OS("uuid.platform.os")),
    A("zoneinfo_tzpath_os", "import zoneinfo\n" + OS("zoneinfo._tzpath.os")),
    A("io_abc_builtins", "import io\n" + BUILTINS("io.abc.__builtins__")),
    A("io_open", "import io\nio.open(MARKER, 'w').write('x')"),
    A("io_fileio", "import io\nio.FileIO(MARKER, 'w').write(b'x')"),
    A("from_io_import_open", "from io import open as o\no(MARKER, 'w').write('x')"),
    A("io_open_code_read", "import io\nprint(io.open_code(SECRET_FILE).read())"),
    A("module_dict", "import random\n" + OS("random.__dict__['_os']")),
    A("module_vars", "import random\n" + OS("vars(random)['_os']")),
    A("module_builtins", "import random\n" + BUILTINS("random.__builtins__")),
    A("module_loader_get_data", "import random\n" + READ("random.__loader__.get_data")),
    A("module_spec_loader", "import random\n" + READ("random.__spec__.loader.get_data")),
    A("module_dir_getattr_walk", textwrap.dedent("""
        import uuid
        for n in dir(uuid):
            v = getattr(uuid, n)
            if type(v).__name__ == 'module' and hasattr(v, 'system'):
                v.system('touch ' + MARKER)
                print(v.environ.get(ENV))
                break
        else:
            raise LookupError('no module with system() found')
        """)),
    A("attributeerror_obj_module", "import re\ntry:\n    re.no_such_name\nexcept AttributeError as e:\n    m = e.obj\n" + SYS("m.enum.sys")),
    # ---------------------------------------------------------------- builtins
    A("builtins_name", BUILTINS("__builtins__")),
    A("print_self", BUILTINS("print.__self__")),
    A("len_self", BUILTINS("len.__self__")),
    A("getattr_self_computed", BUILTINS("getattr(len, '__se' + 'lf__')")),
    A("open_write", "open(MARKER, 'w').write('x')"),
    A("open_read_secret", "print(open(SECRET_FILE).read())"),
    A("eval_call", "eval(\"__import__('os').system('touch ' + MARKER)\")"),
    A("exec_call", "exec(\"import os\\nos.system('touch ' + MARKER)\")"),
    A("compile_functiontype", "c = compile(\"import os\\nos.system('touch ' + MARKER)\", 's', 'exec')\nfn = type(lambda: 0)(c, {'MARKER': MARKER})\nfn()"),
    A("globals_builtins", BUILTINS("globals()['__builtins__']")),
    A("locals_builtins", BUILTINS("locals()['__builtins__']")),
    A("vars_builtins", BUILTINS("vars()['__builtins__']")),
    A("dir_getattr_tool_walk", "for n in dir(add):\n    v = getattr(add, n)\n    if n == '__globals__':\n        print(v['HOST_SECRET'])\n        break\nelse:\n    raise LookupError('no __globals__ found')"),
    A("breakpoint_call", "breakpoint()", cpython=False),
    A("help_call", "help('os')", cpython=False),
    A("input_call", "input()", cpython=False),
    A("exit_call", "exit()", cpython=False),
    A("quit_call", "quit()", cpython=False),
    A("raise_systemexit", "raise SystemExit(0)", cpython=False),
    A("raise_keyboardinterrupt", "raise KeyboardInterrupt", cpython=False),
    A("raise_generatorexit", "raise GeneratorExit", cpython=False),
    # ---------------------------------------------------------------- dunder walks, computed names
    A("object_subclasses", SUBCLASSES("object.__subclasses__()")),
    A("type_subclasses", SUBCLASSES("type.__subclasses__(object)")),
    A("tuple_class_base_walk", SUBCLASSES("().__class__.__base__.__subclasses__()")),
    A("list_mro_walk", SUBCLASSES("[].__class__.__mro__[-1].__subclasses__()")),
    A("str_bases_walk", SUBCLASSES("''.__class__.__bases__[0].__subclasses__()")),
    A("public_mro_then_getattr", SUBCLASSES("getattr(int.mro()[-1], '__subclasses__')()")),
    A("getattr_concat_name", SUBCLASSES("getattr(object, '__sub' + 'classes__')()")),
    A("getattr_join_name", SUBCLASSES("getattr(object, ''.join(['_', '_', 'subclasses', '_', '_']))()")),
    A("getattr_chr_name", SUBCLASSES("getattr(object, chr(95) * 2 + 'subclasses' + chr(95) * 2)()")),
    A("getattr_bytes_name", SUBCLASSES("getattr(object, bytes([95, 95]).decode() + 'subclasses' + bytes([95, 95]).decode())()")),
    A("getattr_hex_escape_name", SUBCLASSES("getattr(object, '\\x5f\\x5fsubclasses\\x5f\\x5f')()")),
    A("getattr_unicode_escape_name", SUBCLASSES("getattr(object, '\\u005f\\u005fsubclasses\\N{LOW LINE}\\N{LOW LINE}')()")),
    A("getattr_reversed_name", SUBCLASSES("getattr(object, '__sessalcbus__'[::-1])()")),
    A("getattr_lower_name", SUBCLASSES("getattr(object, '__SUBCLASSES__'.lower())()")),
    A("getattr_default_arg", SUBCLASSES("getattr(object, '__subclasses__', None)()")),
    A("getattr_str_subclass_stateful_hash", textwrap.dedent("""
        class S(str):
            decoys = 0
            def startswith(self, prefix, *a):
                return prefix == '_'
            def __hash__(self):
                if S.decoys > 0:
                    S.decoys -= 1
                    return hash('_asdict')
                return hash(str(self))
            def __eq__(self, other):
                return True
        for decoys in (1, 0):
            S.decoys = decoys
            try:
                g = getattr(add, S('__globals__'))
                break
            except AttributeError:
                pass
        """) + OS("g['os']")),
    A("getattr_alias", "ga = getattr\nprint(ga(add, '__globals__')['HOST_SECRET'])"),
    A("getattr_via_map", "print(list(map(getattr, [add], ['__globals__']))[0]['HOST_SECRET'])"),
    A("getattr_via_reduce", "import functools\nprint(functools.reduce(getattr, ['__globals__'], add)['HOST_SECRET'])"),
    A("getattr_via_partial", "import functools\nga = functools.partial(getattr, add)\nprint(ga('__glo' + 'bals__')['HOST_SECRET'])"),
    A("getattr_str_subclass_name", STR_SUBCLASS_NAME),
    A("hasattr_then_getattr", "if hasattr(add, '__globals__'):\n    print(getattr(add, '__globals__')['HOST_SECRET'])"),
    A("object_getattribute", "print(object.__getattribute__(add, '__globals__')['HOST_SECRET'])"),
    A("type_getattribute", "print(type.__getattribute__(type(search), '__init__').__globals__['HOST_SECRET'])"),
    A("match_class_pattern_dunder", "match add:\n    case object(__globals__=g):\n        print(g['HOST_SECRET'])"),
    A("match_class_pattern_subclasses", "match object:\n    case type(__subclasses__=sc):\n" + textwrap.indent(SUBCLASSES("sc()"), "        ")),
    A("match_args_metaclass_instancecheck", textwrap.dedent("""
        Meta = type('Meta', (type,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta('M', (), {'__match_args__': ('__globals__',)})
        match add:
            case M(g):
                o = g['os']
        """) + OS("o")),
    A("match_args_metaclass_generator_frame", textwrap.dedent("""
        Meta = type('Meta', (type,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta('M', (), {'__match_args__': ('gi_frame',)})
        def g():
            match x:
                case M(fr):
                    pass
            while fr.f_back is not None:
                fr = fr.f_back
            yield fr.f_builtins
        x = g()
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("match_args_dataclass_abc_register", textwrap.dedent("""
        import dataclasses, collections.abc
        @dataclasses.dataclass
        class GF(collections.abc.Hashable):
            gi_frame: int
        @dataclasses.dataclass
        class FB(collections.abc.Hashable):
            f_back: int
            f_builtins: int
        def gen():
            match x:
                case GF(fr):
                    pass
            FB.register(type(fr))
            bl = None
            while fr is not None:
                match fr:
                    case FB(back, b):
                        bl = b
                        fr = back
            yield bl
        x = gen()
        GF.register(type(x))
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("match_args_namedtuple_abc_register", textwrap.dedent("""
        import collections, collections.abc
        class GF(collections.namedtuple('B', 'gi_frame'), collections.abc.Hashable):
            pass
        class FB(collections.namedtuple('C', 'f_back f_builtins'), collections.abc.Hashable):
            pass
        def gen():
            match x:
                case GF(fr):
                    pass
            FB.register(type(fr))
            bl = None
            while fr is not None:
                match fr:
                    case FB(back, b):
                        bl = b
                        fr = back
            yield bl
        x = gen()
        GF.register(type(x))
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("enum_global_enum_overwrites_guard", textwrap.dedent("""
        import enum
        class Passthrough:
            def __init__(self, *args):
                pass
            def __call__(self, name, *args, **kwargs):
                return name
        E = enum.Enum('E', {'check_attr_name': 1}, module='executors.restricted.guards.operations', type=Passthrough)
        enum.global_enum(E)
        """) + OS("getattr(add, '__globals__')['os']"), cpython=False),
    A("enum_global_enum_overwrites_builtins", textwrap.dedent("""
        import enum
        E = enum.Enum('E', {'ZeroDivisionError': 1}, module='builtins')
        enum.global_enum(E)
        """), cpython=False),
    A("real_type_via_typing_get_origin", textwrap.dedent("""
        import typing
        T = typing.get_origin(typing.Type[int])
        Meta = T('Meta', (T,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta('M', (), {'__match_args__': ('__globals__',)})
        match add:
            case M(g):
                o = g['os']
        """) + OS("o")),
    A("metaclass_via_typing_type_base", textwrap.dedent("""
        import typing
        class Meta(typing.Type[int]):
            pass
        Meta2 = Meta('Meta2', (Meta,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta2('M', (), {'__match_args__': ('__globals__',)})
        match add:
            case M(g):
                o = g['os']
        """) + OS("o")),
    A("real_type_via_metaclass_mro", textwrap.dedent("""
        import enum
        T = enum.EnumType.mro(enum.EnumType)[1]
        Meta = T('Meta', (T,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta('M', (), {'__match_args__': ('__globals__',)})
        match add:
            case M(g):
                o = g['os']
        """) + OS("o")),
    A("metaclass_from_numbers_abcmeta", textwrap.dedent("""
        import numbers
        Meta = numbers.ABCMeta('Meta', (numbers.ABCMeta,), {'__instancecheck__': lambda cls, obj: True})
        M = Meta('M', (), {'__match_args__': ('__globals__',)})
        match add:
            case M(g):
                o = g['os']
        """) + OS("o")),
    A("abc_register_unbound", textwrap.dedent("""
        import collections, collections.abc, numbers
        class GF(collections.namedtuple('B', 'gi_frame'), collections.abc.Hashable):
            pass
        def gen():
            match x:
                case GF(fr):
                    pass
            yield fr.f_builtins
        x = gen()
        numbers.ABCMeta.register(GF, type(x))
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("match_args_register_via_generic_alias", textwrap.dedent("""
        import typing, collections, collections.abc
        T = typing.TypeVar('T')
        class GF(collections.namedtuple('B', 'gi_frame'), collections.abc.Hashable, typing.Generic[T]):
            pass
        class FB(collections.namedtuple('C', 'f_back f_builtins'), collections.abc.Hashable, typing.Generic[T]):
            pass
        def gen():
            match x:
                case GF(fr):
                    pass
            FB[int].register(type(fr))
            bl = None
            while fr is not None:
                match fr:
                    case FB(back, b):
                        bl = b
                        fr = back
            yield bl
        x = gen()
        GF[int].register(type(x))
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("update_wrapper_merges_tool_globals", "import functools\ndef mine():\n    pass\nfunctools.update_wrapper(mine, add, assigned=(), updated=('__globals__',))\n" + OS("os")),
    A("wraps_merges_tool_globals", "import functools\n@functools.wraps(shout, assigned=(), updated=('__globals__',))\ndef mine():\n    pass\n" + OS("os")),
    A("update_wrapper_assigned_then_enum_match_args", textwrap.dedent("""
        import enum, functools
        E = enum.Enum('E', [('A', 1), ('__match_args__', ('__globals__',))])
        functools.update_wrapper(E.A, add, assigned=('__globals__',), updated=())
        match E.A:
            case E(g):
                o = g['os']
        """) + OS("o")),
    A("update_wrapper_copies_private_attribute", "import functools\nclass Box:\n    pass\nb = Box()\nfunctools.update_wrapper(b, lookup, assigned=('__closure__',), updated=())\nmatch b:\n    case object(cells=c):\n        pass\nprint(functools.reduce(lambda acc, cell: acc + [cell.cell_contents], getattr(b, '__clo' + 'sure__'), []))"),
    A("match_keyword_pattern_reads_register", textwrap.dedent("""
        import collections, collections.abc
        class GF(collections.namedtuple('B', 'gi_frame'), collections.abc.Hashable):
            pass
        class FB(collections.namedtuple('C', 'f_back f_builtins'), collections.abc.Hashable):
            pass
        match GF:
            case object(register=reg_gf):
                pass
        match FB:
            case object(register=reg_fb):
                pass
        def gen():
            match x:
                case GF(fr):
                    pass
            reg_fb(type(fr))
            bl = None
            while fr is not None:
                match fr:
                    case FB(back, b):
                        bl = b
                        fr = back
            yield bl
        x = gen()
        reg_gf(type(x))
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("setattr_dunder_del", "class A:\n    pass\nsetattr(A, '__del__', lambda self: None)", cpython=False),
    A("function_globals_builtins", "def f():\n    pass\n" + BUILTINS("f.__globals__['__builtins__']")),
    A("lambda_code_functiontype", "c = (lambda: open(MARKER, 'w').write('x')).__code__\nfn = type(lambda: 0)(c, {'MARKER': MARKER})\nfn()"),
    # ---------------------------------------------------------------- str.format and friends
    A("format_tool_globals", FMT("T.format(O)")),
    A("format_auto_field", FMT("T.format(O)", field="")),
    A("format_keyword_field", FMT("T.format(a=O)", field="a")),
    A("format_index_then_attr", FMT("T.format([O])", field="0[0]")),
    A("format_map_field", FMT("T.format_map({'t': O})", field="t")),
    A("format_nested_spec_field", "print('{0:{1.__globals__[HOST_SECRET]}}'.format('x', add))"),
    A("format_unbound_str_format", FMT("str.format(T, O)")),
    A("format_bound_method_ref", FMT("(lambda f: f(O))(T.format)")),
    A("format_via_map", FMT("list(map(T.format, [O]))")),
    A("format_str_subclass", "class S(str):\n    pass\n" + FMT("S(T).format(O)")),
    A("format_str_subclass_lies", "class S(str):\n    def __str__(self):\n        return '{0}'\n    def __iter__(self):\n        return iter('{0}')\n    def replace(self, *a):\n        return '{0}'\n    def split(self, *a):\n        return ['{0}']\n" + FMT("S(T).format(O)")),
    A("format_class_walk_builtins", "print('{0.__class__.__init__.__globals__[__builtins__][open]}'.format(search))"),
    A("format_gen_frame_builtins", "def g():\n    yield 1\nx = g()\nprint('{0.gi_frame.f_builtins[open]}'.format(x))"),
    A("format_traceback_frame", "try:\n    1 / 0\nexcept Exception as e:\n    print('{0.__traceback__.tb_frame.f_back.f_builtins[open]}'.format(e))"),
    A("format_closure_cell", "print('{0.__closure__[0].cell_contents}'.format(lookup))"),
    A("fstring_dunder", "print(f\"{add.__globals__['HOST_SECRET']}\")"),
    A("format_via_super", "class S(str):\n    def go(self, *a):\n        return super().format(*a)\n" + FMT("S(T).go(O)")),
    A("format_map_via_super", "class S(str):\n    def go(self, m):\n        return super().format_map(m)\n" + FMT("S(T).go({'t': O})", field="t")),
    A("format_via_explicit_super", "class S(str):\n    pass\n" + FMT("super(S, S(T)).format(O)")),
    A("format_map_unbound", FMT("str.format_map(T, {'t': O})", field="t")),
    A("getattr_format_method", FMT("getattr(T, 'form' + 'at')(O)")),
    A("getattr_str_format_unbound", FMT("getattr(str, 'format')(T, O)")),
    A("format_method_in_class_body", "class K:\n    fmt = str.format\n" + FMT("K.fmt(T, O)")),
    A("format_via_match_keyword_pattern", FMT("f(O)", pre="match T:\n    case object(format=f):\n        pass")),
    A("string_formatter_vformat", "import string\n" + FMT("string.Formatter().vformat(T, [O], {})")),
    A("string_formatter_get_field", "import string\nprint(string.Formatter().get_field('0.__globals__', [add], {})[0]['HOST_SECRET'])"),
    A("operator_attrgetter", "import operator\nprint(operator.attrgetter('__globals__')(add)['HOST_SECRET'])"),
    A("attrgetter_str_subclass_name", "import operator\nclass S(str):\n    def split(self, *a):\n        return ['real']\n    def startswith(self, *a):\n        return False\n    def __iter__(self):\n        return iter('real')\n" + OS("operator.attrgetter(S('__globals__'))(add)['os']")),
    A("methodcaller_str_subclass_name", "import operator\nclass S(str):\n    def split(self, *a):\n        return ['real']\n    def startswith(self, *a):\n        return False\n" + FMT("operator.methodcaller(S('format'), O)(T)")),
    A("operator_methodcaller", "import operator\nprint(operator.methodcaller('__getattribute__', '__globals__')(add)['HOST_SECRET'])"),
    A("singledispatch_string_annotation", SINGLEDISPATCH),
    A("typing_get_type_hints", TYPE_HINTS),
    A("singledispatch_annotation_from_variable", SINGLEDISPATCH_VARIABLE),
    # ---------------------------------------------------------------- frames
    A("generator_frame_walk", WALK_TO_BUILTINS_IN_GEN + OS("b['__import__']('os')")),
    A("generator_frame_getattr", WALK_TO_BUILTINS_IN_GEN.replace("x.gi_frame", "getattr(x, 'gi' + '_frame')") + OS("b['__import__']('os')")),
    A("generator_frame_match", textwrap.dedent("""
        def g():
            match x:
                case object(gi_frame=fr):
                    pass
            while fr.f_back is not None:
                fr = fr.f_back
            yield fr.f_builtins
        x = g()
        b = next(x)
        """) + OS("b['__import__']('os')")),
    A("generator_code_replace", "def g():\n    yield 1\nc = g().gi_code\nfn = type(lambda: 0)(c.replace(co_consts=(None,)), {})\nprint(fn)", cpython=False),
    A("coroutine_frame", textwrap.dedent("""
        async def c():
            fr = x.cr_frame
            while fr.f_back is not None:
                fr = fr.f_back
            return fr.f_builtins
        x = c()
        try:
            x.send(None)
        except StopIteration as e:
            b = e.value
        """) + OS("b['__import__']('os')")),
    A("async_generator_frame", textwrap.dedent("""
        async def a():
            fr = x.ag_frame
            while fr.f_back is not None:
                fr = fr.f_back
            yield fr.f_builtins
        x = a()
        try:
            x.asend(None).send(None)
        except StopIteration as e:
            b = e.value
        """) + OS("b['__import__']('os')")),
    A("traceback_frame", "try:\n    1 / 0\nexcept Exception as e:\n" + FRAME("e.__traceback__.tb_frame", "    ")),
    A("traceback_getattr_computed", "try:\n    1 / 0\nexcept Exception as e:\n" + FRAME("getattr(getattr(e, '__trace' + 'back__'), 'tb_' + 'frame')", "    ")),
    A("traceback_match", "try:\n    1 / 0\nexcept Exception as e:\n    match e:\n        case Exception(__traceback__=tb):\n" + FRAME("tb.tb_frame", "            ")),
    A("tool_error_traceback_frame", "try:\n    add(1)\nexcept Exception as e:\n" + FRAME("e.__traceback__.tb_frame", "    ")),
    A("sys_exc_info_frame", "import sys\ntry:\n    1 / 0\nexcept Exception:\n" + FRAME("sys.exc_info()[2].tb_frame", "    ")),
    A("host_generator_frame", "import difflib\ng = difflib.ndiff(['a'], ['b'])\nnext(g)\n" + OS("g.gi_frame.f_builtins['__import__']('os')")),
    # ---------------------------------------------------------------- tool internals
    A("tool_globals", OS("add.__globals__['os']")),
    A("tool_globals_getattr", OS("getattr(add, '__glo' + 'bals__')['os']")),
    A("tool_closure_cell", "print(lookup.__closure__[0].cell_contents)"),
    A("tool_closure_getattr", "print(getattr(lookup, '__clo' + 'sure__')[0].cell_contents)"),
    A("tool_partial_func", "print(scale.func.__globals__['HOST_SECRET'])"),
    A("tool_partial_reduce", "print(scale.__reduce__()[1][0].__globals__['HOST_SECRET'])"),
    A("tool_wrapped", "print(shout.__wrapped__.__globals__['HOST_SECRET'])"),
    A("tool_public_attribute", "print(search.api_key)"),
    A("tool_public_attribute_getattr", "print(getattr(search, 'api' + '_key'))"),
    A("tool_vars", "print(vars(search))"),
    A("tool_dict", "print(search.__dict__)"),
    A("tool_class_init_globals", "print(search.__class__.__init__.__globals__['HOST_SECRET'])"),
    A("tool_bound_call_self", "print(search.__call__.__self__.api_key)"),
    A("tool_format_public_attribute", "print('{0.api_key}'.format(search))"),
    A("tool_match_public_attribute", "match search:\n    case object(api_key=k):\n        print(k)\n    case _:\n        raise LookupError('no api_key')"),
    A("tool_attrgetter_public", "import operator\nprint(operator.attrgetter('api_key')(search))"),
    A("tool_attributeerror_obj", "try:\n    search.no_such_attribute\nexcept AttributeError as e:\n    print(e.obj.api_key)", cpython=False),
    A("tool_inspect_closurevars", "import inspect\nprint(inspect.getclosurevars(lookup))"),
    # ---------------------------------------------------------------- hooks run by the host later
    A("del_method", "class A:\n    def __del__(self):\n        pass\na = A()", cpython=False),
    A("del_assigned_in_class_body", "class A:\n    __del__ = lambda self: None\na = A()", cpython=False),
    A("init_subclass", "class A:\n    def __init_subclass__(cls):\n        pass", cpython=False),
    A("set_name", "class D:\n    def __set_name__(self, owner, name):\n        pass", cpython=False),
    A("class_getitem", "class A:\n    def __class_getitem__(cls, item):\n        return item", cpython=False),
    A("metaclass_type_subclass", "class M(type):\n    pass\nclass A(metaclass=M):\n    pass", cpython=False),
    A("metaclass_function", "def m(name, bases, ns):\n    return ns\nclass A(metaclass=m):\n    pass", cpython=False),
    A("type_three_args", "X = type('X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_three_args_alias", "t = type\nX = t('X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_of_type_three_args", "t = type(type)\nX = t('X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_dunder_call_three_args", "X = type.__call__(type, 'X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_of_instance_three_args", "X = type(int)('X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_subclass_called_three_args", "class M(type):\n    pass\nX = M('X', (), {'__del__': lambda self: None})", cpython=False),
    A("type_three_args_in_list", "X = [type][0]('X', (), {'__init_subclass__': classmethod(lambda c: None)})", cpython=False),
    A("enum_functional_api_defines_dunders", "import enum\nE = enum.Enum('E', [('A', 1), ('__del__', lambda self: None), ('__reduce_ex__', lambda self, p: (print, ('x',)))])", cpython=False),
    A("namedtuple_class_namespace_dunder", "import typing\nT = typing.NamedTuple('T', [('a', int)])\nclass U(T):\n    pass\nimport enum\nF = enum.IntEnum('F', {'__init_subclass__': classmethod(lambda cls: None), 'X': 1})", cpython=False),
    A("metaclass_via_typing_type_base_three_args", "import typing\nclass Meta(typing.Type[int]):\n    pass\nX = Meta('X', (), {'__del__': lambda self: None})", cpython=False),
    A("real_enum_via_mro_functional_api", "import enum\nRealEnum = enum.Enum.mro()[1]\nE = RealEnum('E', [('A', 1), ('__del__', lambda self: None)])", cpython=False),
    A("enum_names_toctou", "import enum\nclass Names:\n    def __init__(self):\n        self.n = 0\n    def __iter__(self):\n        self.n += 1\n        if self.n == 1:\n            return iter([('A', 1)])\n        return iter([('A', 1), ('__del__', lambda self: None)])\nE = enum.Enum('E', Names())", cpython=False),
    A("reduce_builds_class", "import copy\nclass A:\n    def __reduce__(self):\n        return (type, ('X', (), {'__del__': print}))\nX = copy.copy(A())", cpython=False),
    # ---------------------------------------------------------------- host-state tampering
    # (writes into host containers are in TAMPERING below: isolating them is as good as refusing)
    A("overwrite_tool_assign", "add = lambda a, b: 0", cpython=False),
    A("overwrite_tool_def", "def add(a, b):\n    return 0", cpython=False),
    A("overwrite_tool_import_as", "import math as add", cpython=False),
    A("overwrite_tool_for_target", "for add in range(2):\n    pass", cpython=False),
    A("overwrite_tool_walrus", "(add := 1)", cpython=False),
    A("overwrite_tool_class", "class search:\n    pass", cpython=False),
    A("overwrite_tool_global_in_function", "def f():\n    global add\n    add = 0\nf()", cpython=False),
    A("overwrite_tool_except_as", "try:\n    1 / 0\nexcept Exception as add:\n    pass", cpython=False),
    A("delete_tool", "del add", cpython=False),
    A("overwrite_final_answer", "final_answer = 5", cpython=False),
    A("delete_final_answer", "del final_answer", cpython=False),
    A("module_attribute_write", "import math\nmath.pi = 3", cpython=False),
    A("module_function_replace", "import json\njson.dumps = lambda *a, **k: 'pwned'", cpython=False),
    A("module_setattr", "import math\nsetattr(math, 'pi', 3)", cpython=False),
    A("module_delattr", "import math\ndel math.pi", cpython=False),
    A("module_augassign", "import math\nmath.pi += 1", cpython=False),
    A("host_class_method_replace", "import collections\ncollections.Counter.most_common = lambda self, n=None: 'pwned'", cpython=False),
    A("host_class_attr_jsonencoder", "import json\njson.JSONEncoder.default = lambda self, o: 'pwned'", cpython=False),
    A("host_class_attr_template", "import string\nstring.Template.delimiter = '%'", cpython=False),
    A("host_class_attr_csv_dialect", "import csv\ncsv.excel.delimiter = ';'", cpython=False),
    A("host_object_decimal_defaultcontext", "import decimal\ndecimal.DefaultContext.prec = 3", cpython=False),
    A("time_clock_settime", "import time\ntime.clock_settime(time.CLOCK_REALTIME, time.clock_gettime(time.CLOCK_REALTIME))", cpython=False),
    A("host_class_attr_delete", "import collections\ndel collections.Counter.most_common", cpython=False),
    # ---------------------------------------------------------------- encoding tricks
    A("fullwidth_eval", "ｅｖａｌ(\"__import__('os').system('touch ' + MARKER)\")"),
    A("fullwidth_dunder_import", OS("_＿import＿＿('os')")),
    A("fullwidth_open", "ｏｐｅｎ(MARKER, 'w').write('x')"),
    A("fullwidth_attribute", "print(add._＿globals＿＿['HOST_SECRET'])"),
    A("fullwidth_builtins_name", BUILTINS("_＿builtins＿＿")),
    A("math_bold_eval", "𝐞𝐯𝐚𝐥(\"__import__('os').system('touch ' + MARKER)\")"),
    A("fullwidth_getattr_string", "print(getattr(add, '＿＿globals＿＿')['HOST_SECRET'])", cpython=False),
    A("utf7_coding_cookie", "# -*- coding: utf-7 -*-\n+AF8AXw-import+AF8AXw-('os').system('touch ' + MARKER)", cpython=False),
]
ATTEMPTS = open_here(ATTEMPTS)  # (the routes this CPython closed itself: cpython_routes.py)

# Harmless neighbours of the attacks: must keep working (code, expected output value).
ALLOWED: list[tuple[str, str, Any]] = [
    # the model's own variable named like a missing builtin (scipy's docs: `input = np.zeros(..)`)
    ("own_variable_input", "input = [1, 2]\ndef f(input):\n    return input\nf(input)", [1, 2]),
    ("class_name", "(3).__class__.__name__", "int"),
    ("type_name", "type([]).__name__", "list"),
    ("getattr_public", "getattr(3, 'real')", 3),
    ("hasattr_public", "hasattr([], 'append')", True),
    ("format_public_attr", "'{0.real}|{0.imag}'.format(3)", "3|0"),
    ("format_index", "'{0[1]}-{k[a]}'.format([1, 2], k={'a': 'b'})", "2-b"),
    ("format_map_plain", "'{x}'.format_map({'x': 5})", "5"),
    ("fstring_conversions", "f'{\"a\"!r}{1:>3}'", "'a'  1"),
    ("import_collections_abc", "import collections.abc\nisinstance({}, collections.abc.Mapping)", True),
    ("from_collections_abc", "from collections.abc import Mapping\nissubclass(dict, Mapping)", True),
    ("user_init_repr", "class P:\n    def __init__(self, x):\n        self.x = x\n    def __repr__(self):\n        return f'P({self.x})'\nrepr(P(2))", "P(2)"),
    ("user_class_dunder_name", "class P:\n    pass\nP.__name__ + P().__class__.__name__", "PP"),
    ("doc_attribute", "def f():\n    'doc'\nf.__doc__", "doc"),
    ("exception_args", "try:\n    raise ValueError('x', 1)\nexcept ValueError as e:\n    r = e.args\nr", ("x", 1)),
    ("generator_send", "def g():\n    x = yield 1\n    yield x * 2\nit = g()\nnext(it)\nit.send(21)", 42),
    ("tool_call", "add(2, 3) + scale(4) + len(lookup('k'))", 5 + 8 + len("value-of-k")),
    ("tool_object_call", "search('q')", ["result for q"]),
    ("shadow_builtin_locally", "def f(print):\n    return print\nf(3)", 3),
    ("match_public_attr", "class P:\n    def __init__(self, x):\n        self.x = x\nmatch P(4):\n    case P(x=v):\n        r = v\nr", 4),
    ("functools_partial_own", "import functools\ndef f(a, b):\n    return a - b\nfunctools.partial(f, 10)(3)", 7),
    ("operator_itemgetter", "import operator\nsorted([(2, 'b'), (1, 'a')], key=operator.itemgetter(0))[0]", (1, "a")),
    ("io_stringio", "import io\nb = io.StringIO()\nb.write('hi')\nb.getvalue()", "hi"),
    ("time_sleep_short", "import time\ntime.sleep(0.01)\n1", 1),
]


# ----------------------------------------------------------------------------- helpers
def _prefix(marker: Path, secret_file: Path) -> str:
    return f"MARKER = {str(marker)!r}\nENV = {CANARY_ENV!r}\nSECRET_FILE = {str(secret_file)!r}\n"


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    p = tmp_path / "secret.txt"
    p.write_text(CANARY)
    return p


def _leak_signs(text: str) -> list[str]:
    return [s for s in LEAK_SIGNS if s in text]


# ----------------------------------------------------------------------------- the suite
def test_table_is_large_and_distinct():
    ids = [a.id for a in ATTEMPTS]
    assert len(ids) == len(set(ids)), "duplicate attempt ids"
    assert len({a.code for a in ATTEMPTS}) == len(ATTEMPTS), "duplicate attempt code"
    assert len(ATTEMPTS) >= 60


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=lambda a: a.id)
def test_attempt_is_refused(attempt: Attempt, local_executor, marker: Path, secret_file: Path):
    result = local_executor.execute(_prefix(marker, secret_file) + attempt.code)
    assert_refused(result, marker)
    signs = _leak_signs((result.logs or "") + (result.output_repr or ""))
    assert not signs, f"ESCAPE: host objects visible to the model: {signs} in {result.logs[:800]!r}"
    # The attempt did not break or poison the executor: tools and final_answer still work.
    after = local_executor.execute("add(1, 2)")
    assert_ok(after)
    assert after.output == 3
    final = local_executor.execute("final_answer('done')")
    assert final.is_final_answer and final.output == "done", final


# The worker, with and without its kernel layer, holds the same corpus (issue 29): without
# Landlock, the nobody user and the empty network namespace, the policy and the guard alone must.
WORKER_MODES = {"subprocess": {}, "subprocess-noharden": {"harden": False,
                                                             "unconfined_native": True}}


@pytest.fixture(scope="module", params=list(WORKER_MODES))
def worker(request: pytest.FixtureRequest) -> Any:
    from conftest import make_host_tools

    from executors import SubprocessExecutor

    ex = SubprocessExecutor(tools=make_host_tools(), limits=Limits(timeout_s=5),
                            **WORKER_MODES[request.param])
    try:
        yield ex
    finally:
        ex.close()


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=lambda a: a.id)
def test_attempt_is_refused_in_the_worker(attempt: Attempt, worker, marker: Path, secret_file: Path):
    worker.reset()
    result = worker.execute(_prefix(marker, secret_file) + attempt.code)
    assert_refused(result, marker)
    signs = _leak_signs((result.logs or "") + (result.output_repr or ""))
    assert not signs, f"ESCAPE: host objects visible to the model: {signs} in {result.logs[:800]!r}"
    after = worker.execute("add(1, 2)")
    assert_ok(after)
    assert after.output == 3


@pytest.mark.parametrize("code,expected", [(c, e) for _, c, e in ALLOWED], ids=[i for i, _, _ in ALLOWED])
def test_harmless_neighbours_still_work(code: str, expected: Any, local_executor):
    result = local_executor.execute(code)
    assert_ok(result)
    assert result.output == expected


# ----------------------------------------------------------------------------- keep the table honest
_PLAIN_RUNNER = r"""
import json, os, signal, sys
sys.path.insert(0, sys.argv[1])
import conftest
jobs = json.load(sys.stdin)
results = {}
for job in jobs:
    out_path = job["out"]
    pid = os.fork()
    if pid == 0:
        try:
            signal.alarm(10)
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdin = open(os.devnull)
            ns = {"__name__": "__sandbox__", **conftest.make_host_tools(), "final_answer": print}
            try:
                exec(compile(job["code"], "<snippet>", "exec"), ns)
            except BaseException as e:
                print("RAISED", type(e).__name__, e)
            sys.stdout.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
print("ok")
"""


@pytest.fixture(scope="module")
def plain_cpython_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str]]:
    """Run every cpython=True attempt without any sandbox (forked children of a fresh python)."""
    root = tmp_path_factory.mktemp("plain")
    jobs, where = [], {}
    for a in ATTEMPTS:
        if not a.cpython:
            continue
        d = root / a.id
        d.mkdir()
        secret = d / "secret.txt"
        secret.write_text(CANARY)
        marker = d / "marker"
        out = d / "out.txt"
        jobs.append({"code": _prefix(marker, secret) + a.code, "out": str(out)})
        where[a.id] = (marker, out)
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN_RUNNER, str(Path(__file__).parent)],
        input=json.dumps(jobs), capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONBREAKPOINT": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {}
    for aid, (marker, out) in where.items():
        text = out.read_text() if out.exists() else ""
        escaped = marker.exists() or CANARY in text or bool(_leak_signs(text))
        results[aid] = (escaped, text[-1500:])
    return results


@pytest.mark.parametrize("attempt", [a for a in ATTEMPTS if a.cpython], ids=lambda a: a.id)
def test_attempt_really_escapes_plain_cpython(attempt: Attempt, plain_cpython_runs):
    escaped, text = plain_cpython_runs[attempt.id]
    assert escaped, f"without a sandbox this attempt should escape, but it printed: {text!r}"


# ----------------------------------------------------------------------------- host invariants
def _host_state() -> dict[str, Any]:
    import builtins
    import calendar
    import collections
    import collections.abc
    import copy
    import csv
    import decimal
    import hashlib
    import json
    import locale
    import math
    import numbers
    import random
    import string
    import textwrap
    import typing
    import uuid
    import zoneinfo

    return {
        "math.pi": math.pi,
        "math.custom": getattr(math, "custom", None),
        "json.dumps": json.dumps,
        "json.dumps.attrs": sorted(vars(json.dumps)),
        "json.dumps.__name__": json.dumps.__name__,
        "Counter.__name__": collections.Counter.__name__,
        "Counter.__qualname__": collections.Counter.__qualname__,
        "Counter.__doc__": collections.Counter.__doc__,
        "Counter.__repr__": vars(collections.Counter).get("__repr__"),
        "Iterable.marker": getattr(collections.abc.Iterable, "marker", None),
        "TextWrapper.unicode_whitespace_trans": dict(textwrap.TextWrapper.unicode_whitespace_trans),
        "HTMLCalendar.cssclasses": list(calendar.HTMLCalendar.cssclasses),
        "typing.overload_registry_size": sum(len(v) for v in getattr(typing, "_overload_registry", {}).values()),
        "typing.overload_registry": {m: {q: dict(d) for q, d in v.items()}
                                     for m, v in getattr(typing, "_overload_registry", {}).items()},
        "JSONEncoder.__final__": getattr(json.JSONEncoder, "__final__", None),
        "Random.choice": getattr(random.Random, "choice", None),
        "Counter.most_common": getattr(collections.Counter, "most_common", None),
        "JSONEncoder.default": getattr(json.JSONEncoder, "default", None),
        "Template.delimiter": string.Template.delimiter,
        "csv.excel.delimiter": csv.excel.delimiter,
        "csv.dialects": sorted(csv.list_dialects()),
        "csv.excel_registered": csv.get_dialect("excel").delimiter,
        "csv.field_size_limit": csv.field_size_limit(),
        "copy.dispatch_table": dict(copy.dispatch_table),
        "calendar.mdays": list(calendar.mdays),
        "calendar.firstweekday": calendar.firstweekday(),
        "decimal.DefaultContext.prec": decimal.DefaultContext.prec,
        "decimal.getcontext.prec": decimal.getcontext().prec,
        "hashlib.algorithms_available": set(hashlib.algorithms_available),
        "typing.EXCLUDED_ATTRIBUTES": list(typing.EXCLUDED_ATTRIBUTES),
        "zoneinfo.TZPATH": zoneinfo.TZPATH,
        "uuid.NAMESPACE_DNS": str(uuid.NAMESPACE_DNS),
        "numbers.Number.subclass_str": issubclass(str, numbers.Number),
        "builtins.print": builtins.print,
        "builtins.len": builtins.len,
        "builtins.names": sorted(vars(builtins)),
        "__main__.names": sorted(vars(sys.modules["__main__"])),
        "locale.LC_TIME": locale.setlocale(locale.LC_TIME),
        "typing.T.__name__": typing.T.__name__,
    }


def _restore_host_state(s: dict[str, Any]) -> None:
    import calendar
    import collections
    import collections.abc
    import copy
    import csv
    import decimal
    import hashlib
    import json
    import locale
    import math
    import random
    import string
    import textwrap
    import typing
    import uuid
    import zoneinfo

    try:
        math.pi = s["math.pi"]
        json.dumps = s["json.dumps"]
        collections.Counter.most_common = s["Counter.most_common"]
        json.JSONEncoder.default = s["JSONEncoder.default"]
        string.Template.delimiter = s["Template.delimiter"]
        csv.excel.delimiter = s["csv.excel.delimiter"]
        csv.register_dialect("excel", csv.excel)
        csv.field_size_limit(s["csv.field_size_limit"])
        copy.dispatch_table.clear()
        copy.dispatch_table.update(s["copy.dispatch_table"])
        calendar.mdays[:] = s["calendar.mdays"]
        calendar.setfirstweekday(s["calendar.firstweekday"])
        decimal.DefaultContext.prec = s["decimal.DefaultContext.prec"]
        decimal.getcontext().prec = s["decimal.getcontext.prec"]
        hashlib.algorithms_available.update(s["hashlib.algorithms_available"])
        typing.EXCLUDED_ATTRIBUTES[:] = s["typing.EXCLUDED_ATTRIBUTES"]
        zoneinfo.reset_tzpath(s["zoneinfo.TZPATH"])
        random.Random.choice = s["Random.choice"]
        registry = getattr(typing, "_overload_registry", None)
        if registry is not None and not registry:
            for m, v in s["typing.overload_registry"].items():
                for q, d in v.items():
                    registry[m][q].update(d)
        textwrap.TextWrapper.unicode_whitespace_trans.clear()
        textwrap.TextWrapper.unicode_whitespace_trans.update(s["TextWrapper.unicode_whitespace_trans"])
        calendar.HTMLCalendar.cssclasses[:] = s["HTMLCalendar.cssclasses"]
        locale.setlocale(locale.LC_TIME, s["locale.LC_TIME"])
        typing.T.__init__(s["typing.T.__name__"])
        uuid.NAMESPACE_DNS.__init__(s["uuid.NAMESPACE_DNS"])
        collections.Counter.__name__ = s["Counter.__name__"]
        collections.Counter.__qualname__ = s["Counter.__qualname__"]
        collections.Counter.__doc__ = s["Counter.__doc__"]
        collections.Counter.__repr__ = s["Counter.__repr__"]
        json.dumps.__name__ = s["json.dumps.__name__"]
        for extra in set(vars(json.dumps)) - set(s["json.dumps.attrs"]):
            delattr(json.dumps, extra)
        if s["JSONEncoder.__final__"] is None and "__final__" in vars(json.JSONEncoder):
            del json.JSONEncoder.__final__
        if s["Iterable.marker"] is None and "marker" in vars(collections.abc.Iterable):
            del collections.abc.Iterable.marker
        if hasattr(math, "custom") and s["math.custom"] is None:
            del math.custom
    except Exception:  # best effort: restoring must not hide the real failure
        pass


def _watched_module_dicts() -> list[dict[str, Any]]:
    import builtins

    names = [n for n in list(sys.modules) if n == "executors" or n.startswith("executors.")]
    names += ["builtins", "__main__", "os", "json", "math", "conftest"]
    return [vars(sys.modules[n]) for n in names if n in sys.modules] + [vars(builtins)]


def _watched_classes() -> list[type]:
    found = []
    for name in [n for n in list(sys.modules) if n == "executors" or n.startswith("executors.")]:
        for value in list(vars(sys.modules[name]).values()):
            if isinstance(value, type) and getattr(value, "__module__", "").startswith("executors"):
                found.append(value)
    return found


@pytest.fixture(autouse=True)
def _keep_host_clean():
    """Undo what an escaped attempt changed, so one escape does not fail unrelated tests."""
    before = _host_state()
    dicts = [(d, dict(d)) for d in _watched_module_dicts()]
    classes = [(c, dict(vars(c))) for c in _watched_classes()]
    yield
    _restore_host_state(before)
    for c, saved in classes:  # e.g. the executor's own ModuleProxy patched from the sandbox
        current = dict(vars(c))
        for k, v in saved.items():
            if current.get(k, _MISSING_KEY) is not v:
                try:
                    setattr(c, k, v)
                except (AttributeError, TypeError):
                    pass
        for k in [k for k in current if k not in saved]:
            try:
                delattr(c, k)
            except (AttributeError, TypeError):
                pass
    for d, saved in dicts:  # model code rewriting module globals (e.g. enum.global_enum)
        for k, v in saved.items():
            if d.get(k, _MISSING_KEY) is not v:
                d[k] = v
        for k in [k for k in d if k not in saved]:
            del d[k]


_MISSING_KEY = object()


TAMPERING = [
    ("csv_register_dialect", "import csv\ncsv.register_dialect('excel', delimiter=';')"),
    ("csv_field_size_limit", "import csv\ncsv.field_size_limit(10)"),
    ("calendar_setfirstweekday", "import calendar\ncalendar.setfirstweekday(3)"),
    ("zoneinfo_reset_tzpath", "import zoneinfo\nzoneinfo.reset_tzpath(['/nonexistent'])"),
    ("decimal_thread_context", "import decimal\ndecimal.getcontext().prec = 5"),
    ("decimal_default_context", "import decimal\ndecimal.DefaultContext.prec = 3"),
    ("copy_dispatch_table", "import copy\ncopy.dispatch_table[complex] = lambda c: (print, ('pwned',))"),
    ("calendar_mdays", "import calendar\ncalendar.mdays[2] = 30"),
    ("hashlib_algorithms_set", "import hashlib\nhashlib.algorithms_available.clear()"),
    ("typing_excluded_list", "import typing\ntyping.EXCLUDED_ATTRIBUTES.append('x')"),
    ("module_attribute", "import math\nmath.pi = 3"),
    ("module_new_attribute", "import math\nmath.custom = 1"),
    ("module_function", "import json\njson.dumps = lambda *a, **k: 'pwned'"),
    ("host_class_method", "import collections\ncollections.Counter.most_common = lambda self, n=None: 'pwned'"),
    ("host_class_jsonencoder", "import json\njson.JSONEncoder.default = lambda self, o: 'pwned'"),
    ("host_class_template", "import string\nstring.Template.delimiter = '%'"),
    ("host_class_csv_excel", "import csv\ncsv.excel.delimiter = ';'"),
    ("decimal_context_reinit", "import decimal\ndecimal.DefaultContext.__init__(prec=3)"),
    ("decimal_thread_context_reinit", "import decimal\ndecimal.getcontext().__init__(prec=5)"),
    ("calendar_instance_reinit", "import calendar\ncalendar.c.__init__(3)"),
    ("uuid_namespace_reinit", "import uuid\nuuid.NAMESPACE_DNS.__init__('12345678123456781234567812345678')"),
    ("module_proxy_reinit", "import math, json\nmath.__init__(json)"),
    ("update_wrapper_host_function", "import functools, json\ndef f():\n    pass\nf.marker = 1\nfunctools.update_wrapper(json.dumps, f)"),
    ("update_wrapper_host_class", "import functools, collections\ndef f():\n    pass\nfunctools.update_wrapper(collections.Counter, f, updated=())"),
    ("host_function_attribute", "import json\njson.dumps.marker = 1"),
    ("host_class_attribute_delete", "import collections\ndel collections.Counter.most_common"),
    ("random_class_method", "import random\nrandom.Random.choice = lambda self, seq: 'pwned'"),
    ("enum_global_enum_into_main", "import enum\nE = enum.Enum('E', {'injected_by_model': 1})\nenum.global_enum(E)"),
    ("calendar_different_locale_left_open", "import calendar\ncalendar.different_locale('C.UTF-8').__enter__()"),
    ("typevar_reinit", "import typing\ntyping.T.__init__('Hijacked')"),
    ("typing_alias_forwards_setattr", "import typing\ntyping.Counter[str].most_common = lambda self, n=None: 'pwned'"),
    ("typing_alias_forwards_setattr_abc", "import typing\ntyping.Iterable[int].marker = 1"),
    ("update_wrapper_keyword_wrapper", "import functools, json\ndef f():\n    pass\nf.marker = 1\nfunctools.update_wrapper(wrapper=json.dumps, wrapped=f)"),
    ("typing_final_keyword", "import typing, json\ntyping.final(f=json.JSONEncoder)"),
    ("host_class_level_dict", "import textwrap\ntextwrap.TextWrapper.unicode_whitespace_trans[ord('x')] = ord('y')"),
    ("host_class_level_list", "import calendar\ncalendar.HTMLCalendar.cssclasses[0] = 'pwned'"),
    ("typing_clear_overloads", "import typing\ntyping.clear_overloads()"),
    ("copy_reconstruct_setattr_host_class", "import enum, copy, json\ndef getter():\n    return json.JSONEncoder\ndef reduce(self, proto):\n    return (getter, (), (None, {'default': lambda self, o: 'pwned'}))\nE = enum.Enum('E', [('A', 1), ('__copy__', None), ('__reduce_ex__', reduce)])\ncopy.copy(E.A)"),
    ("copy_reconstruct_dunder_on_host_class", "import enum, copy, collections\ndef getter():\n    return collections.Counter\ndef reduce(self, proto):\n    return (getter, (), (None, {'__repr__': lambda self: 'pwned'}))\nE = enum.Enum('E', [('A', 1), ('__copy__', None), ('__reduce_ex__', reduce)])\ncopy.copy(E.A)"),
    ("copy_reconstruct_patches_sandbox_internals", "import enum, copy, math\ndef getter():\n    return type(math)\ndef reduce(self, proto):\n    return (getter, (), (None, {'__getattribute__': lambda self, name: 'pwned'}))\nE = enum.Enum('E', [('A', 1), ('__copy__', None), ('__reduce_ex__', reduce)])\ncopy.copy(E.A)"),
    ("copy_reconstruct_via_real_enum_mro", "import enum, copy, json\ndef getter():\n    return json.JSONEncoder\ndef reduce(self, proto):\n    return (getter, (), (None, {'default': lambda self, o: 'pwned'}))\nRealEnum = enum.Enum.mro()[1]\nE = RealEnum('E', [('A', 1), ('__copy__', None), ('__reduce_ex__', reduce)])\ncopy.copy(E.A)"),
    ("copy_reconstruct_via_enum_names_toctou", "import enum, copy, json\ndef getter():\n    return json.JSONEncoder\ndef reduce(self, proto):\n    return (getter, (), (None, {'default': lambda self, o: 'pwned'}))\nclass Names:\n    def __init__(self):\n        self.n = 0\n    def __iter__(self):\n        self.n += 1\n        if self.n == 1:\n            return iter([('A', 1)])\n        return iter([('A', 1), ('__copy__', None), ('__reduce_ex__', reduce)])\nE = enum.Enum('E', Names())\ncopy.copy(E.A)"),
    ("copy_reconstruct_via_typing_type_metaclass", "import typing, copy, json\ndef getter():\n    return json.JSONEncoder\nclass Meta(typing.Type[int]):\n    pass\nX = Meta('X', (), {'__reduce_ex__': lambda self, p: (getter, (), (None, {'default': lambda self, o: 'pwned'}))})\ncopy.copy(X())"),
    ("weakset_hash_collision_host_class_write", "import typing, json\nclass Meta(typing.Type[int]):\n    pass\ntarget = json.JSONEncoder\nMeta2 = Meta('Meta2', (Meta,), {'__eq__': lambda a, b: True, '__hash__': lambda c: hash(target)})\nBase = Meta2('Base', (), {})\nclass X(Base):\n    pass\njson.JSONEncoder.default = lambda self, o: 'pwned'"),
    ("shadow_print", "print = lambda *a, **k: None\nprint('x')"),
    ("shadow_len", "len = None"),
    ("delete_builtin", "del len"),
    ("abc_register", "import numbers\nnumbers.Number.register(str)"),
]


@pytest.mark.parametrize("code", [c for _, c in TAMPERING], ids=[i for i, _ in TAMPERING])
def test_tampering_leaves_host_untouched(code: str, local_executor_factory):
    before = _host_state()
    ex = local_executor_factory(limits=Limits(timeout_s=5))
    try:
        ex.execute(code)  # refusing is fine, isolating is fine: the host must not change
        after = _host_state()
    finally:
        _restore_host_state(before)  # so that one escape does not cascade into other tests
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"ESCAPE: model code changed host state: {changed}"
    # And another executor starts clean.
    other = local_executor_factory(limits=Limits(timeout_s=5))
    r = other.execute("import math, json, csv\nprint(len('abc'))\n(math.pi, json.dumps([1]), csv.excel.delimiter)")
    assert_ok(r)
    assert r.logs == "3\n" and r.output == (3.141592653589793, "[1]", ",")


def test_tools_and_final_answer_survive_overwrite_attempts(local_executor):
    for code in ("add = lambda a, b: 0", "def add(a, b):\n    return 0", "final_answer = 5", "del add"):
        r = local_executor.execute(code)
        assert r.error is not None, f"overwriting a tool must be refused: {code!r}"
        name = "final_answer" if "final_answer" in code else "add"
        assert name in r.error.message, f"the error should name what cannot be overwritten: {r.error}"
    r = local_executor.execute("add(20, 22)")
    assert_ok(r)
    assert r.output == 42
    r = local_executor.execute("final_answer(add(1, 1))")
    assert r.is_final_answer and r.output == 2


def test_tool_objects_cannot_be_changed(local_executor, host_tools):
    """Re-initialising or writing attributes on a tool must not reach the host's tool object."""
    search = host_tools["search"]
    for code in (
        "search.__init__(lambda q: ['pwned'])",
        "add.__init__(lambda a, b: 0)",
        "search.api_key = 'stolen'",
        "search.calls = ['forged']",
    ):
        local_executor.execute(code)  # refusing is fine, a no-op is fine
        assert search.api_key == CANARY and search.calls == [], f"ESCAPE: {code!r} changed the host tool"
    r = local_executor.execute("(search('x'), add(1, 2))")
    assert_ok(r)
    assert r.output == (["result for x"], 3)


def test_state_is_isolated_between_executors_and_reset(local_executor_factory):
    a = local_executor_factory()
    b = local_executor_factory()
    assert_ok(a.execute("secret_value = 'only-in-a'"))
    r = b.execute("secret_value")
    assert r.error is not None and r.error.type == "NameError"
    a.reset()
    r = a.execute("secret_value")
    assert r.error is not None and r.error.type == "NameError"
    assert a.execute("add(1, 1)").output == 2, "reset must keep the tools"


def test_refusal_message_is_written_for_the_model(local_executor):
    r = local_executor.execute("x = 1\nimport os\nprint(x)")
    # An ImportError is a fair type for a refused import (model code may catch it like a missing module).
    assert r.error is not None and r.error.type in ("PolicyError", "ImportError")
    assert "os" in r.error.message
    assert r.error.lineno == 2 and r.error.line is not None and "import os" in r.error.line
    r = local_executor.execute("y = (1).__class__.__base__")
    assert r.error is not None and r.error.type == "PolicyError"
    assert "__base__" in r.error.message
    assert r.error.lineno == 1


def test_no_internal_frames_in_errors(local_executor):
    r = local_executor.execute("def f():\n    return 1 / 0\nf()")
    assert r.error is not None and r.error.type == "ZeroDivisionError"
    assert r.error.lineno == 2
    for internal in ("runtime.py", "local.py", "policy.py", "operations.py", "budget.py", "executors/restricted",
                     "Traceback (most recent call last)", "site-packages"):
        assert internal not in r.error.message
        assert internal not in r.logs


def test_secret_not_in_repr_of_tools(local_executor):
    r = local_executor.execute("print(repr(search), repr(lookup), repr(scale), repr(shout), str(add))\n[search, lookup, scale]")
    assert CANARY not in r.logs and CANARY not in (r.output_repr or "")
    assert not _leak_signs(r.logs)


def test_a_missing_builtin_is_never_reached_through_a_name_the_code_binds(local_executor):
    """Issue 44: `input`, `memoryview`... may name the model's own variables; bound only in a class
    body or on a branch never taken, the name is a NameError, never the builtin; `open` (in
    the sandbox's builtins for C code) stays refused even when the code binds it."""
    from executors.restricted.compiler.policy import SHADOWABLE_BUILTINS

    assert not SHADOWABLE_BUILTINS & set(local_executor._runtime.ns["__builtins__"])
    r = local_executor.execute("class A:\n    memoryview = 1\nmemoryview(b'x')")
    assert r.error is not None and r.error.type == "NameError"
    r = local_executor.execute("if False:\n    breakpoint = 1\nbreakpoint()")
    assert r.error is not None and r.error.type == "NameError"
    r = local_executor.execute("open = 1\nopen")
    assert r.error is not None and r.error.type == "PolicyError"
    r = local_executor.execute("input")
    assert r.error is not None and r.error.type == "PolicyError"
