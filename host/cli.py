"""Command line: ``python -m host {sketch,dist,search,merge,info,jsd,motifs} ...``.

Every failure the user can cause prints one line ``error: <file or option>: <cause>`` and exits
with status 2 (``--debug`` shows the traceback instead); a bug prints one line asking for
``--debug`` and exits with 1. Outputs (side files and plots included) are written only when the
command succeeds (host.io.Outputs): ``-o -`` is standard output, a FIFO or character device is
written in place, a symlink is followed. Warnings (inputs without k-mers) are gathered into one
line printed at the end of a successful run.
"""

import argparse
import contextlib
import os
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .backends import BACKENDS, get_backend
from .cluster import LocalExecutor, make_executor
from .estimators import (KERNEL_NOTE, add_estimator_options, detection_floor,
                         floor_jaccard_tiles, mle_dist_tiles, mle_query_values,
                         p_value_lines)
from .io import (STDOUT, InputError, Outputs, output_transaction, read_sequence_file,
                 writes_in_place)
from .jsdmatrix import ARITHMETICS
from .plot import plot_format, plot_heatmap
from .progress import Progress, count_bases
from .reader import ReadsMinCount, SequenceFile, read_file_groups, read_genomes
from .metrics import (METRICS, base_similarity, express, lower_is_better, metric_values,
                      pair_similarity, phylip_distance)
from .sketchfile import (SketchSet, engine_params, in_input_order, is_sketch_file, merge,
                         read_sketches, write_sketches)
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import MC_DEPTH, MC_WIDTH_BITS, SAMPLE_SEED

# Start-up is a serial cost of every run (a tenth of sketching 200 Mbases on two threads), so
# the modules of one command's engines (all-pairs, JSD, motifs) are imported when it runs.
if TYPE_CHECKING:
    from kmerspec.golden.motif import MotifParams

__all__ = ["main", "build_parser", "genome_names"]

_ROWS_PER_TILE = 32


@dataclass
class _Session:
    """What one command run shares: its outputs, the terminal for progress, its warnings."""

    outputs: Outputs
    terminal: object
    warnings: list[str] = field(default_factory=list)
    backend: object = None

    def progress(self, label: str, total: int, unit: str = "genomes") -> Progress:
        return Progress(label, total, unit, stream=self.terminal)


def genome_names(paths: Sequence[str]) -> list[str]:
    """File names (without directories); the path as given where two file names collide.

    The same file given twice is refused: its two genomes would carry one name.
    """
    seen: dict[str, str] = {}
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            raise InputError(f"{path}: given twice as input (also as {seen[key]}); give each "
                             f"genome once")
        seen[key] = path
    names = [Path(p).name for p in paths]
    return [name if names.count(name) == 1 else str(p) for name, p in zip(names, paths)]


def _parameter_header(command: str, params: dict) -> str:
    settings = " ".join(f"{key}={value}" for key, value in params.items())
    return f"# kmer-sketch-accel {__version__} {command} {settings}"


def _parameters_file(session: _Session, output: str):
    """PHYLIP has no room for comments: the parameters go to OUTPUT.params beside a regular
    output file (none for standard output, a FIFO or a device)."""
    return None if writes_in_place(output) else session.outputs.open(f"{output}.params")


# -- parameters from options or from the sketch files given -------------------------------

_HLL_DEFAULTS = {"k": 31, "p": 14, "w": 4, "canonical": True}
_JSD_DEFAULTS = {"k": 31, "s": 10, "sample_seed": SAMPLE_SEED.default, "d": 5, "cw": 14, "R": 12,
                 "n": 8, "update": "cu", "canonical": True}


def _option(key: str) -> str:
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
            shown = "--no-canonical" if key == "canonical" else f"{_option(key)} {value}"
            raise InputError(f"{like.origin}: sketched with {key}={stored!r}, but {shown} was "
                             f"given for the sequence files; drop the option or re-sketch")
        params[key] = stored
    params["hash"] = hash_name
    return params


def _hll_params(args, like: SketchSet | None = None) -> dict:
    return _resolve_params(args, _HLL_DEFAULTS, "fmix64", like)


def _min_count_params(args) -> MinCountParams:
    """The minimum-count filter (SPEC 7) of the read files sketched by this command."""
    return ReadsMinCount(min_count=args.min_count, mc_depth=args.mc_depth,
                         mc_width_bits=args.mc_width_bits, fasta=args.min_count_fasta)


def _jsd_params(args, like: SketchSet | None = None) -> dict:
    params = _resolve_params(args, _JSD_DEFAULTS, "murmur3_32", like)
    engine_params("pqa", params)  # validates
    return params


# -- backends and executors -----------------------------------------------------------------

def _xclbin(args) -> str | None:
    return getattr(args, "xclbin", None) or os.environ.get("KMER_SKETCH_XCLBIN")


def _check_backend(args) -> None:
    """Fail on a missing FPGA binary before any input is read (and before XRT is looked for)."""
    backend = getattr(args, "backend", None)
    xclbin = _xclbin(args) if backend == "xrt" else getattr(args, "xclbin", None)
    if backend in ("xrt", "auto") and xclbin and _pyxrt_stand_in():
        if not Path(xclbin).is_dir():
            raise InputError(f"{xclbin}: not a directory (with KMER_SKETCH_PYXRT=sim, --xclbin "
                             "names a python -m hw.build output directory)")
    elif backend in ("xrt", "auto") and xclbin and not Path(xclbin).is_file():
        what = "is not a file" if Path(xclbin).exists() else "no such file"
        raise InputError(f"{xclbin}: {what} (the --xclbin FPGA binary; build one with "
                         f"python -m hw.build and v++)")


def _pyxrt_stand_in() -> bool:
    """``KMER_SKETCH_PYXRT=sim``: the xrt backend drives the pyxrt stand-in (host.device)."""
    return os.environ.get("KMER_SKETCH_PYXRT") == "sim"


def _backend(args, session: _Session):
    if session.backend is None:
        session.backend = get_backend(args.backend, _xclbin(args),
                                      sim_geometry=getattr(args, "sim_geometry", "small"))
    return session.backend


