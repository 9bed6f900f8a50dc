"""Command line: ``python -m host {sketch,dist,merge,info,jsd,motifs} ...``.

Errors in user input print one line naming the file and the problem, exit with status 2, and
leave nothing at the output path.
"""

import argparse
import contextlib
from fractions import Fraction
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import __version__
from .backends import BACKENDS, get_backend
from .fast.jsd import pqa_to_arrays
from kmerspec.golden.hll import HllParams
from kmerspec.golden.jsd import JsdParams
from kmerspec.golden.motif import MotifParams
from .jsdmatrix import ARITHMETICS, PqaArrays, entropies, jsd_row_tile
from .cluster import LocalExecutor, make_executor
from .io import InputError, atomic_output, read_sequence_file
from .reader import Progress, read_genomes
from .plot import plot_heatmap
from .similarity import cardinalities, edge_tile, mash_distance, row_tile
from .sketchfile import SketchSet, is_sketch_file, merge, read_sketches, write_sketches

__all__ = ["main", "build_parser", "genome_names"]


def genome_names(paths: Sequence[str]) -> list[str]:
    """File names (without directories); the path as given where two file names collide."""
    names = [Path(p).name for p in paths]
    return [name if names.count(name) == 1 else str(p) for name, p in zip(names, paths)]


def _parameter_header(command: str, params: dict) -> str:
    settings = " ".join(f"{key}={value}" for key, value in params.items())
    return f"# kmer-sketch-accel {__version__} {command} {settings}"


def _write_parameters_beside(output: str, header: str) -> None:
    """PHYLIP has no room for comments: the parameters go to OUTPUT.params beside it."""
    with atomic_output(f"{output}.params") as sidecar:
        sidecar.write(header + "\n")


# -- sketch / merge / info ----------------------------------------------------------------

def _hll_params(args) -> dict:
    HllParams(args.p, args.w)  # validates
    if not 1 <= args.k <= 32:
        raise InputError(f"--k must be from 1 to 32, not {args.k}")
    return {"k": args.k, "p": args.p, "w": args.w, "canonical": not args.no_canonical,
            "hash": "fmix64"}


def _backend(args):
    return get_backend(args.backend, getattr(args, "xclbin", None))


def _sketch_path(path: str, params: dict, backend_name: str) -> np.ndarray:
    """Sketch one genome file where this runs (a cluster worker reads the file itself)."""
    hll = HllParams(params["p"], params["w"])
    backend = get_backend(backend_name)
    return next(backend.sketch_hll([[read_sequence_file(path)]], params["k"], hll,
                                   params["canonical"]))


def _sketch_sequences(paths: Sequence[str], params: dict, args, executor=None) -> SketchSet:
    hll = HllParams(params["p"], params["w"])
    progress = Progress(len(paths), "sketch")
    if executor is None or isinstance(executor, LocalExecutor):
        genomes = ([data] for _, data in read_genomes(paths, progress=progress))
        results = _backend(args).sketch_hll(genomes, params["k"], hll, params["canonical"])
    else:
        results = executor.map_ordered(_sketch_path, paths, params, args.backend)
    registers = list(results)
    progress.close()
    arrays = {"registers": np.stack(registers) if registers
              else np.zeros((0, hll.m), dtype=np.uint8)}
    return SketchSet(kind="hll", params=params, names=genome_names(paths),
                     files=[[str(p)] for p in paths], arrays=arrays,
                     origin="the sequence files")


def _command_sketch(args) -> None:
    with _executor(args) as executor:
        if args.kind == "pqa":
            sketches = _pqa_sequences(args.files, _jsd_params(args), args, executor)
        else:
            sketches = _sketch_sequences(args.files, _hll_params(args), args, executor)
    write_sketches(args.output, sketches)


@contextlib.contextmanager
def _executor(args):
    executor = make_executor(getattr(args, "cluster", None), getattr(args, "workers", None))
    try:
        yield executor
    finally:
        executor.close()


def _command_merge(args) -> None:
    write_sketches(args.output, merge([read_sketches(p) for p in args.inputs]))


