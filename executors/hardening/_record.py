"""A frozen record base with `to_dict()`, without importing `dataclasses`.

The worker's cold start is budgeted in milliseconds and `dataclasses` pulls in `inspect`, `ast`
and `re` (~10 ms cold); these reports are built once per worker, so a few lines of our own are
the cheaper way to get immutable, comparable, JSON-ready values.
"""


class HardeningError(OSError):
    """The kernel refused a hardening step that was expected to work: the process is NOT in the
    state the caller asked for and must not go on to run untrusted code."""


class FrozenRecord:
    """Fields are the class's `__slots__`; assignment after construction raises AttributeError."""

    __slots__ = ()

    def __init__(self, **fields) -> None:
        missing = [name for name in self.__slots__ if name not in fields]
        unknown = [name for name in fields if name not in self.__slots__]
        if missing or unknown:
            raise TypeError(
                f"{type(self).__name__}: missing fields {missing}, unknown fields {unknown}"
            )
        for name, value in fields.items():
            object.__setattr__(self, name, _freeze(value))

    def __setattr__(self, name, value) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; cannot set {name!r}")

    def __delattr__(self, name) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; cannot delete {name!r}")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict:
        """JSON-ready: nested records become dicts, tuples become lists."""
        return {name: _plain(getattr(self, name)) for name in self.__slots__}


def _freeze(value):
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value


def _plain(value):
    if isinstance(value, FrozenRecord):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
