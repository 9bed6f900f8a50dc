"""Genome quality from a CheckM or CheckM2 table, for ``cluster --quality`` (the order of
preference, so the representatives): dRep's score, completeness - 5 x contamination, plus
contamination x strain heterogeneity / 100 where the table has CheckM's strain heterogeneity
(dRep's default weights; its N50 term needs the assemblies, which a sketch does not keep).

Tables read: CheckM's ``--tab_table`` (``Bin Id``, ``Completeness``, ``Contamination``,
``Strain heterogeneity``), CheckM2's ``quality_report.tsv`` (``Name``, ``Completeness``,
``Contamination``) and dRep's genome information table (``genome``, ``completeness``,
``contamination``, comma-separated): the name column is the first, the others are found by
their header (case and spaces ignored). A genome is named by its name in the run, its file, or
either without the FASTA and compression suffixes (CheckM names a bin by its file's stem).
"""

import math
import re

import numpy as np

from .io import InputError, bounded_lines, open_input

__all__ = ["read_quality", "quality_scores", "CONTAMINATION_WEIGHT"]

#: dRep's contamination weight (and galah's completeness-5contamination)
CONTAMINATION_WEIGHT = 5.0
_SUFFIXES = re.compile(r"(\.(fa|fna|fasta|fas|ffn|fq|fastq|sketch))?(\.(gz|bz2|xz|zst))?$",
                       re.IGNORECASE)


def _key(text: str) -> str:
    return text.strip().lower().replace(" ", "").replace("_", "")


def _stem(name: str) -> str:
    return _SUFFIXES.sub("", name.rsplit("/", 1)[-1])


def read_quality(path: str, wanted=None) -> dict[str, float]:
    """{genome name as the table gives it: dRep's score} of a CheckM, CheckM2 or dRep table,
    read a line at a time (host.io.bounded_lines); with ``wanted`` (a name -> bool test) only
    the rows it accepts are kept, so that memory holds the run's genomes, not the table."""
    what = "a CheckM, CheckM2 or dRep quality table (--quality)"
    header = None
    scores: dict[str, float] = {}
    try:
        with open_input(path, what) as table:
            for number, raw in bounded_lines(table, path, what):
                try:
                    line = raw.decode("utf-8").rstrip("\r")
                except UnicodeDecodeError:
                    raise InputError(f"{path}: --quality: not a text table (line {number} is "
                                     f"not UTF-8)") from None
                if not line.strip() or line.startswith("#"):
                    continue
                if header is None:
                    header = _header(path, line)
                    continue
                name, score = _row(path, number, line, *header)
                if wanted is not None and not wanted(name):
                    continue
                if name in scores:
                    raise InputError(f"{path}: line {number}: --quality names {name!r} twice")
                scores[name] = score
    except OSError as error:
        raise InputError(f"{path}: --quality: {error.strerror or error}") from None
    if header is None:
        raise InputError(f"{path}: --quality: empty table")
    return scores


def _header(path: str, line: str) -> tuple[str, int, dict[str, int]]:
    """(field separator, number of fields, {column: index}) of the table's header ``line``."""
    separator = "\t" if "\t" in line else ","
    header = [_key(field) for field in line.split(separator)]
    columns = {name: header.index(name)
               for name in ("completeness", "contamination", "strainheterogeneity")
               if name in header}
    for needed in ("completeness", "contamination"):
        if needed not in columns:
            raise InputError(f"{path}: --quality: no {needed.capitalize()} column in its header "
                             f"(a CheckM --tab_table, CheckM2 quality_report.tsv or dRep "
                             f"genome table)")
    return separator, len(header), columns


def _row(path: str, number: int, line: str, separator: str, width: int,
         columns: dict[str, int]) -> tuple[str, float]:
    """(genome name, dRep's score) of the table's row ``line``."""
    fields = line.split(separator)
    if len(fields) < width:
        raise InputError(f"{path}: line {number}: --quality: {len(fields)} fields, the header "
                         f"has {width}")
    try:
        values = {name: float(fields[index]) for name, index in columns.items()}
    except ValueError:
        raise InputError(f"{path}: line {number}: --quality: not a number in "
                         f"{', '.join(columns)}") from None
    if not all(math.isfinite(v) for v in values.values()):
        raise InputError(f"{path}: line {number}: --quality: not a finite number")
    score = values["completeness"] - CONTAMINATION_WEIGHT * values["contamination"]
    score += values["contamination"] * values.get("strainheterogeneity", 0.0) / 100.0
    return fields[0].strip(), score


def quality_scores(path: str, names: list[str], files: list[list[str]]) -> np.ndarray:
    """dRep's score of each genome (``names``, with their ``files``) from the table ``path``;
    every genome must be in it."""
    candidates = {c for name, genome_files in zip(names, files) for c in (name, *genome_files)}
    stems = {_stem(c) for c in candidates}
    table = read_quality(path, lambda name: name in candidates or _stem(name) in stems)
    by_stem: dict[str, str] = {}
    for name in table:
        by_stem.setdefault(_stem(name), name)
    out = np.empty(len(names))
    for i, (name, genome_files) in enumerate(zip(names, files)):
        candidates = [name, *genome_files, _stem(name), *map(_stem, genome_files)]
        found = next((c for c in candidates if c in table), None)
        if found is None:
            found = next((by_stem[c] for c in map(_stem, candidates) if c in by_stem), None)
        if found is None:
            raise InputError(f"{path}: --quality has no line for genome {name!r} (named by it, "
                             f"its file or either without its suffixes); give every genome a "
                             f"line")
        out[i] = table[found]
    return out
