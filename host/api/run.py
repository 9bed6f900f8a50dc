"""What one call of the API (or one command of the command line) shares: the backend it asked for,
made once; its threads; where its work runs (this process or Dask); its messages. The API
prints nothing: a :class:`Run` keeps its warnings (an input without k-mers, ...) for the caller,
and says its notes and immediate warnings through ``say``, which the command line points at the
terminal and the Python API at :mod:`warnings` and :mod:`logging`.
"""

import contextlib
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from ..backends import get_backend
from ..io import InputError
from ..progress import Progress
from ..scheduler import make_executor

__all__ = ["Run", "SketchWarning", "executor", "one_line", "XCLBIN_ENV"]

#: the environment variable naming the FPGA binary of the xrt backend when none is given
XCLBIN_ENV = "KMER_SKETCH_XCLBIN"


class SketchWarning(UserWarning):
    """A warning of the API: inputs without k-mers, saturated sketches, and the like (the
    command line prints the same lines as ``warning: ...``)."""


def one_line(text) -> str:
    return " ".join(str(text).split())


def _said(line: str) -> None:
    """The Python API's ``say``: a ``warning: ...`` line as a :class:`SketchWarning`, anything
    else (``note: ...``, the backend chosen by ``auto``) logged at INFO on ``host.api``."""
    if line.startswith("warning: "):
        warnings.warn(line.removeprefix("warning: "), SketchWarning, stacklevel=3)
    else:
        import logging  # here: logging costs the command line's start-up, which never logs
        logging.getLogger("host.api").info(line)


@dataclass
class Run:
    """The context of one API call or command: ``backend_name`` (sw, golden, sim, xrt, auto),
    made on first use (:meth:`backend`) with ``xclbin``, ``sim_geometry`` and ``slot`` (f2's
    FPGA slot); ``threads`` of
    the sw backend and the native pair loops (None: every core); ``warnings`` gathered for the
    end of the run; ``say(line)`` for a note or warning the user should see at once;
    ``terminal``, where progress lines go (None: no progress); ``option(key)``, how a setting is
    named in messages (``--index-bits`` on the command line, ``index_bits=`` in Python)."""

    backend_name: str = "sw"
    xclbin: str | None = None
    sim_geometry: str = "small"
    slot: int = 0
    threads: int | None = None
    warnings: list[str] = field(default_factory=list)
    say: Callable[[str], None] = _said
    terminal: object = None
    option: Callable[[str], str] = lambda key: f"{key}="
    made_backend: object = None

    def backend(self):
        """The run's backend, made once (host.backends.get_backend)."""
        if self.made_backend is None:
            self.made_backend = get_backend(self.backend_name,
                                            self.xclbin or os.environ.get(XCLBIN_ENV),
                                            sim_geometry=self.sim_geometry, slot=self.slot)
        return self.made_backend

    def progress(self, label: str, total: int, unit: str = "genomes") -> Progress:
        """A progress line on the terminal, or a silent one without a terminal."""
        if self.terminal is None:
            return Progress(label, total, unit, enabled=False)
        return Progress(label, total, unit, stream=self.terminal)

    def close(self) -> None:
        """The run has ended: a card's compute units and device are closed (XRT holds a unit
        opened exclusively until then)."""
        close = getattr(self.made_backend, "close", None)
        if close is not None:
            close()

    def warn_gathered(self) -> None:
        """Say the gathered warnings, each as a ``warning: ...`` line (the Python API's end of a
        call; the command line joins them into one line instead)."""
        for line in self.warnings:
            self.say(f"warning: {line}")
        self.warnings.clear()


@contextlib.contextmanager
def executor(scheduler: str | None = None, workers: int | None = None,
             option: str = "scheduler"):
    """This process (neither given), a local Dask cluster of ``workers`` processes, or the Dask
    scheduler at the address ``scheduler`` (named ``option`` in messages); closed at the end."""
    if scheduler is not None and not scheduler.strip():
        raise InputError(f"{option}: an empty address (give tcp://HOST:PORT, Dask's scheduler "
                         f"address)")
    try:
        made = make_executor(scheduler, workers)
    except RuntimeError as error:  # dask missing
        raise InputError(str(error)) from None
    except (ValueError, TypeError) as error:  # Dask's parse of the address
        raise InputError(f"{option} {scheduler}: not a Dask scheduler address "
                         f"({one_line(error)}); give tcp://HOST:PORT") from None
    except OSError as error:
        raise InputError(f"{option} {scheduler}: cannot connect ({one_line(error)})") from None
    try:
        yield made
    finally:
        made.close()
