"""The parser pieces the commands share: one-line usage errors, ranged integers, and the option
groups (output, backend, scheduler, HyperLogLog, minimum count, JSD engine)."""

import argparse

from ..backends import BACKENDS
from ..outputs import STDOUT
from ..api.params import HLL_DEFAULTS, JSD_DEFAULTS
from ..api.run import one_line
from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import DEFAULT_DETECTION, ESTIMATORS, MC_DEPTH, MC_WIDTH_BITS

__all__ = ["Parser", "ranged_int", "METRIC_HELP", "new_command", "output_option", "ani_options",
           "backend_options", "scheduler_options", "hll_options", "min_count_options",
           "jsd_options", "k_and_strand", "given_options", "shown_option", "HLL_ONLY",
           "PQA_ONLY", "SKETCHING", "add_estimator_options", "option_name"]


class Parser(argparse.ArgumentParser):
    """Usage mistakes are one line too: ``error: <what>: <cause> (see ... --help)``."""

    def error(self, message: str):
        self.exit(2, f"error: {one_line(message)} (see {self.prog} --help)\n")


def _bounded(convert, kind: str, low, high, unit: str, shown):
    """An argparse type: ``convert(text)`` within [low, high], else a message naming the kind
    of value wanted and the bounds, each value as ``shown`` prints it."""
    def parse(text: str):
        try:
            value = convert(_digits(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {shown(low)} to {shown(high)}{unit}, "
                                             f"not {shown(value)}")
        return value
    parse.__name__ = kind.split()[-1]
    return parse


def _digits(text: str) -> str:
    """``text`` if it is a number as written on a command line: Python's literals allow ``_``
    between digits (``3_1`` is 31), which no other tool reads so (``-k 3_1`` is a typo)."""
    if "_" in text:
        raise ValueError(text)
    return text


def plain_float(text: str) -> float:
    """An argparse type: a number, ``_`` refused (:func:`_digits`)."""
    return float(_digits(text))


plain_float.__name__ = "float"


def ranged_int(low: int, high: int):
    """An integer (decimal, or 0x.., 0o.., 0b..) from low to high."""
    return _bounded(lambda text: int(text, 0), "an integer", low, high, "", str)


def ranged_float(low: float, high: float, unit: str = ""):
    """A number from low to high; unit follows the bounds in the message."""
    return _bounded(float, "a number", low, high, unit, lambda value: f"{value:g}")


# --detection of dist, search, cluster and screen
detection_z = ranged_float(0.0, 100.0, " standard deviations")
# --min-af of search and cluster
aligned_fraction_option = ranged_float(0.0, 1.0, " (a fraction of the larger genome)")


def ani_source(args, metric: str) -> tuple[str, float]:
    """(--ani-from, --min-af) for a run whose metric is ``metric``, checked: --min-af only with
    a containment ANI; --min-af defaults to host.metrics.DEFAULT_MIN_AF."""
    from ..io import InputError
    from ..metrics import DEFAULT_MIN_AF
    if args.ani_from == "containment" and metric != "ani":
        raise InputError(f"--ani-from containment: gives an ANI, but the metric is {metric} "
                         f"(use it with an ANI)")
    if args.min_af is not None and (metric != "ani" or args.ani_from != "containment"):
        raise InputError("--min-af: is the aligned fraction of a containment ANI; use it with "
                         "--ani-from containment")
    return args.ani_from, DEFAULT_MIN_AF if args.min_af is None else args.min_af


def ani_options(sub, default_from: str | None, applies: str) -> None:
    """--ani-from and --min-af (search, cluster): the ANI from the Jaccard (Mash's formula) or
    from the smaller genome's containment in the larger, and the aligned fraction the latter
    needs (SPEC 3 "Other metrics"). ``default_from`` None: the command chooses (cluster:
    containment for --ani)."""
    from ..metrics import ANI_SOURCES, DEFAULT_MIN_AF
    sub.add_argument("--ani-from", choices=ANI_SOURCES, default=default_from,
                     help=f"{applies}: jaccard, Mash's 100 (1 - D) of the Jaccard, which counts "
                          f"every k-mer either genome lacks against it (an incomplete genome is "
                          f"far from its own complete copy: half of a genome is 98.7 %% at "
                          f"k = 31); containment, 100 C^(1/k) of the smaller genome's "
                          f"containment in the larger (as mash screen and sourmash's "
                          f"containment ANI; half of a genome is 100 %%), beside the aligned "
                          f"fraction it rests on (--min-af)")
    sub.add_argument("--min-af", type=aligned_fraction_option, default=None, metavar="F",
                     help=f"with --ani-from containment: a pair whose smaller genome spans "
                          f"less than F of the larger (the aligned fraction, min(|X|, |Y|) / "
                          f"max(|X|, |Y|), the smaller taken as aligned in full) has no ANI (0), "
                          f"so that a plasmid or a fragment inside a genome is not called the "
                          f"same genome; 0..1 (default {DEFAULT_MIN_AF}, galah's 15 %%)")


METRIC_HELP = ("jaccard (default); containment |Q and R| / |Q|, rows (queries) in columns; "
               "ani: 100 (1 - Mash distance), percent; mash: Mash distance")

_OUTPUT_HELP = ("output file; - is standard output. Written only if the command succeeds; a "
                "symlink is followed (its target is replaced), a FIFO or device is written in "
                "place, /dev/stdout and /dev/fd/N through the descriptor (>> appends), a "
                "regular file is replaced as a whole; an input file is never overwritten, nor an "
                "existing file this user could not open for writing")


def new_command(commands, name, help_text, description=None):
    """A subcommand of ``commands`` (the parser's subparsers)."""
    sub = commands.add_parser(name, help=help_text, description=description or help_text)
    sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="show a traceback on errors (default: one line)")
    return sub