@contextlib.contextmanager
def _executor(args):
    cluster, workers = getattr(args, "cluster", None), getattr(args, "workers", None)
    try:
        executor = make_executor(cluster, workers)
    except RuntimeError as error:  # dask missing
        raise InputError(str(error)) from None
    except OSError as error:
        raise InputError(f"--cluster {cluster}: cannot connect ({error})") from None
    try:
        yield executor
    finally:
        executor.close()


# -- sketching sequence files ----------------------------------------------------------------

def _timed_genomes(paths: Sequence[str], progress: Progress, bases: deque,
                   backend=None) -> Iterable[list]:
    """Genomes for a backend; time spent waiting for the reader is not sketching time.

    A backend that streams files (``streams_files``) gets host.reader.SequenceFile handles
    and reads them itself; each handle then reports its bases once it is sketched.
    """
    if getattr(backend, "streams_files", False):
        for path in paths:
            file = SequenceFile(path)
            bases.append(file)
            yield [file]
        return
    source = read_genomes(paths)
    while True:
        with progress.waiting():
            item = next(source, None)
            if item is None:
                return
            bases.append(count_bases(item[1]))
        yield [item[1]]


def _each_with_progress(results: Iterable, progress: Progress, bases: deque) -> list:
    done = []
    for result in results:
        done.append(result)
        counted = bases.popleft() if bases else 0
        progress.advance(1, counted if isinstance(counted, int) else counted.bases or 0)
    progress.close()
    return done


def _warn_without_kmers(session: _Session, paths: Sequence[str], empty: Sequence[bool],
                        what: str) -> None:
    for path, is_empty in zip(paths, empty):
        if is_empty:
            try:
                cause = "empty file, no k-mers" if os.path.getsize(path) == 0 else what
            except OSError:
                cause = what
            session.warnings.append(f"{path}: {cause}")


def _min_count_arguments(min_count: MinCountParams) -> dict:
    """The backend's min_count argument, given only for m > 1 (SPEC 7)."""
    return {"min_count": min_count} if min_count.active else {}


def _sketch_path(path: str, params: dict, backend_name: str,
                 min_count: MinCountParams = MinCountParams()) -> np.ndarray:
    """Sketch one genome file where this runs (a cluster worker reads the file itself)."""
    hll = HllParams(params["p"], params["w"])
    backend = get_backend(backend_name)
    return next(backend.sketch_hll([[read_sequence_file(path)]], params["k"], hll,
                                   params["canonical"], **_min_count_arguments(min_count)))


def _sketch_sequences(paths: Sequence[str], params: dict, backend, executor=None,
                      session: _Session | None = None, threads: int | None = None,
                      min_count: MinCountParams = MinCountParams()) -> SketchSet:
    names = genome_names(paths)
    groups, note = read_file_groups(paths, min_count)
    if note is not None:  # --min-count filters the FASTQ files only (host.reader.ReadsMinCount)
        print(f"note: {note}", file=sys.stderr)
        parts = [(indices, _sketch_sequences([paths[i] for i in indices], params, backend,
                                             executor, session, threads, group_filter))
                 for indices, group_filter in groups]
        return in_input_order(parts, names, _sequence_origin(paths))
    min_count = groups[0][1]
    hll = HllParams(params["p"], params["w"])
    progress = (session.progress("sketch", len(paths)) if session is not None
                else Progress("sketch", len(paths), enabled=False))
    bases: deque = deque()
    if executor is None or isinstance(executor, LocalExecutor):
        results = backend.sketch_hll(_timed_genomes(paths, progress, bases, backend),
                                     params["k"], hll, params["canonical"], threads=threads,
                                     **_min_count_arguments(min_count))
    else:
        results = executor.map_ordered(_sketch_path, paths, params, backend.name, min_count)
    registers = _each_with_progress(results, progress, bases)
    arrays = {"registers": np.stack(registers) if registers
              else np.zeros((0, hll.m), dtype=np.uint8)}
    if session is not None:
        _warn_without_kmers(session, paths, [not r.any() for r in registers],
                            f"no k-mer of length {params['k']}")
    return SketchSet(kind="hll", params=params, names=names,
                     files=[[str(p)] for p in paths], arrays=arrays,
                     origin=_sequence_origin(paths), from_sequences=True,
                     min_counts=[min_count.record()] * len(paths) if min_count.active else [])


def _sequence_origin(paths: Sequence[str]) -> str:
    shown = ", ".join(str(p) for p in paths[:3])
    return f"the sequence files ({shown}{', ...' if len(paths) > 3 else ''})"


def _pqa_of_path(path: str, params: dict, backend_name: str):
    from .fast.jsd import pqa_to_arrays
    backend = get_backend(backend_name)
    return pqa_to_arrays(next(backend.build_pqa([[read_sequence_file(path)]],
                                                engine_params("pqa", params))))


def _pqa_sequences(paths: Sequence[str], params: dict, backend, executor,
                   session: _Session, threads: int | None = None) -> SketchSet:
    from .fast.jsd import pqa_to_arrays
    names = genome_names(paths)
    shape = (1 << params["R"], params["n"])
    progress = session.progress("pqa", len(paths))
    bases: deque = deque()
    if executor is None or isinstance(executor, LocalExecutor):
        results = (pqa_to_arrays(pqa) for pqa in backend.build_pqa(
            _timed_genomes(paths, progress, bases, backend), engine_params("pqa", params),
            threads=threads))
    else:
        results = executor.map_ordered(_pqa_of_path, paths, params, backend.name)
    done = _each_with_progress(results, progress, bases)
    tags = [genome_tags for genome_tags, _ in done]
    values = [genome_values for _, genome_values in done]
    _warn_without_kmers(session, paths, [not v.any() for v in values],
                        f"no sampled k-mer (k={params['k']}, s={params['s']})")

    def stack(arrays):
        return np.stack(arrays) if arrays else np.zeros((0, *shape), dtype=np.uint32)
    return SketchSet(kind="pqa", params=params, names=names,
                     files=[[str(p)] for p in paths],
                     arrays={"tags": stack(tags), "values": stack(values)},
                     origin=_sequence_origin(paths), from_sequences=True)


