"""How genomes are sketched and named, for the API and the command line alike: the defaults, the
settings a caller gives (:class:`Sketching`, None where not given), the parameters they resolve
to (given, else those of the sketch files the sequence files go with, else the defaults), and
the rules of genome names."""

import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..io import InputError, name_problem
from ..reader import ReadsMinCount
from ..sketchfile import SketchSet, engine_params
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import SAMPLE_SEED

__all__ = ["HLL_DEFAULTS", "JSD_DEFAULTS", "HLL_ONLY", "PQA_ONLY", "SKETCHING", "KEYWORDS",
           "Sketching", "hll_params", "jsd_params", "min_count_params", "genome_names",
           "check_table_names", "saturated_warning", "SATURATED_SHARE"]

HLL_DEFAULTS = {"k": 31, "p": 14, "w": 4, "canonical": True}
JSD_DEFAULTS = {"k": 31, "s": 10, "sample_seed": SAMPLE_SEED.default, "d": 5, "cw": 14, "R": 12,
                "n": 8, "update": "cu", "canonical": True}

#: the settings of each kind of sketch, and those of both
HLL_ONLY = ("p", "w", "min_count", "mc_depth", "mc_width_bits", "min_count_fasta")
PQA_ONLY = ("s", "sample_seed", "d", "cw", "R", "n", "update")
SKETCHING = ("k", "canonical")

#: the Python keyword of each setting whose name in sketch files is a letter (the command
#: line's long option with ``_`` for ``-``)
KEYWORDS = {"p": "index_bits", "w": "register_bits", "s": "sample_bits", "d": "cm_rows",
            "cw": "cm_width_bits", "R": "queue_bits", "n": "queue_entries"}


@dataclass(frozen=True)
class Sketching:
    """How sequence files are sketched, as the caller gave it: each setting None (False for the
    switches) where not given. ``canonical`` False is ``--no-canonical``; ``per_record``
    sketches each record of a file on its own (``sketch -i``)."""

    k: int | None = None
    p: int | None = None
    w: int | None = None
    canonical: bool | None = None
    min_count: int | None = None
    mc_depth: int | None = None
    mc_width_bits: int | None = None
    min_count_fasta: bool = False
    s: int | None = None
    sample_seed: int | None = None
    d: int | None = None
    cw: int | None = None
    R: int | None = None
    n: int | None = None
    update: str | None = None
    per_record: bool = False

    def given(self, keys: Sequence[str]) -> list[str]:
        """The settings among ``keys`` that were given (``canonical`` either way)."""
        return [key for key in keys if getattr(self, key) is not None
                and (key == "canonical" or getattr(self, key) is not False)]


def _resolve(sketching: Sketching, defaults: dict, hash_name: str, like: SketchSet | None,
             option) -> dict:
    """Settings given, else those of the sketch files given (``like``), else the defaults; a
    setting that contradicts the sketch files is refused (``option(key)`` names it)."""
    params = {}
    for key in defaults:
        value = sketching.canonical if key == "canonical" else getattr(sketching, key)
        if like is None:
            params[key] = defaults[key] if value is None else value
            continue
        stored = like.params.get(key)
        if value is not None and value != stored:
            # the parameter as sketch headers show it: an option's name may be refused (--p)
            shown = option("canonical") if key == "canonical" else f"{key}={value}"
            raise InputError(f"{like.origin}: sketched with {key}={stored!r}, but {shown} was "
                             f"given for the sequence files; drop the option or re-sketch")
        params[key] = stored
    params["hash"] = hash_name
    return params


def hll_params(sketching: Sketching, like: SketchSet | None = None,
               option=lambda key: f"{key}=") -> dict:
    """The HLL parameters (k, p, w, canonical, hash) sequence files are sketched with."""
    return _validated("hll", _resolve(sketching, HLL_DEFAULTS, "fmix64", like, option))


def jsd_params(sketching: Sketching, like: SketchSet | None = None,
               option=lambda key: f"{key}=") -> dict:
    """The JSD engine's parameters (SPEC 4) sequence files are sketched with into PQAs."""
    return _validated("pqa", _resolve(sketching, JSD_DEFAULTS, "murmur3_32", like, option))


