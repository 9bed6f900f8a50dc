"""Genomes into sketches, for the API and the commands: sequence files sketched on a run's backend
(or its Dask workers), one sketch per file or per record (``sketch -i``), sketch files read, and
the two mixed as dist, search and cluster take them; screen's read set pooled into one sketch."""

from __future__ import annotations  # numpy's types named below, imported where used

import math
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from ..backends import get_backend
from ..io import InputError, descriptor_of, few_kmers_cause, is_stream, read_sequence_file
from ..progress import Progress, count_bases
from ..reader import SequenceFile, read_file_groups, read_genomes
from ..scheduler import LocalExecutor
from ..sketchfile import (SketchSet, engine_params, in_input_order, is_sketch_file, merge,
                          read_sketches)
from ..streams import opened_streams, refuse_streams_for_workers
from .params import (HLL_ONLY, PQA_ONLY, SKETCHING, Sketching, check_table_names,
                     genome_names, hll_params, jsd_params, min_count_params)
from .run import Run
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams

__all__ = ["sketch_sequences", "sketch_files", "pqa_files", "collect", "warn_without_kmers",
           "disambiguate", "read_sketch_files", "sketch_pool"]


def _timed_genomes(paths: Sequence[str], progress: Progress, bases: deque,
                   backend=None) -> Iterable[list]:
    """Genomes for a backend; time spent waiting for the reader is not sketching time.

    A backend that streams files (``streams_files``) gets host.reader.SequenceFile handles
    and reads them itself; each handle then reports its bases once it is sketched.
    """
    if getattr(backend, "streams_files", False):
        for path in paths:
            file = SequenceFile(path)
            bases.append(file)
            yield [file]
        return
    source = read_genomes(paths)
    while True:
        with progress.waiting():
            item = next(source, None)
            if item is None:
                return
            bases.append(count_bases(item[1]))
        yield [item[1]]


def _each_with_progress(results: Iterable, progress: Progress, bases: deque) -> Iterator:
    """``results`` one by one as they come, each counted on ``progress`` (closed at the end)."""
    for result in results:
        yield result
        counted = bases.popleft() if bases else 0
        progress.advance(1, counted if isinstance(counted, int) else counted.bases or 0)
    progress.close()


#: a genome with fewer distinct k-mers than this per byte of its file is looked at for a cause
#: (host.io.few_kmers_cause): a DNA genome has about one per base, reads at 100x coverage one
#: per 200 bytes or so, RNA read as DNA about one per 10,000 bases (U breaks the window)
FEW_KMERS_PER_BYTE = 1e-3


def _few_kmer_estimates(filled: list[int], m: int) -> list[float]:
    """Each sketch's distinct k-mers by linear counting, m ln(m / empty registers), from its
    ``filled`` (nonzero) registers of m: close for the few k-mers it is used for (infinite for
    a sketch without an empty register)."""
    return [m * math.log(m / (m - f)) if f < m else math.inf for f in filled]


def warn_without_kmers(warnings: list[str], paths: Sequence[str], empty: Sequence[bool],
                       what: str, estimates: Sequence[float] | None = None) -> None:
    """A warning in ``warnings`` for each genome without k-mers (``what`` says which), saying
    why where the file shows it (host.io.few_kmers_cause); and, given the sketches'
    ``estimates`` of distinct k-mers, one for each genome with almost none whose file shows
    why."""
    for index, (path, is_empty) in enumerate(zip(paths, empty)):
        try:
            size = None if is_stream(path) else os.path.getsize(path)  # a pipe's is 0
        except OSError:
            size = None
        if is_empty:
            if size == 0:
                warnings.append(f"{path}: empty file, no k-mers")
                continue
            why = few_kmers_cause(path)
            warnings.append(f"{path}: {what}" + (f": {why}" if why else ""))
        elif estimates is not None and size and estimates[index] < FEW_KMERS_PER_BYTE * size:
            why = few_kmers_cause(path)
            if why:
                warnings.append(f"{path}: almost no k-mers (~{estimates[index]:.0f} "
                                f"distinct in {size:,} bytes): {why}")


def _min_count_arguments(min_count: MinCountParams) -> dict:
    """The backend's min_count argument, given only for m > 1 (SPEC 7)."""
    return {"min_count": min_count} if min_count.active else {}


def _sketch_path(path: str, params: dict, backend_name: str,
                 min_count: MinCountParams = MinCountParams()) -> np.ndarray:
    """Sketch one genome file where this runs (a cluster worker reads the file itself)."""
    hll = HllParams(params["p"], params["w"])
    backend = get_backend(backend_name)
    return next(backend.sketch_hll([[read_sequence_file(path)]], params["k"], hll,
                                   params["canonical"], **_min_count_arguments(min_count)))


