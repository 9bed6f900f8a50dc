"""``dist``: all-pairs Jaccard (or containment, ANI, Mash distance) of HLL sketches, streamed tile
by tile as a TSV or PHYLIP matrix, or as edges (``--threshold``, ``--top``)."""

import numpy as np

from ..cluster import LocalExecutor
from ..estimators import (KERNEL_NOTE, add_estimator_options, detection_floor,
                          floor_jaccard_tiles, p_value_lines)
from ..io import InputError
from ..metrics import (METRICS, base_similarity, express, metric_values, pair_similarity,
                       phylip_distance)
from ..plot import plot_format, plot_heatmap
from ..sketchfile import SketchSet
from .common import (Session, backend_of, executor_of, parameter_header, parameters_file,
                     row_tiles, warn_saturated)
from .inputs import load_inputs
from .options import (METRIC_HELP, backend_options, cluster_options, hll_options,
                      min_count_options, new_command, output_option, ranged_int)
from kmerspec.golden.hll import HllParams


def matrix_command(commands, name, help_text, measure, kind, formats):
    """A command that compares every pair of its inputs (dist, jsd)."""
    sub = new_command(commands, name, help_text,
                      f"{measure} from {kind} sketch files and/or FASTA/FASTQ files; "
                      f"sequence files are sketched with the parameters of the sketch "
                      f"files given, else with the options below.")
    sub.add_argument("inputs", nargs="+", metavar="FILE",
                     help=f"{kind} sketch files and/or FASTA/FASTQ files")
    output_option(sub, to_stdout=True)
    backend_options(sub)
    sub.add_argument("--format", choices=formats, default="tsv",
                     help="tsv: matrix with a parameter header (default); phylip: square "
                          "matrix, parameters in OUTPUT.params (not written for -o -, a "
                          "FIFO or a device)" + ("; edges: one line per pair kept by "
                                                 "--threshold" if "edges" in formats else ""))
    return sub


def add_parser(commands) -> None:
    dist = matrix_command(commands, "dist", "all-pairs Jaccard from sketch or sequence files",
                          "All-pairs Jaccard (or containment, ANI, Mash distance)", "HLL",
                          ("tsv", "phylip", "edges"))
    dist.add_argument("--metric", choices=METRICS, default="jaccard", help=METRIC_HELP
                      + "; PHYLIP gets 1 - J, D or 1 - ANI/100 (not containment)")
    sparse = dist.add_mutually_exclusive_group()
    sparse.add_argument("--threshold", type=float, default=None,
                        help="report only pairs with Jaccard >= h, 0 < h <= 1 (pruned; needs "
                             "--format edges; not with containment; default: every pair)")
    sparse.add_argument("--top", type=ranged_int(1, 1 << 20), default=None, metavar="K",
                        help="report each genome's K best others by the metric, best first, "
                             "ties by input order, without holding the matrix (needs --format "
                             "edges; default: every pair)")
    dist.add_argument("--plot", metavar="IMAGE", default=None,
                      help="also draw a clustered heatmap of the matrix (Jaccard, or "
                           "containment) into IMAGE, rows and columns ordered by average-"
                           "linkage clustering; the suffix picks the format (png, svg, pdf, "
                           "...); with --format tsv or phylip; needs matplotlib and scipy (pip "
                           "install 'kmer-sketch-accel[plot]'; default: no plot)")
    hll_options(dist, from_sketches=True)
    add_estimator_options(dist)
    min_count_options(dist)
    cluster_options(dist)
    dist.set_defaults(run=run)


def run(args, session: Session) -> None:
    if args.threshold is not None and args.format != "edges":
        raise InputError("--threshold: gives sparse output; use it with --format edges")
    if args.threshold is not None and not 0.0 < args.threshold <= 1.0:
        raise InputError(f"--threshold: must be a Jaccard value above 0, at most 1, not "
                         f"{args.threshold:g} (every pair: leave --threshold out)")
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
    parameters = parameters_file(session, args.output) if args.format == "phylip" else None
    plot = None
    if args.plot:
        image_format = plot_format(args.plot)
        plot = (session.outputs.open(args.plot, binary=True), image_format)
    with executor_of(args) as executor:
        sketches = load_inputs(args.inputs, "hll", "dist", args, session, executor)
        warn_saturated(session, sketches)
        _write_dist(args, session, sketches, executor, output, parameters, plot)