def _load_inputs(paths: Sequence[str], kind: str, command: str, args, session: _Session,
                 executor, reference: SketchSet | None = None) -> SketchSet:
    """Sketch files are read; sequence files are sketched with the parameters of the sketch
    files given (of ``reference``, which every input must match, when given), or with the
    command-line ones when there are none."""
    sketch_paths = [p for p in paths if is_sketch_file(p)]
    sequence_paths = [p for p in paths if not is_sketch_file(p)]
    sets = [read_sketches(p) for p in sketch_paths]
    for sketches in sets:
        if sketches.kind != kind:
            hint = " (sketch --kind pqa)" if kind == "pqa" else ""
            raise InputError(f"{sketches.origin}: {command} needs {kind.upper()} sketches"
                             f"{hint}, not {sketches.kind}")
        if reference is not None:
            reference.check_compatible(sketches)
    like = reference or (merge(sets) if sets else None)
    if sequence_paths:
        backend = _backend(args, session)
        if kind == "hll":
            sets.append(_sketch_sequences(sequence_paths, _hll_params(args, like), backend,
                                          executor, session, args.threads,
                                          _min_count_params(args)))
        else:
            sets.append(_pqa_sequences(sequence_paths, _jsd_params(args, like), backend,
                                       executor, session, args.threads))
    combined = merge(sets)
    if not len(combined):
        raise InputError(f"{combined.origin}: holds no genomes; nothing to compare")
    return combined


# -- sketch / merge / info --------------------------------------------------------------------