def sketch_files(paths: Sequence[str], params: dict, run: Run, executor=None,
                 min_count: MinCountParams = MinCountParams()) -> SketchSet:
    """One HLL sketch per sequence file of ``paths`` (SPEC 3 ``params``) on the run's backend,
    here or on the Dask workers of ``executor``, each named by its file
    (host.api.params.genome_names), the read files filtered by ``min_count`` (SPEC 7); genomes
    without k-mers are in ``run.warnings``."""
    names = genome_names(paths)
    groups, note = read_file_groups(paths, min_count)
    if note is not None:  # --min-count filters the FASTQ files only (host.reader.ReadsMinCount)
        run.say(f"note: {note}")
        parts = [(indices, sketch_files([paths[i] for i in indices], params, run, executor,
                                        group_filter))
                 for indices, group_filter in groups]
        return in_input_order(parts, names, _sequence_origin(paths))
    min_count = groups[0][1]
    hll = HllParams(params["p"], params["w"])
    progress = run.progress("sketch", len(paths))
    backend = run.backend()
    bases: deque = deque()
    if executor is None or isinstance(executor, LocalExecutor):
        # the software backend's registers as bytes: the sketch command imports no numpy
        sketch_hll = getattr(backend, "sketch_hll_registers", backend.sketch_hll)
        results = sketch_hll(_timed_genomes(paths, progress, bases, backend),
                             params["k"], hll, params["canonical"], threads=run.threads,
                             **_min_count_arguments(min_count))
    else:
        refuse_streams_for_workers(paths)
        results = executor.map_ordered(_sketch_path, paths, params, backend.name, min_count)
    from ..fast.native import native
    from ..registers import PackedRows, pack_row
    # Each genome's registers go into their row of the collection, packed as sketch files hold
    # them (host.registers.pack_registers), as they arrive: the collection is held once.
    packed = PackedRows(len(paths), hll)
    filled = []  # nonzero registers of each genome
    for genome in _each_with_progress(results, progress, bases):
        if len(filled) == len(paths):
            raise RuntimeError(f"the backend returned more sketches than {len(paths)} genomes")
        row = packed.row(len(filled))
        pack_row(genome, hll, row)
        filled.append(hll.m - native.count_registers(row, hll.w, 0))
    if len(filled) != len(paths):  # a backend that lost a genome: never rows left empty
        raise RuntimeError(f"the backend returned {len(filled)} sketches for {len(paths)} "
                           f"genomes")
    seen = (f" seen at least {min_count.min_count} times ({run.option('min_count')} "
            f"{min_count.min_count})" if min_count.active else "")
    warn_without_kmers(run.warnings, paths, [f == 0 for f in filled],
                       f"no k-mer of length {params['k']}{seen}",
                       _few_kmer_estimates(filled, hll.m))
    return SketchSet(kind="hll", params=params, names=names,
                     files=[[str(p)] for p in paths], arrays={"registers": packed},
                     origin=_sequence_origin(paths), from_sequences=True,
                     min_counts=[min_count.record()] * len(paths) if min_count.active else [])


def sketch_sequences(paths: Sequence[str], sketching: Sketching, run: Run, executor=None,
                     params: dict | None = None) -> SketchSet:
    """HLL sketches of the sequence files ``paths`` with ``params`` (default: those
    ``sketching`` resolves to, host.api.params.hll_params): one a file, the read files filtered
    as ``sketching`` says (SPEC 7), or one a record with ``sketching.per_record``
    (host.api.records)."""
    params = hll_params(sketching, option=run.option) if params is None else params
    if sketching.per_record:
        given = sketching.given(("min_count", "mc_depth", "mc_width_bits", "min_count_fasta"))
        if given:
            raise InputError(f"{run.option(given[0])}: counts k-mers over a read set, but "
                             f"with {run.option('per_record')} each record is its own sketch; "
                             f"drop {run.option(given[0])}")
        if executor is not None and not isinstance(executor, LocalExecutor):
            raise InputError(f"{run.option('per_record')}: sketches in this process; drop "
                             f"--workers/--scheduler")
        from .records import sketch_records
        return sketch_records(paths, params, run)
    return sketch_files(paths, params, run, executor, min_count_params(sketching))


def _sequence_origin(paths: Sequence[str]) -> str:
    shown = ", ".join(str(p) for p in paths[:3])
    return f"the sequence files ({shown}{', ...' if len(paths) > 3 else ''})"


def _pqa_of_path(path: str, params: dict, backend_name: str):
    from ..fast.jsd import pqa_to_arrays
    backend = get_backend(backend_name)
    return pqa_to_arrays(next(backend.build_pqa([[read_sequence_file(path)]],
                                                engine_params("pqa", params))))


