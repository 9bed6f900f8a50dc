"""What the commands share: a run's session (outputs, terminal, warnings), the parameter header
of text outputs, and the command line's way into the Python API (host.api): the run of a
command (:func:`run_of`), its sketching options (:func:`sketching_of`) and its comparison
(:func:`comparison_of`) as the API takes them."""

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..api.params import (HLL_DEFAULTS, JSD_DEFAULTS, SATURATED_SHARE, Sketching,
                          check_table_names, genome_names, saturated_warning)
from ..api.run import XCLBIN_ENV, Run, executor, one_line
from ..api.sketching import collect
from ..backends import F2_STAND_IN_ENV, STAND_IN_ENV
from ..io import InputError
from ..outputs import Outputs, writes_in_place
from ..progress import Progress
from ..sketchfile import SketchSet
from .options import option_name, shown_option

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (sketch does without it)
if TYPE_CHECKING:
    from ..api.pairs import Comparison

__all__ = ["Session", "genome_names", "parameter_header", "parameters_file", "one_line",
           "HLL_DEFAULTS", "JSD_DEFAULTS", "check_table_names", "option_name", "xclbin",
           "check_backend", "pyxrt_stand_in", "f2_stand_in", "backend_of", "executor_of",
           "require_scipy", "warn_saturated", "SATURATED_SHARE", "run_of",
           "sketching_of", "comparison_of", "shown_setting", "load_inputs"]


@dataclass
class Session:
    """What one command run shares: its outputs, the terminal for progress, its warnings."""

    outputs: Outputs
    terminal: object
    warnings: list[str] = field(default_factory=list)
    run: Run | None = None

    @property
    def backend(self):
        """The backend the command made (None before it made one)."""
        return None if self.run is None else self.run.made_backend

    def progress(self, label: str, total: int, unit: str = "genomes") -> Progress:
        return Progress(label, total, unit, stream=self.terminal)

    def say(self, line: str) -> None:
        """A note or warning on the terminal at once."""
        print(line, file=self.terminal, flush=True)


def warn_saturated(session: Session, *sets: SketchSet) -> None:
    """One warning line, on the terminal, if HLL sketches of ``sets`` are saturated past what
    their width tells, naming the fix (host.api.params.saturated_warning)."""
    line = saturated_warning(*sets)
    if line is not None:
        session.say(line)


def parameter_header(command: str, params: dict) -> str:
    settings = " ".join(f"{key}={value}" for key, value in params.items())
    return f"# kmer-sketch-accel {__version__} {command} {settings}"


def parameters_file(session: Session, output: str):
    """PHYLIP has no room for comments: the parameters go to OUTPUT.params beside a regular
    output file (none for standard output, a FIFO or a device)."""
    return None if writes_in_place(output) else session.outputs.open(f"{output}.params")


def require_scipy(what: str) -> None:
    """Refuse ``what`` in one line, before any work, when scipy is missing."""
    import importlib.util
    if importlib.util.find_spec("scipy") is None:
        raise InputError(f"{what}: needs scipy (pip install 'kmer-sketch-accel[plot]')")


def shown_setting(key: str) -> str:
    """The option a setting of host.api.params.Sketching is given by on the command line."""
    return {"canonical": "--no-canonical", "per_record": "-i"}.get(key) or shown_option(key)


def sketching_of(args) -> Sketching:
    """The sketching options of the command line as the API takes them (None: not given)."""
    given = {key: getattr(args, key, None) for key in Sketching.__dataclass_fields__
             if key not in ("canonical", "per_record", "min_count_fasta")}
    return Sketching(**given, canonical=False if getattr(args, "no_canonical", None) else None,
                     min_count_fasta=bool(getattr(args, "min_count_fasta", False)),
                     per_record=bool(getattr(args, "individual", False)))


