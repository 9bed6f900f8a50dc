"""``info``: the parameters and genomes of sketch files."""

import re

from ..outputs import STDOUT
from .common import Session, warn_saturated
from ..api.sketching import read_sketch_files
from .options import new_command


def add_parser(commands) -> None:
    info = new_command(commands, "info", "print the parameters and genomes of sketch files")
    info.add_argument("inputs", nargs="+", metavar="SKETCH",
                      help="sketch files; prints parameters, then per genome its name, "
                           "estimated distinct k-mers (HLL) and source files")
    info.set_defaults(run=run)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\\\\]")


def _printable(text: str) -> str:
    """``text`` with its control characters (a crafted sketch's ESC sequences, which a terminal
    would act on, a tab, a newline) and backslashes written as escapes: ``\\x1b``, ``\\t``,
    ``\\\\``."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode(), text)


def run(args, session: Session) -> None:
    lines = []
    sets = read_sketch_files(args.inputs)
    warn_saturated(session, *sets)
    for path, sketches in zip(args.inputs, sets):
        lines.append(f"{path}: {len(sketches)} {sketches.kind} sketches, "
                     + " ".join(f"{k}={v}" for k, v in sketches.params.items()))
        estimates = (sketches.packed_sketches().cards
                     if sketches.kind == "hll" else [None] * len(sketches))
        for index, (name, files, estimate) in enumerate(zip(sketches.names, sketches.files,
                                                             estimates)):
            size = f"~{estimate:.0f} distinct k-mers\t" if estimate is not None else ""
            record = sketches.min_count(index)
            kept = (f"min_count={record['m']} (Count-Min {record['mc_depth']} x "
                    f"2^{record['mc_width_bits']})\t" if record else "")
            lines.append(f"  {_printable(name)}\t{size}{kept}"
                         f"{','.join(_printable(file) for file in files)}")
    output = session.outputs.open(STDOUT)
    output.write("".join(line + "\n" for line in lines))
