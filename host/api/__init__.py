"""The Python API: genomes sketched, compared and clustered from Python, as the command line does
it (the commands are built on this package), without writing a file unless asked.

>>> import host.api as ksa
>>> genomes = ksa.sketch(["a.fa", "b.fa.gz"])          # a Collection; nothing written
>>> genomes.registers.shape                             # (genomes, 2^p) numpy array
>>> ksa.dist(genomes)                                   # Jaccard matrix, the joint MLE
>>> ksa.cluster(genomes).rows()                         # (genome, cluster, representative, ANI)
>>> genomes.save("genomes.sketch")                      # the file ``sketch`` would write

Every function takes the command line's options as keywords, named as its long options are
(``index_bits`` for ``--index-bits``), with the same defaults: k = 31, p = 14, w = 4, canonical
k-mers, the joint maximum-likelihood estimator (``estimator="mle"``) at detection Z = 3.
Bad input raises :class:`InputError` with the command line's message; warnings (an input
without k-mers, saturated sketches) are :class:`SketchWarning` s (module :mod:`warnings`).
docs/python.md is the guide.
"""

from __future__ import annotations  # numpy's types named below, imported where used

from collections.abc import Iterable, Mapping, Sequence

from ..io import InputError, check_sequence, name_problem
from ..metrics import DEFAULT_MIN_AF, METRICS, express, threshold_problem
from ..registers import pack_sketches
from ..sketchfile import SketchSet, write_sketches
from .params import Sketching, check_table_names, hll_params, saturated_warning
from .run import Run, SketchWarning, executor
from .sketching import collect, sketch_sequences
from kmerspec.golden.hll import HllParams
from kmerspec.params import DEFAULT_DETECTION

__all__ = ["Collection", "Clusters", "InputError", "SketchWarning", "sketch", "sketch_texts",
           "read", "registers_of", "dist", "edges", "search", "cluster"]


def registers_of(sketches: SketchSet) -> np.ndarray:
    """The HLL registers of ``sketches`` (a host.sketchfile.SketchSet), one register a byte:
    the one place the API reads the in-memory layout of registers.

    Returns a (genomes, 2^p) numpy array of uint8, row i genome i (a new array: collections
    hold registers packed, host.sketchfile.SketchSet.registers)."""
    return sketches.registers()


class Collection:
    """HLL sketches of genomes in memory, in input order: ``names``, ``files`` (each genome's
    source files), ``params`` (k, p, w, canonical, hash), ``registers``. Made by
    :func:`sketch`, :func:`sketch_texts` or :func:`read`; written only by :meth:`save`."""

    def __init__(self, sketches: SketchSet):
        if sketches.kind != "hll":
            raise InputError(f"{sketches.origin}: holds {sketches.kind} sketches; the Python "
                             f"API takes HLL sketches (sketch --kind hll)")
        self.sketches = sketches

    @property
    def names(self) -> list[str]:
        """The genomes' names, in order (a list of str)."""
        return list(self.sketches.names)

    @property
    def files(self) -> list[list[str]]:
        """Each genome's source files (a list of lists of str)."""
        return [list(files) for files in self.sketches.files]

    @property
    def params(self) -> dict:
        """The sketching parameters: k, p, w, canonical, hash (a dict)."""
        return dict(self.sketches.params)

    @property
    def registers(self) -> np.ndarray:
        """The registers: a (genomes, 2^p) numpy array of uint8, row i genome i."""
        return registers_of(self.sketches)

    def __len__(self) -> int:
        return len(self.sketches)

    def __repr__(self) -> str:
        p = self.sketches.params
        return (f"<Collection of {len(self)} genomes, k={p['k']} p={p['p']} w={p['w']}"
                f"{'' if p['canonical'] else ' forward'}>")

    def save(self, path) -> None:
        """Write the sketch file ``path`` (what ``python -m host sketch -o PATH`` writes; the
        command line reads it back). Returns None."""
        write_sketches(path, self.sketches)


def _run(backend: str, threads: int | None, xclbin: str | None = None) -> Run:
    return Run(backend_name=backend, threads=threads, xclbin=xclbin,
               option=lambda key: f"{'individual' if key == 'per_record' else key}=")


def _sketching(k, index_bits, register_bits, canonical, min_count, mc_depth, mc_width_bits,
               min_count_fasta, per_record=False) -> Sketching:
    return Sketching(k=k, p=index_bits, w=register_bits,
                     canonical=None if canonical is None else bool(canonical),
                     min_count=min_count, mc_depth=mc_depth, mc_width_bits=mc_width_bits,
                     min_count_fasta=bool(min_count_fasta), per_record=per_record)


