"""The software backend against Mash, side by side in one run: sketching, all-pairs Jaccard,
and the JSD and motif engines.

    python bench/sw_backend.py [--repeats 5] [--baseline /path/to/older/checkout] [--quick]

Genomes: the real bacterial genomes of Debian's ``sibelia-examples`` package (Staphylococcus
aureus x 6, Helicobacter pylori x 2, one genome per record group, ~20 Mbase) when it is
installed, else synthetic "real-looking" ones (``--synthetic``: a random ancestor, mutated
relatives, repeats, N runs, soft-masked lowercase, 80-column lines, contigs). Each is written
as plain FASTA and as gzip to a temporary directory.

* sketch: ``python -m host sketch`` (k=31, p=14, w=4) as a separate process, wall time, CPU
  seconds (user + sys) and peak RSS, with --threads 1 and 2, plain and gzip input; ``mash sketch
  -p 1 -k 31 -s 10000`` on the same files when mash is on PATH (and -p 2). The runs of a table
  take turns (1 thread, 2 threads, 1 thread, ...), so that a change of load hits both alike.
  Start-up alone: ``python -m host sketch`` of one 120-base file. Python runs as an installed
  package does: its bytecode cached after a first run (in a temporary PYTHONPYCACHEPREFIX, so the
  checkout stays clean), even where PYTHONDONTWRITEBYTECODE is set; the start-up is also timed
  in the environment as given, and ``--environment-as-is`` times every row so.
* all-pairs: host.similarity.all_pairs over 2,000 sketches (p=14, w=4; 2.0 M distinct pairs, about
  a second per run with the hll estimator, so that thread start-up does not dominate), J of every
  pair by each estimator (hll: the union loop; mle: the joint MLE, the default of dist), distinct
  pairs per second, 1 and 2 threads, the runs of the four rows taking turns. ``--only all-pairs``
  runs these rows alone (and with --record replaces them in the record).
* jsd matrix: host.jsdmatrix's compiled float64 JSD over 200 full PQAs of the JSD defaults,
  ordered pairs per second, 1 and 2 threads.
* gzip: decompression speed of Python's zlib, ISA-L (python-isal, what host.reader uses when
  it is installed) and zlib-ng when installed, MB of output per CPU-second.
* jsd, motifs: in-process throughput of one thread, Mbases/s (build_pqa_fast with the JSD
  defaults; find_motifs_fast with test = one genome, control = another, k = 10..20).

With ``--baseline DIR`` the in-process rows and the sketch command are also run from the checkout
DIR (its own host package, e.g. an older commit) and printed beside. Every figure is the median
of ``--repeats`` runs: the machine may be shared. CPU seconds are printed beside wall times:
on a busy machine (Linux groups a session's threads into one scheduling share), the speed-up of
a second thread shows in wall time only when a core is free. Prints a table; asserts nothing.
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


REPOSITORY = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and "--in-process" not in sys.argv:
    sys.path.insert(0, str(REPOSITORY))  # this checkout's host package, not an installed one
SIBELIA = Path("/usr/share/doc/sibelia/examples")
SKETCH_ARGS = ["--k", "31", "--index-bits", "14", "--w", "4"]


# -- genomes --------------------------------------------------------------------------------

def _records(text: bytes) -> list[bytes]:
    return [b">" + record for record in text.split(b"\n>") if record.strip(b">\n")]


def real_genomes() -> list[tuple[str, bytes]]:
    """The sibelia-examples genomes, one FASTA text per genome (multi-genome files split)."""
    genomes = []
    for path in sorted(SIBELIA.rglob("*.fasta.gz")):
        text = gzip.decompress(path.read_bytes())
        records = _records(text)
        if path.name in ("Staphylococcus.fasta.gz", "Helicobacter_pylori.fasta.gz"):
            genomes += [(f"{path.name.split('.')[0]}_{i}.fa", r.rstrip(b"\n") + b"\n")
                        for i, r in enumerate(records)]
        else:
            genomes.append((path.name.replace(".fasta.gz", ".fa"), text))
    return genomes


def synthetic_genomes(count: int, bases: int, rng: np.random.Generator) -> list[tuple[str, bytes]]:
    """Relatives of one random ancestor (1-10% point mutations), with repeats, N runs, a
    soft-masked tenth, 80-column lines and 1-20 contigs each."""
    alphabet = np.frombuffer(b"ACGT", np.uint8)
    ancestor = alphabet[rng.integers(0, 4, bases)]
    for _ in range(20):  # repeats: copies of 1-5 kb stretches
        length = int(rng.integers(1000, 5000))
        source, target = rng.integers(0, bases - length, 2)
        ancestor[target:target + length] = ancestor[source:source + length]
    genomes = []
    for g in range(count):
        sequence = ancestor.copy()
        mutated = rng.random(bases) < rng.uniform(0.01, 0.1)
        sequence[mutated] = alphabet[rng.integers(0, 4, int(mutated.sum()))]
        for start in rng.integers(0, bases - 200, 5):
            sequence[start:start + int(rng.integers(10, 200))] = ord("N")
        for start in rng.integers(0, bases - 5000, bases // 50_000):
            stretch = sequence[start:start + 5000]
            stretch[stretch != ord("N")] |= 0x20  # lowercase
        cuts = np.sort(rng.integers(0, bases, int(rng.integers(0, 20))))
        text = bytearray()
        for c, contig in enumerate(np.split(sequence, cuts)):
            body = contig.tobytes()
            text += b">contig%d genome %d\n" % (c, g)
            text += b"\n".join(body[i:i + 80] for i in range(0, len(body), 80)) + b"\n"
        genomes.append((f"synthetic_{g}.fa", bytes(text)))
    return genomes


def bases_of(texts: list[bytes]) -> int:
    """A C G T (either case) in the sequence lines."""
    table = np.zeros(256, dtype=np.int64)
    table[list(b"ACGTacgt")] = 1
    sequence = (b"".join(line for line in text.split(b"\n") if not line.startswith(b">"))
                for text in texts)
    return sum(int(table[np.frombuffer(s, np.uint8)].sum()) for s in sequence)


# -- measurements ---------------------------------------------------------------------------

# Runs a command and prints its wall time and peak RSS: a small process of its own, because a
# child forked from this one would count this one's memory as its own.
_MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
seconds = time.perf_counter() - start
if done.returncode:
    sys.exit(done.stderr.decode())
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
"""