def _command_info(args) -> None:
    for path in args.inputs:
        sketches = read_sketches(path)
        print(f"{path}: {len(sketches)} {sketches.kind} sketches, "
              + " ".join(f"{k}={v}" for k, v in sketches.params.items()))
        estimates = (cardinalities(sketches.arrays["registers"],
                                   HllParams(sketches.params["p"], sketches.params["w"]))
                     if sketches.kind == "hll" else [None] * len(sketches))
        for name, files, estimate in zip(sketches.names, sketches.files, estimates):
            size = f"~{estimate:.0f} distinct k-mers\t" if estimate is not None else ""
            print(f"  {name}\t{size}{','.join(files)}")


# -- dist ---------------------------------------------------------------------------------

def _load_inputs(paths: Sequence[str], args, executor) -> SketchSet:
    """Sketch files are read; sequence files are sketched with the command-line parameters."""
    sketch_paths = [p for p in paths if is_sketch_file(p)]
    sequence_paths = [p for p in paths if not is_sketch_file(p)]
    sets = [read_sketches(p) for p in sketch_paths]
    if sequence_paths:
        sets.append(_sketch_sequences(sequence_paths, _hll_params(args), args, executor))
    combined = merge(sets)
    if combined.kind != "hll":
        raise InputError(f"{combined.origin}: dist needs HLL sketches, not {combined.kind}")
    return combined


_ROWS_PER_TILE = 32


def _command_dist(args) -> None:
    if args.threshold is not None and args.format != "edges":
        raise InputError("--threshold gives sparse output: use it with --format edges")
    if args.plot and args.format == "edges":
        raise InputError("--plot draws the full matrix: use it with --format tsv or phylip")
    with _executor(args) as executor:
        sketches = _load_inputs(args.inputs, args, executor)
        _write_dist(args, sketches, executor)


def _software_tiles(sketches: SketchSet, executor, threshold):
    """(edge tiles, row tiles) computed on the host, in this process or on the cluster."""
    p, w = sketches.params["p"], sketches.params["w"]
    registers = sketches.arrays["registers"]
    n = len(sketches)
    cards = cardinalities(registers, HllParams(p, w))
    shared_registers, shared_cards = executor.share(registers), executor.share(cards)
    tiles = [range(s, min(s + _ROWS_PER_TILE, n)) for s in range(0, n, _ROWS_PER_TILE)]
    if threshold is not None:
        return executor.map_ordered(edge_tile, tiles, shared_registers, shared_cards, p, w,
                                    threshold), None
    return None, zip(tiles, executor.map_ordered(row_tile, tiles, shared_registers,
                                                 shared_cards, p, w))


def _kernel_tiles(sketches: SketchSet, backend, threshold):
    """(edge tiles, row tiles) from the similarity kernel's pairs (host.allpairs)."""
    params = HllParams(sketches.params["p"], sketches.params["w"])
    pairs = backend.all_pairs(sketches.arrays["registers"], params, threshold)
    if threshold is not None:
        return [list(pairs)], None
    n = len(sketches)
    matrix = np.eye(n)
    for i, js, values in pairs:
        matrix[i, js] = matrix[js, i] = values
    return None, [(range(n), matrix)]


def _write_dist(args, sketches: SketchSet, executor) -> None:
    """Stream the matrix (or the kept pairs) tile by tile; hold it whole only for --plot."""
    k = sketches.params["k"]
    names = sketches.names
    n = len(names)
    backend = _backend(args) if args.backend in ("sim", "xrt") else None
    if hasattr(backend, "all_pairs"):
        edge_tiles, row_tiles = _kernel_tiles(sketches, backend, args.threshold)
    else:
        edge_tiles, row_tiles = _software_tiles(sketches, executor, args.threshold)
    header = _parameter_header("dist", {**dict(sorted(sketches.params.items())),
                                        "metric": args.metric, "threshold": args.threshold})

    def value(j):
        return mash_distance(j, k) if args.metric == "mash" else j

    with atomic_output(args.output) as out:
        if args.format == "edges":
            out.write(header + "\n")
            out.write(f"#genome_a\tgenome_b\t{args.metric}\n")
            for tile in edge_tiles:
                for i, js, values in tile:
                    for j, v in zip(js.tolist(), value(values).tolist()):
                        out.write(f"{names[i]}\t{names[j]}\t{v:.6g}\n")
            return
        if args.format == "tsv":
            out.write(header + "\n")
            out.write("#genome\t" + "\t".join(names) + "\n")
        else:
            out.write(f"{n}\n")
            _write_parameters_beside(args.output, header)
        similarity = np.empty((n, n)) if args.plot else None
        for tile, rows in row_tiles:
            if similarity is not None:
                similarity[tile.start:tile.stop] = rows
            for i, row in zip(tile, rows):
                if args.format == "tsv":
                    out.write(names[i] + "\t" + "\t".join(f"{v:.6g}" for v in value(row)) + "\n")
                else:  # PHYLIP square distance matrix; Jaccard similarity becomes 1 - J
                    distance = 1.0 - row if args.metric == "jaccard" else value(row)
                    out.write(names[i] + " " + " ".join(f"{v:.6f}" for v in distance) + "\n")
        if similarity is not None:
            plot_heatmap(similarity, names, args.plot, f"Jaccard, k={k}")


