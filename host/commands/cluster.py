"""``cluster``: genomes grouped at an ANI (or Jaccard, or Mash distance) threshold, greedily with
one representative per cluster (as galah dereplicates) or by single, average or complete linkage;
the algorithms are host.clustering's, the pairs those of ``dist`` (host.commands.dist.pair_tiles)
and ``search`` (host.commands.search.query_block), by the run's estimator and detection."""

import numpy as np

from ..clustering import GREEDY_BLOCK, METHODS, central_first, components, greedy, \
    linkage_clusters, number_clusters, self_value
from ..io import InputError, bounded_lines, open_input
from ..metrics import express, jaccard_bound, passes, threshold_problem, threshold_text
from ..plot import METRIC_TITLES, plot_format, plot_matrix
from ..scheduler import LocalExecutor
from ..sketchfile import SketchSet
from .collections import collection_options
from .common import Session, executor_of, parameter_header, require_scipy, row_tiles
from .dist import comparison_options, pair_tiles, plot_options
from .inputs import load_inputs
from .options import ani_options, ani_source, backend_options, new_command, output_option, \
    plain_float
from .search import query_block, query_tile
from kmerspec.golden.hll import HllParams

#: the orders of preference by name (--order); any other value is a file of genome names
ORDERS = ("centrality", "size", "input", "quality")


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


def _preference(args, sketches: SketchSet, cards: np.ndarray) -> np.ndarray:
    """Each genome's rank in the order of preference (0 = most preferred); for "centrality"
    the rank by size, which breaks its ties and makes its first pass."""
    n = len(sketches)
    if args.order == "input":
        return np.arange(n)
    if args.order in ("size", "centrality"):
        order = np.lexsort((np.arange(n), -cards))
    elif args.order == "quality":
        from ..quality import quality_scores
        scores = quality_scores(args.quality, sketches.names, sketches.files)
        order = np.lexsort((np.arange(n), -cards, -scores))
    else:
        order = _order_file(args.order, sketches)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def _order_file(path: str, sketches: SketchSet) -> np.ndarray:
    index = {name: i for i, name in enumerate(sketches.names)}
    for i, files in enumerate(sketches.files):  # a genome may be named by its file as given
        for file in files:
            index.setdefault(file, i)
    order, seen = [], {}
    what = "a text file of genome names (--order)"
    try:
        with open_input(path, "a file of genome names (--order)") as table:
            # a line at a time, each line naming a genome once: memory holds no more than the
            # genomes' own order, whatever the file (host.io.bounded_lines)
            for number, raw in bounded_lines(table, path, what):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"{path}: --order: not a text file of genome names "
                                     f"(line {number} is not UTF-8)") from None
                name = line.split("\t")[0].strip()
                if not name or name.startswith("#"):
                    continue
                order.append(_ordered(path, number, name, index, seen))
    except OSError as error:
        raise InputError(f"{path}: --order: {error.strerror or error}") from None
    missing = [sketches.names[i] for i in range(len(sketches)) if i not in seen]
    if missing:
        raise InputError(f"{path}: --order does not name {len(missing)} input genome(s), "
                         f"first {missing[0]!r}; name every genome once")
    return np.array(order, dtype=np.int64)


def _ordered(path: str, number: int, name: str, index: dict, seen: dict) -> int:
    """The genome line ``number`` of the --order file names, once."""
    if name not in index:
        raise InputError(f"{path}: line {number}: --order names {name!r}, which is not an "
                         f"input genome")
    genome = index[name]
    if genome in seen:
        raise InputError(f"{path}: line {number}: --order names {name!r} again (line "
                         f"{seen[genome]})")
    seen[genome] = number
    return genome


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


def _query(args, sketches: SketchSet, executor):
    """``query(rows, columns, fractions=False)``: the metric of those pairs by the run's
    estimator (with ``fractions``, and the aligned fractions of a containment ANI), in this
    process (threads) or split by columns over the Dask workers."""
    params = HllParams(sketches.params["p"], sketches.params["w"])
    k = sketches.params["k"]
    packed = sketches.packed_sketches()
    local = isinstance(executor, LocalExecutor)
    options = (args.metric, args.estimator, args.detection)
    ani = (args.ani_from or "jaccard", args.min_af)
    if not local:
        shared = executor.share(packed)
        threads = args.threads or 1

    def query(rows, columns, fractions=False):
        if local:
            return query_block(packed, params, k, rows, columns, *options, args.threads, *ani,
                               fractions)
        parts = [columns[tile.start:tile.stop] for tile in row_tiles(columns.size)]
        found = list(executor.map_ordered(query_tile, parts, shared, params.p, params.w, k,
                                          rows, *options, threads, *ani, True))
        values = np.hstack([part[0] for part in found])
        if not fractions:
            return values
        return values, (np.hstack([part[1] for part in found]) if found[0][1] is not None
                        else None)
    return query, packed.cards


