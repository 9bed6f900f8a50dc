"""``screen``: which references of a sketch collection are in a read set, as ``mash screen``:
each reference's k-mers found in the reads (C), its identity C^(1/k), best first."""

from __future__ import annotations  # numpy's types named below, imported where used

import re

from ..api.sketching import sketch_pool
from ..io import InputError, compression_of, decompressed_head, read_input
from ..sketchfile import is_sketch_file
from .collections import collection_options
from .common import Session, parameter_header, run_of, sketching_of
from .options import (backend_options, detection_z, min_count_options, new_command,
                      output_option, ranged_float)
from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import DEFAULT_DETECTION


def add_parser(commands) -> None:
    sub = new_command(
        commands, "screen", "which references are in a read set (as mash screen)",
        "Screen a read set (every READS file together, as one pool, as mash screen does) for "
        "the references of a sketch collection. Output: TSV lines reference, identity, "
        "containment, shared_kmers, reference_kmers, p_value, best first (ties in collection "
        "order); containment is the fraction of the reference's k-mers found in the reads, "
        "identity = containment^(1/k), mash screen's identity (a fraction; dist --metric ani "
        "is a percentage). Both from the joint maximum-likelihood estimator (SPEC 3); "
        "references not detected in the reads are left out, as mash screen leaves out those "
        "sharing no hash.")
    sub.add_argument("references", metavar="REFS",
                     help="the references: an HLL sketch file from sketch or merge (mash "
                          "screen's queries.msh)")
    sub.add_argument("reads", nargs="*", metavar="READS",
                     help="FASTQ/FASTA files of the read set, sketched together with the "
                          "parameters of REFS (one pool), or directories of them; HLL "
                          "sketch files of reads are joined in")
    collection_options(sub, ("reads",), listed="reads")
    output_option(sub, to_stdout=True)
    sub.add_argument("-w", "--winner-take-all", action="store_true",
                     help="credit a k-mer of the reads found in several references to the "
                          "best of them only (the highest containment; ties in collection "
                          "order), as mash screen -w: a reference explained by a closer one "
                          "drops; each reference's shared k-mers, p-value and detection are "
                          "then those of what it wins (default: every reference counts every "
                          "k-mer it has)")
    sub.add_argument("-i", "--min-identity", type=ranged_float(0.0, 1.0, " (an identity, as mash screen -i)"), default=0.0, metavar="I",
                     help="report references of identity I or more, 0..1 (default 0: every "
                          "reference detected)")
    sub.add_argument("--detection", type=detection_z, default=DEFAULT_DETECTION,
                     metavar="Z",
                     help="leave out a reference unless its p-value is at most P(N(0,1) "
                          ">= Z) / n for n references (Z standard deviations, Bonferroni over "
                          "the collection: 100,000 references report no more chance hits "
                          "than one; SPEC 3); 0 reports every positive estimate (default 3)")
    backend_options(sub)
    min_count_options(sub, title="Minimum k-mer count of the reads (SPEC 7), as in dist")
    sub.set_defaults(run=run)


#: a reference this many times the read set's distinct k-mers, every one of them, looks like
#: the read set given in its place
MUCH_LARGER = 10.0
_READ_FILE = re.compile(r"\.(fq|fastq)(\.(gz|bz2|xz|zst))?$", re.IGNORECASE)


def _holds_sequence(path: str) -> bool:
    """True if ``path`` is FASTA/FASTQ text (plain or compressed)."""
    try:
        head = read_input(path, "a sketch file", 1 << 16)
    except InputError:
        return False
    if compression_of(head) is not None:
        head = decompressed_head(head)
    return head.lstrip()[:1] in (b">", b"@")


def _refuse_reads_first(args) -> None:
    """REFS given as sequence (the reads first, as a search user might): one line showing the
    order screen takes, with the sketch file among READS when there is one."""
    if is_sketch_file(args.references) or not _holds_sequence(args.references):
        return
    swapped = next((path for path in args.reads if is_sketch_file(path)), None)
    usage = (f"python -m host screen {swapped} {args.references}" if swapped is not None else
             f"python -m host sketch GENOMES -o refs.sketch, then python -m host screen "
             f"refs.sketch {args.references}")
    raise InputError(f"{args.references}: is FASTA/FASTQ, but screen takes the references' "
                     f"sketch file first and the reads after it: {usage}")


def _swapped_warning(references, reads: np.ndarray, params: HllParams, session) -> None:
    """One warning line if REFS looks like a read set: one genome sketched from a FASTQ file
    or with a minimum count, or every reference more than MUCH_LARGER times the reads."""
    from ..similarity import cardinalities
    reasons = []
    if len(references) == 1 and (any(_READ_FILE.search(f) for f in references.files[0])
                                 or references.min_count(0).get("min_count", 1) > 1):
        reasons.append("it is one genome sketched from reads")
    cards = references.packed_sketches().cards
    read_set = float(cardinalities(reads[None, :], params)[0])
    if cards.size and cards.min() > MUCH_LARGER * max(read_set, 1.0):
        reasons.append(f"every reference has over {MUCH_LARGER:g} times the read set's "
                       f"{read_set:,.0f} distinct k-mers")
    if reasons:
        print(f"warning: {references.origin}: REFS looks like a read set ({'; '.join(reasons)}): "
              f"screen takes the references first, then the reads (python -m host screen "
              f"refs.sketch READS...)", file=session.terminal, flush=True)


def run(args, session: Session) -> None:
    from ..api.pairs import read_references  # here: sketch does without the pair loops
    from ..screen import screen
    _refuse_reads_first(args)
    output = session.outputs.open(args.output)
    references = read_references(args.references, "REFS")
    params = references.params
    k, hll = params["k"], HllParams(params["p"], params["w"])
    reads = sketch_pool(args.reads, references, sketching_of(args), run_of(args, session))
    _swapped_warning(references, reads, hll, session)
    found = screen(references.packed_registers(), reads, hll, args.detection,
                   args.winner_take_all, packed=True)
    identity = found.identity(k)
    chosen = {"estimator": "mle", "detection": args.detection,
              "winner_take_all": args.winner_take_all, "min_identity": args.min_identity}
    if args.min_count:
        chosen["min_count"] = args.min_count
    output.write(parameter_header("screen", {**dict(sorted(params.items())), **chosen}) + "\n")
    output.write("#reference\tidentity\tcontainment\tshared_kmers\treference_kmers\tp_value\n")
    for r in found.order().tolist():
        if identity[r] < args.min_identity:
            continue
        output.write(f"{references.names[r]}\t{identity[r]:.6f}\t{found.containment[r]:.6g}\t"
                     f"{found.shared[r]:.0f}\t{found.kmers[r]:.0f}\t{found.p_values[r]:.3g}\n")
