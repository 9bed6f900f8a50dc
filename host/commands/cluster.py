"""``cluster``: genomes grouped at an ANI (or Jaccard, or Mash distance) threshold, greedily with
one representative per cluster (as galah dereplicates) or by single, average or complete linkage;
the clustering is host.api.clustering's, the pairs those of ``dist`` and ``search``, by the run's
estimator and detection."""

from typing import TYPE_CHECKING

from ..choices import METHODS
from ..io import InputError
from ..metrics import threshold_problem, threshold_text
from ..plot import METRIC_TITLES, plot_format, plot_matrix
from ..sketchfile import SketchSet
from .collections import collection_options
from .common import Session, executor_of, load_inputs, parameter_header, require_scipy, run_of
from .dist import comparison_options, plot_options
from .options import ani_options, ani_source, backend_options, new_command, output_option, \
    plain_float

if TYPE_CHECKING:
    from ..api.clustering import Clustering

# host.api.clustering (and the pair loops under it) and numpy are imported by the functions that
# use them: the command line builds every command's parser, and sketch does without them.



def add_parser(commands) -> None:
    sub = new_command(
        commands, "cluster", "genomes clustered at an ANI threshold (dereplication)",
        "Cluster genomes (HLL sketch files and/or FASTA/FASTQ files, as dist takes them) at "
        "an ANI threshold (--ani 95 unless --jaccard or --mash is given; the ANI of the "
        "smaller genome's k-mers in the larger unless --ani-from jaccard, so that an "
        "incomplete genome joins its complete one). greedy (default): "
        "genomes in the order of preference of --order; each joins the closest representative "
        "before it that passes the threshold, or becomes a new cluster's representative (as "
        "galah dereplicates; every genome is compared with the representatives only, never "
        "the whole matrix). single, average, complete: hierarchical linkage of the metric's "
        "distance cut at the threshold, from the pairs that pass (single needs nothing else; "
        "average and complete also hold the matrix of each single-linkage cluster); the "
        "representative is the cluster's most preferred genome. A pair below detection "
        "(--detection) never joins. Output: TSV lines genome, cluster (1 = the most preferred "
        "representative's), representative, the value to it (and the aligned fraction of a "
        "containment ANI), in input order.")
    sub.add_argument("inputs", nargs="*", metavar="FILE",
                     help="HLL sketch files and/or FASTA/FASTQ files, one genome per file, "
                          "or directories of FASTA/FASTQ files")
    collection_options(sub, ("inputs",), listed="inputs")
    output_option(sub, to_stdout=True)
    sub.add_argument("--reps", metavar="FILE", default=None,
                     help="also write the representatives' files, one genome per line in "
                          "cluster order (a genome of several files: its files separated by "
                          "tabs); written only if the command succeeds (default: none)")
    chosen = sub.add_mutually_exclusive_group()
    chosen.add_argument("--ani", type=plain_float, default=None, metavar="A",
                        help="join genomes of ANI >= A percent, 100 (1 - Mash distance), "
                             "0 < A <= 100 (default 95)")
    chosen.add_argument("--jaccard", type=plain_float, default=None, metavar="J",
                        help="join genomes of Jaccard >= J, 0 < J <= 1 (default: --ani 95)")
    chosen.add_argument("--mash", type=plain_float, default=None, metavar="D",
                        help="join genomes of Mash distance <= D, 0 <= D < 1 (default: --ani "
                             "95)")
    ani_options(sub, None, "with --ani, the ANI from (default containment: a MAG of 50 %% "
                           "completeness clusters with its complete genome, as galah, dRep and "
                           "skani report 100 %% ANI at 50 %% aligned fraction; jaccard is Mash's "
                           "ANI, as before)")
    sub.add_argument("--method", choices=METHODS, default="greedy",
                     help="greedy (default), or single, average or complete linkage")
    sub.add_argument("--order", default=None, metavar="centrality|size|input|FILE",
                     help="the order of preference, so the representatives: centrality, the "
                          "genome with the highest mean value (ANI) to the other members of "
                          "its cluster first (greedy: the clusters of a first pass by size, "
                          "at most 256 members each counted; then the clusters anew in that "
                          "order), the default without --quality: a genome in the middle of "
                          "its species keeps it whole where one on its edge splits it; size, "
                          "the estimated number of distinct k-mers, largest first (the rule "
                          "before; a more complete assembly has more, so has a contaminated "
                          "one); input, the input order; or a file naming every genome once, "
                          "one a line, most preferred first (the first tab-separated column; "
                          "lines starting with # skipped). Ties in size, then input order")
    sub.add_argument("--quality", metavar="TABLE", default=None,
                     help="order by quality (the default order when given): a CheckM "
                          "--tab_table, CheckM2 quality_report.tsv or dRep genome table naming "
                          "every genome (its name, or its file's name with or without "
                          "suffixes); dRep's score, completeness - 5 x contamination (+ "
                          "contamination x strain heterogeneity / 100 where given), highest "
                          "first, ties in size (default: none)")
    backend_options(sub)
    plot_options(sub, "matrix of every pair, clusters in colour,",
                 "the threshold's metric (--ani, --jaccard or --mash)")
    comparison_options(sub)
    sub.set_defaults(run=run)