def _cluster(args, session: Session, sketches: SketchSet, executor, out, reps_file,
             plot) -> None:
    n, k = len(sketches), sketches.params["k"]
    query, cards = _query(args, sketches, executor)
    rank = _preference(args, sketches, cards)
    progress = session.progress("cluster", n, "genomes")
    containment = args.ani_from == "containment"
    if args.method == "greedy":
        representative, _ = greedy(np.argsort(rank, kind="stable"), query, args.metric,
                                   args.threshold, block=GREEDY_BLOCK)
        groups = representative
        if args.order == "centrality":  # the clusters anew, the central genomes first
            rank = central_first(groups, query, args.metric, rank)
            representative, _ = greedy(np.argsort(rank, kind="stable"), query, args.metric,
                                       args.threshold, block=GREEDY_BLOCK)
            groups = representative
    elif containment:
        groups = _linkage_groups_of_queries(args, query, n)
    else:
        groups = _linkage_groups(args, session, sketches, executor)
    if args.method != "greedy" and args.order == "centrality":
        rank = central_first(groups, query, args.metric, rank)
    progress.advance(n)
    progress.close()
    cluster, representative = number_clusters(groups, rank)
    values, fractions = _values_to_representatives(query, representative, args.metric)
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
        _plot(args, session, sketches, executor, cluster, representative, plot, query)


def _linkage_groups(args, session: Session, sketches: SketchSet, executor) -> np.ndarray:
    """Group labels of single, average or complete linkage cut at the threshold: the
    single-linkage components from the pruned all-pairs loop (pairs that pass only), then each
    component's own linkage for average and complete."""
    n, k = len(sketches), sketches.params["k"]
    bound = jaccard_bound(args.metric, args.threshold, k)
    edge_tiles, _ = pair_tiles(args, session, sketches, executor, bound)

    def passing():
        for tile in edge_tiles:
            for i, js, jaccard in tile:
                keep = passes(args.metric, express(args.metric, jaccard, k), args.threshold)
                yield i, js[keep]
    return _linkage_within(args, components(n, passing()), lambda members: _matrix(
        args, session, _subset(sketches, members), executor, note=False))


def _linkage_within(args, groups: np.ndarray, matrix_of) -> np.ndarray:
    """Group labels of the run's linkage from the single-linkage components ``groups``:
    single linkage is those; average and complete cut each component's own linkage tree, its
    matrix of the metric from ``matrix_of(members)``."""
    if args.method == "single":
        return groups
    labels = np.empty(groups.size, dtype=np.int64)
    next_label = 0
    for members in _groups_of(groups):
        sub = np.zeros(1, dtype=np.int64)
        if members.size > 1:
            sub = linkage_clusters(matrix_of(members), args.metric, args.method, args.threshold)
        labels[members] = sub + next_label
        next_label += int(sub.max()) + 1
    return labels


def _groups_of(labels: np.ndarray) -> list[np.ndarray]:
    """The genomes of each label, ascending, labels in ascending order (one sort, not a pass
    over every genome per label)."""
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], labels[order][1:] != labels[order][:-1]]))
    return np.split(order, starts[1:]) if labels.size else []


def _subset(sketches: SketchSet, members: np.ndarray) -> SketchSet:
    return SketchSet(kind=sketches.kind, params=sketches.params,
                     names=[sketches.names[i] for i in members.tolist()],
                     files=[sketches.files[i] for i in members.tolist()],
                     arrays={"registers": sketches.arrays["registers"][members]},
                     origin=sketches.origin)


def _matrix(args, session: Session, sketches: SketchSet, executor, note: bool = True
            ) -> np.ndarray:
    """The full matrix of the metric by the run's estimator (dist's row tiles)."""
    n, k = len(sketches), sketches.params["k"]
    _, row_tiles_ = pair_tiles(args, session, sketches, executor, None, note=note)
    similarity = np.empty((n, n))
    for tile, rows in row_tiles_:
        similarity[tile.start:tile.stop] = rows
    return express(args.metric, similarity, k)


def _values_to_representatives(query, representative: np.ndarray, metric: str):
    """(each genome's value to its representative, and the aligned fraction of a containment
    ANI (None otherwise)), a cluster at a time (the metric of a genome with itself, and 1, for
    the representatives)."""
    values = np.full(representative.size, self_value(metric))
    fractions = np.ones(representative.size)
    for group in _groups_of(representative):
        rep = int(representative[group[0]])
        members = group[group != rep]
        if members.size:
            found, fraction = query(members, np.array([rep]), fractions=True)
            values[members] = found[:, 0]
            if fraction is None:
                fractions = None
            elif fractions is not None:
                fractions[members] = fraction[:, 0]
    return values, fractions


def _linkage_groups_of_queries(args, query, n: int) -> np.ndarray:
    """Group labels of single, average or complete linkage of a metric the all-pairs loops do
    not compute (the containment ANI), from blocks of rows against every genome: the passing
    pairs' components, then each component's own matrix for average and complete."""
    every = np.arange(n)

    def passing():
        for tile in row_tiles(n):
            rows = np.arange(tile.start, tile.stop)
            values = query(rows, every)
            for row, genome in enumerate(rows.tolist()):
                keep = passes(args.metric, values[row], args.threshold)
                keep[genome] = False
                yield genome, every[keep]
    return _linkage_within(args, components(n, passing()),
                           lambda members: _square(query, members, args.metric))


def _square(query, members: np.ndarray, metric: str) -> np.ndarray:
    """The matrix of ``query`` over ``members``, its diagonal the metric of a genome with
    itself."""
    matrix = query(members, members)
    np.fill_diagonal(matrix, self_value(metric))
    return matrix


def _plot(args, session, sketches, executor, cluster, representative, plot, query) -> None:
    if args.ani_from == "containment":
        values = _square(query, np.arange(len(sketches)), args.metric)
    else:
        values = _matrix(args, session, sketches, executor, note=False)
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