def _software_tiles(sketches: SketchSet, executor, args):
    """(edge tiles, row tiles) computed on the host, in this process or on the cluster, by the
    estimator of the options.

    Edge tiles yield (i, js, values): J for --threshold, the metric for --top. Row tiles yield
    (rows, full rows of the base similarity: J, or C for containment). The "mle" estimator's
    values are after detection; the "hll" estimator's Jaccard before it (floored later)."""
    from ..neighbours import RunningTopK, metric_row_tile, top_row_tile
    from ..similarity import (PackedSketches, all_pairs, edge_tile, joint_triangle, row_tile,
                              similarity_row_tiles)
    p, w, k = sketches.params["p"], sketches.params["w"], sketches.params["k"]
    params, threads, threshold = HllParams(p, w), args.threads, args.threshold
    packed = PackedSketches(sketches.arrays["registers"], params)
    cards, tiles = packed.cards, row_tiles(len(sketches))
    base = base_similarity(args.metric)
    floor = detection_floor(args, params)
    mle = args.estimator == "mle"
    detection = args.detection if mle else None
    by_name = {"estimator": args.estimator, "detection": detection}
    if isinstance(executor, LocalExecutor):
        if threshold is not None:  # one run over every core, each pair once
            return [all_pairs(packed, params, threshold, threads=threads, **by_name)], None
        if args.top is not None and mle:  # each pair once, its two ends' candidates kept
            best = RunningTopK(len(sketches), args.top, args.metric)
            for i, js, found in joint_triangle(packed, params, threads=threads):
                best.add(np.full(js.size, i), js,
                         express(args.metric, found.values(base, detection), k))
                best.add(js, np.full(js.size, i),
                         express(args.metric, found.swapped().values(base, detection), k))
            return [best.rows()], None
        if args.top is None and (base == "jaccard" or mle):
            return None, similarity_row_tiles(packed, params, tiles, threads=threads, kind=base,
                                              **by_name)
    else:
        # On a cluster the workers are the parallelism: one thread per task unless told so.
        packed, threads = executor.share(packed), threads or 1
    if args.top is not None:  # each task: its rows against every genome, K kept per row
        return executor.map_ordered(top_row_tile, tiles, packed, cards, p, w, args.metric, k,
                                    args.top, threads, floor, args.estimator, detection), None
    if threshold is not None:
        return executor.map_ordered(edge_tile, tiles, packed, cards, p, w, threshold,
                                    threads, args.estimator, detection), None
    if base == "jaccard" or mle:
        return None, zip(tiles, executor.map_ordered(row_tile, tiles, packed, cards, p, w,
                                                     threads, args.estimator, base, detection))
    return None, zip(tiles, executor.map_ordered(metric_row_tile, tiles, packed, cards, p, w,
                                                 base, k, threads, floor))


def _kernel_tiles(sketches: SketchSet, backend, args):
    """(edge tiles, row tiles) as _software_tiles, from the similarity kernel's calls: the
    pruned walk for --threshold, else the union estimates of every pair, call by call (--top
    keeps K per genome as the calls complete)."""
    from ..neighbours import RunningTopK
    from ..similarity import cardinalities
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


def _write_dist(args, session: Session, sketches: SketchSet, executor, out, parameters,
                plot) -> None:
    """Stream the matrix (or the kept pairs) tile by tile; hold it whole only for --plot."""
    k = sketches.params["k"]
    names = sketches.names
    n = len(names)
    backend = backend_of(args, session) if args.backend in ("sim", "xrt") else None
    params = HllParams(sketches.params["p"], sketches.params["w"])
    if args.estimator == "hll" and hasattr(backend, "all_pairs"):
        edge_tiles, row_tiles = _kernel_tiles(sketches, backend, args)
    else:
        if hasattr(backend, "all_pairs"):
            print(KERNEL_NOTE, file=session.terminal, flush=True)
        edge_tiles, row_tiles = _software_tiles(sketches, executor, args)
    if args.estimator == "hll" and args.top is None and base_similarity(args.metric) == "jaccard":
        edge_tiles, row_tiles = floor_jaccard_tiles(edge_tiles, row_tiles,
                                                    detection_floor(args, params), args.threshold)
    chosen = {"metric": args.metric, "threshold": args.threshold,
              "estimator": args.estimator, "detection": args.detection}
    if args.top is not None:
        chosen["top"] = args.top
    header = parameter_header("dist", {**dict(sorted(sketches.params.items())), **chosen})
    progress = session.progress("dist", n, "rows")
    base = base_similarity(args.metric)

    if args.format == "edges":
        if args.pvalue:
            from ..similarity import PackedSketches
            registers_for_p = PackedSketches(sketches.arrays["registers"], params)
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
                ps = (p_value_lines(registers_for_p, params, args.estimator, i, js,
                                    args.threads) if args.pvalue else [""] * len(js))
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


