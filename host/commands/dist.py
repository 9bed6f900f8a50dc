"""``dist``: all-pairs Jaccard (or containment, ANI, Mash distance) of HLL sketches, streamed tile
by tile as a TSV or PHYLIP matrix, or as edges (``--threshold``, ``--top``), or a Newick tree.
:func:`pair_tiles`, the estimator- and backend-dispatching pair loop that ``cluster`` shares, is
host.api.pairs.pair_tiles."""

from ..choices import METRICS, PLOT_ORDERS, TREES
from ..io import InputError, phylip_name
from ..metrics import express, phylip_distance, threshold_problem, threshold_text
from ..plot import METRIC_TITLES, plot_format, plot_matrix
from ..sketchfile import SketchSet
from .collections import collection_options
from .common import (Session, comparison_of, executor_of, load_inputs, parameter_header,
                     parameters_file, require_scipy, run_of, warn_saturated)
from .options import (METRIC_HELP, add_estimator_options, backend_options, hll_options,
                      min_count_options, new_command, output_option, plain_float, ranged_int,
                      scheduler_options)
from kmerspec.golden.hll import HllParams


def matrix_command(commands, name, help_text, measure, kind, formats):
    """A command that compares every pair of its inputs (dist, jsd)."""
    sub = new_command(commands, name, help_text,
                      f"{measure} from {kind} sketch files and/or FASTA/FASTQ files; "
                      f"sequence files are sketched with the parameters of the sketch "
                      f"files given, else with the options below.")
    sub.add_argument("inputs", nargs="*", metavar="FILE",
                     help=f"{kind} sketch files and/or FASTA/FASTQ files, or directories of "
                          f"FASTA/FASTQ files")
    collection_options(sub, ("inputs",), listed="inputs")
    output_option(sub, to_stdout=True)
    backend_options(sub)
    edges = "edges" in formats
    sub.add_argument("--format", choices=formats, default=None if edges else "tsv",
                     help="tsv: matrix with a parameter header; phylip: square matrix, "
                          "parameters in OUTPUT.params (not written for -o -, a FIFO or a "
                          "device), names with whitespace or %%(),:;[]' percent-encoded "
                          "(an%%20other.fa; urllib.parse.unquote reads them back)"
                     + ("; edges: one line per pair kept by --threshold or --top (default: "
                        "edges with --top, else tsv)" if edges else " (default: tsv)")
                     + ("; newick: a tree (--tree) of the genomes, one line, parameters in "
                        "OUTPUT.params" if "newick" in formats else ""))
    return sub


def add_parser(commands) -> None:
    dist = matrix_command(commands, "dist", "all-pairs Jaccard from sketch or sequence files",
                          "All-pairs Jaccard (or containment, ANI, Mash distance)", "HLL",
                          ("tsv", "phylip", "edges", "newick"))
    dist.add_argument("--metric", choices=METRICS, default="jaccard", help=METRIC_HELP
                      + "; PHYLIP gets 1 - J, D or 1 - ANI/100 (not containment)")
    sparse = dist.add_mutually_exclusive_group()
    sparse.add_argument("--threshold", type=plain_float, default=None, metavar="H",
                        help="report only pairs whose --metric passes H: Jaccard or "
                             "containment >= H (0 < H <= 1), ANI >= H percent (0 < H <= 100), "
                             "Mash distance <= H (0 <= H < 1); pairs that cannot pass are "
                             "pruned by cardinality (not for containment, which Jaccard does "
                             "not bound); needs --format edges (default: every pair)")
    sparse.add_argument("--top", type=ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="report each genome's K best others by the metric, best first, "
                             "ties by input order, without holding the matrix (writes --format "
                             "edges; default: every pair)")
    dist.add_argument("--tree", choices=TREES, default=None,
                      help="with --format newick: upgma (average linkage, rooted, ultrametric; "
                           "the default) or nj (neighbour joining, unrooted); the tree is built "
                           "from the Mash distance whatever --metric (not containment), branch "
                           "lengths in Mash distance; needs scipy for upgma; parameters in "
                           "OUTPUT.params as for phylip")
    plot_options(dist, "matrix")
    comparison_options(dist)
    dist.set_defaults(run=run)


def comparison_options(sub) -> None:
    """The sketching, estimator, minimum-count and scheduler options of a command that
    compares genomes from sketch or sequence files (dist, cluster)."""
    hll_options(sub, from_sketches=True)
    add_estimator_options(sub)
    min_count_options(sub)
    scheduler_options(sub)


def plot_options(sub, what: str, metric: str = "--metric") -> None:
    """--plot IMAGE and --plot-order (dist and cluster; ``metric``: what names the metric)."""
    sub.add_argument("--plot", metavar="IMAGE", default=None,
                     help=f"also draw the {what} as a heatmap of {metric} into IMAGE, titled "
                          f"with the metric, rows and columns ordered by the average-linkage "
                          f"dendrogram drawn beside it (see --plot-order); genome names up to "
                          f"100 genomes; the suffix picks the format (png, svg, pdf, ...); needs "
                          f"the full matrix in memory and matplotlib and scipy (pip install "
                          f"'kmer-sketch-accel[plot]'; default: no plot)")
    sub.add_argument("--plot-order", choices=PLOT_ORDERS, default="dendrogram",
                     help="dendrogram: rows and columns in the leaf order of the average-linkage "
                          "tree of the metric's distance, drawn beside the heatmap (default); "
                          "input: in input order, no dendrogram")


