"""Command line: ``python -m host {sketch,dist,merge,info,jsd,motifs} ...``.

Errors in user input print one line naming the file and the problem, exit with status 2, and
leave nothing at the output path.
"""

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import __version__
from .backends import BACKENDS, get_backend
from .golden.hll import HllParams
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


# -- sketch / merge / info ----------------------------------------------------------------

def _hll_params(args) -> dict:
    HllParams(args.p, args.w)  # validates
    if not 1 <= args.k <= 32:
        raise InputError(f"--k must be from 1 to 32, not {args.k}")
    return {"k": args.k, "p": args.p, "w": args.w, "canonical": not args.no_canonical,
            "hash": "fmix64"}


def _sketch_bytes(files: list[bytes], params: dict, backend) -> tuple[np.ndarray, int]:
    hll = HllParams(params["p"], params["w"])
    return backend.sketch_hll(files, params["k"], hll, params["canonical"])


def _sketch_path(path: str, params: dict, backend_name: str) -> tuple[np.ndarray, int]:
    """Sketch one genome file where this runs (a cluster worker reads the file itself)."""
    return _sketch_bytes([read_sequence_file(path)], params, get_backend(backend_name))


def _sketch_sequences(paths: Sequence[str], params: dict, backend_name: str,
                      executor=None) -> SketchSet:
    m = HllParams(params["p"], params["w"]).m
    progress = Progress(len(paths), "sketch")
    if executor is None or isinstance(executor, LocalExecutor):
        backend = get_backend(backend_name)
        results = (_sketch_bytes([data], params, backend)
                   for _, data in read_genomes(paths, progress=progress))
    else:
        results = executor.map_ordered(_sketch_path, paths, params, backend_name)
    registers, counts = [], []
    for sketch, count in results:
        registers.append(sketch)
        counts.append(count)
    progress.close()
    arrays = {"registers": np.stack(registers) if registers else np.zeros((0, m), dtype=np.uint8)}
    return SketchSet(kind="hll", params=params, names=genome_names(paths),
                     files=[[str(p)] for p in paths], kmers=counts, arrays=arrays,
                     origin="the sequence files")


def _command_sketch(args) -> None:
    params = _hll_params(args)
    with _executor(args) as executor:
        sketches = _sketch_sequences(args.files, params, args.backend, executor)
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
        for name, files, count in zip(sketches.names, sketches.files, sketches.kmers):
            print(f"  {name}\t{count} k-mers\t{','.join(files)}")


# -- dist ---------------------------------------------------------------------------------

def _load_inputs(paths: Sequence[str], args, executor) -> SketchSet:
    """Sketch files are read; sequence files are sketched with the command-line parameters."""
    sketch_paths = [p for p in paths if is_sketch_file(p)]
    sequence_paths = [p for p in paths if not is_sketch_file(p)]
    sets = [read_sketches(p) for p in sketch_paths]
    if sequence_paths:
        sets.append(_sketch_sequences(sequence_paths, _hll_params(args), args.backend, executor))
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


def _write_dist(args, sketches: SketchSet, executor) -> None:
    """Stream the matrix (or the kept pairs) tile by tile; hold it whole only for --plot."""
    p, w, k = sketches.params["p"], sketches.params["w"], sketches.params["k"]
    registers = sketches.arrays["registers"]
    names = sketches.names
    n = len(names)
    cards = cardinalities(registers, HllParams(p, w))
    shared_registers, shared_cards = executor.share(registers), executor.share(cards)
    tiles = [range(s, min(s + _ROWS_PER_TILE, n)) for s in range(0, n, _ROWS_PER_TILE)]
    header = _parameter_header("dist", {**dict(sorted(sketches.params.items())),
                                        "metric": args.metric, "threshold": args.threshold})

    def value(j):
        return mash_distance(j, k) if args.metric == "mash" else j

    with atomic_output(args.output) as out:
        if args.format == "edges":
            out.write(header + "\n")
            out.write(f"#genome_a\tgenome_b\t{args.metric}\n")
            for tile in executor.map_ordered(edge_tile, tiles, shared_registers, shared_cards,
                                             p, w, args.threshold):
                for i, js, values in tile:
                    for j, v in zip(js.tolist(), value(values).tolist()):
                        out.write(f"{names[i]}\t{names[j]}\t{v:.6g}\n")
            return
        if args.format == "tsv":
            out.write(header + "\n")
            out.write("#genome\t" + "\t".join(names) + "\n")
        else:
            out.write(f"{n}\n")
        similarity = np.empty((n, n)) if args.plot else None
        for tile, rows in zip(tiles, executor.map_ordered(row_tile, tiles, shared_registers,
                                                          shared_cards, p, w)):
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
        sub.add_argument("--backend", choices=sorted(BACKENDS), default="sw",
                         help="sw: fast software model (default); golden: pure-Python reference")

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

    sketch = commands.add_parser("sketch", help="HyperLogLog sketches of genomes (one per file)")
    sketch.add_argument("files", nargs="+", help="FASTA/FASTQ files, plain or gzip")
    common(sketch)
    hll_options(sketch)
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
