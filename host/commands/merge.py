"""``merge``: sketch files of equal parameters into one."""

from ..io import InputError, name_problem
from ..sketchfile import merge, write_sketches
from .collections import collection_options
from .common import Session
from ..api.sketching import disambiguate, read_sketch_files
from .options import new_command, output_option


def add_parser(commands) -> None:
    merge_cmd = new_command(commands, "merge", "merge compatible sketch files into one",
                            "Merge sketch files made with equal parameters into one (genome "
                            "names must differ; genomes of different source files that share "
                            "a file name are named by their source paths).")
    merge_cmd.add_argument("inputs", nargs="*", metavar="SKETCH",
                           help="sketch files (from sketch or merge), all of one kind and "
                                "parameters, or directories of them (*.sketch)")
    collection_options(merge_cmd, ("inputs",), "sketches", listed="inputs")
    output_option(merge_cmd)
    merge_cmd.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                           help="name the genome OLD (as merge would name it) NEW; may be "
                                "given more than once (default: the names as merged)")
    merge_cmd.set_defaults(run=run)


def _renames(pairs: list[str]) -> dict[str, str]:
    renames = {}
    for pair in pairs:
        old, equals, new = pair.partition("=")
        if not equals or not old or not new:
            raise InputError(f"--rename {pair}: expected OLD=NEW (a genome's name, '=', its "
                             f"new name)")
        if old in renames:
            raise InputError(f"--rename {pair}: {old!r} is renamed twice")
        problem = name_problem(new)
        if problem is not None:
            raise InputError(f"--rename {pair}: the new name {new!r} {problem}")
        renames[old] = new
    return renames


def run(args, session: Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    sets = disambiguate(read_sketch_files(args.inputs))
    renames = _renames(args.rename)
    names = {name for sketches in sets for name in sketches.names}
    missing = [old for old in renames if old not in names]
    if missing:
        raise InputError(f"--rename: no genome named {missing[0]!r} in the inputs (names: "
                         f"{', '.join(sorted(names)[:10])}{', ...' if len(names) > 10 else ''})")
    for sketches in sets:
        sketches.names = [renames.get(name, name) for name in sketches.names]
    write_sketches(output, merge(sets))
