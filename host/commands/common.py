"""What the commands share: a run's session (outputs, terminal, warnings), genome names, the
parameter header of text outputs, algorithm parameters from options or sketch files, and the
backend and executor a command runs on."""

import contextlib
import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__
from ..backends import F2_STAND_IN_ENV, STAND_IN_ENV, get_backend
from ..scheduler import make_executor
from ..io import InputError, name_problem
from ..outputs import Outputs, writes_in_place
from ..progress import Progress
from ..reader import ReadsMinCount
from ..sketchfile import SketchSet, engine_params
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import SAMPLE_SEED

__all__ = ["Session", "genome_names", "parameter_header", "parameters_file", "one_line",
           "HLL_DEFAULTS", "JSD_DEFAULTS", "check_table_names", "option_name", "hll_params", "min_count_params",
           "jsd_params", "xclbin", "check_backend", "pyxrt_stand_in", "f2_stand_in", "backend_of",
           "executor_of", "row_tiles", "require_scipy", "warn_saturated", "SATURATED_SHARE"]

ROWS_PER_TILE = 32


@dataclass
class Session:
    """What one command run shares: its outputs, the terminal for progress, its warnings."""

    outputs: Outputs
    terminal: object
    warnings: list[str] = field(default_factory=list)
    backend: object = None

    def progress(self, label: str, total: int, unit: str = "genomes") -> Progress:
        return Progress(label, total, unit, stream=self.terminal)


def one_line(text) -> str:
    return " ".join(str(text).split())


#: more than this share of a sketch's registers at the top value R, and its cardinality is
#: uncertain past what the register width can tell (SPEC 3 "Saturated registers": the standard
#: error of the censored estimate is then 1.5 times a sketch's usual or more)
SATURATED_SHARE = 0.97


def warn_saturated(session: Session, *sets: SketchSet) -> None:
    """One warning line, on the terminal, if HLL sketches of ``sets`` are saturated past what
    their width tells, naming the fix."""
    from kmerspec.golden.hll import top_rank
    total, found = 0, []
    for sketches in (s for s in sets if s.kind == "hll" and len(s)):
        p, w = sketches.params["p"], sketches.params["w"]
        top = top_rank(HllParams(p, w))
        total += len(sketches)
        from ..registers import saturated_counts
        share = saturated_counts(sketches.packed_registers(), sketches.hll()) / (1 << p)
        found += [(sketches.names[g], p, w, top) for g in np.flatnonzero(share > SATURATED_SHARE)]
    if not found:
        return
    name, p, w, top = found[0]
    fix = (f"--register-bits {max(6, w + 1)} (or a larger --index-bits)" if w < 6
           else "a larger --index-bits")
    print(f"warning: {len(found)} of {total} sketches are saturated: over "
          f"{SATURATED_SHARE:.0%} of their registers at the largest value ({top} for {w}-bit "
          f"registers at p={p}; first: {name}), so their k-mer counts and similarities are "
          f"uncertain past what the registers tell; sketch again with {fix}",
          file=session.terminal, flush=True)


def genome_names(paths: Sequence[str]) -> list[str]:
    """File names (without directories); the path as given where two file names collide.

    The same file given twice is refused, through a symlink or a hard link too: its two genomes
    would be one genome (Jaccard 1).
    """
    seen: dict = {}
    for path in paths:
        key = _file_identity(path)
        if key in seen:
            linked = (", a hard link to it" if isinstance(key, tuple)
                      and os.path.realpath(path) != os.path.realpath(seen[key]) else "")
            raise InputError(f"{path}: given twice as input (also as {seen[key]}{linked}); give "
                             f"each genome once")
        seen[key] = path
    names = [Path(p).name for p in paths]
    counts = Counter(names)  # not names.count: 100,000 genomes would take minutes
    names = [name if counts[name] == 1 else str(p) for name, p in zip(names, paths)]
    for name, path in zip(names, paths):
        problem = name_problem(name)
        if problem is not None:
            raise InputError(f"{path}: the genome's name {name!r} {problem}; rename the file")
    return names