def _finish(run: Run, sketches: SketchSet | None = None) -> None:
    """The end of an API call (its backend closed before): its gathered warnings, and
    saturated sketches, as SketchWarnings."""
    if sketches is not None:
        line = saturated_warning(sketches)
        if line is not None:
            run.say(line)
    run.warn_gathered()


def sketch(paths: Sequence[str], *, k: int | None = None, index_bits: int | None = None,
           register_bits: int | None = None, canonical: bool | None = None,
           individual: bool = False, min_count: int | None = None, mc_depth: int | None = None,
           mc_width_bits: int | None = None, min_count_fasta: bool = False,
           backend: str = "sw", threads: int | None = None,
           xclbin: str | None = None) -> Collection:
    """Sketch FASTA/FASTQ files (plain or compressed), one genome per file named by its file
    name (by its path where names collide), as ``python -m host sketch`` does; with
    ``individual``, one genome per record, named by its record name (``sketch -i``). The
    options are the command line's (k=31, index_bits=14, register_bits=4, canonical k-mers
    unless told otherwise; min_count for read files). Nothing is written.

    Returns a :class:`Collection`."""
    paths = [str(path) for path in ([paths] if isinstance(paths, str) else paths)]
    if not paths:
        raise InputError("sketch: no sequence files given")
    run = _run(backend, threads, xclbin)
    sketching = _sketching(k, index_bits, register_bits, canonical, min_count, mc_depth,
                           mc_width_bits, min_count_fasta, individual)
    try:
        sketches = sketch_sequences(paths, sketching, run)
    finally:
        run.close()
    _finish(run, sketches)
    return Collection(sketches)


def sketch_texts(sequences: Mapping[str, str | bytes] | Iterable[tuple[str, str | bytes]], *,
                 k: int | None = None, index_bits: int | None = None,
                 register_bits: int | None = None, canonical: bool | None = None,
                 threads: int | None = None) -> Collection:
    """Sketch sequences held in memory: ``sequences`` maps each genome's name to its text, a
    bare sequence (``"ACGT..."``) or FASTA/FASTQ (several records make one genome), str or
    bytes; or is an iterable of (name, text) pairs. Names follow the rules of file names
    (docs/cli.md: not empty, no control characters, no leading '#', each once). Options as
    :func:`sketch`'s. Nothing is written.

    Returns a :class:`Collection`."""
    pairs = list(sequences.items() if isinstance(sequences, Mapping) else sequences)
    run = _run("sw", threads)
    params = hll_params(_sketching(k, index_bits, register_bits, canonical, None, None, None,
                                   False), option=run.option)
    names, texts = [], []
    for name, text in pairs:
        name = str(name)
        problem = name_problem(name)
        if problem is not None:
            raise InputError(f"{name!r}: the genome's name {problem}; rename it")
        if name in names:
            raise InputError(f"{name}: given twice; give each genome once")
        data = text.encode() if isinstance(text, str) else bytes(text)
        if not data.lstrip()[:1] in (b">", b"@"):
            data = b">" + name.encode() + b"\n" + data + b"\n"
        names.append(name)
        texts.append(check_sequence(name, data))
    hll = HllParams(params["p"], params["w"])
    try:
        registers = list(run.backend().sketch_hll(([text] for text in texts), params["k"],
                                                  hll, params["canonical"], threads=threads))
    finally:
        run.close()
    for name, genome in zip(names, registers):
        if not genome.any():
            run.warnings.append(f"{name}: no k-mer of length {params['k']}")
    arrays = {"registers": pack_sketches(registers, hll)}
    sketches = SketchSet(kind="hll", params=params, names=names, files=[[] for _ in names],
                         arrays=arrays, origin="the sequences given", from_sequences=True)
    _finish(run, sketches)
    return Collection(sketches)