def run_process(command: list[str], cwd: Path, env: dict | None = None
                ) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one child process."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr}")
    seconds, cpu, rss = done.stdout.split()
    return float(seconds), float(cpu), float(rss)


def median_runs(commands: list[tuple], repeats: int) -> list[tuple[str, float, float, float]]:
    """(name, median wall seconds, median CPU seconds, largest peak RSS) of each (name, command,
    cwd, env), the commands run in turn ``repeats`` times after one unmeasured warm-up each."""
    for _, command, cwd, env in commands:
        run_process(command, cwd, env)
    runs: dict = {name: [] for name, *_ in commands}
    for _ in range(repeats):
        for name, command, cwd, env in commands:
            runs[name].append(run_process(command, cwd, env))
    return [(name, statistics.median(r[0] for r in runs[name]),
             statistics.median(r[1] for r in runs[name]), max(r[2] for r in runs[name]))
            for name, *_ in commands]


def cached_bytecode_environment(cache: Path) -> dict:
    """The environment with Python's bytecode cache on (in ``cache``), as for an installed
    package, whose modules pip compiled when it installed them."""
    environment = {key: value for key, value in os.environ.items()
                   if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(cache)
    return environment


def in_process_figures(genome_paths: list[str], repeats: int, quick: bool) -> dict:
    """The in-process rows, printed as JSON so that --baseline can run them in another tree."""
    from host.fast.jsd import build_pqa_fast
    from host.fast.motif import find_motifs_fast
    from host.io import read_sequence_file
    from kmerspec.golden.jsd import JsdParams
    from kmerspec.golden.motif import MotifParams
    texts = [read_sequence_file(p) for p in genome_paths]
    bases = bases_of(texts)
    figures = {}
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            build_pqa_fast([text], JsdParams())
        seconds.append(time.perf_counter() - start)
    figures["jsd"] = bases / statistics.median(seconds) / 1e6
    test, control = texts[0], texts[1]
    motif_bases = bases_of([test, control])
    params = MotifParams(kmin=10, kmax=12 if quick else 20)
    seconds = []
    for _ in range(max(1, repeats // 2)):
        start = time.perf_counter()
        try:
            find_motifs_fast([test], [control], params, threads=1)
        except TypeError:  # a checkout from before --threads
            find_motifs_fast([test], [control], params)
        seconds.append(time.perf_counter() - start)
    # one pass of each k over test and control: Mbases/s per k-pass
    figures["motifs"] = motif_bases * len(params.ks) / statistics.median(seconds) / 1e6
    return figures


def decompression_rates(paths: list[str], repeats: int) -> list[tuple[str, float]]:
    """Decompressed MB per CPU-second of each gzip reader that is installed."""
    readers = [("zlib (Python gzip)", gzip)]
    for label, module, name in (("ISA-L (isal, used when installed)", "isal", "igzip"),
                                ("zlib-ng (zlib_ng)", "zlib_ng", "gzip_ng")):
        try:
            readers.append((label, getattr(__import__(module, fromlist=[name]), name)))
        except ImportError:
            pass
    rates = []
    for label, reader in readers:
        seconds, size = [], 0
        for _ in range(repeats):
            start, size = time.process_time(), 0
            for path in paths:
                with reader.open(path, "rb") as stream:
                    while block := stream.read(1 << 22):
                        size += len(block)
            seconds.append(time.process_time() - start)
        rates.append((label, size / statistics.median(seconds) / 1e6))
    return rates


def random_sketches(genomes: int, params) -> np.ndarray:
    """Registers as genomes of 1e5 .. 1e7 distinct k-mers leave them (unrelated genomes)."""
    rng = np.random.default_rng(1)
    cardinality = rng.uniform(5, 7, genomes)
    registers = np.zeros((genomes, params.m), dtype=np.uint8)
    for row, log_n in zip(registers, cardinality):
        per_register = 10 ** log_n / params.m
        ranks = np.floor(np.log2(per_register / rng.exponential(1, params.m))) + 1
        row[:] = np.clip(ranks, 0, params.max_rank)
    return registers


def all_pairs_rates(genomes: int, repeats: int) -> list[dict]:
    """Distinct pairs per second (wall, and per CPU-second) of host.similarity.all_pairs by each
    estimator (the J of every pair, as dist computes the matrix) on 1 and 2 threads; the runs
    of the four rows take turns, ``repeats`` times, after one unmeasured warm-up each."""
    from host.similarity import PackedSketches, all_pairs
    from kmerspec.golden.hll import HllParams
    params = HllParams(14, 4)
    packed = PackedSketches(random_sketches(genomes, params), params)
    cases = [(estimator, threads) for estimator in ("hll", "mle") for threads in (1, 2)]
    times = {case: [] for case in cases}
    for repeat in range(repeats + 1):
        for estimator, threads in cases:
            start, start_cpu = time.perf_counter(), time.process_time()
            pairs = sum(js.size for _, js, _ in all_pairs(packed, params, threads=threads,
                                                          estimator=estimator))
            if repeat:
                times[estimator, threads].append((time.perf_counter() - start,
                                                  time.process_time() - start_cpu))
    return [{"estimator": estimator, "threads": threads, "sketches": genomes,
             "pairs_s": round(pairs / statistics.median(t[0] for t in times[estimator, threads])),
             "pairs_per_cpu_s": round(pairs / statistics.median(
                 t[1] for t in times[estimator, threads]))}
            for estimator, threads in cases]


def print_all_pairs(pair_rows: list[dict]) -> None:
    print(f"{'all-pairs matrix (p=14, w=4), estimator':<44} {'pairs':>8} {'pairs/s':>9} "
          f"{'per CPU-s':>10}")
    for row in pair_rows:
        pairs = row["sketches"] * (row["sketches"] - 1) // 2
        label = f"{row['estimator']}, {row['sketches']} sketches, threads={row['threads']}"
        print(f"{label:<44} {pairs:>8} {row['pairs_s']:>9} {row['pairs_per_cpu_s']:>10}")
    rate = {(row["estimator"], row["threads"]): row["pairs_s"] for row in pair_rows}
    for estimator in ("hll", "mle"):
        print(f"all-pairs {estimator}: 2 threads are "
              f"{rate[estimator, 2] / rate[estimator, 1]:.2f}x one thread")
    print(f"one thread: mle {rate['mle', 1]:,} pairs/s, hll {rate['hll', 1]:,} "
          f"({rate['hll', 1] / rate['mle', 1]:.1f}x)")


def only_all_pairs(args) -> None:
    """--only all-pairs: the all-pairs rows alone; with --record they replace those of the
    existing record (the other rows keep their run, named in the record)."""
    load_at_start = os.getloadavg()[0]
    genomes = 400 if args.quick else 2000
    pair_rows = all_pairs_rates(genomes, args.repeats)
    print(f"load average {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"on {os.cpu_count()} cores; median of {args.repeats} runs")
    print_all_pairs(pair_rows)
    if args.record:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import datetime
        import record
        path = record.RESULTS / "sw_backend.json"
        kept = json.loads(path.read_text())  # its date and commit are the other rows' run
        kept["all_pairs"] = pair_rows
        kept["all_pairs_run"] = (
            f"`python bench/sw_backend.py --only all-pairs --record"
            f"{f' --repeats {args.repeats}' if args.repeats != 5 else ''}`, "
            f"{datetime.date.today().isoformat()}, commit {record.commit()}, {record.machine()}, "
            f"load average {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
        path.write_text(json.dumps(kept, indent=2) + "\n")
        print(f"recorded the all-pairs rows in {path}")


def jsd_matrix_rate(genomes: int, threads: int, repeats: int) -> tuple[int, float]:
    """Ordered pairs per second of the float64 JSD matrix (textbook), full PQAs of the JSD
    defaults (every slot filled, random tags: few shared keys, as between distant genomes)."""
    from host.fast.threads import map_in_threads
    from host.jsdmatrix import PqaArrays, entropies, jsd_row_tile
    from kmerspec.golden.jsd import JsdParams
    params = JsdParams()
    rng = np.random.default_rng(2)
    shape = (genomes, 1 << params.R, params.n)
    pqas = PqaArrays(rng.integers(0, 2**32, shape, dtype=np.uint32),
                     rng.integers(1, 1000, shape, dtype=np.uint32))
    entropy = entropies(pqas)
    tiles = [range(s, min(s + 16, genomes)) for s in range(0, genomes, 16)]
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in map_in_threads(lambda tile: jsd_row_tile(tile, pqas, entropy, "textbook",
                                                          "float"), tiles, threads):
            pass
        seconds.append(time.perf_counter() - start)
    pairs = genomes * (genomes - 1)
    return pairs, pairs / statistics.median(seconds)


# -- report ---------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="an older checkout to run the same rows from, for before/after")
    parser.add_argument("--synthetic", action="store_true", help="synthetic genomes only")
    parser.add_argument("--copies", type=int, default=10,
                        help="sketch each genome file this many times (as separate files), so "
                             "that start-up time does not dominate (default 10)")
    parser.add_argument("--quick", action="store_true", help="fewer k for motifs, fewer sketches")
    parser.add_argument("--environment-as-is", action="store_true",
                        help="run python -m host in this environment as given (by default its "
                             "bytecode is cached, as for an installed package)")
    parser.add_argument("--in-process", nargs="+", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true",
                        help="also write bench/results/sw_backend.json (docs/benchmarks.md is "
                             "made from it)")
    parser.add_argument("--only", choices=["all-pairs"], default=None,
                        help="run only the all-pairs rows (both estimators); with --record they "
                             "replace those of bench/results/sw_backend.json")
    args = parser.parse_args()
    if args.in_process:  # the child of --baseline
        print(json.dumps(in_process_figures(args.in_process, args.repeats, args.quick)))
        return
    if args.only == "all-pairs":
        only_all_pairs(args)
        return

    load_at_start = os.getloadavg()[0]
    use_real = SIBELIA.is_dir() and not args.synthetic
    genomes = (real_genomes() if use_real
               else synthetic_genomes(8, 2_500_000, np.random.default_rng(1)))
    texts = [text for _, text in genomes]
    bases = bases_of(texts)
    source = ("sibelia-examples (real S. aureus and H. pylori genomes)" if use_real
              else "synthetic real-looking genomes")
    mash = shutil.which("mash")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain, packed = [], []
        for name, text in genomes:
            (tmp / name).write_bytes(text)
            (tmp / (name + ".gz")).write_bytes(gzip.compress(text, 6))
            plain.append(str(tmp / name))
            packed.append(str(tmp / (name + ".gz")))
        sketch_inputs = {}
        for label, files in (("plain", plain), ("gzip", packed)):
            sketch_inputs[label] = []
            for copy in range(args.copies):
                for file in map(Path, files):
                    target = file.with_name(f"copy{copy}_{file.name}")
                    # a copy, not a link: sketch refuses one file given twice by any name
                    shutil.copyfile(file, target)
                    sketch_inputs[label].append(str(target))
        host = [sys.executable, "-m", "host", "sketch", *SKETCH_ARGS, "-o", str(tmp / "s.ksk")]
        as_given = dict(os.environ)
        host_env = (as_given if args.environment_as_is
                    else cached_bytecode_environment(tmp / "bytecode"))
        for label, files in sketch_inputs.items():
            commands = []
            if mash:
                for p in (1, 2):
                    commands.append((f"mash sketch -p {p}, {label}",
                                     [mash, "sketch", "-p", str(p), "-k", "31", "-s", "10000",
                                      "-o", str(tmp / "mash"), *files], tmp, None))
            for threads in (1, 2):
                commands.append((f"host sketch --threads {threads}, {label}",
                                 [*host, "--threads", str(threads), *files], REPOSITORY,
                                 host_env))
            if args.baseline:
                commands.append((f"baseline host sketch, {label}", [*host, *files],
                                 args.baseline, host_env))
            rows += median_runs(commands, args.repeats)
        tiny = tmp / "tiny.fa"
        tiny.write_bytes(b">tiny\n" + b"ACGTTGCAAGCTTAGC" * 7 + b"ACGTTGCA\n")
        given = ("start-up (PYTHONDONTWRITEBYTECODE set)"
                 if os.environ.get("PYTHONDONTWRITEBYTECODE") else "start-up (environment as is)")
        startup_commands = [(given if args.environment_as_is
                             else "start-up (bytecode cached, as installed)",
                             [*host, str(tiny)], REPOSITORY, host_env)]
        if not args.environment_as_is:  # what this environment gives, for comparison
            startup_commands.append((given, [*host, str(tiny)], REPOSITORY, as_given))
        startup_rows = median_runs(startup_commands, args.repeats)
        load_after_sketch = os.getloadavg()[0]
        after = in_process_figures(plain, args.repeats, args.quick)
        decompression = decompression_rates(packed, args.repeats)
        before = None
        if args.baseline:
            output = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                                     "--repeats", str(args.repeats), "--in-process", *plain]
                                    + (["--quick"] if args.quick else []),
                                    cwd=args.baseline, capture_output=True, text=True, check=True,
                                    env={**os.environ, "PYTHONPATH": str(args.baseline)})
            before = json.loads(output.stdout.strip().splitlines()[-1])

    print(f"input: {len(genomes)} genomes, {bases / 1e6:.1f} Mbases, {source}; sketched "
          f"{args.copies} times over ({args.copies * len(genomes)} files); median of "
          f"{args.repeats} runs; load average {load_at_start:.1f} at start, "
          f"{load_after_sketch:.1f} after the sketch rows, {os.getloadavg()[0]:.1f} at the end, "
          f"on {os.cpu_count()} cores")
    print()
    bytecode = ("environment as given" if args.environment_as_is
                else "bytecode cached, as installed")
    print(f"{'sketch (k=31, p=14, w=4; mash s=10000)':<44} {'seconds':>8} {'Mbases/s':>9} "
          f"{'CPU-s':>7} {'peak MB':>8}")
    for name, seconds, cpu, rss in rows:
        print(f"{name:<44} {seconds:>8.2f} {args.copies * bases / seconds / 1e6:>9.1f} "
              f"{cpu:>7.2f} {rss:>8.0f}")
    print()
    print(f"{'python -m host sketch, one 120-base file':<44} {'seconds':>8} {'':>9} "
          f"{'CPU-s':>7} {'peak MB':>8}")
    for name, seconds, cpu, rss in startup_rows:
        print(f"{name:<44} {seconds:>8.2f} {'':>9} {cpu:>7.2f} {rss:>8.0f}")
    print()
    startup = startup_rows[0][1]
    wall = {name: seconds for name, seconds, *_ in rows}
    print(f"{'2 threads against 1 (python -m host sketch)':<44} {'whole':>8} {'sketching':>10}")
    for label in sketch_inputs:
        one, two = (wall[f"host sketch --threads {t}, {label}"] for t in (1, 2))
        print(f"{f'speed-up, {label}':<44} {one / two:>7.2f}x "
              f"{(one - startup) / max(two - startup, 1e-9):>9.2f}x")
    print(f"(whole: measured, start-up included ({bytecode}); sketching: computed, the "
          f"start-up above taken from both)")
    for label in sketch_inputs:
        mash_one = wall.get(f"mash sketch -p 1, {label}")
        if mash_one:
            one = wall[f"host sketch --threads 1, {label}"]
            print(f"host sketch, {label}: one thread is {mash_one / one:.2f}x mash -p 1")
    print()
    pair_rows = all_pairs_rates(400 if args.quick else 2000, args.repeats)
    print_all_pairs(pair_rows)
    print()
    jsd_genomes = 50 if args.quick else 200
    print(f"{'JSD matrix (float, textbook; R, n defaults)':<44} {'pairs':>8} {'pairs/s':>9}")
    jsd_rates = []
    for threads in (1, 2):
        pairs, rate = jsd_matrix_rate(jsd_genomes, threads, args.repeats)
        print(f"{f'{jsd_genomes} PQAs, threads={threads}':<44} {pairs:>8} {rate:>9.0f}")
        jsd_rates.append({"threads": threads, "pqas": jsd_genomes, "pairs_s": round(rate)})
    print()
    print(f"{'gzip decompression, one thread':<44} {'MB/s':>8}")
    for label, rate in decompression:
        print(f"{label:<44} {rate:>8.0f}")
    print()
    print(f"{'one thread, Mbases/s':<44} {'after':>8} {'before':>9}")
    for key, label in (("jsd", "jsd: PQA of a genome (s=10, d=5, cw=14)"),
                       ("motifs", "motifs: per k, test + control (k=10..20)")):
        old = f"{before[key]:>9.1f}" if before else f"{'-':>9}"
        print(f"{label:<44} {after[key]:>8.1f} {old}")
    if args.record:  # bench/record.py, beside this script (also when it is imported)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import record
        record.write("sw_backend", {
            "command": "python bench/sw_backend.py --record"
                       + (f" --repeats {args.repeats}" if args.repeats != 5 else ""),
            "machine": f"{record.machine()}, load average {load_at_start:.1f} at the start, "
                       f"{os.getloadavg()[0]:.1f} at the end",
            "input": f"{len(genomes)} genomes of {source}, {bases / 1e6:.1f} Mbases, sketched "
                     f"{args.copies} times over as {args.copies * len(genomes)} files",
            "geometry": "k=31, p=14, w=4; Mash -k 31 -s 10000",
            "note": f"median of {args.repeats} runs; wall time and CPU seconds of the whole "
                    "process, Python start-up included",
            "sketch": [{"tool": name.split(", ")[0].replace("host sketch", "python -m host sketch"),
                        "input": name.split(", ")[1], "seconds": round(seconds, 2),
                        "mbases_s": round(args.copies * bases / seconds / 1e6, 1),
                        "cpu_s": round(cpu, 2), "peak_mb": round(rss)}
                       for name, seconds, cpu, rss in rows if not name.startswith("baseline")],
            "all_pairs": pair_rows, "jsd_matrix": jsd_rates,
            "all_pairs_run": "the same run",
            "one_thread_mbases_s": {
                "jsd PQA of a genome (s=10, d=5, cw=14)": round(after["jsd"], 1),
                "motifs per k, test + control (k=10..20)": round(after["motifs"], 1)}})


if __name__ == "__main__":
    main()