def _file_identity(path: str):
    """What makes two paths one file: (device, inode) for a regular file, so that a hard link
    is the file it links to as a symlink is; the resolved path for anything else."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return os.path.realpath(path)
    if stat.S_ISREG(status.st_mode):
        return (status.st_dev, status.st_ino)
    return os.path.realpath(path)


def check_table_names(sketches: SketchSet) -> None:
    """Refuse a set whose genome names would break a table (host.io.name_problem)."""
    for name in sketches.names:
        problem = name_problem(name)
        if problem is not None:
            raise InputError(f"{sketches.origin}: holds a genome named {name!r}, which "
                             f"{problem}; rename it with merge --rename")


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


def row_tiles(n: int) -> list[range]:
    """Row ranges a matrix is computed and written in."""
    return [range(s, min(s + ROWS_PER_TILE, n)) for s in range(0, n, ROWS_PER_TILE)]


# -- parameters from options or from the sketch files given -------------------------------

HLL_DEFAULTS = {"k": 31, "p": 14, "w": 4, "canonical": True}
JSD_DEFAULTS = {"k": 31, "s": 10, "sample_seed": SAMPLE_SEED.default, "d": 5, "cw": 14, "R": 12,
                "n": 8, "update": "cu", "canonical": True}


def option_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def _resolve_params(args, defaults: dict, hash_name: str, like: SketchSet | None) -> dict:
    """Options given on the command line, else those of the sketch files given (``like``), else
    the defaults; an option that contradicts the sketch files is refused."""
    params = {}
    given = {key: getattr(args, key) for key in defaults if key != "canonical"}
    given["canonical"] = False if args.no_canonical else None  # --no-canonical given or not
    for key, value in given.items():
        if like is None:
            params[key] = defaults[key] if value is None else value
            continue
        stored = like.params.get(key)
        if value is not None and value != stored:
            # the parameter as sketch headers show it: an option's name may be refused (--p)
            shown = "--no-canonical" if key == "canonical" else f"{key}={value}"
            raise InputError(f"{like.origin}: sketched with {key}={stored!r}, but {shown} was "
                             f"given for the sequence files; drop the option or re-sketch")
        params[key] = stored
    params["hash"] = hash_name
    return params


def hll_params(args, like: SketchSet | None = None) -> dict:
    return _resolve_params(args, HLL_DEFAULTS, "fmix64", like)


def min_count_params(args) -> ReadsMinCount:
    """The minimum-count filter (SPEC 7) of the read files sketched by this command (FASTQ
    files, or every sequence file with --min-count-fasta)."""
    defaults = MinCountParams()
    given = {"min_count": args.min_count, "mc_depth": args.mc_depth,
             "mc_width_bits": args.mc_width_bits}
    return ReadsMinCount(**{key: getattr(defaults, key) if value is None else value
                            for key, value in given.items()},
                         fasta=bool(getattr(args, "min_count_fasta", False)))


def jsd_params(args, like: SketchSet | None = None) -> dict:
    params = _resolve_params(args, JSD_DEFAULTS, "murmur3_32", like)
    engine_params("pqa", params)  # validates
    return params


# -- backends and executors -----------------------------------------------------------------

def xclbin(args) -> str | None:
    return getattr(args, "xclbin", None) or os.environ.get("KMER_SKETCH_XCLBIN")


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
    reached through host.backends.xrt_stand_in) instead of XRT's library; --xclbin then names
    a ``python -m hw.build`` output directory."""
    return os.environ.get(STAND_IN_ENV) == "sim"


def backend_of(args, session: Session):
    """The command's backend, made once per run."""
    if session.backend is None:
        session.backend = get_backend(args.backend, xclbin(args),
                                      sim_geometry=getattr(args, "sim_geometry", "small"),
                                      slot=getattr(args, "slot", None) or 0)
    return session.backend


@contextlib.contextmanager
def executor_of(args):
    """This process, a local Dask cluster (--workers) or a scheduler's (--scheduler)."""
    address, workers = getattr(args, "scheduler", None), getattr(args, "workers", None)
    option = getattr(args, "scheduler_option", None) or "--scheduler"
    if address is not None and not address.strip():
        raise InputError(f"{option}: an empty address (give tcp://HOST:PORT, Dask's scheduler "
                         f"address)")
    try:
        executor = make_executor(address, workers)
    except RuntimeError as error:  # dask missing
        raise InputError(str(error)) from None
    except (ValueError, TypeError) as error:  # Dask's parse of the address
        raise InputError(f"{option} {address}: not a Dask scheduler address ({one_line(error)}); "
                         f"give tcp://HOST:PORT") from None
    except OSError as error:
        raise InputError(f"{option} {address}: cannot connect ({one_line(error)})") from None
    try:
        yield executor
    finally:
        executor.close()