def output_option(sub, to_stdout: bool = False):
    """-o; ``to_stdout``: a text output, standard output unless -o is given (as Mash does)."""
    if to_stdout:
        sub.add_argument("-o", "--output", default=STDOUT, metavar="FILE",
                         help=_OUTPUT_HELP + " (default: standard output)")
    else:
        sub.add_argument("-o", "--output", required=True, metavar="FILE", help=_OUTPUT_HELP)


class AmbiguousP(argparse.Action):
    """``--p``: the HLL index bits once, but one dash away from ``-p`` (threads, as in Mash), so
    ``sketch --p 10`` made p = 10 sketches for a user who meant 10 threads. Refused, naming
    both options."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("--p: ambiguous, so refused: give -p N (--threads N) for threads, or "
                     "--index-bits P for the HLL index bits (2^P registers)")


def backend_options(sub):
    sub.add_argument("--backend", choices=list(BACKENDS), default="sw",
                     help="sw: fast software model (default); golden: pure-Python "
                          "reference; sim: the RTL kernels in simulation (small inputs; "
                          "simulator output goes to a log file, named if it fails); "
                          "xrt: an FPGA card; f2: an AWS EC2 F2 FPGA slot (--slot) with an AFI "
                          "of python -m hw.build --board f2; auto: xrt if available, else sw")
    sub.add_argument("--xclbin", default=None, metavar="FILE",
                     help="FPGA binary for --backend xrt (.xclbin, or .awsxclbin on F1; "
                          "with KMER_SKETCH_PYXRT=sim, a python -m hw.build output "
                          "directory whose kernels are simulated; default: "
                          "$KMER_SKETCH_XCLBIN)")
    sub.add_argument("--slot", type=ranged_int(0, 7), default=None, metavar="N",
                     help="FPGA slot of --backend f2 (0..7, default 0; sudo "
                          "fpga-describe-local-image -S N shows what it holds; with "
                          "KMER_SKETCH_F2_SIM=DIR, slot 0 holds that CL directory, simulated)")
    sub.add_argument("-p", "--threads", type=ranged_int(1, 4096), default=None, metavar="N",
                     help="threads of the sw backend (Mash's -p); the output is the same for "
                          "every N (default: all cores)")
    sub.add_argument("--p", action=AmbiguousP, nargs="?", metavar="P",
                     help="refused as ambiguous (no default): -p N is --threads N; the HLL "
                          "index bits, which --p named before, are --index-bits P")
    sub.add_argument("--sim-geometry", choices=["small", "default"], default="small",
                     help="kernel geometry of --backend sim: small (narrow buses, few "
                          "lanes and pivots; quick to build, the default) or default (the "
                          "geometry python -m hw.build builds; slow to build and run)")


class _Scheduler(argparse.Action):
    """--scheduler ADDRESS, remembering the spelling given (--cluster, its old name) for
    messages."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.scheduler_option = option_string


