"""``sketch``: one HyperLogLog sketch (or PQA, ``--kind pqa``) per sequence file."""

from ..io import InputError
from ..sketchfile import engine_params, write_sketches
from .common import Session, backend_of, executor_of, hll_params, jsd_params, min_count_params
from .inputs import pqa_sequences, sketch_sequences
from .options import (backend_options, cluster_options, hll_options, jsd_options,
                      min_count_options, new_command, output_option)


def add_parser(commands) -> None:
    sketch = new_command(commands, "sketch", "sketches of genomes (one per file)")
    sketch.add_argument("files", nargs="+", metavar="FILE",
                        help="FASTA/FASTQ files, plain or gzip; one genome per file")
    sketch.add_argument("--kind", choices=("hll", "pqa"), default="hll",
                        help="hll: HyperLogLog for dist (default); pqa: priority queues for jsd")
    output_option(sketch)
    backend_options(sketch)
    hll_options(sketch, from_sketches=False)
    min_count_options(sketch)
    jsd_options(sketch, with_k=False, from_sketches=False)
    cluster_options(sketch)
    sketch.set_defaults(run=run)


def run(args, session: Session) -> None:
    output = session.outputs.open(args.output, binary=True)
    with executor_of(args) as executor:
        backend = backend_of(args, session)
        if args.kind == "pqa":
            if min_count_params(args).active:
                raise InputError("--min-count: filters HyperLogLog sketches, not --kind pqa")
            sketches = pqa_sequences(args.files, jsd_params(args), backend, executor, session,
                                     args.threads)
        else:
            params = hll_params(args)
            engine_params("hll", params)
            sketches = sketch_sequences(args.files, params, backend, executor, session,
                                        args.threads, min_count_params(args))
    write_sketches(output, sketches)
