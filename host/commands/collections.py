"""Collections of genomes: list files (``-l FILE``) and directories among a command's inputs, so
that 100,000 genomes never meet the shell's limit on the length of a command line.

- ``-l FILE`` (``--list``, repeatable; ``-l -`` reads the list from standard input), as
  ``mash sketch -l`` and ``sourmash --from-file``: one path per line, used as written, so a
  relative path is relative to the current directory (as Mash does), not to the list's
  directory. Spaces and tabs at either end of a line and a CR before its newline are removed;
  empty lines and lines starting with ``#`` are skipped (a genome named ``#...`` could not be
  a table's row anyway). Every listed path must exist; a listed directory stands for its files
  as below.
- A directory stands for its sequence files (:data:`SEQUENCE_SUFFIXES`, any case, plain or
  ``.gz``/``.bz2``/``.xz``; ``merge`` takes its ``*.sketch`` files), not recursively, hidden
  files left out (as the shell's ``DIR/*.fa`` would), sorted by file name in code-point order
  (as ``LC_ALL=C ls``).
- The files named on the command line come first (each directory expanded in place), then each
  list's paths in the order given.

Every mistake is one line naming the file: a list that does not exist or is not a text list, a
list that names no file, a listed path that does not exist (with its line number), a directory
with no files of the kind.
"""

import contextlib
import os
import stat
import sys

from ..io import (LINE_LIMIT, ZIP_MAGIC, InputError, bounded_lines, compression_of, open_input,
                  with_head)

__all__ = ["SEQUENCE_SUFFIXES", "COMPRESSION_SUFFIXES", "collection_options",
           "expand_collections", "read_list", "directory_files"]

#: FASTA and FASTQ file name suffixes a directory is searched for (protein FASTA, .faa, is not
#: among them: these are nucleotide k-mers)
SEQUENCE_SUFFIXES = (".fa", ".fasta", ".fna", ".ffn", ".fas", ".fsa", ".fq", ".fastq")
#: the compressions the reader decompresses (host.io); each may follow a sequence suffix
COMPRESSION_SUFFIXES = ("", ".gz", ".bz2", ".xz")
_KINDS = {
    "sequences": (tuple(s + c for s in SEQUENCE_SUFFIXES for c in COMPRESSION_SUFFIXES),
                  "FASTA/FASTQ files (*.fa, *.fasta, *.fna, *.ffn, *.fas, *.fsa, *.fq, "
                  "*.fastq, each plain or .gz, .bz2, .xz)", "the input files"),
    "sketches": ((".sketch",), "sketch files (*.sketch)", "the sketch files"),
}


def collection_options(sub, dests: tuple[str, ...], kind: str = "sequences",
                       listed: str | None = None) -> None:
    """Directories among the values of ``dests`` (argparse names of the command's input
    arguments) stand for their files of ``kind``; with ``listed``, ``-l FILE`` adds the paths
    of list files to that argument."""
    what = _KINDS[kind][1]
    if listed is not None:
        sub.add_argument("-l", "--list", dest="lists", action="append", default=[],
                         metavar="FILE",
                         help=f"also take the inputs listed in FILE, one path per line, as "
                              f"mash sketch -l (relative paths from the current directory; "
                              f"empty lines and lines starting with # skipped; - reads the "
                              f"list from standard input); repeatable. A directory, given or "
                              f"listed, stands for its {what}, sorted, not recursively "
                              f"(default: only the inputs named)")
    sub.set_defaults(collection=(dests, kind, listed))


def expand_collections(args) -> None:
    """Replace directories by their files and add the listed paths (in place on ``args``)."""
    dests, kind, listed = getattr(args, "collection", ((), "sequences", None))
    for dest in dests:
        values = getattr(args, dest, None)
        if values is None:
            continue
        expanded = []
        for path in values:
            expanded.extend(directory_files(path, kind) if _is_directory(path) else [path])
        if dest == listed:
            if "-" in getattr(args, "lists", []) and "/dev/stdin" in expanded:
                raise InputError("-: standard input cannot be both an input (-) and a list "
                                 "(-l -); give one of them as a file")
            for list_path in getattr(args, "lists", []):
                expanded.extend(read_list(list_path, kind))
            if not expanded:
                raise InputError(f"no input given: name {_KINDS[kind][2]} or their directories, "
                                 f"or list them with -l FILE")
        setattr(args, dest, expanded)