def pqa_files(paths: Sequence[str], params: dict, run: Run, executor=None) -> SketchSet:
    """One PQA sketch (SPEC 4 ``params``) per sequence file of ``paths``, as
    :func:`sketch_files` makes HLL sketches."""
    from ..fast.jsd import pqa_to_arrays
    names = genome_names(paths)
    shape = (1 << params["R"], params["n"])
    progress = run.progress("pqa", len(paths))
    backend = run.backend()
    bases: deque = deque()
    if executor is None or isinstance(executor, LocalExecutor):
        results = (pqa_to_arrays(pqa) for pqa in backend.build_pqa(
            _timed_genomes(paths, progress, bases, backend), engine_params("pqa", params),
            threads=run.threads))
    else:
        refuse_streams_for_workers(paths)
        results = executor.map_ordered(_pqa_of_path, paths, params, backend.name)
    done = list(_each_with_progress(results, progress, bases))
    tags = [genome_tags for genome_tags, _ in done]
    values = [genome_values for _, genome_values in done]
    warn_without_kmers(run.warnings, paths, [not v.any() for v in values],
                        f"no sampled k-mer (k={params['k']}, s={params['s']})")

    def stack(arrays):
        import numpy as np
        return np.stack(arrays) if arrays else np.zeros((0, *shape), dtype=np.uint32)
    return SketchSet(kind="pqa", params=params, names=names,
                     files=[[str(p)] for p in paths],
                     arrays={"tags": stack(tags), "values": stack(values)},
                     origin=_sequence_origin(paths), from_sequences=True)


def disambiguate(sets: list[SketchSet]) -> list[SketchSet]:
    """Genomes of different sketch files that carry one name (``a/x.fa`` and ``b/x.fa``, each
    sketched alone as ``x.fa``) are named by their source files instead, as sequence files are
    where file names collide; one source file sketched twice keeps its name (merge refuses it).
    """
    sources: dict[str, set] = {}
    for sketches in sets:
        for index, (name, files) in enumerate(zip(sketches.names, sketches.files)):
            sources.setdefault(name, set()).add(_source_of(sketches, index))
    for sketches in sets:
        sketches.names = [_distinct_name(sketches, index) if len(sources[name]) > 1 else name
                          for index, name in enumerate(sketches.names)]
    return sets


def _from_a_descriptor(files: list[str]) -> bool:
    """A genome read from standard input or another descriptor (``sketch -``): its recorded
    path names no file, so two such genomes of different sketch files are two genomes."""
    return bool(files) and all(descriptor_of(file) is not None for file in files)


def _source_of(sketches: SketchSet, index: int):
    files = sketches.files[index]
    if _from_a_descriptor(files) and not sketches.from_sequences:
        return (sketches.origin, index)
    return ",".join(files)


def _distinct_name(sketches: SketchSet, index: int) -> str:
    """The name of a genome whose name another source's genome has: its source files, or, read
    from standard input (whose path tells nothing), its sketch file and name
    (``a.sketch:stdin``), which merge --rename can then name."""
    files = sketches.files[index]
    if _from_a_descriptor(files) and not sketches.from_sequences:
        return f"{sketches.origin}:{sketches.names[index]}"
    return ",".join(files)


def _streams_of(paths: Sequence[str]):
    """host.streams.opened_streams, the same stream given twice refused before it is read."""
    if any(is_stream(path) for path in paths):
        genome_names(paths)
    return opened_streams(paths)


def read_sketch_files(paths: Sequence[str]) -> list[SketchSet]:
    """The sketch files ``paths``, pipes among them too (host.streams spools a sketch file
    arriving on a pipe, within the size its header states, since a zip archive is read by
    seeking)."""
    with _streams_of(paths):
        return [read_sketches(path) for path in paths]


def collect(paths: Sequence[str], kind: str, command: str, sketching: Sketching, run: Run,
            executor=None, reference: SketchSet | None = None) -> SketchSet:
    """One set of the genomes of ``paths`` (``kind`` sketches, for ``command``'s messages):
    sketch files are read; sequence files are sketched with the parameters of the sketch files
    given (of ``reference``, which every input must match, when given), or with ``sketching``'s
    when there are none. Pipes are read too, each once (host.streams)."""
    with _streams_of(paths):
        return _collect(paths, kind, command, sketching, run, executor, reference)