def comparison_of(args) -> "Comparison":
    """How the command compares all pairs (--metric, --estimator, --detection, --top) as the
    API takes it."""
    from ..api.pairs import Comparison  # here: sketch does without the pair loops
    from ..estimators import DEFAULT_DETECTION, DEFAULT_ESTIMATOR
    return Comparison(metric=getattr(args, "metric", "jaccard"),
                      estimator=getattr(args, "estimator", DEFAULT_ESTIMATOR),
                      detection=getattr(args, "detection", DEFAULT_DETECTION),
                      top=getattr(args, "top", None))


# -- backends and executors -----------------------------------------------------------------

def xclbin(args) -> str | None:
    return getattr(args, "xclbin", None) or os.environ.get(XCLBIN_ENV)


def check_backend(args) -> None:
    """Fail on a missing FPGA binary before any input is read (and before XRT is looked for),
    and on --xclbin given for a backend that has no FPGA binary."""
    backend = getattr(args, "backend", None)
    if getattr(args, "slot", None) is not None and backend != "f2":
        raise InputError(f"--slot: applies to --backend f2, not --backend {backend}; drop it "
                         "or choose --backend f2")
    if getattr(args, "xclbin", None) is not None and backend not in ("xrt", "auto"):
        raise InputError(f"--xclbin: applies to --backend xrt (or auto), not --backend "
                         f"{backend}; drop it or choose --backend xrt")
    binary = xclbin(args) if backend == "xrt" else getattr(args, "xclbin", None)
    if backend in ("xrt", "auto") and binary and pyxrt_stand_in():
        if not Path(binary).is_dir():
            raise InputError(f"{binary}: not a directory (with KMER_SKETCH_PYXRT=sim, --xclbin "
                             "names a python -m hw.build output directory)")
    elif backend in ("xrt", "auto") and binary and not Path(binary).is_file():
        what = "is not a file" if Path(binary).exists() else "no such file"
        raise InputError(f"{binary}: {what} (the --xclbin FPGA binary; build one with "
                         f"python -m hw.build and v++)")


def f2_stand_in() -> bool:
    """``KMER_SKETCH_F2_SIM=DIR``: the f2 backend drives the stand-in of AWS's SDK
    (sim/f2_sim.py), whose slot 0 holds the CL directory DIR, simulated."""
    return bool(os.environ.get(F2_STAND_IN_ENV))


def pyxrt_stand_in() -> bool:
    """``KMER_SKETCH_PYXRT=sim``: the xrt backend drives the XRT C API stand-in (sim/xrt_sim.py,
    reached through host.device.xrt_stand_in) instead of XRT's library; --xclbin then names
    a ``python -m hw.build`` output directory."""
    return os.environ.get(STAND_IN_ENV) == "sim"


def run_of(args, session: Session) -> Run:
    """The command's run as the API takes it, made once: its backend (--backend, --xclbin,
    --sim-geometry, --slot), threads (-p), warnings (gathered into the session's, said at the
    end), notes on the terminal, options named as the command line names them."""
    if session.run is None:
        session.run = Run(backend_name=getattr(args, "backend", "sw"), xclbin=xclbin(args),
                          sim_geometry=getattr(args, "sim_geometry", "small"),
                          slot=getattr(args, "slot", None) or 0,
                          threads=getattr(args, "threads", None), warnings=session.warnings,
                          say=session.say, terminal=session.terminal, option=shown_setting)
    return session.run


def backend_of(args, session: Session):
    """The command's backend, made once per run."""
    return run_of(args, session).backend()


@contextlib.contextmanager
def executor_of(args):
    """This process, a local Dask cluster (--workers) or a scheduler's (--scheduler)."""
    with executor(getattr(args, "scheduler", None), getattr(args, "workers", None),
                  getattr(args, "scheduler_option", None) or "--scheduler") as made:
        yield made


def load_inputs(paths, kind: str, command: str, args, session: Session, executor,
                reference: SketchSet | None = None) -> SketchSet:
    """host.api.sketching.collect with the command's options and run."""
    return collect(paths, kind, command, sketching_of(args), run_of(args, session), executor,
                   reference)
