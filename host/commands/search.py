"""``search``: queries against a sketch collection (``--db``), each query's references best
first, without re-sketching the references."""

import numpy as np

from ..estimators import add_estimator_options, block_values, p_value_lines
from ..io import InputError
from ..metrics import METRICS, base_similarity, express, lower_is_better
from .common import Session, check_table_names, parameter_header, row_tiles, warn_saturated
from .inputs import load_inputs, read_sketch_files
from .options import (METRIC_HELP, backend_options, hll_options, min_count_options,
                      new_command, output_option, ranged_int)
from kmerspec.golden.hll import HllParams


def add_parser(commands) -> None:
    search = new_command(commands, "search", "queries against a sketch collection (--db)",
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
    output_option(search, to_stdout=True)
    backend_options(search)
    search.add_argument("--metric", choices=METRICS, default="jaccard", help=METRIC_HELP)
    chosen = search.add_mutually_exclusive_group()
    chosen.add_argument("--top", type=ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="the K best references of each query (default: every reference)")
    chosen.add_argument("--threshold", type=float, default=None, metavar="H",
                        help="the references with value >= H (<= H for mash; ANI in percent; "
                             "default: every reference)")
    hll_options(search, from_sketches=True)
    add_estimator_options(search)
    min_count_options(search)
    search.set_defaults(run=run)


def _threshold_passes(metric: str, values: np.ndarray, threshold: float) -> np.ndarray:
    return values <= threshold if lower_is_better(metric) else values >= threshold


def run(args, session: Session) -> None:
    from ..neighbours import top_of_rows
    from ..similarity import PackedSketches
    if args.threshold is not None:
        high = 100.0 if args.metric == "ani" else 1.0
        if not 0.0 <= args.threshold <= high:
            raise InputError(f"--threshold: must be from 0 to {high:g} for --metric "
                             f"{args.metric}, not {args.threshold}")
    output = session.outputs.open(args.output)
    references, = read_sketch_files([args.db], session)
    if references.kind != "hll":
        raise InputError(f"{references.origin}: --db needs HLL sketches (python -m host "
                         f"sketch), not {references.kind}")
    if not len(references):
        raise InputError(f"{references.origin}: holds no genomes; nothing to search")
    check_table_names(references)
    first = {}
    for index, name in enumerate(references.names):
        if name in first:
            raise InputError(f"{references.origin}: holds two references named {name!r} "
                             f"(genomes {first[name] + 1} and {index + 1}); their results could "
                             f"not be told apart")
        first[name] = index
    queries = load_inputs(args.queries, "hll", "search", args, session, None,
                           reference=references)
    warn_saturated(session, references, queries)
    params = references.params
    k, hll = params["k"], HllParams(params["p"], params["w"])
    n_ref = len(references)
    # One packing of references and queries: query rows meet reference columns.
    packed_registers = np.concatenate([references.arrays["registers"],
                                       queries.arrays["registers"]])
    packed = PackedSketches(packed_registers, hll)
    chosen = {"metric": args.metric, "threshold": args.threshold, "top": args.top,
              "estimator": args.estimator, "detection": args.detection}
    output.write(parameter_header("search", {**dict(sorted(params.items())), **chosen})
                 + "\n")
    output.write(f"#query\treference\t{args.metric}" + "\tp_value" * args.pvalue + "\n")
    progress = session.progress("search", len(queries), "queries")
    columns = np.arange(n_ref)
    for tile in row_tiles(len(queries)):
        rows = np.arange(tile.start, tile.stop) + n_ref
        values = express(args.metric, block_values(packed, hll, rows, columns,
                                                   base_similarity(args.metric), args.estimator,
                                                   args.detection, args.threads), k)
        best = top_of_rows(values, args.top or n_ref, args.metric)
        for q, (found, found_values) in zip(tile, best):
            if args.threshold is not None:
                keep = _threshold_passes(args.metric, found_values, args.threshold)
                found, found_values = found[keep], found_values[keep]
            ps = (p_value_lines(packed, hll, args.estimator, q + n_ref, found, args.threads)
                  if args.pvalue else [""] * len(found))
            output.write("".join(f"{queries.names[q]}\t{references.names[r]}\t{v:.6g}{p}\n"
                                 for r, v, p in zip(found.tolist(), found_values.tolist(), ps)))
        progress.advance(len(tile))
    progress.close()
