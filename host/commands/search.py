"""``search``: queries against a sketch collection (``--db``), each query's references best
first, without re-sketching the references."""

from ..choices import METRICS
from ..io import InputError
from ..metrics import passes, threshold_problem, threshold_text
from .collections import collection_options
from .common import Session, load_inputs, parameter_header, warn_saturated
from .options import (METRIC_HELP, add_estimator_options, ani_options, ani_source,
                      backend_options, hll_options, min_count_options, new_command,
                      output_option, plain_float, ranged_int)


def add_parser(commands) -> None:
    search = new_command(commands, "search", "queries against a sketch collection (--db)",
                         "Compare queries (FASTA/FASTQ files, sketched with the parameters of "
                         "--db, or HLL sketch files made with them) with every reference of a "
                         "sketch file, without re-sketching the references. Output: TSV lines "
                         "query, reference, value, each query's references best first (ties "
                         "in --db order). --backend sketches the sequence files; the "
                         "comparisons run on the host (native, --threads).")
    search.add_argument("queries", nargs="*", metavar="QUERY",
                        help="HLL sketch files and/or FASTA/FASTQ files, or directories of "
                             "FASTA/FASTQ files; one query per genome")
    collection_options(search, ("queries",), listed="queries")
    search.add_argument("--db", required=True, metavar="SKETCH",
                        help="the references: a sketch file from sketch or merge")
    output_option(search, to_stdout=True)
    backend_options(search)
    search.add_argument("--metric", choices=METRICS, default="jaccard", help=METRIC_HELP)
    chosen = search.add_mutually_exclusive_group()
    chosen.add_argument("--top", type=ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="the K best references of each query (default: every reference)")
    chosen.add_argument("--threshold", type=plain_float, default=None, metavar="H",
                        help="the references whose --metric passes H: Jaccard or containment "
                             ">= H (0 < H <= 1), ANI >= H percent (0 < H <= 100), Mash "
                             "distance <= H (0 <= H < 1) (default: every reference)")
    ani_options(search, "jaccard", "with --metric ani, the ANI from (default jaccard)")
    hll_options(search, from_sketches=True)
    add_estimator_options(search)
    min_count_options(search)
    search.set_defaults(run=run)


def run(args, session: Session) -> None:
    import numpy as np  # here: the command line's parser does without it
    from ..api.pairs import packed_together, query_block, read_references, row_tiles
    from ..estimators import p_value_lines
    from ..neighbours import top_of_rows
    if args.threshold is not None:
        problem = threshold_problem(args.metric, args.threshold)
        if problem is not None:
            raise InputError(f"--threshold: {problem} (every reference: leave --threshold "
                             f"out)")
    ani_from, min_af = ani_source(args, args.metric)
    containment = ani_from == "containment"
    output = session.outputs.open(args.output)
    references = read_references(args.db, "--db")
    queries = load_inputs(args.queries, "hll", "search", args, session, None,
                           reference=references)
    warn_saturated(session, references, queries)
    params, k, n_ref = references.params, references.params["k"], len(references)
    packed, hll = packed_together(references, queries)
    chosen = {"metric": args.metric, "threshold": threshold_text(args.metric, args.threshold),
              "top": args.top,
              "estimator": args.estimator, "detection": args.detection}
    if args.metric == "ani":
        chosen.update(ani_from=ani_from, **({"min_af": min_af} if containment else {}))
    output.write(parameter_header("search", {**dict(sorted(params.items())), **chosen})
                 + "\n")
    output.write(f"#query\treference\t{args.metric}" + "\taligned_fraction" * containment
                 + "\tp_value" * args.pvalue + "\n")
    progress = session.progress("search", len(queries), "queries")
    columns = np.arange(n_ref)
    for tile in row_tiles(len(queries)):
        rows = np.arange(tile.start, tile.stop) + n_ref
        values, fractions = query_block(packed, hll, k, rows, columns, args.metric,
                                        args.estimator, args.detection, args.threads, ani_from,
                                        min_af, fractions=True)
        best = top_of_rows(values, args.top or n_ref, args.metric)
        for row, (q, (found, found_values)) in enumerate(zip(tile, best)):
            if args.threshold is not None:
                keep = passes(args.metric, found_values, args.threshold)
                found, found_values = found[keep], found_values[keep]
            ps = (p_value_lines(packed, hll, args.estimator, q + n_ref, found, args.threads)
                  if args.pvalue else [""] * len(found))
            af = ([f"\t{f:.4f}" for f in fractions[row, found].tolist()] if containment
                  else [""] * len(found))
            output.write("".join(f"{queries.names[q]}\t{references.names[r]}\t{v:.6g}{a}{p}\n"
                                 for r, v, a, p in zip(found.tolist(), found_values.tolist(),
                                                       af, ps)))
        progress.advance(len(tile))
    progress.close()
