"""One sketch per record (``sketch -i``, as ``mash sketch -i``): each record of a multi-FASTA or
FASTQ file (a plasmid, a contig, a read) its own genome, named by its record name (docs/SPEC.md
1.2, docs/cli.md "Genome names")."""

from collections.abc import Iterator, Sequence


from ..io import InputError, name_problem, read_sequence_file
from ..registers import pack_sketches
from ..sketchfile import SketchSet
from .params import genome_names
from .run import Run
from kmerspec.golden.hll import HllParams

__all__ = ["split_records", "record_name", "sketch_records"]


def split_records(path: str, data: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """(record number from 1, header line without its '>' or '@', the record's bytes from its
    header to the next) of the checked FASTA/FASTQ bytes ``data`` (host.io.check_sequence) of
    ``path``; sequence before the first header has no name and is refused."""
    lines = data.split(b"\n")
    fastq = next((line[:1] == b"@" for line in lines if line.strip()), False)
    start, number, index = None, 0, 0
    header = b""
    while index < len(lines):
        line = lines[index]
        is_header = line[:1] == (b"@" if fastq else b">")
        if is_header:
            if start is not None:
                yield number, header, b"\n".join(lines[start:index]) + b"\n"
            number, start, header = number + 1, index, line[1:].rstrip(b"\r")
            index += 4 if fastq else 1  # a FASTQ record is 4 lines (SPEC 1.1)
            continue
        if start is None and line.strip():
            raise InputError(f"{path}: line {index + 1}: sequence before the first header; "
                             f"sketch -i names each sketch by its record's header")
        index += 1
    if start is not None:
        yield number, header, b"\n".join(lines[start:]) + b"\n"


def record_name(path: str, number: int, header: bytes) -> str:
    """The name of record ``number`` of ``path``: its header's first word (up to the first
    space or tab), as Mash names it; an empty name, or one that would break a table, refused."""
    words = header.replace(b"\t", b" ").split(b" ")
    name = words[0].decode("utf-8", errors="backslashreplace") if words else ""
    problem = name_problem(name)
    if problem is not None:
        raise InputError(f"{path}: record {number}: the genome's name {name!r} {problem} "
                         f"(sketch -i names each sketch by its record's header's first word); "
                         f"rename the record")
    return name


def sketch_records(paths: Sequence[str], params: dict, run: Run) -> SketchSet:
    """One HLL sketch (SPEC 3 ``params``) per record of the sequence files ``paths``, in file
    and record order, on the run's backend, each named by its record (:func:`record_name`):
    two records of one file with one name are refused; records of different files with one
    name are named ``FILE:NAME``, FILE the file's genome name (host.api.params.genome_names)."""
    file_names = genome_names(paths)
    hll = HllParams(params["p"], params["w"])
    backend = run.backend()
    progress = run.progress("sketch -i", len(paths), "files")
    names, files, registers, sources = [], [], [], []
    for path, file_name in zip(paths, file_names):
        data = read_sequence_file(path)
        first: dict[str, int] = {}
        records = []
        for number, header, record in split_records(path, data):
            name = record_name(path, number, header)
            if name in first:
                raise InputError(f"{path}: records {first[name]} and {number} are both named "
                                 f"{name!r}; sketch -i needs each record's name once")
            first[name] = number
            records.append(record)
            names.append(name)
            sources.append(file_name)
            files.append([str(path)])
        found = list(backend.sketch_hll(([record] for record in records), params["k"], hll,
                                        params["canonical"], threads=run.threads))
        empty = sum(not genome.any() for genome in found)
        if not records:
            run.warnings.append(f"{path}: no records")
        elif empty:
            run.warnings.append(f"{path}: {empty} of {len(records)} records have no k-mer of "
                                f"length {params['k']}")
        registers += found
        progress.advance(1, len(data))
    progress.close()
    counts: dict[str, set] = {}
    for name, source in zip(names, sources):
        counts.setdefault(name, set()).add(source)
    names = [f"{source}:{name}" if len(counts[name]) > 1 else name
             for name, source in zip(names, sources)]
    arrays = {"registers": pack_sketches(registers, hll)}
    shown = ", ".join(str(p) for p in paths[:3])
    return SketchSet(kind="hll", params=params, names=names, files=files, arrays=arrays,
                     origin=f"the records of ({shown}{', ...' if len(paths) > 3 else ''})",
                     from_sequences=True)