def scheduler_options(sub):
    """Where the work runs: this process, a Dask scheduler (--scheduler, as Dask names it; the
    earlier --cluster is an alias) or a local Dask cluster (--workers)."""
    where = sub.add_mutually_exclusive_group()
    where.add_argument("--scheduler", "--cluster", dest="scheduler", metavar="ADDRESS",
                       default=None, action=_Scheduler,
                       help="run on a Dask scheduler (tcp://host:8786); files must be "
                            "readable by the workers (--cluster: the same; default: this "
                            "process)")
    where.add_argument("--workers", type=ranged_int(1, 4096), default=None, metavar="N",
                       help="run on a local Dask cluster of N worker processes (default: "
                            "this process)")


#: the option strings of each algorithm parameter: a name that says what it is first (a short
#: form only where Mash gives the letter the same meaning), then the parameter's letter, the
#: name the command line had before, kept as an alias
OPTION_STRINGS = {
    "k": ("-k", "--ksize", "--k"),
    "p": ("--index-bits",),  # --p is refused: it reads as -p (threads) too (AmbiguousP)
    "w": ("--register-bits", "--w"),
    "s": ("--sample-bits", "--s"),
    "sample_seed": ("--sample-seed",),
    "d": ("--cm-rows", "--d"),
    "cw": ("--cm-width-bits", "--cw"),
    "R": ("--queue-bits", "--R"),
    "n": ("--queue-entries", "--n"),
}


def _ranged(group, key, low, high, text, like, defaults, **extra):
    """An integer option whose default (None: not given) comes from ``defaults``."""
    default = defaults[key]
    shown = f"{default:#x}" if key == "sample_seed" else default
    group.add_argument(*OPTION_STRINGS.get(key, (option_name(key),)), dest=key,
                       type=ranged_int(low, high), default=None,
                       help=f"{text}, {low}..{high} (default {shown}{like})", **extra)


def k_and_strand(group, like, defaults):
    _ranged(group, "k", 1, 32, "k-mer length", like, defaults)
    group.add_argument("--no-canonical", action="store_true", default=None,
                       help=f"hash forward k-mers instead of canonical ones (default: "
                            f"canonical{like})")


def hll_options(sub, from_sketches, title="HyperLogLog sketches (SPEC 3)", with_k=True):
    group = sub.add_argument_group(title)
    like = ", or that of the sketch files given" if from_sketches else ""
    if with_k:
        k_and_strand(group, like, HLL_DEFAULTS)
    _ranged(group, "p", 8, 18, "HLL index bits: 2^P registers of w bits per sketch (not "
            "-p, threads)", like, HLL_DEFAULTS, metavar="P")
    _ranged(group, "w", 4, 8, "HLL register bits", like, HLL_DEFAULTS)


def min_count_options(sub, title="Minimum k-mer count, for reads (SPEC 7)"):
    group = sub.add_argument_group(title)
    group.add_argument("-m", "--min-count", type=ranged_int(1, MinCountParams().max_count),
                       default=None, metavar="M",
                       help="sketch only k-mers whose Count-Min (conservative update) "
                            "count reaches M, 1..255; never drops a k-mer seen M times "
                            "(default 1: every k-mer, no Count-Min)")
    group.add_argument("--mc-depth", type=ranged_int(MC_DEPTH.low, MC_DEPTH.high),
                       default=None, metavar="D",
                       help=f"Count-Min rows for --min-count, {MC_DEPTH.low}.."
                            f"{MC_DEPTH.high} (default {MC_DEPTH.default})")
    group.add_argument("--mc-width-bits",
                       type=ranged_int(MC_WIDTH_BITS.low, MC_WIDTH_BITS.high),
                       default=None, metavar="CW",
                       help=f"log2 counters per Count-Min row for --min-count, "
                            f"{MC_WIDTH_BITS.low}..{MC_WIDTH_BITS.high} (default "
                            f"{MC_WIDTH_BITS.default}); 2^CW should be 3x the reads' "
                            f"distinct k-mers or more, else rare k-mers pass (20: ~350k, a "
                            f"virus; 24: a bacterium at 30x; docs/min_count.md). Memory "
                            f"per genome in flight: 4 x D x 2^CW bytes")
    group.add_argument("--min-count-fasta", action="store_true", default=None,
                       help="apply --min-count to FASTA files too (default: to FASTQ read "
                            "files only; a genome's k-mers occur about once each)")