def _split_inputs(paths: Sequence[str], kind: str, sketching: Sketching, option
                  ) -> tuple[list[str], list[str]]:
    """(sketch files, sequence files) among ``paths``; a file named ``*.sketch`` that is not
    one, and sketching options given with sketch files only, are refused."""
    sketch_paths = [p for p in paths if is_sketch_file(p)]
    sequence_paths = [p for p in paths if not is_sketch_file(p)]
    for path in sequence_paths:
        if str(path).lower().endswith(".sketch"):
            read_sketches(path)  # named a sketch file but not one (empty, damaged): its error
    if not sequence_paths:
        given = [option(key) for key in
                 sketching.given(SKETCHING + (HLL_ONLY if kind == "hll" else PQA_ONLY))]
        if given:
            raise InputError(f"{given[0]}: sets how sequence files are sketched, but only "
                             f"sketch files were given (their own parameters are used); drop "
                             f"{', '.join(given)}")
    return sketch_paths, sequence_paths


def _read_sketches_of_kind(paths: Sequence[str], kind: str, command: str,
                           reference: SketchSet | None) -> list[SketchSet]:
    """The sketch files ``paths``, each of ``kind`` and, given a ``reference``, of its
    parameters; genome names as the files hold them."""
    sets = [read_sketches(p) for p in paths]
    for sketches in sets:
        if sketches.kind != kind:
            hint = " (sketch --kind pqa)" if kind == "pqa" else ""
            raise InputError(f"{sketches.origin}: {command} needs {kind.upper()} sketches"
                             f"{hint}, not {sketches.kind}")
        if reference is not None:
            reference.check_compatible(sketches)
    return sets


def _collect(paths: Sequence[str], kind: str, command: str, sketching: Sketching, run: Run,
             executor, reference: SketchSet | None = None) -> SketchSet:
    sketch_paths, sequence_paths = _split_inputs(paths, kind, sketching, run.option)
    sets = _read_sketches_of_kind(sketch_paths, kind, command, reference)
    stored_names = [list(sketches.names) for sketches in sets]
    disambiguate(sets)  # so that merge, below, refuses only a genome given twice
    like = reference or (merge(sets) if sets else None)
    if sequence_paths:
        if kind == "hll":
            sets.append(sketch_sequences(sequence_paths, sketching, run, executor,
                                         hll_params(sketching, like, run.option)))
        else:
            sets.append(pqa_files(sequence_paths, jsd_params(sketching, like, run.option), run,
                                  executor))
    # once more with the sequence files, from the names the sketch files hold: a sequence file
    # named as a genome of a sketch file but another file (b/x.fa, and x.fa sketched from
    # a/x.fa) is named by its path, as that genome is, as among sketch files
    for sketches, names in zip(sets, stored_names):
        sketches.names = names
    combined = merge(disambiguate(sets))
    if not len(combined):
        raise InputError(f"{combined.origin}: holds no genomes; nothing to compare")
    for sketches in sets:
        check_table_names(sketches)
    return combined


def sketch_pool(paths: Sequence[str], reference: SketchSet, sketching: Sketching,
                run: Run) -> np.ndarray:
    """The HLL registers of one read set made of every file of ``paths`` (screen's pool, as
    ``mash screen``'s): the sequence files are sketched together as one genome with the
    parameters of ``reference`` (the command has no options of its own for them), so
    --min-count counts a k-mer over all of them (FASTQ files;
    FASTA files are sketched in full beside them unless --min-count-fasta, as dist does);
    HLL sketch files (of reads sketched before) are joined in by their union (register-wise
    maximum). Pipes are read too, each once (host.streams)."""
    import numpy as np  # here: the sketch command pools nothing
    params = reference.params
    hll = HllParams(params["p"], params["w"])
    registers = np.zeros(hll.m, dtype=np.uint8)
    with _streams_of(paths):
        sketch_paths, sequence_paths = _split_inputs(paths, "hll", sketching, run.option)
        for sketches in _read_sketches_of_kind(sketch_paths, "hll", "screen", reference):
            if len(sketches):
                for lo in range(0, len(sketches), 1024):  # a block at a time, never all unpacked
                    np.maximum(registers, sketches.registers(slice(lo, lo + 1024)).max(axis=0),
                               out=registers)
        if sequence_paths:
            genome_names(sequence_paths)  # a file given twice is refused
            backend = run.backend()
            streams = getattr(backend, "streams_files", False)
            groups, note = read_file_groups(sequence_paths, min_count_params(sketching))
            if note is not None:
                run.say(f"note: {note}")
            for indices, min_count in groups:
                files = [SequenceFile(sequence_paths[i]) if streams
                         else read_sequence_file(sequence_paths[i]) for i in indices]
                sketch = next(iter(backend.sketch_hll([files], params["k"], hll,
                                                      params["canonical"], threads=run.threads,
                                                      **_min_count_arguments(min_count))))
                np.maximum(registers, sketch, out=registers)
    if not registers.any():
        run.warnings.append(f"{_sequence_origin(list(paths))}: the read set has no k-mer "
                                f"of length {params['k']}")
    return registers