# -- jsd ----------------------------------------------------------------------------------

def _jsd_params(args) -> dict:
    params = {"k": args.k, "s": args.s, "sample_seed": args.sample_seed, "d": args.d,
              "cw": args.cw, "R": args.R, "n": args.n, "update": args.update,
              "canonical": not args.no_canonical, "hash": "murmur3_32"}
    _jsd_engine_params(params)  # validates
    return params


def _jsd_engine_params(params: dict) -> JsdParams:
    return JsdParams(**{key: value for key, value in params.items() if key != "hash"})


def _pqa_of_path(path: str, params: dict, backend_name: str):
    backend = get_backend(backend_name)
    return pqa_to_arrays(next(backend.build_pqa([[read_sequence_file(path)]],
                                                _jsd_engine_params(params))))


def _pqa_sequences(paths: Sequence[str], params: dict, args, executor=None) -> SketchSet:
    shape = (1 << params["R"], params["n"])
    progress = Progress(len(paths), "pqa")
    if executor is None or isinstance(executor, LocalExecutor):
        genomes = ([data] for _, data in read_genomes(paths, progress=progress))
        results = (pqa_to_arrays(pqa) for pqa in
                   _backend(args).build_pqa(genomes, _jsd_engine_params(params)))
    else:
        results = executor.map_ordered(_pqa_of_path, paths, params, args.backend)
    tags, values = [], []
    for genome_tags, genome_values in results:
        tags.append(genome_tags)
        values.append(genome_values)
    progress.close()

    def stack(arrays):
        return np.stack(arrays) if arrays else np.zeros((0, *shape), dtype=np.uint32)
    return SketchSet(kind="pqa", params=params, names=genome_names(paths),
                     files=[[str(p)] for p in paths],
                     arrays={"tags": stack(tags), "values": stack(values)},
                     origin="the sequence files")


def _command_jsd(args) -> None:
    with _executor(args) as executor:
        sketch_paths = [p for p in args.inputs if is_sketch_file(p)]
        sequence_paths = [p for p in args.inputs if not is_sketch_file(p)]
        sets = [read_sketches(p) for p in sketch_paths]
        if sequence_paths:
            sets.append(_pqa_sequences(sequence_paths, _jsd_params(args), args, executor))
        sketches = merge(sets)
        if sketches.kind != "pqa":
            raise InputError(f"{sketches.origin}: jsd needs PQA sketches (sketch --kind pqa), "
                             f"not {sketches.kind}")
        pqas = PqaArrays(sketches.arrays["tags"], sketches.arrays["values"])
        entropy = entropies(pqas)
        n = len(pqas)
        tiles = [range(s, min(s + _ROWS_PER_TILE, n)) for s in range(0, n, _ROWS_PER_TILE)]
        header = _parameter_header("jsd", {**dict(sorted(sketches.params.items())),
                                           "mode": args.mode, "arithmetic": args.arithmetic})
        shared_pqas, shared_entropy = executor.share(pqas), executor.share(entropy)
        with atomic_output(args.output) as out:
            if args.format == "tsv":
                out.write(header + "\n")
                out.write("#genome\t" + "\t".join(sketches.names) + "\n")
            else:
                out.write(f"{n}\n")
                _write_parameters_beside(args.output, header)
            for tile, rows in zip(tiles, executor.map_ordered(
                    jsd_row_tile, tiles, shared_pqas, shared_entropy, args.mode, args.arithmetic)):
                for i, row in zip(tile, rows):
                    separator, digits = ("\t", ".6g") if args.format == "tsv" else (" ", ".6f")
                    out.write(sketches.names[i] + separator
                              + separator.join(f"{v:{digits}}" for v in row) + "\n")