def _threshold(args) -> tuple[str, float]:
    for metric in ("ani", "jaccard", "mash"):
        value = getattr(args, metric)
        if value is not None:
            problem = threshold_problem(metric, value)
            if problem is not None:
                raise InputError(f"--{metric}: {problem}")
            return metric, value
    return "ani", 95.0


def _ani_source(args) -> tuple[str, float]:
    """(--ani-from, --min-af) of the run: containment for --ani unless told otherwise."""
    if args.ani_from is None and args.metric == "ani":
        args.ani_from = "containment"
    if args.ani_from is not None and args.metric != "ani":
        raise InputError(f"--ani-from: applies to --ani, but the threshold is --{args.metric}")
    return ani_source(args, args.metric)


def _check(args) -> None:
    if args.method in ("average", "complete"):
        require_scipy(f"--method {args.method}")
    if args.pvalue:
        raise InputError("--pvalue: cluster prints no p-values (dist --format edges and search "
                         "do)")
    if args.quality is not None and args.order not in (None, "quality"):
        raise InputError(f"--quality: orders the genomes by quality, but --order {args.order} "
                         f"was given too; give one of them")
    if args.order is None:
        args.order = "quality" if args.quality is not None else "centrality"
    if args.order == "quality" and args.quality is None:
        raise InputError("--order quality: needs --quality TABLE (CheckM or CheckM2)")
    from ..api.clustering import ORDERS
    if args.order not in ORDERS:
        try:
            open(args.order, "rb").close()
        except OSError as error:
            raise InputError(f"{args.order}: --order: {error.strerror or error} (centrality, "
                             f"size, input or a file of genome names)") from None


def run(args, session: Session) -> None:
    _check(args)
    args.metric, args.threshold = _threshold(args)
    args.ani_from, args.min_af = _ani_source(args)
    args.top = None
    output = session.outputs.open(args.output)
    reps_file = session.outputs.open(args.reps) if args.reps else None
    plot = None
    if args.plot:
        plot = (session.outputs.open(args.plot, binary=True), plot_format(args.plot))
    with executor_of(args) as executor:
        sketches = load_inputs(args.inputs, "hll", "cluster", args, session, executor)
        _cluster(args, session, sketches, executor, output, reps_file, plot)


def clustering_of(args) -> "Clustering":
    """How the command clusters (its options, checked by :func:`run`) as the API takes it."""
    from ..api.clustering import Clustering
    return Clustering(metric=args.metric, threshold=args.threshold, estimator=args.estimator,
                      detection=args.detection, ani_from=args.ani_from, min_af=args.min_af,
                      method=args.method, order=args.order, quality=args.quality)


def _cluster(args, session: Session, sketches: SketchSet, executor, out, reps_file,
             plot) -> None:
    from ..api.clustering import ORDERS, cluster_genomes
    n = len(sketches)
    how, run = clustering_of(args), run_of(args, session)
    found = cluster_genomes(sketches, how, run, executor)
    cluster, representative = found.cluster, found.representative
    values, fractions = found.values, found.fractions
    containment = args.ani_from == "containment"
    chosen = {"metric": args.metric, "threshold": threshold_text(args.metric, args.threshold),
              "method": args.method,
              "order": args.order if args.order in ORDERS else "file",
              **({"quality": args.quality} if args.order == "quality" else {}),
              "estimator": args.estimator, "detection": args.detection,
              "clusters": int(cluster.max()) if n else 0}
    if args.metric == "ani":
        chosen.update(ani_from=args.ani_from, **({"min_af": args.min_af} if containment else {}))
    out.write(parameter_header("cluster", {**dict(sorted(sketches.params.items())), **chosen})
              + "\n")
    out.write(f"#genome\tcluster\trepresentative\t{args.metric}"
              + "\taligned_fraction" * containment + "\n")
    names = sketches.names
    for i in range(n):
        fraction = f"\t{fractions[i]:.4f}" if containment else ""
        out.write(f"{names[i]}\t{cluster[i]}\t{names[representative[i]]}\t{values[i]:.6g}"
                  f"{fraction}\n")
    if reps_file is not None:
        for rep in sorted(set(representative.tolist()), key=lambda r: cluster[r]):
            reps_file.write("\t".join(sketches.files[rep] or [names[rep]]) + "\n")
    if plot is not None:
        _plot(how, run, args, sketches, executor, cluster, representative, plot, found.query)


def _plot(how, run, args, sketches, executor, cluster, representative, plot, query) -> None:
    import numpy as np
    from ..api.clustering import metric_matrix, square
    if args.ani_from == "containment":
        values = square(query, np.arange(len(sketches)), args.metric)
    else:
        values = metric_matrix(how, run, sketches, executor, note=False)
    method = "average" if args.method == "greedy" else args.method
    from ..metrics import metric_distance
    cut = float(metric_distance(args.metric, np.array(args.threshold)))
    labels = (("containment ANI (%)", "1 - containment ANI/100")
              if args.ani_from == "containment" else None)
    title = (f"{labels[0] if labels else METRIC_TITLES[args.metric]}, "
             f"k={sketches.params['k']}: {int(cluster.max())} clusters of {len(cluster)} "
             f"genomes ({args.method}, {threshold_text(args.metric, args.threshold)})")
    plot_matrix(values, args.metric, sketches.names, plot[0], plot[1], title,
                order=args.plot_order, method=method, clusters=cluster,
                representatives=sorted(set(representative.tolist())), cut=cut, labels=labels)
