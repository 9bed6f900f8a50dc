"""Every build parameter of the project, once: its name, default, range and error message.

The kernels' Params classes (``kmerspec.kernels.*``) and the golden model's algorithm parameters
(``HllParams``, ``JsdParams``, ``MotifParams``) declare their fields with these objects, so a
range or a default is written in exactly one place, and an Amaranth component that takes one of
these values checks it with the same :meth:`IntParam.check`. A wrong value raises
``ValueError("<name> must be an integer from <low> to <high>, not <value!r>")``.
"""

from dataclasses import dataclass, fields

__all__ = ["IntParam", "check_int", "check_positive", "check_fields", "K", "P", "W", "LANES",
           "BYTES_PER_LANE", "SAMPLE_BITS", "SAMPLE_SEED", "JSD_DEPTH", "CM_WIDTH_BITS",
           "PQA_QUEUE_BITS", "KERNEL_QUEUE_BITS", "PQA_SLOTS", "MOTIF_KMIN", "MOTIF_KMAX",
           "MOTIF_DEPTH", "CM_COUNTER_BITS", "H3_SEED", "STORE_SETS", "STORE_WAYS",
           "READ_LATENCY", "BYTES_PER_CYCLE", "FIFO_DEPTH", "RECORD_BANKS", "JACC_PIVOTS",
           "JACC_STREAMS",
           "JSD_PIVOTS", "DATA_WIDTH", "MIN_COUNT", "MC_DEPTH", "MC_WIDTH_BITS",
           "MC_COUNTER_BITS", "MC_SEED", "SKETCH_MC_DEPTH",
           "SKETCH_MC_WIDTH_BITS", "SKETCH_MC_COUNTER_BITS", "ESTIMATORS", "DEFAULT_DETECTION"]


def check_int(name: str, value, low: int, high: int) -> int:
    """``value`` if it is an int (not a bool) in ``[low, high]``, else the ValueError."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
    return value


def check_positive(name: str, value) -> int:
    """``value`` if it is a positive int: for component sizes with no upper limit of their own."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


@dataclass(frozen=True)
class IntParam:
    """One integer parameter: ``name``, ``default`` and the inclusive range ``low..high``."""

    name: str
    default: int
    low: int
    high: int
    doc: str = ""

    def check(self, value, name: str | None = None) -> int:
        return check_int(name or self.name, value, self.low, self.high)


def check_fields(params, specs) -> None:
    """Check every field of the dataclass ``params`` named like one of ``specs``."""
    by_name = {spec.name: spec for spec in specs}
    for field in fields(params):
        if field.name in by_name:
            by_name[field.name].check(getattr(params, field.name))


# The HyperLogLog sketch (SPEC 3) and the k-mers (SPEC 2).
K = IntParam("k", 31, 1, 32, "k-mer length")
P = IntParam("p", 14, 8, 18, "HyperLogLog index bits: m = 2^p registers")
W = IntParam("w", 4, 4, 8, "HyperLogLog register width in bits")

# The minimum-count prefilter of the HyperLogLog (SPEC 7).
MIN_COUNT = IntParam("min_count", 1, 1, (1 << 32) - 1,
                     "a k-mer enters the HLL once its Count-Min estimate reaches it (runtime)")
MC_DEPTH = IntParam("mc_depth", 4, 1, 16, "Count-Min rows of the minimum-count prefilter")
MC_WIDTH_BITS = IntParam("mc_width_bits", 20, 1, 24,
                         "Count-Min columns of the minimum-count prefilter: 2^mc_width_bits")
MC_COUNTER_BITS = IntParam("mc_counter_bits", 8, 1, 32,
                           "counter width of the minimum-count prefilter (saturating)")
MC_SEED = IntParam("mc_seed", 0, 0, (1 << 32) - 1,
                   "row r of the minimum-count prefilter hashes with murmur3_32 seed mc_seed + r")

