"""The pairs of a collection by an estimator, for the API and the commands: every pair's row tiles
or the pairs that pass a bound (``dist``, and ``cluster``'s linkage), each genome's best
(``--top``), a block of queries against references (``search``, ``cluster``'s greedy pass), on
the host (native pair loops, threads, or Dask workers) or on the similarity kernel (``sim``,
``xrt``, the ``hll`` estimator)."""

from dataclasses import dataclass

import numpy as np

from ..backends import KERNEL_BACKENDS
from ..estimators import (DEFAULT_DETECTION, DEFAULT_ESTIMATOR, KERNEL_NOTE,
                          block_containment_ani, block_values, detection_floor,
                          floor_jaccard_tiles)
from ..io import InputError
from ..metrics import (DEFAULT_MIN_AF, base_similarity, express, jaccard_bound, metric_values,
                       pair_similarity, passes)
from ..scheduler import LocalExecutor
from ..sketchfile import SketchSet
from .params import check_table_names
from .run import Run
from .sketching import read_sketch_files
from kmerspec.golden.hll import HllParams

__all__ = ["Comparison", "ROWS_PER_TILE", "row_tiles", "pair_tiles", "kept_edges", "query_block",
           "query_tile", "read_references", "packed_together"]

ROWS_PER_TILE = 32


def row_tiles(n: int) -> list[range]:
    """Row ranges a matrix is computed and written in."""
    return [range(s, min(s + ROWS_PER_TILE, n)) for s in range(0, n, ROWS_PER_TILE)]


@dataclass(frozen=True)
class Comparison:
    """How pairs are compared: ``metric`` (jaccard, containment, ani, mash) by ``estimator``
    (mle, the joint maximum-likelihood estimator, or hll), a pair below ``detection`` (Z
    standard deviations) sharing nothing; ``top``: each genome's best only; an ANI from
    ``ani_from`` (jaccard, or containment with the aligned fraction at least ``min_af``)."""

    metric: str = "jaccard"
    estimator: str = DEFAULT_ESTIMATOR
    detection: float = DEFAULT_DETECTION
    top: int | None = None
    ani_from: str = "jaccard"
    min_af: float = DEFAULT_MIN_AF


def _software_tiles(sketches: SketchSet, executor, how: Comparison, threads: int | None,
                    threshold: float | None):
    """(edge tiles, row tiles) computed on the host, in this process or on the Dask workers, by
    the estimator of the options.

    Edge tiles yield (i, js, values): J >= ``threshold`` (a Jaccard bound), the metric for
    --top. Row tiles yield (rows, full rows of the base similarity: J, or C for containment).
    The "mle" estimator's values are after detection; the "hll" estimator's Jaccard before it
    (floored later)."""
    from ..neighbours import RunningTopK, metric_row_tile, top_row_tile
    from ..similarity import all_pairs, edge_tile, joint_triangle, row_tile, similarity_row_tiles
    p, w, k = sketches.params["p"], sketches.params["w"], sketches.params["k"]
    params, top = HllParams(p, w), how.top
    packed = sketches.packed_sketches()
    cards, tiles = packed.cards, row_tiles(len(sketches))
    base = base_similarity(how.metric)
    floor = detection_floor(how, params)
    mle = how.estimator == "mle"
    detection = how.detection if mle else None
    by_name = {"estimator": how.estimator, "detection": detection}
    if isinstance(executor, LocalExecutor):
        if threshold is not None:  # one run over every core, each pair once
            return [all_pairs(packed, params, threshold, threads=threads, **by_name)], None
        if top is not None and mle:  # each pair once, its two ends' candidates kept
            best = RunningTopK(len(sketches), top, how.metric)
            for i, js, found in joint_triangle(packed, params, threads=threads):
                best.add(np.full(js.size, i), js,
                         express(how.metric, found.values(base, detection), k))
                best.add(js, np.full(js.size, i),
                         express(how.metric, found.swapped().values(base, detection), k))
            return [best.rows()], None
        if top is None and (base == "jaccard" or mle):
            return None, similarity_row_tiles(packed, params, tiles, threads=threads, kind=base,
                                              **by_name)
    else:
        # On a cluster the workers are the parallelism: one thread per task unless told so.
        packed, threads = executor.share(packed), threads or 1
    if top is not None:  # each task: its rows against every genome, K kept per row
        return executor.map_ordered(top_row_tile, tiles, packed, cards, p, w, how.metric, k,
                                    top, threads, floor, how.estimator, detection), None
    if threshold is not None:
        return executor.map_ordered(edge_tile, tiles, packed, cards, p, w, threshold,
                                    threads, how.estimator, detection), None
    if base == "jaccard" or mle:
        return None, zip(tiles, executor.map_ordered(row_tile, tiles, packed, cards, p, w,
                                                     threads, how.estimator, base, detection))
    return None, zip(tiles, executor.map_ordered(metric_row_tile, tiles, packed, cards, p, w,
                                                 base, k, threads, floor))


