"""This project beside Mash, sourmash and Dashing2 on the same genomes, in one interleaved run:
sketch CPU time and memory, all-pairs time and memory, and each tool's Jaccard against the
exact Jaccard of the genomes' full k-mer sets.

    python bench/peers.py [--repeats 5] [--k 31] [--p 14] [--mash-size 10000]
                          [--scaled 1000] [--dashing2 PATH] [--callgrind] [--perf] [--record]

Genomes: the 20 real bacterial genomes of bench/near_zero.py (Debian's ragout-examples and
kaptive-example, gzip FASTA, 5 genera, 190 pairs). Every tool sketches the 20 files in one
process on one thread, then computes the all-pairs matrix in one process on one thread:

  this project  python -m host sketch -p 1 (k, p, w = 4), then dist -p 1 (its default
                estimator, the joint MLE of SPEC 3)
  Mash          mash sketch -p 1 -k K -s S, then mash dist -p 1; J = shared hashes / S
  sourmash      sourmash sketch dna -p k=K,scaled=N, then sourmash compare -k K (Jaccard of
                the scaled sketches)
  Dashing2      dashing2 sketch -k K -S 2^p -p 1 (its default one-permutation SetSketch,
                2^p registers: the register count of this project's sketch); all pairs with
                --cmpout --square in a second run, which sketches again, so its all-pairs
                figures include a sketch; J: its similarity, the share of equal registers

A tool that is not installed is skipped with the reason (Mash: apt-get install mash;
sourmash: pip install sourmash; Dashing2 has no Debian or PyPI package: build it from its
repository and give --dashing2 PATH, or put dashing2 on PATH).

Interleaving: each repeat runs every tool in turn (the order rotated repeat by repeat) after
one warm-up run of each that is not counted, so a drift of the shared machine's speed falls
on all tools alike; the figures are medians over the repeats. Time and memory are the
operating system's accounting of each finished child process (user + system CPU seconds, peak
resident set, by /usr/bin/time where installed), wall seconds beside them with the load
average (CPU seconds are what a loaded machine distorts least). Python tools run with bytecode caching on, as installed packages do.

"exact" J is |A n B| / |A u B| over the full sets of canonical k-mers (bench/near_zero.py's
exact_intersections; the parser of SPEC 1). The error column is max |J - exact| over the 190
pairs. Then where this project's sketch CPU seconds go, measured in each repeat beside the
tools: the interpreter's start and the command line's imports (whole processes), decompression
and the k-mer pipeline at each SIMD level (in this process, on the same 256 KiB blocks), the
rest (by difference) being the command's own Python;
with --callgrind, the instructions of the start-up (valgrind); with --perf, perf's samples of
one sketch run (software clock, 10 kHz) by shared object and the top functions. And this project's sketch
command, in the same repeats, on the same genomes as plain FASTA, gzip FASTA (the files
themselves), plain FASTQ and gzip FASTQ (each genome's records cut into 150-base reads of
quality I, gzip level 6): Mbases per CPU second of each. Asserts nothing; --record writes
bench/results/peers.json for bench/benchmarks_doc.py.
"""

import csv
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.options import bench_parser  # noqa: E402
from bench.record import machine  # noqa: E402
from bench.near_zero import distinct_kmers, exact_intersections, genome_files  # noqa: E402
from host.progress import count_bases  # noqa: E402


@dataclass
class Run:
    """One child process: CPU seconds (user + system), wall seconds, peak resident MB."""
    cpu_s: float
    wall_s: float
    peak_mb: float


TIME = "/usr/bin/time"  # Debian's time: the peak of the process it starts


def run_measured(argv: list[str], stdout: Path | None = None, env: dict | None = None) -> Run:
    """Run argv to its end, measured by the operating system's accounting of the child.

    CPU seconds are wait4's (microseconds; the child and what it waited for). The peak comes
    from /usr/bin/time, which starts the command from its own small process: Linux carries a
    process's peak across exec, so a command started from this one (which holds numpy) would
    show this process's peak when its own is lower."""
    with tempfile.TemporaryFile() as errors, tempfile.NamedTemporaryFile("r") as peak, \
            open(stdout if stdout is not None else os.devnull, "wb") as out:
        launcher = [TIME, "-f", "%M", "-o", peak.name] if os.access(TIME, os.X_OK) else []
        start = time.monotonic()
        process = subprocess.Popen(launcher + argv, stdout=out, stderr=errors, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv[:4])} ... failed ({process.returncode}):\n"
                             f"{errors.read().decode(errors='replace')[-2000:]}")
        peak_kb = int(peak.read().split()[-1]) if launcher else usage.ru_maxrss
    return Run(usage.ru_utime + usage.ru_stime, wall, peak_kb / 1024)


