"""``sketch``: one HyperLogLog sketch (or PQA, ``--kind pqa``) per sequence file."""

from ..io import InputError
from ..sketchfile import write_sketches
from .collections import collection_options
from ..api.params import jsd_params
from ..api.sketching import pqa_files, sketch_sequences
from .common import (HLL_DEFAULTS, Session, executor_of, run_of, shown_setting, sketching_of,
                     warn_saturated)
from .options import (HLL_ONLY, PQA_ONLY, backend_options, scheduler_options, given_options,
                      hll_options, jsd_options, k_and_strand, min_count_options, new_command,
                      output_option)


def add_parser(commands) -> None:
    sketch = new_command(commands, "sketch", "sketches of genomes (one per file)")
    sketch.add_argument("files", nargs="*", metavar="FILE",
                        help="FASTA/FASTQ files, plain or compressed, one genome per file, "
                             "or directories of them")
    collection_options(sketch, ("files",), listed="files")
    sketch.add_argument("-i", "--individual", action="store_true", default=False,
                        help="one sketch per record (a plasmid, contig or read) instead of per "
                             "file, named by the record's header up to its first space (as mash "
                             "sketch -i; docs/cli.md, genome names); --kind hll only "
                             "(default: one sketch per file)")
    sketch.add_argument("--kind", choices=("hll", "pqa"), default="hll",
                        help="hll: HyperLogLog for dist (default); pqa: priority queues for jsd")
    output_option(sketch)
    backend_options(sketch)
    scheduler_options(sketch)
    # the options of each kind under its own heading: --help shows which apply to which
    k_and_strand(sketch.add_argument_group("k-mers (every --kind)"), "", HLL_DEFAULTS)
    hll_options(sketch, from_sketches=False, with_k=False,
                title="--kind hll (default): HyperLogLog sketches for dist and search (SPEC 3)")
    min_count_options(sketch, title="--kind hll: minimum k-mer count, for reads (SPEC 7)")
    jsd_options(sketch, with_k=False, from_sketches=False,
                title="--kind pqa: priority-queue arrays (PQA) for jsd (SPEC 4)")
    sketch.set_defaults(run=run)


def run(args, session: Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    sketching, run = sketching_of(args), run_of(args, session)
    with executor_of(args) as executor:
        run.backend()
        other = given_options(args, HLL_ONLY if args.kind == "pqa" else PQA_ONLY)
        if other:
            kind = "hll" if args.kind == "pqa" else "pqa"
            raise InputError(f"{other[0]}: applies to --kind {kind} sketches, not --kind "
                             f"{args.kind}; drop {', '.join(other)} or give --kind {kind}")
        if args.kind == "pqa":
            if args.individual:
                raise InputError("-i: sketches each record as an HLL sketch; drop --kind pqa")
            sketches = pqa_files(args.files, jsd_params(sketching, option=shown_setting), run,
                                 executor)
        else:
            sketches = sketch_sequences(args.files, sketching, run, executor)
            warn_saturated(session, sketches)
    write_sketches(output, sketches)
