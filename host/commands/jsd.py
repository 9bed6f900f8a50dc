"""``jsd``: all-pairs Jensen-Shannon divergence of PQA sketches (``sketch --kind pqa``)."""

from ..io import phylip_name
from ..scheduler import LocalExecutor
from ..choices import ARITHMETICS
from .common import (Session, backend_of, executor_of, load_inputs, parameter_header,
                     parameters_file)
from .dist import matrix_command
from .options import scheduler_options, jsd_options


def add_parser(commands) -> None:
    jsd = matrix_command(commands, "jsd", "all-pairs Jensen-Shannon divergence",
                         "All-pairs Jensen-Shannon divergence", "PQA (sketch --kind pqa)",
                         ("tsv", "phylip"))
    jsd.add_argument("--mode", choices=("textbook", "counts"), default="textbook",
                     help="textbook JSD in [0, 1] (default) or the thesis' pooled raw counts")
    jsd.add_argument("--arithmetic", choices=ARITHMETICS, default="float",
                     help="float64 (default) or the bit-exact fixed-point hardware JSD unit")
    jsd_options(jsd, with_k=True, from_sketches=True)
    scheduler_options(jsd)
    jsd.set_defaults(run=run)


def run(args, session: Session) -> None:
    from ..api.pairs import row_tiles
    from ..fast.threads import map_in_threads
    from ..jsdmatrix import PqaArrays, entropies, jsd_row_tile, kernel_row_tiles
    out = session.outputs.open(args.output)
    parameters = parameters_file(session, args.output) if args.format == "phylip" else None
    with executor_of(args) as executor:
        sketches = load_inputs(args.inputs, "pqa", "jsd", args, session, executor)
        pqas = PqaArrays(sketches.arrays["tags"], sketches.arrays["values"])
        entropy = entropies(pqas)
        n = len(pqas)
        tiles = row_tiles(n)
        header = parameter_header("jsd", {**dict(sorted(sketches.params.items())),
                                          "mode": args.mode, "arithmetic": args.arithmetic})
        shared_pqas, shared_entropy = executor.share(pqas), executor.share(entropy)
        if args.format == "tsv":
            out.write(header + "\n")
            out.write("#genome\t" + "\t".join(sketches.names) + "\n")
        else:
            out.write(f"{n}\n")
            if parameters is not None:
                parameters.write(header + "\n")
        progress = session.progress("jsd", n, "rows")
        separator, digits = ("\t", ".6g") if args.format == "tsv" else (" ", ".6f")
        kernel_tiles = kernel_row_tiles(backend_of(args, session), pqas, tiles, args.mode,
                                        args.arithmetic) if args.backend != "sw" else None
        if kernel_tiles is not None:  # the JSD similarity kernel (sim, xrt)
            computed_rows = kernel_tiles
        elif isinstance(executor, LocalExecutor):  # row tiles on threads: the loop drops the GIL
            computed_rows = map_in_threads(lambda tile: jsd_row_tile(
                tile, pqas, entropy, args.mode, args.arithmetic), tiles, args.threads)
        else:
            computed_rows = executor.map_ordered(jsd_row_tile, tiles, shared_pqas,
                                                 shared_entropy, args.mode, args.arithmetic)
        for tile, rows in zip(tiles, computed_rows):
            for i, row in zip(tile, rows):
                name = sketches.names[i]
                out.write((name if args.format == "tsv" else phylip_name(name)) + separator
                          + separator.join(f"{v + 0.0:{digits}}" for v in row) + "\n")
            progress.advance(len(tile))
        progress.close()