def version_of(argv: list[str], pattern: str = r"\d+(\.\d+)+") -> str:
    result = subprocess.run(argv, capture_output=True, text=True)
    found = re.search(pattern, result.stdout + result.stderr)
    return found.group(0) if found else "unknown"


@dataclass
class Tool:
    """A sketcher: how to find it, sketch the genomes, compare them all, and read its J."""
    name: str
    sketch_label: str
    compare_label: str
    runs: dict = field(default_factory=lambda: {"sketch": [], "compare": []})

    def missing(self) -> str | None:
        """Why the tool cannot run here, or None."""
        return None

    def version(self) -> str:
        raise NotImplementedError

    def sketch(self, paths: list[Path], work: Path) -> list[str]:
        raise NotImplementedError

    def compare(self, work: Path) -> tuple[list[str], Path | None]:
        """The all-pairs command, and the file its standard output goes to (or None)."""
        raise NotImplementedError

    def jaccard(self, work: Path, paths: list[Path]) -> np.ndarray:
        raise NotImplementedError


def python_env() -> dict:
    """The children's environment: bytecode cached as in an installed package (this
    workplace may set PYTHONDONTWRITEBYTECODE, which would compile every module each run)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class ThisProject(Tool):
    def __init__(self, k: int, p: int):
        super().__init__("kmer-sketch-accel", f"python -m host sketch -p 1 -k {k} "
                         f"--index-bits {p}", "python -m host dist -p 1")
        self.k, self.p = k, p

    def version(self) -> str:
        from host import __version__
        from host.fast.native import native
        return f"{__version__} ({native.kmer_simd_level()})"

    def sketch(self, paths, work):
        return [sys.executable, "-m", "host", "sketch", "-p", "1", "-k", str(self.k),
                "--index-bits", str(self.p), "-o", str(work / "host.sketch"), *map(str, paths)]

    def compare(self, work):
        return [sys.executable, "-m", "host", "dist", "-p", "1", str(work / "host.sketch"),
                "-o", str(work / "host.tsv")], None

    def jaccard(self, work, paths):
        rows = [line.split("\t") for line in (work / "host.tsv").read_text().splitlines()
                if not line.startswith("# ")]
        names = rows[0][1:]
        matrix = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
        return reorder(matrix, names, [path.name for path in paths])


class Mash(Tool):
    def __init__(self, k: int, size: int):
        super().__init__("Mash", f"mash sketch -p 1 -k {k} -s {size}", "mash dist -p 1")
        self.k, self.size = k, size

    def missing(self):
        return None if shutil.which("mash") else "mash not found (apt-get install mash)"

    def version(self):
        return version_of(["mash", "--version"])

    def sketch(self, paths, work):
        return ["mash", "sketch", "-p", "1", "-k", str(self.k), "-s", str(self.size), "-o",
                str(work / "mash"), *map(str, paths)]

    def compare(self, work):
        return ["mash", "dist", "-p", "1", str(work / "mash.msh"), str(work / "mash.msh")], \
            work / "mash.tsv"

    def jaccard(self, work, paths):
        index = {str(path): i for i, path in enumerate(paths)}
        matrix = np.zeros((len(paths), len(paths)))
        for line in (work / "mash.tsv").read_text().splitlines():
            reference, query, _, _, shared = line.split("\t")
            common, total = map(int, shared.split("/"))
            matrix[index[reference], index[query]] = common / total
        return matrix


def sourmash_command() -> str | None:
    beside = Path(sys.executable).parent / "sourmash"
    return str(beside) if beside.exists() else shutil.which("sourmash")


class Sourmash(Tool):
    def __init__(self, k: int, scaled: int):
        super().__init__("sourmash", f"sourmash sketch dna -p k={k},scaled={scaled}",
                         f"sourmash compare -k {k}")
        self.k, self.scaled = k, scaled

    def missing(self):
        return None if sourmash_command() else "sourmash not found (pip install sourmash)"

    def version(self):
        return version_of([sourmash_command(), "--version"])

    def sketch(self, paths, work):
        return [sourmash_command(), "-q", "sketch", "dna", "-p",
                f"k={self.k},scaled={self.scaled}", "-o", str(work / "sourmash.sig.zip"),
                *map(str, paths)]

    def compare(self, work):
        return [sourmash_command(), "-q", "compare", "-k", str(self.k),
                str(work / "sourmash.sig.zip"), "--csv", str(work / "sourmash.csv")], None

    def jaccard(self, work, paths):
        with open(work / "sourmash.csv", newline="") as file:
            rows = list(csv.reader(file))
        matrix = np.array([[float(v) for v in row] for row in rows[1:]])
        return reorder(matrix, rows[0], [str(path) for path in paths])


class Dashing2(Tool):
    """Its all-pairs matrix is made by a sketching run with --cmpout, so its compare figures
    are sketch + compare."""

    def __init__(self, k: int, p: int, binary: str | None):
        super().__init__("Dashing2", f"dashing2 sketch -k {k} -S {1 << p} -p 1",
                         f"dashing2 sketch -k {k} -S {1 << p} -p 1 --cmpout --square "
                         "(sketch and compare)")
        self.k, self.p = k, p
        self.binary = binary or shutil.which("dashing2")

    def missing(self):
        if self.binary and os.access(self.binary, os.X_OK):
            return None
        return ("dashing2 not found: no Debian or PyPI package; build it from its repository "
                "and give --dashing2 PATH")

    def version(self):
        return version_of([self.binary, "--version"], r"v\d+(\.\d+)+")

    def _sketch(self, paths):
        return [self.binary, "sketch", "-k", str(self.k), "-S", str(1 << self.p), "-p", "1",
                *map(str, paths)]

    def sketch(self, paths, work):
        command = self._sketch(paths)
        return command[:2] + ["-o", str(work / "dashing2.sketches")] + command[2:]

    def compare(self, work):
        return self._sketch(self.paths) + ["--cmpout", str(work / "dashing2.tsv"),
                                           "--square"], None

    def jaccard(self, work, paths):
        rows = [line.split("\t") for line in (work / "dashing2.tsv").read_text().splitlines()
                if line and not line.startswith("#Dashing2")]
        names = rows[0][1:]  # the #Sources line
        matrix = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
        return reorder(matrix, names, [str(path) for path in paths])


def reorder(matrix: np.ndarray, names: list[str], wanted: list[str]) -> np.ndarray:
    place = [names.index(name) for name in wanted]
    return matrix[np.ix_(place, place)]


class OurParts:
    """Where this project's sketch CPU seconds go, measured in the same repeats as the tools
    (so under the same load): the interpreter's start and the command line's imports (each a
    whole process), decompression (into one buffer of host.fast.kmers.BLOCK_BYTES, 256 KiB, a
    block at a time, as the sketching loop reads) and the k-mer pipeline over the same blocks at
    each SIMD level this CPU has (both in this process, process time)."""

    def __init__(self, paths: list[Path], env: dict):
        from host.fast.kmers import BLOCK_BYTES, file_blocks
        from host.fast.native import available_levels, native
        from host.reader import SequenceFile
        self.paths, self.env, self.native = paths, env, native
        buffer = bytearray(BLOCK_BYTES)
        self.read = lambda path: file_blocks(SequenceFile(path), BLOCK_BYTES, buffer)
        self.blocks = [[bytes(block) for block in self.read(path)] for path in paths]
        self.level = native.kmer_simd_level()
        self.levels = available_levels(native.set_kmer_simd_level,
                                       ("scalar", "avx2", "avx512", "avx512-gfni"))
        native.set_kmer_simd_level(self.level)
        self.times = {"interpreter_s": [], "imports_s": [], "gunzip_s": [],
                      **{level: [] for level in self.levels}}

    def measure(self, work: Path) -> None:
        python = [sys.executable, "-c"]
        start = run_measured(python + ["pass"], env=self.env).cpu_s
        self.times["interpreter_s"].append(start)
        # the command line's start as the sketch command makes it (host.__main__: imports with
        # the collector off, the sketch command's parser, a sketch file written), less the
        # interpreter's
        self.times["imports_s"].append(
            run_measured(start_command(work), env=self.env).cpu_s - start)
        began = time.process_time()
        for path in self.paths:
            for _ in self.read(path):
                pass
        self.times["gunzip_s"].append(time.process_time() - began)
        for level in self.levels:
            self.native.set_kmer_simd_level(level)
            began = time.process_time()
            for genome in self.blocks:
                registers = np.zeros(1 << 14, dtype=np.uint8)
                stream = self.native.KmerStream(31, True, check=True)
                for block in genome:
                    stream.hll(block, registers, 14, 4)
                stream.finish()
            self.times[level].append(time.process_time() - began)
        self.native.set_kmer_simd_level(self.level)

    def medians(self) -> dict:
        median = {name: round(statistics.median(values), 3)
                  for name, values in self.times.items()}
        return {"interpreter_s": median["interpreter_s"], "imports_s": median["imports_s"],
                "gunzip_s": median["gunzip_s"],
                "kmers_s": {level: median[level] for level in self.levels}, "level": self.level}


#: the read length of the FASTQ copies of the genomes
READ_LENGTH = 150


def fastq_of(fasta: bytes) -> bytes:
    """The FASTA text's records cut into reads of READ_LENGTH bases (the last of a record
    shorter), quality ``I``; every base kept, k-mers across read ends lost."""
    reads = []
    for number, record in enumerate(fasta.split(b">")[1:]):
        sequence = b"".join(record.split(b"\n")[1:])
        for start in range(0, len(sequence), READ_LENGTH):
            read = sequence[start:start + READ_LENGTH]
            reads.append(b"@r%d_%d\n%s\n+\n%s\n" % (number, start, read, b"I" * len(read)))
    return b"".join(reads)


class Formats:
    """This project's sketch command on the genomes in each input format (the gzip FASTA files
    themselves, and plain FASTA, plain FASTQ, gzip FASTQ copies in ``work``): CPU seconds of
    whole processes and the bases of each format's files."""

    def __init__(self, paths: list[Path], work: Path, tool: "ThisProject", env: dict):
        self.tool, self.env, self.out = tool, env, work / "formats"
        self.out.mkdir()
        self.files = {"gzip FASTA": list(paths)}
        self.bases = {}
        for name in ("FASTA", "FASTQ", "gzip FASTQ"):
            (work / name.replace(" ", "_")).mkdir()
            self.files[name] = []
        for path in paths:
            fasta = gzip.decompress(path.read_bytes())
            fastq = fastq_of(fasta)
            stem = path.name.removesuffix(".gz").removesuffix(".fasta")
            for name, suffix, data in (("FASTA", ".fasta", fasta), ("FASTQ", ".fastq", fastq),
                                       ("gzip FASTQ", ".fastq.gz", None)):
                target = work / name.replace(" ", "_") / (stem + suffix)
                target.write_bytes(data if data is not None
                                   else gzip.compress(fastq, compresslevel=6, mtime=0))
                self.files[name].append(target)
            for name, data in (("FASTA", fasta), ("FASTQ", fastq)):
                self.bases[name] = self.bases.get(name, 0) + count_bases(data)
        self.bases["gzip FASTA"], self.bases["gzip FASTQ"] = self.bases["FASTA"], \
            self.bases["FASTQ"]
        self.times = {name: [] for name in self.files}

    def measure(self) -> None:
        for name, files in self.files.items():
            self.times[name].append(
                run_measured(self.tool.sketch(files, self.out), env=self.env).cpu_s)

    def medians(self) -> dict:
        return {name: {"cpu_s": round(statistics.median(times), 3),
                       "mbases": round(self.bases[name] / 1e6, 2),
                       "mbases_per_cpu_s": round(self.bases[name] / 1e6
                                                 / statistics.median(times), 1)}
                for name, times in self.times.items()}