def read(paths: Sequence[str], *, k: int | None = None, index_bits: int | None = None,
         register_bits: int | None = None, canonical: bool | None = None,
         min_count: int | None = None, backend: str = "sw",
         threads: int | None = None) -> Collection:
    """The genomes of sketch files (``*.sketch``, any number, of one set of parameters) and
    sequence files, mixed as ``dist`` takes its inputs: sequence files are sketched with the
    sketch files' parameters (the options only where no sketch file is given).

    Returns one :class:`Collection` of every genome, in input order."""
    paths = [str(path) for path in ([paths] if isinstance(paths, str) else paths)]
    run = _run(backend, threads)
    sketching = _sketching(k, index_bits, register_bits, canonical, min_count, None, None,
                           False)
    try:
        sketches = collect(paths, "hll", "read", sketching, run)
    finally:
        run.close()
    _finish(run)
    return Collection(sketches)


def _checked_metric(metric: str) -> str:
    if metric not in METRICS:
        raise InputError(f"metric={metric!r}: choose one of {', '.join(METRICS)}")
    return metric


def dist(genomes: Collection, *, metric: str = "jaccard", estimator: str = "mle",
         detection: float = DEFAULT_DETECTION, backend: str = "sw",
         threads: int | None = None) -> np.ndarray:
    """Every pair of ``genomes`` by ``metric`` (jaccard; containment, row in column; ani, a
    percentage; mash, the Mash distance), the estimator and detection of ``python -m host
    dist`` (the joint MLE at Z = 3 by default; ``estimator="hll"`` for the HLL formula).

    Returns an (n, n) numpy array of float64: what ``dist`` writes as its TSV matrix, at full
    precision, row i and column j for genomes i and j."""
    import numpy as np  # here: the sketch command imports the API's modules, not numpy
    from .pairs import Comparison, pair_tiles  # here, as in search and cluster: sketching
    # (the command line's sketch above all) does without the pair loops
    how = Comparison(metric=_checked_metric(metric), estimator=estimator, detection=detection)
    sketches, run = genomes.sketches, _run(backend, threads)
    n = len(sketches)
    similarity = np.empty((n, n))
    try:
        with executor() as local:
            _, tiles = pair_tiles(how, run, sketches, local, None)
            for tile, rows in tiles:
                similarity[tile.start:tile.stop] = rows
    finally:
        run.close()
    _finish(run)
    return express(metric, similarity, sketches.params["k"])


EDGE_FIELDS = [("a", "i8"), ("b", "i8"), ("value", "f8")]  # int64, int64, float64


def edges(genomes: Collection, *, metric: str = "jaccard", threshold: float | None = None,
          top: int | None = None, estimator: str = "mle", detection: float = DEFAULT_DETECTION,
          backend: str = "sw", threads: int | None = None) -> np.ndarray:
    """The pairs of ``genomes`` that ``python -m host dist --format edges`` writes: with
    ``threshold``, those whose ``metric`` passes it (>=, or <= for the Mash distance); with
    ``top``, each genome's K best; with neither, every pair (a < b; both ways for containment).
    Same estimator and detection as :func:`dist`.

    Returns a numpy structured array with fields ``a`` and ``b`` (genome indices, as in
    ``genomes.names``) and ``value`` (the metric, float64 at full precision), in dist's order."""
    import numpy as np
    _checked_metric(metric)
    if threshold is not None:
        problem = threshold_problem(metric, threshold)
        if problem is not None:
            raise InputError(f"threshold={threshold}: {problem}")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise InputError(f"top={top!r}: give a whole number of genomes, at least 1")
    from .pairs import Comparison, kept_edges  # here, as in dist: sketching does without them
    how = Comparison(metric=metric, estimator=estimator, detection=detection, top=top)
    sketches, run = genomes.sketches, _run(backend, threads)
    pieces = []
    try:
        with executor() as local:
            for i, js, values in kept_edges(how, run, sketches, local, threshold):
                piece = np.empty(len(js), EDGE_FIELDS)
                piece["a"], piece["b"], piece["value"] = i, js, values
                pieces.append(piece)
    finally:
        run.close()
    _finish(run)
    return np.concatenate(pieces) if pieces else np.empty(0, EDGE_FIELDS)


