"""What one value or message from a worker may hold, and the checks that hold it. Stdlib only.

  table   `Bounds`, the one table of numbers the codec and the host read (`BOUNDS`, the default)
  scan    a frame body measured before it is parsed: JSON values, containers, nesting, number
          literals; the host refuses a frame over the table before the JSON parser allocates it
  png     a PNG checked whole (signature, every chunk's length and CRC, IHDR, pixels) before
          anything draws it

Typed payloads added to the wire later (Arrow IPC, shared memory) get their rows here.
"""

from .table import BOUNDS, Bounds

__all__ = ["BOUNDS", "Bounds"]