def _is_directory(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except ValueError:  # a NUL byte: not a path, the reader names it
        return False


def directory_files(directory: str, kind: str = "sequences") -> list[str]:
    """The files of ``kind`` in ``directory`` (see the module's docstring), as paths that
    start with ``directory`` as given."""
    suffixes, what, _ = _KINDS[kind]
    try:
        entries = sorted(os.listdir(directory))
    except OSError as error:
        raise InputError(f"{directory}: cannot list the directory "
                         f"({error.strerror or error})") from None
    found = [os.path.join(directory, name) for name in entries
             if not name.startswith(".") and name.lower().endswith(suffixes)
             and not os.path.isdir(os.path.join(directory, name))]
    if not found:
        raise InputError(f"{directory}: a directory with no {what}; name the files, or list "
                         f"them with -l FILE")
    return found


def read_list(list_path: str, kind: str = "sequences") -> list[str]:
    """The paths listed in ``list_path`` (``-`` is standard input), directories expanded. The
    list is read a line at a time (host.io.bounded_lines): a binary or endless file is refused
    at its first bytes, and a path listed twice at its second line, so that memory holds no
    more than the distinct files listed."""
    shown = "standard input (-l -)" if list_path == "-" else list_path
    try:
        # standard input is Python's reader of descriptor 0, left open
        source = (contextlib.nullcontext(sys.stdin.buffer) if list_path == "-"
                  else open_input(list_path, "a list file"))
    except InputError as error:
        if str(error).endswith(": no such file"):
            raise InputError(f"{list_path}: no such list file (-l)") from None
        if "is a directory" in str(error):
            raise InputError(f"{list_path}: a directory, not a list file (-l FILE names a file "
                             f"listing one path per line; give the directory itself as an "
                             f"input)") from None
        raise InputError(str(error).replace(": cannot read (", ": cannot read the list file (")
                         ) from None
    paths = []
    seen: dict[tuple[int, int], int] = {}
    what = "a list of paths (-l FILE names a text file listing one path per line)"
    with source as opened:
        try:
            head, file = with_head(opened, 1 << 16, close_file=list_path != "-")
            _check_list_content(shown, head)
            for number, raw in bounded_lines(file, shown, what, LINE_LIMIT):
                line = raw.strip(b" \t\r")
                if not line or line.startswith(b"#"):
                    continue
                path = os.fsdecode(line)
                try:
                    status = os.stat(path)
                except (OSError, ValueError):
                    if not os.path.lexists(path):
                        raise InputError(f"{shown}: line {number}: {path}: no such file") from None
                    status = None
                if status is not None and not stat.S_ISDIR(status.st_mode):
                    identity = (status.st_dev, status.st_ino)
                    if identity in seen:
                        raise InputError(f"{shown}: line {number}: {path}: listed twice (also "
                                         f"line {seen[identity]}); give each genome once")
                    seen[identity] = number
                paths.extend(directory_files(path, kind) if _is_directory(path) else [path])
        except OSError as error:
            raise InputError(f"{list_path}: cannot read the list file "
                             f"({error.strerror or error})") from None
    if not paths:
        raise InputError(f"{shown}: lists no files (-l FILE: one path per line; empty lines "
                         f"and # lines are skipped)")
    return paths


def _check_list_content(shown: str, data: bytes) -> None:
    """A sequence, sketch or compressed file given to -l by mistake is named as such."""
    what, advice = _what_instead_of_a_list(data)
    if what is not None:
        raise InputError(f"{shown}: {what}, not a list of paths (-l FILE names a text file "
                         f"listing one path per line{advice})")


def _what_instead_of_a_list(data: bytes) -> tuple[str | None, str]:
    """What the content of a list file is instead (None: a list, as far as it shows), and more
    advice for the message."""
    compression = compression_of(data)
    if compression is not None:
        return f"a {compression}-compressed file", ""
    if data.startswith(ZIP_MAGIC):
        return "a zip archive (a sketch?)", ""
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"binary content (NUL byte at offset {nul})", ""
    first = data.lstrip(b" \t\r\n").split(b"\n", 1)[0].strip(b" \t\r")
    if first[:1] in (b">", b"@") and not os.path.lexists(os.fsdecode(first)):
        return "a FASTA/FASTQ file", "; give sequence files without -l"
    return None, ""