def search(queries: Collection, references: Collection, *, metric: str = "jaccard",
           estimator: str = "mle", detection: float = DEFAULT_DETECTION,
           ani_from: str = "jaccard", min_af: float = DEFAULT_MIN_AF,
           threads: int | None = None, aligned_fractions: bool = False):
    """Each query of ``queries`` against every reference of ``references`` (of the same
    parameters) by ``metric``, as ``python -m host search`` computes it (the joint MLE at Z = 3
    by default; an ANI from ``ani_from`` jaccard or containment, a containment ANI below the
    aligned fraction ``min_af`` being 0).

    Returns a (queries, references) numpy array of float64; with ``aligned_fractions``, the
    pair (values, the aligned fractions of a containment ANI, else None)."""
    import numpy as np
    from .pairs import packed_together, query_block
    _checked_metric(metric)
    if ani_from not in ("jaccard", "containment"):
        raise InputError(f"ani_from={ani_from!r}: choose jaccard or containment")
    reference_set, query_set = references.sketches, queries.sketches
    reference_set.check_compatible(query_set)
    check_table_names(reference_set)
    n_ref = len(reference_set)
    packed, hll = packed_together(reference_set, query_set)
    values, fractions = query_block(packed, hll, reference_set.params["k"],
                                    np.arange(len(query_set)) + n_ref,
                                    np.arange(n_ref), metric, estimator, detection, threads,
                                    ani_from, min_af if ani_from == "containment" else 0.0,
                                    fractions=True)
    return (values, fractions) if aligned_fractions else values


class Clusters:
    """Genomes clustered (:func:`cluster`), arrays in input order: ``cluster`` (1 = the most
    preferred representative's cluster), ``representative`` (the index of each genome's
    representative), ``values`` (the metric to it), ``fractions`` (the aligned fraction of a
    containment ANI, else None), ``names``."""

    def __init__(self, names, found):
        self.names = names
        self.cluster, self.representative = found.cluster, found.representative
        self.values, self.fractions = found.values, found.fractions

    def rows(self) -> list[tuple]:
        """The lines ``python -m host cluster`` writes, as tuples: (genome, cluster,
        representative, value) and the aligned fraction of a containment ANI.

        Returns a list of tuples, one a genome in input order."""
        return [(self.names[i], int(self.cluster[i]), self.names[self.representative[i]],
                 float(self.values[i]))
                + (() if self.fractions is None else (float(self.fractions[i]),))
                for i in range(len(self.names))]

    def representatives(self) -> list[str]:
        """The representatives' names in cluster order (cluster 1's first).

        Returns a list of str."""
        reps = sorted(set(self.representative.tolist()), key=lambda r: self.cluster[r])
        return [self.names[r] for r in reps]


def cluster(genomes: Collection, *, ani: float | None = None, jaccard: float | None = None,
            mash: float | None = None, ani_from: str | None = None,
            min_af: float | None = None, method: str = "greedy", order: str | None = None,
            quality: str | None = None, estimator: str = "mle",
            detection: float = DEFAULT_DETECTION, threads: int | None = None) -> Clusters:
    """Cluster ``genomes`` as ``python -m host cluster`` does: at ``ani`` percent (95 unless
    ``jaccard`` or ``mash`` is given; the containment ANI with an aligned fraction of at least
    ``min_af`` unless ``ani_from="jaccard"``), by ``method`` (greedy, galah's; single,
    average or complete linkage), representatives in the order ``order`` (centrality, the
    default; size; input; quality, by the CheckM/CheckM2/dRep table ``quality``; or a file of
    genome names).

    Returns a :class:`Clusters` (numpy arrays; ``rows()`` gives the command's lines)."""
    from .clustering import Clustering, cluster_genomes
    given = [(name, value) for name, value in (("ani", ani), ("jaccard", jaccard),
                                                ("mash", mash)) if value is not None]
    if len(given) > 1:
        raise InputError(f"{given[0][0]}= and {given[1][0]}=: give one threshold")
    metric, threshold = given[0] if given else ("ani", 95.0)
    problem = threshold_problem(metric, threshold)
    if problem is not None:
        raise InputError(f"{metric}={threshold}: {problem}")
    if ani_from is None:
        ani_from = "containment" if metric == "ani" else None
    elif metric != "ani":
        raise InputError(f"ani_from=: applies to ani=, but the threshold is {metric}=")
    if min_af is not None and ani_from != "containment":
        raise InputError("min_af=: is the aligned fraction of a containment ANI")
    if order is None:
        order = "quality" if quality is not None else "centrality"
    how = Clustering(metric=metric, threshold=float(threshold), estimator=estimator,
                     detection=detection, ani_from=ani_from,
                     min_af=DEFAULT_MIN_AF if min_af is None else min_af, method=method,
                     order=order, quality=quality)
    run = _run("sw", threads)
    try:
        with executor() as local:
            found = cluster_genomes(genomes.sketches, how, run, local)
    finally:
        run.close()
    _finish(run)
    return Clusters(genomes.names, found)

