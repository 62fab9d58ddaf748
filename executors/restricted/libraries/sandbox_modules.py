"""Authorized imports for the restricted runtime: module proxies and the guarded `__import__`.

Model code never holds a real module. It gets a read-only proxy whose attributes are the
module's public members, minus module-valued attributes (`re.enum`, `random._os` is private
anyway) unless that submodule is authorized too, minus the dangerous members listed in policy.
A few members are then replaced by sandbox-aware versions (patches.py).
"""

from __future__ import annotations

import importlib
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ...base import STAR_REFUSAL
from ..compiler.policy import FORBIDDEN_BUILTINS, HIDDEN_MODULE_MEMBERS, IO_ALLOWED
from ..guards.errors import ImportPolicyError
from ..host.guard import CLASS_SUBSTITUTES, HostGuard
from ..limits.budget import RunState
from .patches import PATCHES, PatchContext, patch_members
from .raw_memory import install_raw_memory_checks
from .rules import hidden_object, hidden_reason, module_refusal

# Submodules that are part of what their parent is for (`os.path` is posixpath): authorizing the
# parent authorizes them.
_PART_OF_PARENT = frozenset({"os.path"})

_READ_ONLY: dict[type, Callable[[Any], Any]] = {
    list: tuple, dict: types.MappingProxyType, set: frozenset, bytearray: bytes,
}


def _reaches(proxy: Any, parts: list[str]) -> bool:
    """Does the proxy already lead to the submodule `parts` (each a member or a lazy member)?"""
    for part in parts:
        if type(proxy) is not ModuleProxy:
            return False
        members = proxy.__dict__
        lazy = members["_lazy"]
        if part not in members and (lazy is None or part not in lazy[1]):
            return False
        try:
            proxy = getattr(proxy, part)
        except AttributeError:
            return False
    return type(proxy) is ModuleProxy


class ModuleProxy:
    """A read-only namespace standing in for a module. Has no `__name__` on purpose: CPython's
    `from m import x` falls back to `sys.modules[m.__name__ + '.x']` when `x` is missing."""

    def __init__(self, label: str, members: dict[str, Any], lazy: Any = None,
                 hidden: dict[str, str] | None = None) -> None:
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_lazy", lazy)  # (resolve, names): members made on first use
        object.__setattr__(self, "_hidden", {} if hidden is None else hidden)  # name -> why
        self.__dict__.update(members)

    def __getattr__(self, name: str) -> Any:
        # Only called for missing names.
        if name.startswith("_"):
            raise AttributeError(name)
        lazy = self.__dict__["_lazy"]
        if lazy is not None and type(name) is str:
            value = lazy[0](name)
            if value is not _ABSENT:
                self.__dict__[name] = value
                return value
        why = self.__dict__["_hidden"].get(name)
        if why is not None:
            raise AttributeError(f"'{self._label}.{name}' is not available in the sandbox: {why}")
        raise AttributeError(
            f"module '{self._label}' has no attribute '{name}' in the sandbox "
            "(private, hidden, or a submodule that is not authorized)"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"module '{self._label}' is read-only in the sandbox")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"module '{self._label}' is read-only in the sandbox")

    def __dir__(self) -> list[str]:
        lazy = self.__dict__["_lazy"]
        names = {k for k in self.__dict__ if not k.startswith("_")}
        return sorted(names | (lazy[1] if lazy is not None else set()))

    def __repr__(self) -> str:
        return f"<module '{self._label}'>"


_ABSENT = object()


def public_path(name: str) -> bool:
    """A public module path: no component starts with an underscore."""
    return not any(part.startswith("_") for part in name.split("."))


class Authorization:
    """Which modules model code may import. Authorizing a package authorizes its public modules:
    "pkg" (or "pkg.*", the same) allows `pkg` and every module below it whose dotted path has no
    component starting with "_" (`sympy.abc`, `sklearn.metrics.pairwise`, `pandas.core.frame`);
    "pkg.sub" allows `pkg.sub` and its public modules. What stays guarded is what code *does*
    with them (rules.py hides the members that would change the host or run code by name, the
    capability guard judges files, processes, native code), not a module's name."""

    def __init__(self, names: Iterable[str]) -> None:
        self.exact: set[str] = set()
        for name in names:
            if name == "*":
                raise ValueError(STAR_REFUSAL)
            self.exact.add(name[:-2] if name.endswith(".*") else name)

    def allows(self, name: str) -> bool:
        if name in self.exact:
            return True
        if not public_path(name):
            return False
        exact = self.exact
        dot = name.rfind(".")
        while dot > 0:
            name = name[:dot]
            if name in exact:
                return True
            dot = name.rfind(".")
        return False

    def on_path(self, name: str) -> bool:
        """`name` is an authorized module or a package on the way to one."""
        if self.allows(name):
            return True
        dotted = name + "."
        return any(a.startswith(dotted) for a in self.exact)