def _validated(kind: str, params: dict) -> dict:
    """``params`` if the engine takes them (the command line's option ranges say the same
    before; a Python caller learns it here), else InputError."""
    try:
        engine_params(kind, params)
    except ValueError as error:
        raise InputError(f"{kind} sketches: {error}") from None
    return params


def min_count_params(sketching: Sketching) -> ReadsMinCount:
    """The minimum-count filter (SPEC 7) of the read files sketched (FASTQ files, or every
    sequence file with ``min_count_fasta``)."""
    defaults = MinCountParams()
    given = {key: getattr(sketching, key) for key in ("min_count", "mc_depth", "mc_width_bits")}
    return ReadsMinCount(**{key: getattr(defaults, key) if value is None else value
                            for key, value in given.items()},
                         fasta=sketching.min_count_fasta)


def genome_names(paths: Sequence[str]) -> list[str]:
    """File names (without directories); the path as given where two file names collide.

    The same file given twice is refused, through a symlink or a hard link too: its two genomes
    would be one genome (Jaccard 1).
    """
    seen: dict = {}
    for path in paths:
        key = _file_identity(path)
        if key in seen:
            linked = (", a hard link to it" if isinstance(key, tuple)
                      and os.path.realpath(path) != os.path.realpath(seen[key]) else "")
            raise InputError(f"{path}: given twice as input (also as {seen[key]}{linked}); give "
                             f"each genome once")
        seen[key] = path
    names = [Path(p).name for p in paths]
    counts = Counter(names)  # not names.count: 100,000 genomes would take minutes
    names = [name if counts[name] == 1 else str(p) for name, p in zip(names, paths)]
    for name, path in zip(names, paths):
        problem = name_problem(name)
        if problem is not None:
            raise InputError(f"{path}: the genome's name {name!r} {problem}; rename the file")
    return names


def _file_identity(path: str):
    """What makes two paths one file: (device, inode) for a regular file, so that a hard link
    is the file it links to as a symlink is; the resolved path for anything else."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return os.path.realpath(path)
    if stat.S_ISREG(status.st_mode):
        return (status.st_dev, status.st_ino)
    return os.path.realpath(path)


def check_table_names(sketches: SketchSet) -> None:
    """Refuse a set whose genome names would break a table (host.io.name_problem)."""
    for name in sketches.names:
        problem = name_problem(name)
        if problem is not None:
            raise InputError(f"{sketches.origin}: holds a genome named {name!r}, which "
                             f"{problem}; rename it with merge --rename")


#: more than this share of a sketch's registers at the top value R, and its cardinality is
#: uncertain past what the register width can tell (SPEC 3 "Saturated registers": the standard
#: error of the censored estimate is then 1.5 times a sketch's usual or more)
SATURATED_SHARE = 0.97


def saturated_warning(*sets: SketchSet) -> str | None:
    """One warning line if HLL sketches of ``sets`` are saturated past what their width tells,
    naming the fix; None if none is."""
    from kmerspec.golden.hll import top_rank
    total, found = 0, []
    for sketches in (s for s in sets if s.kind == "hll" and len(s)):
        p, w = sketches.params["p"], sketches.params["w"]
        top = top_rank(HllParams(p, w))
        total += len(sketches)
        from ..registers import saturated_counts
        counts = saturated_counts(sketches.held_registers(), sketches.hll())
        found += [(sketches.names[g], p, w, top) for g, count in enumerate(counts)
                  if count / (1 << p) > SATURATED_SHARE]
    if not found:
        return None
    name, p, w, top = found[0]
    fix = (f"--register-bits {max(6, w + 1)} (or a larger --index-bits)" if w < 6
           else "a larger --index-bits")
    return (f"warning: {len(found)} of {total} sketches are saturated: over "
            f"{SATURATED_SHARE:.0%} of their registers at the largest value ({top} for {w}-bit "
            f"registers at p={p}; first: {name}), so their k-mer counts and similarities are "
            f"uncertain past what the registers tell; sketch again with {fix}")