def _command_sketch(args, session: _Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    with _executor(args) as executor:
        backend = _backend(args, session)
        if args.kind == "pqa":
            if _min_count_params(args).active:
                raise InputError("--min-count: filters HyperLogLog sketches, not --kind pqa")
            sketches = _pqa_sequences(args.files, _jsd_params(args), backend, executor, session,
                                      args.threads)
        else:
            params = _hll_params(args)
            engine_params("hll", params)
            sketches = _sketch_sequences(args.files, params, backend, executor, session,
                                         args.threads, _min_count_params(args))
    write_sketches(output, sketches)


def _command_merge(args, session: _Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    write_sketches(output, merge([read_sketches(p) for p in args.inputs]))


def _command_info(args, session: _Session) -> None:
    from .similarity import cardinalities
    lines = []
    for path in args.inputs:
        sketches = read_sketches(path)
        lines.append(f"{path}: {len(sketches)} {sketches.kind} sketches, "
                     + " ".join(f"{k}={v}" for k, v in sketches.params.items()))
        estimates = (cardinalities(sketches.arrays["registers"],
                                   HllParams(sketches.params["p"], sketches.params["w"]))
                     if sketches.kind == "hll" else [None] * len(sketches))
        for index, (name, files, estimate) in enumerate(zip(sketches.names, sketches.files,
                                                             estimates)):
            size = f"~{estimate:.0f} distinct k-mers\t" if estimate is not None else ""
            record = sketches.min_count(index)
            kept = (f"min_count={record['m']} (Count-Min {record['mc_depth']} x "
                    f"2^{record['mc_width_bits']})\t" if record else "")
            lines.append(f"  {name}\t{size}{kept}{','.join(files)}")
    output = session.outputs.open(STDOUT)
    output.write("".join(line + "\n" for line in lines))


# -- dist -------------------------------------------------------------------------------------

def _command_dist(args, session: _Session) -> None:
    if args.threshold is not None and args.format != "edges":
        raise InputError("--threshold: gives sparse output; use it with --format edges")
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold: must be a Jaccard value from 0 to 1, not {args.threshold}")
    if args.threshold is not None and args.metric == "containment":
        raise InputError("--threshold: prunes by Jaccard, which does not bound containment; "
                         "use --top K with --metric containment")
    if args.top is not None and args.format != "edges":
        raise InputError("--top: gives sparse output (K edges per genome); use it with "
                         "--format edges")
    if args.format == "phylip" and args.metric == "containment":
        raise InputError("--format phylip: needs a symmetric distance, but containment is "
                         "asymmetric; use --format tsv or edges")
    if args.pvalue and args.format != "edges":
        raise InputError("--pvalue: adds a column to --format edges lines; the tsv and phylip "
                         "matrices have no room for it")
    if args.plot and args.format == "edges":
        raise InputError("--plot: draws the full matrix; use it with --format tsv or phylip")
    output = session.outputs.open(args.output)
    parameters = _parameters_file(session, args.output) if args.format == "phylip" else None
    plot = None
    if args.plot:
        image_format = plot_format(args.plot)
        plot = (session.outputs.open(args.plot, binary=True), image_format)
    with _executor(args) as executor:
        sketches = _load_inputs(args.inputs, "hll", "dist", args, session, executor)
        _write_dist(args, session, sketches, executor, output, parameters, plot)


def _row_tiles(n: int) -> list[range]:
    return [range(s, min(s + _ROWS_PER_TILE, n)) for s in range(0, n, _ROWS_PER_TILE)]


def _software_tiles(sketches: SketchSet, executor, args):
    """(edge tiles, row tiles) computed on the host, in this process or on the cluster.

    Edge tiles yield (i, js, values): J for --threshold, the metric for --top. Row tiles yield
    (rows, full rows of the base similarity: J, or C for containment)."""
    from .neighbours import metric_row_tile, top_row_tile
    from .similarity import PackedSketches, all_pairs, edge_tile, row_tile, similarity_row_tiles
    p, w, k = sketches.params["p"], sketches.params["w"], sketches.params["k"]
    params, threads, threshold = HllParams(p, w), args.threads, args.threshold
    packed = PackedSketches(sketches.arrays["registers"], params)
    cards, tiles = packed.cards, _row_tiles(len(sketches))
    base = base_similarity(args.metric)
    floor = detection_floor(args, params)
    if isinstance(executor, LocalExecutor):
        if threshold is not None:  # one run over every core, each pair once
            return [all_pairs(packed, params, threshold, threads=threads)], None
        if args.top is None and base == "jaccard":
            return None, similarity_row_tiles(packed, params, tiles, threads=threads)
    else:
        # On a cluster the workers are the parallelism: one thread per task unless told so.
        packed, threads = executor.share(packed), threads or 1
    if args.top is not None:  # each task: its rows against every genome, K kept per row
        return executor.map_ordered(top_row_tile, tiles, packed, cards, p, w, args.metric, k,
                                    args.top, threads, floor), None
    if threshold is not None:
        return executor.map_ordered(edge_tile, tiles, packed, cards, p, w, threshold,
                                    threads), None
    if base == "jaccard":
        return None, zip(tiles, executor.map_ordered(row_tile, tiles, packed, cards, p, w,
                                                     threads))
    return None, zip(tiles, executor.map_ordered(metric_row_tile, tiles, packed, cards, p, w,
                                                 base, k, threads, floor))


def _kernel_tiles(sketches: SketchSet, backend, args):
    """(edge tiles, row tiles) as _software_tiles, from the similarity kernel's calls: the
    pruned walk for --threshold, else the union estimates of every pair, call by call (--top
    keeps K per genome as the calls complete)."""
    from .neighbours import RunningTopK
    from .similarity import cardinalities
    params = HllParams(sketches.params["p"], sketches.params["w"])
    registers, k, n = sketches.arrays["registers"], sketches.params["k"], len(sketches)
    if args.threshold is not None:
        return [list(backend.all_pairs(registers, params, args.threshold))], None
    cards = cardinalities(registers, params)
    base = base_similarity(args.metric)
    floor = detection_floor(args, params)
    if args.top is not None:
        best = RunningTopK(n, args.top, args.metric)
        for i, j, unions in backend.union_calls(registers, params):
            best.add(i, j, metric_values(args.metric, cards[i], cards[j], unions, k, floor))
            best.add(j, i, metric_values(args.metric, cards[j], cards[i], unions, k, floor))
        return [best.rows()], None
    matrix = np.eye(n)
    for i, j, unions in backend.union_calls(registers, params):
        matrix[i, j] = pair_similarity(base, cards[i], cards[j], unions, floor)
        matrix[j, i] = pair_similarity(base, cards[j], cards[i], unions, floor)
    return None, [(range(n), matrix)]


def _write_dist(args, session: _Session, sketches: SketchSet, executor, out, parameters,
                plot) -> None:
    """Stream the matrix (or the kept pairs) tile by tile; hold it whole only for --plot."""
    k = sketches.params["k"]
    names = sketches.names
    n = len(names)
    backend = _backend(args, session) if args.backend in ("sim", "xrt") else None
    params = HllParams(sketches.params["p"], sketches.params["w"])
    if args.estimator == "mle":
        if hasattr(backend, "all_pairs"):
            print(KERNEL_NOTE, file=session.terminal, flush=True)
        edge_tiles, row_tiles = mle_dist_tiles(sketches.arrays["registers"], params, args.metric,
                                               k, args.threshold, args.top, args.detection)
    elif hasattr(backend, "all_pairs"):
        edge_tiles, row_tiles = _kernel_tiles(sketches, backend, args)
    else:
        edge_tiles, row_tiles = _software_tiles(sketches, executor, args)
    if args.estimator == "hll" and args.top is None and base_similarity(args.metric) == "jaccard":
        edge_tiles, row_tiles = floor_jaccard_tiles(edge_tiles, row_tiles,
                                                    detection_floor(args, params), args.threshold)
    chosen = {"metric": args.metric, "threshold": args.threshold,
              "estimator": args.estimator, "detection": args.detection}
    if args.top is not None:
        chosen["top"] = args.top
    header = _parameter_header("dist", {**dict(sorted(sketches.params.items())), **chosen})
    progress = session.progress("dist", n, "rows")
    base = base_similarity(args.metric)

    if args.format == "edges":
        out.write(header + "\n")
        out.write(f"#genome_a\tgenome_b\t{args.metric}" + "\tp_value" * args.pvalue + "\n")
        if edge_tiles is None:  # every pair (both directions for containment)
            edge_tiles = ([(i, js, row[js]) for i, row in zip(tile, rows)
                           for js in [np.flatnonzero(np.arange(n) > i) if base == "jaccard"
                                      else np.flatnonzero(np.arange(n) != i)]]
                          for tile, rows in row_tiles)
        for tile in edge_tiles:
            for i, js, values in tile:
                if args.top is None:  # J or C; --top gives the metric already
                    values = express(args.metric, values, k)
                ps = (p_value_lines(sketches.arrays["registers"], params, args.estimator, i, js)
                      if args.pvalue else [""] * len(js))
                for j, v, p in zip(js.tolist(), values.tolist(), ps):
                    out.write(f"{names[i]}\t{names[j]}\t{v:.6g}{p}\n")
                progress.advance()
        progress.close()
        return
    if args.format == "tsv":
        out.write(header + "\n")
        out.write("#genome\t" + "\t".join(names) + "\n")
    else:
        out.write(f"{n}\n")
        if parameters is not None:
            parameters.write(header + "\n")
    similarity = np.empty((n, n)) if plot else None
    for tile, rows in row_tiles:
        if similarity is not None:
            similarity[tile.start:tile.stop] = rows
        for i, row in zip(tile, rows):
            values = express(args.metric, row, k)
            if args.format == "tsv":
                out.write(names[i] + "\t" + "\t".join(f"{v:.6g}" for v in values) + "\n")
            else:  # PHYLIP square distance matrix
                distance = phylip_distance(args.metric, values)
                out.write(names[i] + " " + " ".join(f"{v:.6f}" for v in distance) + "\n")
        progress.advance(len(tile))
    progress.close()
    if plot:
        title = "Jaccard" if base == "jaccard" else "containment (row in column)"
        plot_heatmap(similarity, names, plot[0], plot[1], f"{title}, k={k}")


# -- search -----------------------------------------------------------------------------------

def _threshold_passes(metric: str, values: np.ndarray, threshold: float) -> np.ndarray:
    return values <= threshold if lower_is_better(metric) else values >= threshold


def _command_search(args, session: _Session) -> None:
    from .neighbours import top_of_rows
    from .similarity import PackedSketches, union_rows
    if args.threshold is not None:
        high = 100.0 if args.metric == "ani" else 1.0
        if not 0.0 <= args.threshold <= high:
            raise InputError(f"--threshold: must be from 0 to {high:g} for --metric "
                             f"{args.metric}, not {args.threshold}")
    output = session.outputs.open(args.output)
    references = read_sketches(args.db)
    if references.kind != "hll":
        raise InputError(f"{references.origin}: --db needs HLL sketches (python -m host "
                         f"sketch), not {references.kind}")
    if not len(references):
        raise InputError(f"{references.origin}: holds no genomes; nothing to search")
    queries = _load_inputs(args.queries, "hll", "search", args, session, None,
                           reference=references)
    params = references.params
    k, hll = params["k"], HllParams(params["p"], params["w"])
    n_ref = len(references)
    # One packing of references and queries: query rows meet reference columns.
    packed_registers = np.concatenate([references.arrays["registers"],
                                       queries.arrays["registers"]])
    packed = PackedSketches(packed_registers, hll)
    chosen = {"metric": args.metric, "threshold": args.threshold, "top": args.top,
              "estimator": args.estimator, "detection": args.detection}
    output.write(_parameter_header("search", {**dict(sorted(params.items())), **chosen})
                 + "\n")
    output.write(f"#query\treference\t{args.metric}" + "\tp_value" * args.pvalue + "\n")
    progress = session.progress("search", len(queries), "queries")
    columns = np.arange(n_ref)
    for tile in _row_tiles(len(queries)):
        rows = np.arange(tile.start, tile.stop) + n_ref
        if args.estimator == "mle":
            values = express(args.metric, mle_query_values(
                references.arrays["registers"], queries.arrays["registers"][rows - n_ref], hll,
                base_similarity(args.metric), args.detection), k)
        else:
            unions = union_rows(packed, hll, rows, columns, threads=args.threads)
            values = metric_values(args.metric, packed.cards[rows, None],
                                   packed.cards[None, :n_ref], unions, k,
                                   detection_floor(args, hll))
        best = top_of_rows(values, args.top or n_ref, args.metric)
        for q, (found, found_values) in zip(tile, best):
            if args.threshold is not None:
                keep = _threshold_passes(args.metric, found_values, args.threshold)
                found, found_values = found[keep], found_values[keep]
            ps = (p_value_lines(packed_registers, hll, args.estimator, q + n_ref, found)
                  if args.pvalue else [""] * len(found))
            output.write("".join(f"{queries.names[q]}\t{references.names[r]}\t{v:.6g}{p}\n"
                                 for r, v, p in zip(found.tolist(), found_values.tolist(), ps)))
        progress.advance(len(tile))
    progress.close()


# -- jsd --------------------------------------------------------------------------------------

def _command_jsd(args, session: _Session) -> None:
    from .fast.threads import map_in_threads
    from .jsdmatrix import PqaArrays, entropies, jsd_row_tile
    out = session.outputs.open(args.output)
    parameters = _parameters_file(session, args.output) if args.format == "phylip" else None
    with _executor(args) as executor:
        sketches = _load_inputs(args.inputs, "pqa", "jsd", args, session, executor)
        pqas = PqaArrays(sketches.arrays["tags"], sketches.arrays["values"])
        entropy = entropies(pqas)
        n = len(pqas)
        tiles = [range(s, min(s + _ROWS_PER_TILE, n)) for s in range(0, n, _ROWS_PER_TILE)]
        header = _parameter_header("jsd", {**dict(sorted(sketches.params.items())),
                                           "mode": args.mode, "arithmetic": args.arithmetic})
        shared_pqas, shared_entropy = executor.share(pqas), executor.share(entropy)
        if args.format == "tsv":
            out.write(header + "\n")
            out.write("#genome\t" + "\t".join(sketches.names) + "\n")
        else:
            out.write(f"{n}\n")
            if parameters is not None:
                parameters.write(header + "\n")
        progress = session.progress("jsd", n, "rows")
        separator, digits = ("\t", ".6g") if args.format == "tsv" else (" ", ".6f")
        from .jsdmatrix import kernel_row_tiles  # the JSD similarity kernel (sim, xrt)
        kernel_tiles = kernel_row_tiles(_backend(args, session), pqas, tiles, args.mode,
                                        args.arithmetic) if args.backend != "sw" else None
        if kernel_tiles is not None:
            row_tiles = kernel_tiles
        elif isinstance(executor, LocalExecutor):  # row tiles on threads: the loop drops the GIL
            row_tiles = map_in_threads(lambda tile: jsd_row_tile(
                tile, pqas, entropy, args.mode, args.arithmetic), tiles, args.threads)
        else:
            row_tiles = executor.map_ordered(jsd_row_tile, tiles, shared_pqas, shared_entropy,
                                             args.mode, args.arithmetic)
        for tile, rows in zip(tiles, row_tiles):
            for i, row in zip(tile, rows):
                out.write(sketches.names[i] + separator
                          + separator.join(f"{v + 0.0:{digits}}" for v in row) + "\n")
            progress.advance(len(tile))
        progress.close()


# -- motifs -----------------------------------------------------------------------------------

def _parse_thresholds(text: str, kmin: int, kmax: int) -> int | tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--threshold must be an integer or a comma-separated list of "
                         f"integers, not {text!r}") from None
    if len(values) == 1:
        return values[0]
    if len(values) != kmax - kmin + 1:
        raise InputError(f"--threshold lists {len(values)} values for k = {kmin}..{kmax} "
                         f"({kmax - kmin + 1} values needed)")
    return values


def _read_motif_set(paths: Sequence[str], params: "MotifParams", session: _Session,
                    progress: Progress) -> list[bytes]:
    from .fast.kmers import kmer_array
    genome_names(paths)  # the same file twice is refused
    files = []
    for path, data in read_genomes(paths):
        files.append(data)
        progress.advance(1, count_bases(data), show_rate=False)
        if kmer_array(data, params.kmin, params.canonical).size == 0:
            _warn_without_kmers(session, [path], [True], f"no k-mer of length {params.kmin}")
    return files


def _command_motifs(args, session: _Session) -> None:
    from fractions import Fraction
    from kmerspec.golden.motif import MotifParams
    try:
        growth = Fraction(args.growth)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"--growth must be a number, not {args.growth!r}") from None
    params = MotifParams(kmin=args.kmin, kmax=args.kmax, d=args.d, cw=args.cw,
                         thresholds=_parse_thresholds(args.threshold, args.kmin, args.kmax),
                         growth=growth, store_sets=args.store_sets, store_ways=args.store_ways,
                         canonical=args.canonical)
    out = session.outputs.open(args.output)
    backend = _backend(args, session)
    progress = session.progress("motifs: read", len(args.test) + len(args.control), "files")
    test = _read_motif_set(args.test, params, session, progress)
    control = _read_motif_set(args.control, params, session, progress)
    progress.status(f"motifs: counting k = {params.kmin}..{params.kmax} in "
                    f"{progress.bases / 1e6:.2f} Mbases")
    rows = backend.find_motifs(test, control, params, threads=args.threads)
    progress.status(f"motifs: {len(rows)} emerging k-mers, k = {params.kmin}..{params.kmax}, "
                    f"{progress.bases / 1e6:.2f} Mbases in {progress.elapsed_seconds:.1f} s")
    progress.close()
    header = _parameter_header("motifs", {
        "kmin": params.kmin, "kmax": params.kmax, "d": params.d, "cw": params.cw,
        "counter_bits": params.counter_bits, "thresholds": ",".join(map(str, params.thresholds)),
        "growth": str(growth), "store": f"{params.store_sets}x{params.store_ways}",
        "canonical": params.canonical, "h3_seed": hex(params.h3_seed)})
    out.write(header + "\n")
    out.write(f"# test: {' '.join(args.test)}\n# control: {' '.join(args.control)}\n")
    out.write("k\tkmer\ttest_estimate\tcontrol_count\n")
    for row in rows:
        out.write(f"{row.k}\t{row.kmer}\t{row.test_estimate}\t{row.control_count}\n")