#: what the command line's start is measured on: the sketch command over one short record
START_FASTA = b">start\n" + b"ACGTTGCAAGCTTAGCCGATAGGCTTACGATCGATTGCAGCTAGGACT\n"
#: how the records name that command
START = "python -m host sketch of a 48-base FASTA"


def start_command(work: Path) -> list[str]:
    """The sketch command over START_FASTA (written in ``work``): the command line's start, the
    imports and the parser of the sketch command, and a sketch file written."""
    genome = work / "start.fa"
    if not genome.exists():
        genome.write_bytes(START_FASTA)
    return [sys.executable, "-m", "host", "sketch", "-p", "1", str(genome), "-o",
            str(work / "start.sketch")]


def instructions(env: dict, work: Path) -> dict | None:
    """Instructions (callgrind) of the interpreter's start, of importing numpy and of the
    command line's start (:func:`start_command`); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    counts = {}
    for name, code in (("interpreter", ["-c", "pass"]), ("numpy", ["-c", "import numpy"]),
                       (START, start_command(work)[1:])):
        result = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                 sys.executable, *code], env=env, capture_output=True,
                                text=True)
        found = re.search(r"Collected : (\d+)", result.stderr)
        counts[name] = int(found.group(1)) if found else None
    return counts


def perf_profile(command: list[str], env: dict) -> dict | None:
    """Where one run of ``command`` spends its CPU time, by perf's samples (software clock at
    10 kHz: no hardware counters needed): the share of each shared object and the top
    functions, in percent; None without perf or when perf may not sample."""
    if shutil.which("perf") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="peers-perf-") as directory:
        data = str(Path(directory) / "perf.data")
        recorded = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "10000", "-o",
                                   data, "--", *command], env=env, capture_output=True)
        if recorded.returncode != 0:
            return None

        def report(sort: str) -> list[tuple[str, float]]:
            text = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort,
                                   "--stdio", "-q", "-g", "none"], capture_output=True,
                                  text=True).stdout
            rows = []
            for line in text.splitlines():
                fields = line.split()
                if fields and fields[0].endswith("%"):
                    rows.append((" ".join(fields[1:]).replace("[.] ", "").replace("[k] ", ""),
                                 float(fields[0].rstrip("%"))))
            return rows
        objects = report("dso")
        functions = report("dso,sym")[:12]
    return {"objects": [{"object": name, "percent": share} for name, share in objects
                        if share >= 0.5],
            "functions": [{"function": name, "percent": share} for name, share in functions]}


def main() -> None:
    parser = bench_parser(__doc__, repeats=5, k=31, p=14, mash_size=10000, scaled=1000)
    parser.add_argument("--dashing2", help="the dashing2 binary (default: dashing2 on PATH)")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count the start-up's instructions with valgrind's callgrind")
    parser.add_argument("--perf", action="store_true",
                        help="also profile one sketch run of this project with perf")
    parser.add_argument("--record", action="store_true",
                        help="write bench/results/peers.json for bench/benchmarks_doc.py")
    args = parser.parse_args()

    paths = [path for _, _, path in genome_files()]
    tools: list[Tool] = [ThisProject(args.k, args.p), Mash(args.k, args.mash_size),
                         Sourmash(args.k, args.scaled), Dashing2(args.k, args.p, args.dashing2)]
    skipped = {tool.name: tool.missing() for tool in tools if tool.missing()}
    tools = [tool for tool in tools if tool.name not in skipped]
    for tool in tools:
        tool.paths = paths
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")

    env = python_env()
    parts = OurParts(paths, env)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="peers-") as directory:
        work = Path(directory)
        formats = Formats(paths, work, tools[0], env)
        profile = perf_profile(tools[0].sketch(paths, work), env) if args.perf else None
        for repeat in range(-1, args.repeats):  # -1: the warm-up, not counted
            turn = repeat % len(tools)
            for tool in tools[turn:] + tools[:turn]:
                sketched = run_measured(tool.sketch(paths, work), env=env)
                command, stdout = tool.compare(work)
                compared = run_measured(command, stdout, env) if command else None
                if repeat >= 0:
                    tool.runs["sketch"].append(sketched)
                    if compared is not None:
                        tool.runs["compare"].append(compared)
            if repeat >= 0:
                parts.measure(work)
                formats.measure()
        load_after = os.getloadavg()
        # the exact sets after the timed runs, whose processes are not to share this
        # process's memory
        texts = [gzip.decompress(path.read_bytes()) for path in paths]
        bases = sum(map(count_bases, texts))
        sets = [distinct_kmers(text, args.k) for text in texts]
        del texts
        sizes = np.array([s.size for s in sets], dtype=np.float64)
        shared = exact_intersections(sets)
        del sets
        exact = shared / (sizes[:, None] + sizes[None, :] - shared)
        upper = np.triu_indices(len(paths), 1)
        errors = {tool.name: np.abs(tool.jaccard(work, paths) - exact)[upper]
                  for tool in tools}
        counts = instructions(env, work) if args.callgrind else None

    parts, formats = parts.medians(), formats.medians()
    parts["whole_s"] = round(statistics.median(r.cpu_s for r in tools[0].runs["sketch"]), 3)

    rows = []
    for tool in tools:
        sketch_cpu = statistics.median(r.cpu_s for r in tool.runs["sketch"])
        row = {"tool": tool.name, "version": tool.version(), "sketch": tool.sketch_label,
               "compare": tool.compare_label,
               "sketch_cpu_s": round(sketch_cpu, 3),
               "sketch_wall_s": round(statistics.median(r.wall_s for r in tool.runs["sketch"]), 3),
               "sketch_peak_mb": round(statistics.median(r.peak_mb for r in tool.runs["sketch"]),
                                       1),
               "mbases_per_cpu_s": round(bases / 1e6 / sketch_cpu, 1),
               "max_abs_error": round(float(errors[tool.name].max()), 4),
               "mean_abs_error": round(float(errors[tool.name].mean()), 5)}
        if tool.runs["compare"]:
            row.update(
                compare_cpu_s=round(statistics.median(r.cpu_s for r in tool.runs["compare"]), 3),
                compare_peak_mb=round(statistics.median(r.peak_mb
                                                        for r in tool.runs["compare"]), 1))
        rows.append(row)
    ours = rows[0]["sketch_cpu_s"]
    for row in rows:
        row["sketch_cpu_vs_this"] = round(row["sketch_cpu_s"] / ours, 2)

    print(f"{len(paths)} genomes, {bases / 1e6:.1f} Mbases (gzip FASTA), k={args.k}; "
          f"{machine()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
          f"median of {args.repeats} interleaved repeats")
    print("| tool | version | sketch | CPU-s | x this | Mbases per CPU-s | wall s | peak MB | "
          "all-pairs CPU-s | peak MB | max abs J error | mean |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['tool']} | {row['version']} | `{row['sketch']}` | "
              f"{row['sketch_cpu_s']:.3f} | {row['sketch_cpu_vs_this']:.2f} | "
              f"{row['mbases_per_cpu_s']:.1f} | {row['sketch_wall_s']:.2f} | "
              f"{row['sketch_peak_mb']:.0f} | {row.get('compare_cpu_s', '-')} | "
              f"{row.get('compare_peak_mb', '-')} | {row['max_abs_error']:.4f} | "
              f"{row['mean_abs_error']:.5f} |")
    level = parts["level"]
    rest = parts["whole_s"] - parts["interpreter_s"] - parts["imports_s"] - parts["gunzip_s"] \
        - parts["kmers_s"][level]
    print(f"this project's {parts['whole_s']:.3f} CPU-s: interpreter {parts['interpreter_s']:.3f}, "
          f"imports {parts['imports_s']:.3f}, gunzip {parts['gunzip_s']:.3f}, k-mer pipeline "
          f"{parts['kmers_s'][level]:.3f} ({level}; "
          + ", ".join(f"{name} {value:.3f}" for name, value in parts["kmers_s"].items())
          + f"), the rest {rest:.3f}")
    print(f"{tools[0].sketch_label}, by input format: " + ", ".join(
        f"{name} {value['mbases_per_cpu_s']:.1f} Mbases per CPU-s ({value['cpu_s']:.3f} CPU-s, "
        f"{value['mbases']:.1f} Mbases)" for name, value in formats.items()))
    if counts:
        print("instructions (callgrind): " + ", ".join(f"{name} {value / 1e6:.0f} M"
                                                       for name, value in counts.items()))
    if profile:
        print("perf, one sketch run: " + ", ".join(f"{row['object']} {row['percent']:.1f} %"
                                                  for row in profile["objects"]))
        print("  top functions: " + ", ".join(f"{row['function']} {row['percent']:.1f} %"
                                              for row in profile["functions"]))
    if args.record:
        from bench.record import write
        write("peers", {
            "command": "python bench/peers.py " + " ".join(sys.argv[1:]),
            "machine": machine(),
            "load_average": [round(load_before[0], 2), round(load_after[0], 2)],
            "input": f"{len(paths)} real bacterial genomes of 5 genera (Debian's "
                     f"ragout-examples and kaptive-example), gzip FASTA, "
                     f"{bases / 1e6:.1f} Mbases",
            "geometry": f"k={args.k}; this project p={args.p}, w=4; Mash s={args.mash_size}; "
                        f"sourmash scaled={args.scaled}; Dashing2 {1 << args.p} registers",
            "mbases": round(bases / 1e6, 2), "repeats": args.repeats, "rows": rows,
            "skipped": skipped,
            "parts": {**parts, "rest_s": round(rest, 3)}, "instructions": counts,
            "formats": formats, "perf": profile})


if __name__ == "__main__":
    main()