# -- motifs -------------------------------------------------------------------------------

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


def _command_motifs(args) -> None:
    try:
        growth = Fraction(args.growth)
    except ValueError:
        raise InputError(f"--growth must be a number, not {args.growth!r}") from None
    params = MotifParams(kmin=args.kmin, kmax=args.kmax, d=args.d, cw=args.cw,
                         thresholds=_parse_thresholds(args.threshold, args.kmin, args.kmax),
                         growth=growth, store_sets=args.store_sets, store_ways=args.store_ways,
                         canonical=args.canonical)
    test = [data for _, data in read_genomes(args.test)]
    control = [data for _, data in read_genomes(args.control)]
    rows = _backend(args).find_motifs(test, control, params)
    header = _parameter_header("motifs", {
        "kmin": params.kmin, "kmax": params.kmax, "d": params.d, "cw": params.cw,
        "counter_bits": params.counter_bits, "thresholds": ",".join(map(str, params.thresholds)),
        "growth": str(growth), "store": f"{params.store_sets}x{params.store_ways}",
        "canonical": params.canonical, "h3_seed": hex(params.h3_seed)})
    with atomic_output(args.output) as out:
        out.write(header + "\n")
        out.write(f"# test: {' '.join(args.test)}\n# control: {' '.join(args.control)}\n")
        out.write("k\tkmer\ttest_estimate\tcontrol_count\n")
        for row in rows:
            out.write(f"{row.k}\t{row.kmer}\t{row.test_estimate}\t{row.control_count}\n")