# The prefilter inside the jacc_sketch kernel (its Params' mc_* fields; the seed is MC_SEED's).
# Off by default (the default kernel stays as it was); when built, 4 x 2^18 x 2-bit counters per
# lane (2 Mbit, 64 BRAM36; 512 for 8 lanes) fit beside the sketches, serve m <= 3 and keep the
# false passes of ~90k distinct read k-mers below 1 % (docs/min_count.md).
SKETCH_MC_DEPTH = IntParam("mc_depth", 0, 0, 16,
                           "Count-Min rows of the jacc_sketch kernel's prefilter (0: not built)")
SKETCH_MC_WIDTH_BITS = IntParam("mc_width_bits", 18, 1, 24,
                                "Count-Min columns of the jacc_sketch kernel's prefilter (log2)")
SKETCH_MC_COUNTER_BITS = IntParam("mc_counter_bits", 2, 1, 32,
                                  "counter width of the jacc_sketch kernel's prefilter")

# The JSD engine (SPEC 4).
SAMPLE_BITS = IntParam("s", 10, 0, 32, "a k-mer is sampled when the low s bits of its hash are 0")
SAMPLE_SEED = IntParam("sample_seed", 0x5A4D5053, 0, (1 << 32) - 1, "seed of the sampling hash")
JSD_DEPTH = IntParam("d", 5, 1, 16, "Count-Min rows")
CM_WIDTH_BITS = IntParam("cw", 14, 1, 24, "Count-Min columns: 2^cw per row")
PQA_QUEUE_BITS = IntParam("R", 12, 0, 24, "PQA queues: 2^R")
#: The kernels hold 2^R queues in block RAM and address them with at least one bit.
KERNEL_QUEUE_BITS = IntParam("R", PQA_QUEUE_BITS.default, 1, 20, "PQA queues in a kernel: 2^R")
PQA_SLOTS = IntParam("n", 8, 1, 64, "entries per PQA queue")

# The emerging-motif engine (SPEC 5).
MOTIF_KMIN = IntParam("kmin", 10, 1, 32, "shortest motif length")
MOTIF_KMAX = IntParam("kmax", 20, 1, 32, "longest motif length")
MOTIF_DEPTH = IntParam("d", 4, 1, 16, "Count-Min rows")
CM_COUNTER_BITS = IntParam("counter_bits", 16, 1, 32, "Count-Min counter width (motif default)")
H3_SEED = IntParam("h3_seed", 0x4D4F5449, 0, (1 << 64) - 1, "seed of the H3 row hashes (\"MOTI\")")
STORE_SETS = IntParam("store_sets", 64, 1, 1 << 16, "sets of the candidate store (power of 2)")
STORE_WAYS = IntParam("store_ways", 4, 1, 64, "ways of the candidate store")

# Kernel geometry: changes speed and size, never results.
LANES = IntParam("lanes", 8, 1, 64, "genome lanes T of a chunk kernel")
BYTES_PER_LANE = IntParam("bytes_per_lane", 8, 1, 64, "bytes B per lane per bus beat")
FIFO_DEPTH = IntParam("fifo_depth", 64, 4, 4096, "sampled-beat FIFO of a queue-builder lane")
RECORD_BANKS = IntParam("record_banks", 2, 1, 2, "Count-Min + PQA banks of a queue-builder "
                        "lane (2: a genome's record is written while the next one streams)")
JACC_PIVOTS = IntParam("pivots", 80, 1, 4096, "pivot sketches V held on chip")
JACC_STREAMS = IntParam("streams", 4, 1, 1024, "sketches D streamed per bus beat")
JSD_PIVOTS = IntParam("pivots", 8, 1, 64, "pivot PQAs V held on chip")
READ_LATENCY = IntParam("read_latency", 1, 1, 2, "counter BRAM read latency (2: output register)")
BYTES_PER_CYCLE = IntParam("bytes_per_cycle", 8, 1, 64, "bytes the motif front end parses a cycle")
DATA_WIDTH = IntParam("data_width", 512, 32, 4096, "AXI data width of the m_axi ports in bits")

#: the estimators of SPEC 3, by the names ``--estimator`` takes (the first is the default of
#: dist and search); kmerspec.golden.hll_joint computes them
ESTIMATORS = ("mle", "hll")
#: the default z of the detection rule: a pair is detected at 3 standard deviations
DEFAULT_DETECTION = 3.0
