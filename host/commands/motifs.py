"""``motifs``: emerging k-mers, frequent in a test set and rare in a control set (SPEC 5)."""

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..io import InputError
from ..progress import Progress, count_bases
from ..reader import read_genomes
from .collections import collection_options
from .common import Session, backend_of, genome_names, parameter_header
from ..api.sketching import warn_without_kmers
from .options import backend_options, new_command, output_option, ranged_int

if TYPE_CHECKING:
    from kmerspec.golden.motif import MotifParams


def add_parser(commands) -> None:
    motifs = new_command(commands, "motifs",
                         "emerging motifs: frequent in test, rare in control")
    motifs.add_argument("--test", nargs="+", required=True, metavar="FILE",
                        help="test set FASTA/FASTQ files (k-mers counted together), or "
                             "directories of them")
    motifs.add_argument("--control", nargs="+", required=True, metavar="FILE",
                        help="control set FASTA/FASTQ files, or directories of them")
    collection_options(motifs, ("test", "control"))
    output_option(motifs, to_stdout=True)
    backend_options(motifs)
    motifs.add_argument("--kmin", type=ranged_int(1, 32), default=10,
                        help="shortest k-mer length, 1..32 (default %(default)s)")
    motifs.add_argument("--kmax", type=ranged_int(1, 32), default=20,
                        help="longest k-mer length, kmin..32 (default %(default)s)")
    motifs.add_argument("--threshold", default="10",
                        help="T_k: report k-mers estimated at least T_k times in the test set; "
                             "one value for every k, or kmax-kmin+1 comma-separated values "
                             "(default %(default)s)")
    motifs.add_argument("--growth", default="2",
                        help="g: emerging iff estimate >= g * control count (a multiple of "
                             "1/256; default %(default)s)")
    motifs.add_argument("--cm-rows", "--d", dest="d", metavar="D", type=ranged_int(1, 16),
                        default=4,
                        help="Count-Min rows per k, 1..16 (default %(default)s)")
    motifs.add_argument("--cm-width-bits", "--cw", dest="cw", metavar="CW",
                        type=ranged_int(1, 24), default=14,
                        help="log2 counters per row, 1..24 (default %(default)s)")
    motifs.add_argument("--store-sets", type=ranged_int(1, 1 << 16), default=64,
                        help="sets of the heavy-hitter store per k, a power of two (default "
                             "%(default)s)")
    motifs.add_argument("--store-ways", type=ranged_int(1, 64), default=4,
                        help="ways of each heavy-hitter store set, 1..64 (default %(default)s)")
    motifs.add_argument("--canonical", action="store_true",
                        help="count canonical k-mers (default: strand-specific)")
    motifs.set_defaults(run=run)


def _parse_thresholds(text: str, kmin: int, kmax: int) -> int | tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--threshold must be an integer or a comma-separated list of "
                         f"integers, not {text!r}") from None
    if len(values) == 1:
        return values[0]
    if len(values) != kmax - kmin + 1:
        raise InputError(f"--threshold lists {len(values)} values for k = {kmin}..{kmax} "
                         f"({kmax - kmin + 1} values needed)")
    return values


def _read_motif_set(paths: Sequence[str], params: "MotifParams", session: Session,
                    progress: Progress) -> list[bytes]:
    """The files of a set read into memory, for a backend that takes bytes; a genome without a
    k-mer of length kmin is warned about."""
    from ..fast.kmers import kmer_blocks
    genome_names(paths)  # the same file twice is refused
    files = []
    for path, data in read_genomes(paths):
        files.append(data)
        progress.advance(1, count_bases(data), show_rate=False)
        if not any(words.size for words in kmer_blocks(data, params.kmin, params.canonical,
                                                         copy=False)):
            warn_without_kmers(session.warnings, [path], [True],
                               f"no k-mer of length {params.kmin}")
    return files


