"""The model's own pyplot: no figure of the host's is reachable from a step, none of its outlives it.

pyplot keeps its figures in one process-wide registry (`matplotlib._pylab_helpers.Gcf.figs`): in
process, `plt.gcf()` in a step would return the host's current figure, and a callback or formatter
the model attached to it would run in the host's next draw. So each step gets an empty registry of
its own; after the step, while the capability guard still holds (closing a figure runs its
close callbacks), the step's figures are closed and the host's registry is put back. The result
carries the step's figures as attachments before that (figures.py). Stdlib only: matplotlib is
reached through sys.modules, never imported here.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

__all__ = ["PyplotState"]


class PyplotState:
    def __init__(self) -> None:
        self._host: Any = None
        self._swapped = False

    def enter(self) -> None:
        helpers = sys.modules.get("matplotlib._pylab_helpers")
        self._swapped = helpers is not None
        if helpers is not None:
            gcf = helpers.Gcf
            self._host = gcf.figs
            gcf.figs = OrderedDict()

    def leave(self) -> None:
        """Close the step's figures (under the guard: call it before the guard is left), then
        give the host its registry back. pyplot loaded during the step had no host figures."""
        helpers = sys.modules.get("matplotlib._pylab_helpers")
        if helpers is None:
            return
        gcf = helpers.Gcf
        try:
            if type(gcf.figs) is OrderedDict and gcf.figs:
                gcf.destroy_all()
        except Exception:  # noqa: BLE001 - a figure the model broke: drop the registry anyway
            pass
        finally:
            gcf.figs = self._host if self._swapped and self._host is not None else OrderedDict()
            self._host = None
            self._swapped = False
