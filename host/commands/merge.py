"""``merge``: sketch files of equal parameters into one."""

from ..sketchfile import merge, read_sketches, write_sketches
from .common import Session
from .options import new_command, output_option


def add_parser(commands) -> None:
    merge_cmd = new_command(commands, "merge", "merge compatible sketch files into one",
                            "Merge sketch files made with equal parameters into one (genome "
                            "names must differ).")
    merge_cmd.add_argument("inputs", nargs="+", metavar="SKETCH",
                           help="sketch files (from sketch or merge), all of one kind and "
                                "parameters")
    output_option(merge_cmd)
    merge_cmd.set_defaults(run=run)


def run(args, session: Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    write_sketches(output, merge([read_sketches(p) for p in args.inputs]))
