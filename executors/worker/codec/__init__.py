"""The value codec: what crosses between the model's code and the host, as plain data. Stdlib only.

THE boundary of every executor, in process too. `encode_value` turns a value into a tree of exact
builtin types (JSON plus tagged objects {"$t": tag, "v": ...} for tuple, set, frozenset, bytes,
complex, datetime, date, time, timedelta, Decimal, big int, non-finite float, dicts with non-str
keys, and the typed data payloads of `data_values`: numpy arrays, pandas frames); anything else
crosses as {"$t": "repr", "v": repr, "type": name}. `decode_value` rebuilds fresh objects from
such a tree. The receiving side never holds an object the sender made.

The encoder checks exact types (`type(v) is list`, never `isinstance`) before it touches a value,
so a subclass's methods, a `__class__` property or an overridden `__iter__` never run in it. The
only model code it can call is `repr(v)` of a value that is not data, and the runtimes encode a
model's values inside the step, under the guard and the limits, where that is allowed.

`binary=True` leaves raw `bytes` in the tree (in process there is no JSON to carry: no base64);
`dumps` (wire.py) writes them as base64 text, and the decoder takes either.

Both directions hold the bounds table (`bounds/table.py`): the encoder spends one budget per
message (`Crossing`: JSON values, containers, text) and names numbers over the table by their size
instead of sending them; the decoder refuses what an honest encoder never sends (ProtocolError),
before it builds anything from it.
"""

from .decode import decode_value, decode_values
from .encode import Crossing, TooLargeToCross, encode_value, plain_copy
from .text import (
    REPR_CHARS,
    REPR_TYPES,
    TAG,
    NotPlain,
    ProtocolError,
    Repr,
    opaque_repr,
    safe_repr,
    safe_str,
    short_repr,
)

__all__ = ["REPR_CHARS", "REPR_TYPES", "TAG", "Crossing", "NotPlain", "ProtocolError", "Repr",
           "TooLargeToCross", "decode_value", "decode_values", "encode_value", "opaque_repr",
           "plain_copy", "safe_repr", "safe_str", "short_repr"]