class SandboxImporter:
    def __init__(
        self, authorized: Iterable[str], state: RunState, print_fn: Callable[..., None], host: HostGuard
    ) -> None:
        self.auth = Authorization(authorized)
        self.host = host
        self.patch_ctx = PatchContext(state, host, print_fn)
        self.cache: dict[str, ModuleProxy] = {}
        self.sandbox_builtins: dict[str, Any] = {}  # what `import builtins` gives: set by the namespace

    # the builtin `__import__` seen by model code
    def __call__(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if type(fromlist) is list:
            # C code of a library (numpy's lazy `_methods`) imports through the `__import__` of
            # the frame it runs under: PyImport_Import passes a list, the compiler never does
            # (model code's import statements pass None or a tuple). It is the library's own
            # import: it happens, and the library gets the module from sys.modules, not us.
            return importlib.import_module(name)
        if level:
            raise ImportPolicyError("relative imports are not allowed")
        if not isinstance(name, str) or not name:
            raise ImportPolicyError(f"importing {name!r} is not allowed")
        if not public_path(name):
            if fromlist and type(fromlist) is tuple:
                return self._public_names_from_private(name, fromlist)
            raise ImportPolicyError(
                f"importing '{name}' is not allowed: a module whose path has a part starting with "
                "'_' is private to its package; import the public module that offers it")
        if not self.auth.allows(name) and not (fromlist and self.auth.on_path(name)):
            raise ImportPolicyError(self._refusal(name))
        refused = module_refusal(name)
        if refused is not None:
            raise ImportPolicyError(
                f"importing '{name}' is not allowed in the sandbox even though it is authorized: "
                f"{refused}")
        proxy = self.proxy(name)
        if fromlist:
            for item in fromlist:
                if not isinstance(item, str) or item.startswith("_") or item == "*":
                    raise ImportPolicyError(f"importing {item!r} from {name} is not allowed")
                if item not in proxy.__dict__ and not hasattr(proxy, item):
                    full = f"{name}.{item}"
                    why = proxy.__dict__["_hidden"].get(item) or module_refusal(full)
                    if why is not None:
                        raise ImportPolicyError(
                            f"cannot import '{item}' from '{name}': it is not available in the "
                            f"sandbox even though {name} is authorized: {why}")
                    if self.auth.allows(full):
                        self._load(full)
                        proxy = self.proxy(name, refresh=True)
                    else:
                        raise ImportPolicyError(
                            f"cannot import '{item}' from '{name}': it is not available in the "
                            f"sandbox (private, a module that is not authorized, or hidden)"
                        )
            return proxy
        top = name.split(".")[0]
        if top != name:
            self._load(name)
            cached = self.cache.get(top)
            if cached is not None and _reaches(cached, name.split(".")[1:]):
                return cached  # (every later step's `import pyarrow.compute`: no rebuild of pyarrow's)
            return self.proxy(top, refresh=True)
        return proxy

    def _public_names_from_private(self, name: str, fromlist: tuple[Any, ...]) -> ModuleProxy:
        """`from pkg.sub._impl import f` where `f` is the very object the public `pkg.sub` exports
        as `f` (libraries' own docs import so: pandas' build_table_schema, scikit-learn's
        estimator_html_repr): `f` as the public module's proxy hands it out. The private module's
        other names, and the module itself, stay private."""
        parts = name.split(".")
        public = ".".join(parts[:next(i for i, p in enumerate(parts) if p.startswith("_"))])
        private = (f"importing from '{name}' is not allowed: a module whose path has a part starting "
                   "with '_' is private to its package")
        if not public or not self._importable(public):
            raise ImportPolicyError(f"{private}; import the public module that offers it")
        module, exported = self._load(name), self._load(public)
        proxy = self.proxy(public)
        members: dict[str, Any] = {}
        for item in fromlist:
            if not isinstance(item, str) or item.startswith("_") or item == "*":
                raise ImportPolicyError(f"importing {item!r} from {name} is not allowed")
            value = getattr(module, item, _ABSENT)
            if value is _ABSENT or getattr(exported, item, _ABSENT) is not value:
                raise ImportPolicyError(f"{private}: only what '{public}' itself exports can be "
                                        f"imported from it, and '{item}' is not among that")
            try:
                members[item] = getattr(proxy, item)
            except AttributeError as exc:  # hidden there: the public module's reason
                raise ImportPolicyError(f"cannot import '{item}' from '{name}': {exc}") from None
        return ModuleProxy(name, members)

    def _refusal(self, name: str) -> str:
        allowed = ", ".join(sorted(self.auth.exact))
        return (
            f"import of '{name}' is not allowed. Authorized modules: {allowed}. "
            "Solve the task with these modules and the tools you were given."
        )

    def _load(self, name: str) -> types.ModuleType:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise ImportError(f"No module named '{name}'") from None
        install_raw_memory_checks()  # (a stdlib module is no trusted import: checked now)
        return module

    def proxy(self, name: str, *, refresh: bool = False) -> ModuleProxy:
        cached = self.cache.get(name)
        if cached is not None and not refresh:
            return cached
        module = self._load(name)
        hidden: dict[str, str] = {}
        members, lazy = self._members(name, module, hidden)
        if cached is not None:  # (refreshed in place: names bound to it see the new submodule)
            cached.__dict__.update(members)
            object.__setattr__(cached, "_lazy", lazy)
            cached.__dict__["_hidden"].update(hidden)
            return cached
        proxy = ModuleProxy(name, members, lazy, hidden)
        self.cache[name] = proxy
        return proxy

    def _members(self, name: str, module: types.ModuleType,
                 hidden: dict[str, str]) -> tuple[dict[str, Any], Any]:
        """The proxy's members now, and the resolver of those it gets on first use: submodules
        (their proxies, and the import of a lazy package's submodule: scipy.stats) and names a
        module provides through its `__getattr__`, so that importing a package does not import
        and proxy every module in it."""
        if name == "builtins":  # the sandbox's own builtins, never the host's
            # (the frame's builtins carry `open` for C code, e.g. numpy's tofile: never hand it out)
            return {k: v for k, v in self.sandbox_builtins.items()
                    if not k.startswith("_") and k not in FORBIDDEN_BUILTINS}, None
        members: dict[str, Any] = {}
        own = vars(module)
        eager = name in PATCHES  # (a patch works on the members it is given)
        public = getattr(module, "__all__", None)
        names = set(dir(module)) | (set(public) if isinstance(public, (list, tuple)) else set())
        # (a submodule imported since is an attribute even where the package's __dir__ omits it:
        # numpy's lists no numpy.matlib)
        names |= {k for k, v in own.items() if type(v) is types.ModuleType}
        lazy: set[str] = set()
        for attr in names:
            if not isinstance(attr, str) or attr.startswith("_"):
                continue
            if attr in own and type(own[attr]) is types.ModuleType or not eager and attr not in own:
                lazy.add(attr)  # (modules always: two modules may name each other)
                continue
            value = self._member(name, module, attr, hidden)
            if value is not _ABSENT:
                members[attr] = value
        patch_members(name, members, self.patch_ctx)

        def resolve(attr: str) -> Any:
            if attr not in lazy:
                return _ABSENT
            return self._member(name, module, attr, hidden)

        return members, (resolve, frozenset(lazy)) if lazy else None

    def _importable(self, name: str) -> bool:
        """Could model code import `name` itself (authorized, public, not refused)?"""
        return public_path(name) and self.auth.allows(name) and module_refusal(name) is None

    def _member(self, name: str, module: types.ModuleType, attr: str, hidden: dict[str, str]) -> Any:
        """What the proxy of `name` hands out as `attr`, or _ABSENT (and why, into `hidden`)."""
        why = HIDDEN_MODULE_MEMBERS.get(name, {}).get(attr) or hidden_reason(name, attr)
        if why is not None:
            hidden[attr] = why  # dangerous even when authorized
            return _ABSENT
        if name == "io" and attr not in IO_ALLOWED:
            return _ABSENT
        try:
            with warnings.catch_warnings():  # deprecated members warn on access: not the model's doing
                warnings.simplefilter("ignore")
                value = getattr(module, attr)
        except AttributeError:
            return _ABSENT
        why = hidden_object(value)
        if why is not None:  # the same member the table hides elsewhere (rules.hidden_object)
            hidden[attr] = why
            return _ABSENT
        if isinstance(value, types.ModuleType):
            full = f"{name}.{attr}"
            if (value.__name__ == full and self.auth.on_path(full)) or \
                    (full in _PART_OF_PARENT and self.auth.allows(name)):
                return self.proxy(full)
            own = value.__name__
            if type(own) is str and own != full and self._importable(own):
                return self.proxy(own)  # a re-export (statsmodels.api.families): as if imported
            return _ABSENT
        if isinstance(value, type) and issubclass(value, type):
            return _ABSENT  # metaclasses create classes with any dunder (ABCMeta, EnumType)
        if isinstance(value, type):
            value = CLASS_SUBSTITUTES.get(value, value)  # (a checked stand-in: np.ndarray)
        if type(value) in _READ_ONLY:
            if type(value) in (dict, list):
                self.host.share_nested(value)
            value = _READ_ONLY[type(value)](value)  # module-level containers: read-only views
        elif type(value).__name__ == "Context" and name == "decimal":
            value = value.copy()
        self.host.share(value)
        return value