# -- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m host",
        description="k-mer sketching (HyperLogLog/Jaccard, Jensen-Shannon, emerging motifs) on "
                    "an FPGA or its bit-exact software models.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub):
        sub.add_argument("-o", "--output", required=True, help="output file")
        sub.add_argument("--backend", choices=list(BACKENDS), default="sw",
                         help="sw: fast software model (default); golden: pure-Python "
                              "reference; sim: the RTL kernels in simulation (small inputs); "
                              "xrt: an FPGA card; auto: xrt if available, else sw")
        sub.add_argument("--xclbin", default=None,
                         help="FPGA binary for --backend xrt (.xclbin, or .awsxclbin on F1)")

    def cluster_options(sub):
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--cluster", metavar="ADDRESS", default=None,
                           help="run on a Dask scheduler (tcp://host:8786); files must be "
                                "readable by the workers")
        where.add_argument("--workers", type=int, default=None, metavar="N",
                           help="run on a local Dask cluster of N worker processes")

    def hll_options(sub):
        sub.add_argument("--k", type=int, default=31, help="k-mer length, 1..32 (default 31)")
        sub.add_argument("--p", type=int, default=14, help="HLL index bits, 8..18 (default 14)")
        sub.add_argument("--w", type=int, default=4, help="HLL register bits, 4..8 (default 4)")
        sub.add_argument("--no-canonical", action="store_true",
                         help="hash forward k-mers instead of canonical ones")

    def jsd_options(sub, with_k):
        group = sub.add_argument_group("JSD engine (SPEC 4)")
        if with_k:
            group.add_argument("--k", type=int, default=31, help="k-mer length (default 31)")
            group.add_argument("--no-canonical", action="store_true",
                               help="forward k-mers instead of canonical ones")
        group.add_argument("--s", type=int, default=10,
                           help="sampling: keep k-mers whose hash has s low zero bits (default 10)")
        group.add_argument("--sample-seed", type=lambda t: int(t, 0), default=0x5A4D5053)
        group.add_argument("--d", type=int, default=5, help="Count-Min rows (default 5)")
        group.add_argument("--cw", type=int, default=14, help="log2 counters per row (default 14)")
        group.add_argument("--R", type=int, default=12, help="log2 PQA queues (default 12)")
        group.add_argument("--n", type=int, default=8, help="entries per queue (default 8)")
        group.add_argument("--update", choices=("cu", "cm"), default="cu",
                           help="Count-Min update: conservative (default) or plain")

    sketch = commands.add_parser("sketch", help="sketches of genomes (one per file)")
    sketch.add_argument("files", nargs="+", help="FASTA/FASTQ files, plain or gzip")
    sketch.add_argument("--kind", choices=("hll", "pqa"), default="hll",
                        help="hll: HyperLogLog for dist (default); pqa: priority queues for jsd")
    common(sketch)
    hll_options(sketch)
    jsd_options(sketch, with_k=False)
    cluster_options(sketch)
    sketch.set_defaults(run=_command_sketch)

    dist = commands.add_parser("dist", help="all-pairs Jaccard from sketch or sequence files")
    dist.add_argument("inputs", nargs="+", help="sketch files and/or FASTA/FASTQ files")
    common(dist)
    hll_options(dist)
    cluster_options(dist)
    dist.add_argument("--format", choices=("tsv", "phylip", "edges"), default="tsv")
    dist.add_argument("--metric", choices=("jaccard", "mash"), default="jaccard",
                      help="jaccard similarity (default) or Mash distance")
    dist.add_argument("--threshold", type=float, default=None,
                      help="report only pairs with Jaccard >= h (pruned; needs --format edges)")
    dist.add_argument("--plot", metavar="IMAGE", default=None,
                      help="also draw a clustered heatmap of the Jaccard matrix (png, svg, pdf)")
    dist.set_defaults(run=_command_dist)

    jsd = commands.add_parser("jsd", help="all-pairs Jensen-Shannon divergence")
    jsd.add_argument("inputs", nargs="+", help="PQA sketch files and/or FASTA/FASTQ files")
    common(jsd)
    jsd_options(jsd, with_k=True)
    cluster_options(jsd)
    jsd.add_argument("--format", choices=("tsv", "phylip"), default="tsv")
    jsd.add_argument("--mode", choices=("textbook", "counts"), default="textbook",
                     help="textbook JSD in [0, 1] (default) or the thesis' pooled raw counts")
    jsd.add_argument("--arithmetic", choices=ARITHMETICS, default="float",
                     help="float64 (default) or the bit-exact fixed-point hardware JSD unit")
    jsd.set_defaults(run=_command_jsd)

    motifs = commands.add_parser("motifs", help="emerging motifs: frequent in test, rare in control")
    motifs.add_argument("--test", nargs="+", required=True, help="test set FASTA/FASTQ files")
    motifs.add_argument("--control", nargs="+", required=True, help="control set files")
    common(motifs)
    motifs.add_argument("--kmin", type=int, default=10)
    motifs.add_argument("--kmax", type=int, default=20)
    motifs.add_argument("--threshold", default="10",
                        help="T_k: one value for every k, or kmax-kmin+1 comma-separated values")
    motifs.add_argument("--growth", default="2",
                        help="g: emerging iff estimate >= g * control count (multiple of 1/256)")
    motifs.add_argument("--d", type=int, default=4, help="Count-Min rows per k (default 4)")
    motifs.add_argument("--cw", type=int, default=14, help="log2 counters per row (default 14)")
    motifs.add_argument("--store-sets", type=int, default=64)
    motifs.add_argument("--store-ways", type=int, default=4)
    motifs.add_argument("--canonical", action="store_true",
                        help="count canonical k-mers (default: strand-specific)")
    motifs.set_defaults(run=_command_motifs)

    merge_cmd = commands.add_parser("merge", help="merge compatible sketch files")
    merge_cmd.add_argument("inputs", nargs="+")
    merge_cmd.add_argument("-o", "--output", required=True)
    merge_cmd.set_defaults(run=_command_merge)

    info = commands.add_parser("info", help="print the parameters and genomes of sketch files")
    info.add_argument("inputs", nargs="+")
    info.set_defaults(run=_command_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
