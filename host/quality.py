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

from .io import InputError

__all__ = ["read_quality", "quality_scores", "CONTAMINATION_WEIGHT"]

#: dRep's contamination weight (and galah's completeness-5contamination)
CONTAMINATION_WEIGHT = 5.0
_SUFFIXES = re.compile(r"(\.(fa|fna|fasta|fas|ffn|fq|fastq|sketch))?(\.(gz|bz2|xz|zst))?$",
                       re.IGNORECASE)


def _key(text: str) -> str:
    return text.strip().lower().replace(" ", "").replace("_", "")


def _stem(name: str) -> str:
    return _SUFFIXES.sub("", name.rsplit("/", 1)[-1])


def read_quality(path: str) -> dict[str, float]:
    """{genome name as the table gives it: dRep's score} of a CheckM, CheckM2 or dRep table."""
    try:
        with open(path, encoding="utf-8") as table:
            lines = [line.rstrip("\n\r") for line in table]
    except UnicodeDecodeError:
        raise InputError(f"{path}: --quality: not a text table") from None
    except OSError as error:
        raise InputError(f"{path}: --quality: {error.strerror or error}") from None
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    if not lines:
        raise InputError(f"{path}: --quality: empty table")
    separator = "\t" if "\t" in lines[0] else ","
    header = [_key(field) for field in lines[0].split(separator)]
    columns = {}
    for name in ("completeness", "contamination", "strainheterogeneity"):
        if name in header:
            columns[name] = header.index(name)
    for needed in ("completeness", "contamination"):
        if needed not in columns:
            raise InputError(f"{path}: --quality: no {needed.capitalize()} column in its header "
                             f"(a CheckM --tab_table, CheckM2 quality_report.tsv or dRep "
                             f"genome table)")
    scores: dict[str, float] = {}
    for number, line in enumerate(lines[1:], 2):
        fields = line.split(separator)
        if len(fields) < len(header):
            raise InputError(f"{path}: line {number}: --quality: {len(fields)} fields, the header "
                             f"has {len(header)}")
        try:
            values = {name: float(fields[index]) for name, index in columns.items()}
        except ValueError:
            raise InputError(f"{path}: line {number}: --quality: not a number in "
                             f"{', '.join(columns)}") from None
        if not all(math.isfinite(v) for v in values.values()):
            raise InputError(f"{path}: line {number}: --quality: not a finite number")
        score = values["completeness"] - CONTAMINATION_WEIGHT * values["contamination"]
        score += values["contamination"] * values.get("strainheterogeneity", 0.0) / 100.0
        name = fields[0].strip()
        if name in scores:
            raise InputError(f"{path}: line {number}: --quality names {name!r} twice")
        scores[name] = score
    return scores


def quality_scores(path: str, names: list[str], files: list[list[str]]) -> np.ndarray:
    """dRep's score of each genome (``names``, with their ``files``) from the table ``path``;
    every genome must be in it."""
    table = read_quality(path)
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