def _kernel_tiles(sketches: SketchSet, backend, how: Comparison, threshold: float | None):
    """(edge tiles, row tiles) as _software_tiles, from the similarity kernel's calls: the
    pruned walk for --threshold, else the union estimates of every pair, call by call (--top
    keeps K per genome as the calls complete)."""
    from ..neighbours import RunningTopK
    from ..similarity import cardinalities
    params = HllParams(sketches.params["p"], sketches.params["w"])
    registers, k, n = sketches.registers(), sketches.params["k"], len(sketches)
    top = how.top
    if threshold is not None:
        return [list(backend.all_pairs(registers, params, threshold))], None
    cards = cardinalities(registers, params)
    base = base_similarity(how.metric)
    floor = detection_floor(how, params)
    if top is not None:
        best = RunningTopK(n, top, how.metric)
        for i, j, unions in backend.union_calls(registers, params):
            best.add(i, j, metric_values(how.metric, cards[i], cards[j], unions, k, floor))
            best.add(j, i, metric_values(how.metric, cards[j], cards[i], unions, k, floor))
        return [best.rows()], None
    matrix = np.eye(n)
    for i, j, unions in backend.union_calls(registers, params):
        matrix[i, j] = pair_similarity(base, cards[i], cards[j], unions, floor)
        matrix[j, i] = pair_similarity(base, cards[j], cards[i], unions, floor)
    return None, [(range(n), matrix)]


def pair_tiles(how: Comparison, run: Run, sketches: SketchSet, executor,
               threshold: float | None, note: bool = True):
    """(edge tiles, row tiles) of every pair of ``sketches`` by the run's estimator (--estimator)
    on its backend or executor, detection applied: with ``threshold`` (a Jaccard
    bound, host.metrics.jaccard_bound) edge tiles of the pairs with J >= it; with ``how.top``
    edge tiles of each genome's best; else row tiles of full rows of the base similarity of
    ``how.metric`` (J, or C for containment). Only --plot and newick hold these rows whole."""
    backend = run.backend() if run.backend_name in KERNEL_BACKENDS else None
    params = HllParams(sketches.params["p"], sketches.params["w"])
    top = how.top
    if how.estimator == "hll" and hasattr(backend, "all_pairs"):
        edge_tiles, row_tiles = _kernel_tiles(sketches, backend, how, threshold)
    else:
        if hasattr(backend, "all_pairs") and note:
            run.say(KERNEL_NOTE)
        edge_tiles, row_tiles = _software_tiles(sketches, executor, how, run.threads,
                                                threshold)
    if how.estimator == "hll" and top is None and base_similarity(how.metric) == "jaccard":
        rule = detection_floor(how, params, sketches.packed_sketches().cards)
        edge_tiles, row_tiles = floor_jaccard_tiles(edge_tiles, row_tiles, rule, threshold)
    return edge_tiles, row_tiles