def _find_streaming(args, params: "MotifParams", backend, session: Session,
                    progress: Progress) -> list:
    """The software backend reads each file once, as it streams it (host.fast.motif): nothing
    of a file is held but a block, whatever its size, a pipe included."""
    from ..reader import SequenceFile
    genome_names(args.test)
    genome_names(args.control)
    test = [SequenceFile(path) for path in args.test]
    control = [SequenceFile(path) for path in args.control]
    progress.status(f"motifs: counting k = {params.kmin}..{params.kmax} in "
                    f"{len(test) + len(control)} files")
    found: list[int] = []
    rows = backend.find_motifs(test, control, params, threads=args.threads,
                               kmers_of_files=found)
    for path, file, kmers in zip(args.test + args.control, test + control, found):
        progress.advance(1, file.bases or 0, show_rate=False)
        if not kmers:
            warn_without_kmers(session.warnings, [path], [True],
                               f"no k-mer of length {params.kmin}")
    return rows


#: MotifParams' field names and the options that set them
_OPTION_OF_FIELD = {"kmin": "--kmin", "kmax": "--kmax", "d": "--cm-rows", "cw": "--cm-width-bits",
                    "thresholds": "--threshold", "threshold": "--threshold", "growth": "--growth",
                    "store_sets": "--store-sets", "store_ways": "--store-ways"}


def _as_options(message: str, growth_text: str) -> str:
    """A MotifParams message in the command line's words: option names for field names, the
    growth as typed instead of a Fraction's repr."""
    message = re.sub(r"Fraction\(-?\d+, \d+\)", growth_text, message)
    message = re.sub(r"\b(" + "|".join(sorted(_OPTION_OF_FIELD, key=len, reverse=True))
                     + r")\b(?!-)", lambda match: _OPTION_OF_FIELD[match.group(1)], message)
    option, _, rest = message.partition(" ")
    return f"{option}: {rest}" if option in _OPTION_OF_FIELD.values() else message


def run(args, session: Session) -> None:
    from fractions import Fraction
    from kmerspec.golden.motif import MotifParams
    try:
        growth = Fraction(args.growth)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"--growth must be a number, not {args.growth!r}") from None
    try:
        params = MotifParams(kmin=args.kmin, kmax=args.kmax, d=args.d, cw=args.cw,
                             thresholds=_parse_thresholds(args.threshold, args.kmin, args.kmax),
                             growth=growth, store_sets=args.store_sets,
                             store_ways=args.store_ways, canonical=args.canonical)
    except ValueError as error:
        raise InputError(_as_options(str(error), args.growth)) from None
    out = session.outputs.open(args.output)
    backend = backend_of(args, session)
    progress = session.progress("motifs: read", len(args.test) + len(args.control), "files")
    if getattr(backend, "streams_files", False):
        rows = _find_streaming(args, params, backend, session, progress)
    else:
        test = _read_motif_set(args.test, params, session, progress)
        control = _read_motif_set(args.control, params, session, progress)
        progress.status(f"motifs: counting k = {params.kmin}..{params.kmax} in "
                        f"{progress.bases / 1e6:.2f} Mbases")
        rows = backend.find_motifs(test, control, params, threads=args.threads)
    progress.status(f"motifs: {len(rows)} emerging k-mers, k = {params.kmin}..{params.kmax}, "
                    f"{progress.bases / 1e6:.2f} Mbases in {progress.elapsed_seconds:.1f} s")
    progress.close()
    header = parameter_header("motifs", {
        "kmin": params.kmin, "kmax": params.kmax, "d": params.d, "cw": params.cw,
        "counter_bits": params.counter_bits, "thresholds": ",".join(map(str, params.thresholds)),
        "growth": str(growth), "store": f"{params.store_sets}x{params.store_ways}",
        "canonical": params.canonical, "h3_seed": hex(params.h3_seed)})
    out.write(header + "\n")
    out.write(f"# test: {' '.join(args.test)}\n# control: {' '.join(args.control)}\n")
    out.write("k\tkmer\ttest_estimate\tcontrol_count\n")
    for row in rows:
        out.write(f"{row.k}\t{row.kmer}\t{row.test_estimate}\t{row.control_count}\n")