# -- parser -----------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line too: ``error: <what>: <cause> (see ... --help)``."""

    def error(self, message: str):
        self.exit(2, f"error: {_one_line(message)} (see {self.prog} --help)\n")


def _ranged_int(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value
    parse.__name__ = "integer"
    return parse


_METRIC_HELP = ("jaccard (default); containment |Q and R| / |Q|, rows (queries) in columns; "
                "ani: 100 (1 - Mash distance), percent; mash: Mash distance")

_OUTPUT_HELP = ("output file; - is standard output. Written only if the command succeeds; a "
                "symlink is followed (its target is replaced), a FIFO or device is written in "
                "place, a regular file is replaced as a whole")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m host",
        description="k-mer sketching (HyperLogLog/Jaccard, Jensen-Shannon, emerging motifs) on "
                    "an FPGA or its bit-exact software models. Input is FASTA or FASTQ, plain or "
                    "gzip, one genome per file, named by its file name (by its path where file "
                    "names collide). Errors print one line and exit with status 2.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show a traceback on errors (default: one line)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def new_command(name, help_text, description=None):
        sub = commands.add_parser(name, help=help_text, description=description or help_text)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show a traceback on errors (default: one line)")
        return sub

    def output_option(sub):
        sub.add_argument("-o", "--output", required=True, metavar="FILE", help=_OUTPUT_HELP)

    def backend_options(sub):
        sub.add_argument("--backend", choices=list(BACKENDS), default="sw",
                         help="sw: fast software model (default); golden: pure-Python "
                              "reference; sim: the RTL kernels in simulation (small inputs; "
                              "simulator output goes to a log file, named if it fails); "
                              "xrt: an FPGA card; auto: xrt if available, else sw")
        sub.add_argument("--xclbin", default=None, metavar="FILE",
                         help="FPGA binary for --backend xrt (.xclbin, or .awsxclbin on F1; "
                              "with KMER_SKETCH_PYXRT=sim, a python -m hw.build output "
                              "directory whose kernels are simulated; default: "
                              "$KMER_SKETCH_XCLBIN)")
        sub.add_argument("--threads", type=_ranged_int(1, 4096), default=None, metavar="N",
                         help="threads of the sw backend; the output is the same for every N "
                              "(default: all cores)")
        sub.add_argument("--sim-geometry", choices=["small", "default"], default="small",
                         help="kernel geometry of --backend sim: small (narrow buses, few "
                              "lanes and pivots; quick to build, the default) or default (the "
                              "geometry python -m hw.build builds; slow to build and run)")

    def cluster_options(sub):
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--cluster", metavar="ADDRESS", default=None,
                           help="run on a Dask scheduler (tcp://host:8786); files must be "
                                "readable by the workers (default: this process)")
        where.add_argument("--workers", type=_ranged_int(1, 4096), default=None, metavar="N",
                           help="run on a local Dask cluster of N worker processes (default: "
                                "this process)")

    def ranged(group, key, low, high, text, like, defaults, **extra):
        """An integer option whose default (None: not given) comes from ``defaults``."""
        default = defaults[key]
        shown = f"{default:#x}" if key == "sample_seed" else default
        group.add_argument(_option(key), type=_ranged_int(low, high), default=None,
                           help=f"{text}, {low}..{high} (default {shown}{like})", **extra)

    def k_and_strand(group, like, defaults):
        ranged(group, "k", 1, 32, "k-mer length", like, defaults)
        group.add_argument("--no-canonical", action="store_true", default=None,
                           help=f"hash forward k-mers instead of canonical ones (default: "
                                f"canonical{like})")

    def hll_options(sub, from_sketches):
        group = sub.add_argument_group("HyperLogLog sketches (SPEC 3)")
        like = ", or that of the sketch files given" if from_sketches else ""
        k_and_strand(group, like, _HLL_DEFAULTS)
        ranged(group, "p", 8, 18, "HLL index bits", like, _HLL_DEFAULTS)
        ranged(group, "w", 4, 8, "HLL register bits", like, _HLL_DEFAULTS)

    def min_count_options(sub):
        group = sub.add_argument_group("Minimum k-mer count, for reads (SPEC 7)")
        group.add_argument("--min-count", type=_ranged_int(1, MinCountParams().max_count),
                           default=1, metavar="M",
                           help="sketch only k-mers whose Count-Min (conservative update) "
                                "count reaches M, 1..255; never drops a k-mer seen M times "
                                "(default 1: every k-mer, no Count-Min)")
        group.add_argument("--mc-depth", type=_ranged_int(MC_DEPTH.low, MC_DEPTH.high),
                           default=MC_DEPTH.default, metavar="D",
                           help=f"Count-Min rows for --min-count, {MC_DEPTH.low}.."
                                f"{MC_DEPTH.high} (default {MC_DEPTH.default})")
        group.add_argument("--mc-width-bits",
                           type=_ranged_int(MC_WIDTH_BITS.low, MC_WIDTH_BITS.high),
                           default=MC_WIDTH_BITS.default, metavar="CW",
                           help=f"log2 counters per Count-Min row for --min-count, "
                                f"{MC_WIDTH_BITS.low}..{MC_WIDTH_BITS.high} (default "
                                f"{MC_WIDTH_BITS.default}); 2^CW should be 3x the reads' "
                                f"distinct k-mers or more, else rare k-mers pass (20: ~350k, a "
                                f"virus; 24: a bacterium at 30x; docs/min_count.md). Memory "
                                f"per genome in flight: 4 x D x 2^CW bytes")
        group.add_argument("--min-count-fasta", action="store_true",
                           help="apply --min-count to FASTA files too (default: to FASTQ read "
                                "files only; a genome's k-mers occur about once each)")

    def jsd_options(sub, with_k, from_sketches):
        group = sub.add_argument_group("JSD engine (SPEC 4)")
        like = ", or that of the sketch files given" if from_sketches else ""
        if with_k:
            k_and_strand(group, like, _JSD_DEFAULTS)
        ranged(group, "s", 0, 32, "sampling: keep k-mers whose hash has s low zero bits", like,
               _JSD_DEFAULTS)
        ranged(group, "sample_seed", 0, (1 << 32) - 1, "seed of the sampling hash, decimal or "
               "0x hex", like, _JSD_DEFAULTS, metavar="SEED")
        ranged(group, "d", 1, 16, "Count-Min rows", like, _JSD_DEFAULTS)
        ranged(group, "cw", 1, 24, "log2 counters per Count-Min row", like, _JSD_DEFAULTS)
        ranged(group, "R", 0, 24, "log2 PQA queues", like, _JSD_DEFAULTS)
        ranged(group, "n", 1, 64, "entries per queue", like, _JSD_DEFAULTS)
        group.add_argument("--update", choices=("cu", "cm"), default=None,
                           help=f"Count-Min update: cu conservative or cm plain (default "
                                f"cu{like})")

    sketch = new_command("sketch", "sketches of genomes (one per file)")
    sketch.add_argument("files", nargs="+", metavar="FILE",
                        help="FASTA/FASTQ files, plain or gzip; one genome per file")
    sketch.add_argument("--kind", choices=("hll", "pqa"), default="hll",
                        help="hll: HyperLogLog for dist (default); pqa: priority queues for jsd")
    output_option(sketch)
    backend_options(sketch)
    hll_options(sketch, from_sketches=False)
    min_count_options(sketch)
    jsd_options(sketch, with_k=False, from_sketches=False)
    cluster_options(sketch)
    sketch.set_defaults(run=_command_sketch)

    def matrix_command(name, help_text, measure, kind, formats):
        sub = new_command(name, help_text,
                          f"{measure} from {kind} sketch files and/or FASTA/FASTQ files; "
                          f"sequence files are sketched with the parameters of the sketch "
                          f"files given, else with the options below.")
        sub.add_argument("inputs", nargs="+", metavar="FILE",
                         help=f"{kind} sketch files and/or FASTA/FASTQ files")
        output_option(sub)
        backend_options(sub)
        sub.add_argument("--format", choices=formats, default="tsv",
                         help="tsv: matrix with a parameter header (default); phylip: square "
                              "matrix, parameters in OUTPUT.params (not written for -o -, a "
                              "FIFO or a device)" + ("; edges: one line per pair kept by "
                                                     "--threshold" if "edges" in formats else ""))
        return sub

    dist = matrix_command("dist", "all-pairs Jaccard from sketch or sequence files",
                          "All-pairs Jaccard (or containment, ANI, Mash distance)", "HLL",
                          ("tsv", "phylip", "edges"))
    dist.add_argument("--metric", choices=METRICS, default="jaccard", help=_METRIC_HELP
                      + "; PHYLIP gets 1 - J, D or 1 - ANI/100 (not containment)")
    sparse = dist.add_mutually_exclusive_group()
    sparse.add_argument("--threshold", type=float, default=None,
                        help="report only pairs with Jaccard >= h, 0..1 (pruned; needs --format "
                             "edges; not with containment; default: none)")
    sparse.add_argument("--top", type=_ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="report each genome's K best others by the metric, best first, "
                             "ties by input order, without holding the matrix (needs --format "
                             "edges; default: every pair)")
    dist.add_argument("--plot", metavar="IMAGE", default=None,
                      help="also draw a clustered heatmap of the Jaccard matrix; the suffix "
                           "picks the format (png, svg, pdf, ...; default: no plot)")
    hll_options(dist, from_sketches=True)
    add_estimator_options(dist)
    min_count_options(dist)
    cluster_options(dist)
    dist.set_defaults(run=_command_dist)

    search = new_command("search", "queries against a sketch collection (--db)",
                         "Compare queries (FASTA/FASTQ files, sketched with the parameters of "
                         "--db, or HLL sketch files made with them) with every reference of a "
                         "sketch file, without re-sketching the references. Output: TSV lines "
                         "query, reference, value, each query's references best first (ties "
                         "in --db order). --backend sketches the sequence files; the "
                         "comparisons run on the host (native, --threads).")
    search.add_argument("queries", nargs="+", metavar="QUERY",
                        help="HLL sketch files and/or FASTA/FASTQ files; one query per genome")
    search.add_argument("--db", required=True, metavar="SKETCH",
                        help="the references: a sketch file from sketch or merge")
    output_option(search)
    backend_options(search)
    search.add_argument("--metric", choices=METRICS, default="jaccard", help=_METRIC_HELP)
    chosen = search.add_mutually_exclusive_group()
    chosen.add_argument("--top", type=_ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="the K best references of each query (default: every reference)")
    chosen.add_argument("--threshold", type=float, default=None, metavar="H",
                        help="the references with value >= H (<= H for mash; ANI in percent; "
                             "default: every reference)")
    hll_options(search, from_sketches=True)
    add_estimator_options(search)
    min_count_options(search)
    search.set_defaults(run=_command_search)

    jsd = matrix_command("jsd", "all-pairs Jensen-Shannon divergence",
                         "All-pairs Jensen-Shannon divergence", "PQA (sketch --kind pqa)",
                         ("tsv", "phylip"))
    jsd.add_argument("--mode", choices=("textbook", "counts"), default="textbook",
                     help="textbook JSD in [0, 1] (default) or the thesis' pooled raw counts")
    jsd.add_argument("--arithmetic", choices=ARITHMETICS, default="float",
                     help="float64 (default) or the bit-exact fixed-point hardware JSD unit")
    jsd_options(jsd, with_k=True, from_sketches=True)
    cluster_options(jsd)
    jsd.set_defaults(run=_command_jsd)

    motifs = new_command("motifs", "emerging motifs: frequent in test, rare in control")
    motifs.add_argument("--test", nargs="+", required=True, metavar="FILE",
                        help="test set FASTA/FASTQ files (k-mers counted together)")
    motifs.add_argument("--control", nargs="+", required=True, metavar="FILE",
                        help="control set FASTA/FASTQ files")
    output_option(motifs)
    backend_options(motifs)
    motifs.add_argument("--kmin", type=_ranged_int(1, 32), default=10,
                        help="shortest k-mer length, 1..32 (default %(default)s)")
    motifs.add_argument("--kmax", type=_ranged_int(1, 32), default=20,
                        help="longest k-mer length, kmin..32 (default %(default)s)")
    motifs.add_argument("--threshold", default="10",
                        help="T_k: report k-mers estimated at least T_k times in the test set; "
                             "one value for every k, or kmax-kmin+1 comma-separated values "
                             "(default %(default)s)")
    motifs.add_argument("--growth", default="2",
                        help="g: emerging iff estimate >= g * control count (a multiple of "
                             "1/256; default %(default)s)")
    motifs.add_argument("--d", type=_ranged_int(1, 16), default=4,
                        help="Count-Min rows per k, 1..16 (default %(default)s)")
    motifs.add_argument("--cw", type=_ranged_int(1, 24), default=14,
                        help="log2 counters per row, 1..24 (default %(default)s)")
    motifs.add_argument("--store-sets", type=_ranged_int(1, 1 << 16), default=64,
                        help="sets of the heavy-hitter store per k, a power of two (default "
                             "%(default)s)")
    motifs.add_argument("--store-ways", type=_ranged_int(1, 64), default=4,
                        help="ways of each heavy-hitter store set, 1..64 (default %(default)s)")
    motifs.add_argument("--canonical", action="store_true",
                        help="count canonical k-mers (default: strand-specific)")
    motifs.set_defaults(run=_command_motifs)

    merge_cmd = new_command("merge", "merge compatible sketch files into one",
                            "Merge sketch files made with equal parameters into one (genome "
                            "names must differ).")
    merge_cmd.add_argument("inputs", nargs="+", metavar="SKETCH",
                           help="sketch files (from sketch or merge), all of one kind and "
                                "parameters")
    output_option(merge_cmd)
    merge_cmd.set_defaults(run=_command_merge)

    info = new_command("info", "print the parameters and genomes of sketch files")
    info.add_argument("inputs", nargs="+", metavar="SKETCH",
                      help="sketch files; prints parameters, then per genome its name, "
                           "estimated distinct k-mers (HLL) and source files")
    info.set_defaults(run=_command_info)
    return parser


