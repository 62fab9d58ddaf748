"""Host-side probes of the raw-memory corpus (tests/raw_memory_escapes.py): plain host code that
shows a library's process-wide state, compared before and after a step."""

from __future__ import annotations


def extension_registered(name: str) -> bool:
    import pyarrow as pa

    try:
        pa.register_extension_type(_probe_type(name))
    except Exception:  # noqa: BLE001 - registered already (the normal state for arrow.json)
        return True
    pa.unregister_extension_type(name)
    return False


def _probe_type(name: str):  # noqa: ANN202
    import pyarrow as pa

    class Probe(pa.ExtensionType):
        def __init__(self) -> None:
            super().__init__(pa.binary(), name)

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):  # noqa: ANN001, ANN206
            return cls()

    return Probe()


def fft_backends() -> str:
    import scipy.fft

    return repr(scipy.fft.fft([1.0, 2.0]))


def sympy_printer_settings() -> dict:
    from sympy.printing.printer import Printer

    return dict(Printer._global_settings)


def sympy_parameters() -> tuple:
    from sympy.core.parameters import global_parameters as p

    return (p.evaluate, p.distribute, p.exp_is_pow)