#: the options of each kind of sketch, by their argparse names; not given, each is None
HLL_ONLY = ("p", "w", "min_count", "mc_depth", "mc_width_bits", "min_count_fasta")
PQA_ONLY = ("s", "sample_seed", "d", "cw", "R", "n", "update")
SKETCHING = ("k", "no_canonical")


def option_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def shown_option(key: str) -> str:
    """The name an option is shown by in messages (its first long or Mash-like form)."""
    return OPTION_STRINGS.get(key, (option_name(key),))[0]


def given_options(args, keys) -> list[str]:
    """The options among ``keys`` given on the command line (names for messages)."""
    return [shown_option(key) for key in keys if getattr(args, key, None) not in (None, False)]


def jsd_options(sub, with_k, from_sketches, title="JSD engine (SPEC 4)"):
    group = sub.add_argument_group(title)
    like = ", or that of the sketch files given" if from_sketches else ""
    if with_k:
        k_and_strand(group, like, JSD_DEFAULTS)
    _ranged(group, "s", 0, 32, "sampling: keep k-mers whose hash has s low zero bits", like,
            JSD_DEFAULTS)
    _ranged(group, "sample_seed", 0, (1 << 32) - 1, "seed of the sampling hash, decimal or "
            "0x hex", like, JSD_DEFAULTS, metavar="SEED")
    _ranged(group, "d", 1, 16, "Count-Min rows", like, JSD_DEFAULTS)
    _ranged(group, "cw", 1, 24, "log2 counters per Count-Min row", like, JSD_DEFAULTS)
    _ranged(group, "R", 0, 24, "log2 PQA queues", like, JSD_DEFAULTS)
    _ranged(group, "n", 1, 64, "entries per queue", like, JSD_DEFAULTS)
    group.add_argument("--update", choices=("cu", "cm"), default=None,
                       help=f"Count-Min update: cu conservative or cm plain (default "
                            f"cu{like})")


def add_estimator_options(sub) -> None:
    """--estimator, --detection and --pvalue (SPEC 3) on a dist or search parser."""
    group = sub.add_argument_group("Estimator and detection (SPEC 3)")
    group.add_argument("--estimator", choices=ESTIMATORS, default=ESTIMATORS[0],
                       help="mle: Ertl's joint maximum-likelihood estimate of the shared k-mers "
                            "from the two sketches' registers (default; finds a piece of 0.1 %% "
                            "of a genome's size inside it, and is a calibrated test); hll: "
                            "|X| + |Y| - |X u Y| from the three HLL estimates (what the "
                            "similarity kernel computes; about 5x the pairs per CPU second on "
                            "the host, misses overlaps below J = 0.0244 at p = 14). With "
                            "--backend sim or xrt, "
                            "mle estimates the pairs on the host from the sketches")
    group.add_argument("--detection", type=detection_z, default=DEFAULT_DETECTION, metavar="Z",
                       help="report a pair as sharing nothing (J = C = 0, Mash distance 1, ANI "
                            "0) unless its shared k-mers are Z standard deviations above zero "
                            "(mle: likelihood ratio >= Z^2; hll: I >= Z 1.04/sqrt(2^p) "
                            "|X u Y|, the raw formula's bias and linear counting's error taken "
                            "into account for sets of 2 to 8 x 2^p k-mers, SPEC 3); 0 prints "
                            "every estimate (default 3)")
    group.add_argument("--pvalue", action="store_true",
                       help="add a p_value column to each line (dist --format edges, search): "
                            "the one-sided p-value of 'nothing shared' (mle: of the likelihood "
                            "ratio; hll: P(N(0,1) >= I / sigma)), as mash dist prints it "
                            "(default: no such column)")