def kept_edges(how: Comparison, run: Run, sketches: SketchSet, executor,
               threshold: float | None, note: bool = True):
    """Each genome's kept pairs as (i, js, values of ``how.metric``), what ``dist --format
    edges`` writes: the pairs passing ``threshold`` (in the metric's own units; <= for the Mash
    distance), each genome's best ``how.top``, or every pair (j > i; j != i for containment,
    which is asymmetric). Yielded genome by genome, tile by tile, never held whole."""
    k, n = sketches.params["k"], len(sketches)
    bound = jaccard_bound(how.metric, threshold, k)
    edge_tiles, row_tiles = pair_tiles(how, run, sketches, executor, bound, note)
    if edge_tiles is None:  # every pair, from the full rows
        symmetric = base_similarity(how.metric) == "jaccard"
        edge_tiles = ([(i, js, row[js]) for i, row in zip(tile, rows)
                       for js in [np.flatnonzero(np.arange(n) > i) if symmetric
                                  else np.flatnonzero(np.arange(n) != i)]]
                      for tile, rows in row_tiles)
    for tile in edge_tiles:
        for i, js, values in tile:
            if how.top is None:  # J or C; --top gives the metric already
                values = express(how.metric, values, k)
                if threshold is not None:  # the metric's own test after the Jaccard bound
                    keep = passes(how.metric, values, threshold)
                    js, values = js[keep], values[keep]
            yield i, js, values


def query_block(packed, params: HllParams, k: int, rows, columns, metric: str, estimator: str,
                detection: float, threads: int | None = None, ani_from: str = "jaccard",
                min_af: float = 0.0, fractions: bool = False):
    """The (rows x columns) values of ``metric`` for the genomes ``rows`` against ``columns`` of
    ``packed`` (host.similarity.PackedSketches) by ``estimator``, pairs below ``detection`` as
    sharing nothing: what search prints, and what cluster compares its genomes with its
    representatives by. An ANI ``ani_from`` "containment" is 0 below the aligned fraction
    ``min_af``; with ``fractions``, (values, aligned fractions) (None for a Jaccard ANI and
    the other metrics)."""
    if metric == "ani" and ani_from == "containment":
        values, fraction = block_containment_ani(packed, params, rows, columns, k, estimator,
                                                 detection, threads)
        values = np.where(fraction >= min_af, values, 0.0)
        return (values, fraction) if fractions else values
    values = express(metric, block_values(packed, params, rows, columns,
                                          base_similarity(metric), estimator, detection,
                                          threads), k)
    return (values, None) if fractions else values


def packed_together(references: SketchSet, queries: SketchSet):
    """(one host.similarity.PackedSketches of the references then the queries, their
    HllParams): query rows ``len(references) + q`` meet reference columns ``r``, as search
    compares them."""
    from ..similarity import PackedSketches
    hll = HllParams(references.params["p"], references.params["w"])
    registers = np.concatenate([references.packed_registers(), queries.packed_registers()])
    return PackedSketches(registers, hll, packed=True), hll


def query_tile(columns, packed, p: int, w: int, k: int, rows, metric: str, estimator: str,
               detection: float, threads: int | None = None, ani_from: str = "jaccard",
               min_af: float = 0.0, fractions: bool = False):
    """:func:`query_block` for some columns: a task on a Dask worker (``packed`` shared)."""
    return query_block(packed, HllParams(p, w), k, rows, columns, metric, estimator, detection,
                       threads, ani_from, min_af, fractions)


def read_references(path: str, option: str):
    """The HLL sketch collection ``path`` (given as ``option``), checked: not empty, names fit
    for a table and distinct."""
    references, = read_sketch_files([path])
    if references.kind != "hll":
        raise InputError(f"{references.origin}: {option} needs HLL sketches (python -m host "
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
    return references