def run(args, session: Session) -> None:
    if args.format is None:  # --top has K edges a genome to write: only edges can hold them
        args.format = "edges" if args.top is not None else "tsv"
    if args.threshold is not None and args.format != "edges":
        raise InputError("--threshold: gives sparse output; use it with --format edges")
    if args.threshold is not None:
        problem = threshold_problem(args.metric, args.threshold)
        if problem is not None:
            raise InputError(f"--threshold: {problem} (every pair: "
                             f"leave --threshold out)")
    if args.top is not None and args.format != "edges":
        raise InputError(f"--top: gives K edges per genome, which --format {args.format} "
                         f"cannot hold; drop --format {args.format} (--top writes edges)")
    if args.format in ("phylip", "newick") and args.metric == "containment":
        raise InputError(f"--format {args.format}: needs a symmetric distance, but containment "
                         f"is asymmetric; use --format tsv or edges")
    if args.tree is not None and args.format != "newick":
        raise InputError("--tree: chooses how --format newick builds its tree; use it with "
                         "--format newick")
    if args.pvalue and args.format != "edges":
        raise InputError("--pvalue: adds a column to --format edges lines; the tsv, phylip and "
                         "newick outputs have no room for it")
    if args.plot and args.format == "edges":
        raise InputError("--plot: draws the full matrix; use it with --format tsv, phylip or "
                         "newick")
    if args.format == "newick" and args.tree != "nj":
        require_scipy("--format newick --tree upgma")
    output = session.outputs.open(args.output)
    parameters = (parameters_file(session, args.output) if args.format in ("phylip", "newick")
                  else None)
    plot = None
    if args.plot:
        image_format = plot_format(args.plot)
        plot = (session.outputs.open(args.plot, binary=True), image_format)
    with executor_of(args) as executor:
        sketches = load_inputs(args.inputs, "hll", "dist", args, session, executor)
        warn_saturated(session, sketches)
        _write_dist(args, session, sketches, executor, output, parameters, plot)


def pair_tiles(args, session: Session, sketches: SketchSet, executor,
               threshold: float | None, note: bool = True):
    """host.api.pairs.pair_tiles with the command's comparison and run."""
    from ..api.pairs import pair_tiles as api_pair_tiles  # here: sketch does without it
    return api_pair_tiles(comparison_of(args), run_of(args, session), sketches, executor,
                          threshold, note)


def _write_dist(args, session: Session, sketches: SketchSet, executor, out, parameters,
                plot) -> None:
    """Stream the matrix (or the kept pairs) tile by tile; hold it whole only for --plot and
    newick."""
    import numpy as np  # here: the command line's parser does without it
    from ..estimators import p_value_lines
    k = sketches.params["k"]
    names = sketches.names
    n = len(names)
    params = HllParams(sketches.params["p"], sketches.params["w"])
    chosen = {"metric": args.metric, "threshold": threshold_text(args.metric, args.threshold),
              "estimator": args.estimator, "detection": args.detection}
    if args.top is not None:
        chosen["top"] = args.top
    if args.format == "newick":
        chosen["tree"] = args.tree or "upgma"
        chosen["distance"] = "mash"
    header = parameter_header("dist", {**dict(sorted(sketches.params.items())), **chosen})
    progress = session.progress("dist", n, "rows")

    if args.format == "edges":
        if args.pvalue:
            registers_for_p = sketches.packed_sketches()
        out.write(header + "\n")
        out.write(f"#genome_a\tgenome_b\t{args.metric}" + "\tp_value" * args.pvalue + "\n")
        from ..api.pairs import kept_edges
        for i, js, values in kept_edges(comparison_of(args), run_of(args, session), sketches,
                                        executor, args.threshold):
            ps = (p_value_lines(registers_for_p, params, args.estimator, i, js,
                                args.threads) if args.pvalue else [""] * len(js))
            for j, v, p in zip(js.tolist(), values.tolist(), ps):
                out.write(f"{names[i]}\t{names[j]}\t{v:.6g}{p}\n")
            progress.advance()
        progress.close()
        return
    _, row_tiles = pair_tiles(args, session, sketches, executor, None)  # no bound: every pair
    if args.format == "tsv":
        out.write(header + "\n")
        out.write("#genome\t" + "\t".join(names) + "\n")
    elif args.format == "phylip":
        out.write(f"{n}\n")
    if parameters is not None:
        parameters.write(header + "\n")
    whole = plot is not None or args.format == "newick"
    similarity = np.empty((n, n)) if whole else None
    for tile, rows in row_tiles:
        if similarity is not None:
            similarity[tile.start:tile.stop] = rows
        if args.format == "newick":
            progress.advance(len(tile))
            continue
        for i, row in zip(tile, rows):
            values = express(args.metric, row, k)
            if args.format == "tsv":
                out.write(names[i] + "\t" + "\t".join(f"{v:.6g}" for v in values) + "\n")
            else:  # PHYLIP square distance matrix
                distance = phylip_distance(args.metric, values)
                out.write(phylip_name(names[i]) + " " + " ".join(f"{v:.6f}" for v in distance)
                          + "\n")
        progress.advance(len(tile))
    progress.close()
    if args.format == "newick":
        from ..trees import neighbour_joining, newick, upgma
        distance = express("mash", similarity, k)
        tree = (neighbour_joining if args.tree == "nj" else upgma)(distance)
        out.write(newick(tree, names) + "\n")
    if plot:
        plot_matrix(express(args.metric, similarity, k), args.metric, names, plot[0], plot[1],
                    f"{METRIC_TITLES[args.metric]}, k={k}, {n} genomes", order=args.plot_order)