# -- running a command ------------------------------------------------------------------------

def _one_line(text) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def _simulator_log(args):
    """With --backend sim (or xrt on the pyxrt stand-in), the simulator's output (Verilator
    warnings, build lines) goes to a log file instead of the terminal; the log is kept and named
    only if the command fails.

    Yields the stream progress lines go to (the terminal's standard error)."""
    backend = getattr(args, "backend", None)
    if backend != "sim" and not (backend in ("xrt", "auto") and _pyxrt_stand_in()):
        yield sys.stderr
        return
    directory = Path(tempfile.gettempdir()) / "kmer-sketch-sim"
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / f"host-{args.command}-{os.getpid()}.log"
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    terminal = os.fdopen(os.dup(2), "w")
    python_streams = sys.stdout, sys.stderr
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
        try:
            yield terminal
        except Exception as error:
            log.flush()
            if log_path.stat().st_size:
                error.simulator_log = log_path
            else:
                log_path.unlink(missing_ok=True)
            raise
        else:
            log_path.unlink(missing_ok=True)
        finally:
            log.flush()
            sys.stdout, sys.stderr = python_streams
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            terminal.close()


def _simulator_failure(error: BaseException) -> bool:
    runner = sys.modules.get("sim.runner")
    return runner is not None and isinstance(error, runner.CocotbFailure)


def _error_message(error: BaseException) -> tuple[str, int]:
    """The one line for ``error`` and the exit status (2: the user's to fix; 1: a bug)."""
    from .device import DeviceError
    log = getattr(error, "simulator_log", None)
    if _simulator_failure(error):
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return f"--backend sim: the simulation failed ({_one_line(first)}); simulator output " \
               f"in {log}", 2
    if isinstance(error, (InputError, DeviceError, ValueError)):
        message = _one_line(error)
        return (f"{message} (simulator output in {log})" if log else message), 2
    if isinstance(error, MemoryError):
        return "out of memory (inputs or parameters too large for this machine)", 2
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or _one_line(error)}", 2
    return (f"internal error ({type(error).__name__}: {_one_line(error)}); rerun with --debug "
            f"for the traceback and report it"), 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    session = None
    try:
        _check_backend(args)
        with output_transaction() as outputs:
            with _simulator_log(args) as terminal:
                session = _Session(outputs, terminal)
                args.run(args, session)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        message, status = _error_message(error)
        print(f"error: {message}", file=sys.stderr)
        return status
    if len(session.warnings) == 1:
        print(f"warning: {_one_line(session.warnings[0])}", file=sys.stderr)
    elif session.warnings:
        print(f"warning: {len(session.warnings)} inputs have no k-mers: "
              f"{_one_line('; '.join(session.warnings))}", file=sys.stderr)
    return 0
