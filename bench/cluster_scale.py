"""Time and peak memory of ``cluster`` end to end from a sketch file, one thread, on synthetic
collections of species groups.

    python bench/cluster_scale.py [--genomes 2000 20000] [--methods greedy single average]
                                  [--linkage-up-to 5000] [--per-species 5] [--seed 1]
                                  [--record] [--note TEXT]

Each collection is built at the register level (p=14, w=4, k=31): a species has a genome size
of 1.6 to 6.4 million distinct k-mers (uniform), cut into 32 equal blocks; a genome of the
species keeps a random (1 - f) of its species' blocks and has f of its own (f uniform in
0..0.4), so its Jaccard to the species' base is (1 - f) / (1 + f) and its ANI about
100 (1 + ln(1 - f) / 31) >= 98.4; two genomes of one species are >= 96.7 % ANI apart, genomes
of different species share nothing. The number of genomes of each species is geometric with
mean --per-species (so about N / 5 species). A block's sketch is drawn from the exact register
distribution of a random set of its size (a register is 0 with probability exp(-s/m), else the
largest of Poisson(s/m) geometric(1/2) ranks, capped at 15); each block is a rolled copy of
one of 1,024 drawn blocks (rolled registers of a random set are another random set), so
collections of 20,000 genomes are made in seconds. A genome's sketch is the register-wise
maximum of its blocks (the sketch of their union, SPEC 3).

Each run is ``python -m host cluster COLLECTION.sketch --ani 95 --method M -p 1 -o OUT`` in a
fresh process: wall time (Python start-up, reading the sketch file and writing the output
included), the process's peak resident memory (its rusage), and the clusters found against the
species. Prints a table; asserts nothing. ``--record`` also writes bench/results/cluster_scale.json
for bench/benchmarks_doc.py.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.sketchfile import SketchSet, write_sketches  # noqa: E402
from kmerspec.golden.hll import HllParams  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PARAMS = HllParams(14, 4)
BLOCKS = 32
POOL = 1024


def random_set_registers(rng, size: int, count: int, params: HllParams) -> np.ndarray:
    """``count`` sketches of random sets of ``size`` distinct k-mers, drawn register by register
    from their distribution."""
    m = params.m
    per_bucket = rng.poisson(size / m, (count, m))
    u = rng.random((count, m))
    with np.errstate(divide="ignore", invalid="ignore"):
        rank = np.ceil(-np.log2(1.0 - u ** (1.0 / np.maximum(per_bucket, 1))))
    rank = np.clip(np.nan_to_num(rank, nan=1.0, posinf=params.max_rank), 1, params.max_rank)
    return np.where(per_bucket > 0, rank, 0).astype(np.uint8)


def collection(genomes: int, per_species: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(registers of every genome, species of every genome)."""
    rng = np.random.default_rng(seed)
    sizes = (1_600_000, 3_200_000, 4_800_000, 6_400_000)
    pools = [random_set_registers(rng, size // BLOCKS, POOL // len(sizes), PARAMS)
             for size in sizes]
    registers = np.zeros((genomes, PARAMS.m), dtype=np.uint8)
    species = np.empty(genomes, dtype=np.int64)
    done, label = 0, 0
    while done < genomes:
        count = min(genomes - done, int(rng.geometric(1.0 / per_species)))
        pool = pools[int(rng.integers(len(sizes)))]

        def block():  # a block no other species (and no genome's own) shares
            return np.roll(pool[int(rng.integers(len(pool)))], int(rng.integers(PARAMS.m)))
        base = [block() for _ in range(BLOCKS)]
        for genome in range(done, done + count):
            own = int(round(rng.uniform(0.0, 0.4) * BLOCKS))
            kept = rng.choice(BLOCKS, BLOCKS - own, replace=False)
            parts = [base[i] for i in kept.tolist()] + [block() for _ in range(own)]
            registers[genome] = np.maximum.reduce(parts)
        species[done:done + count] = label
        done += count
        label += 1
    return registers, species


def run(arguments: list[str]) -> dict:
    """Wall s, CPU s (user + system) and peak resident MiB of ``python -m host ARGUMENTS`` in a
    fresh process (its rusage), with the 1-minute load average before it."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "host", *arguments], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"host {' '.join(arguments)} failed ({status})")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mib": usage.ru_maxrss / 1024, "load": load}


def agreement(path: Path, species: np.ndarray) -> tuple[int, bool]:
    """(clusters, whether they are exactly the species)."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[2:]]
    clusters = np.array([int(row[1]) for row in rows])
    pairs = {(int(c), int(s)) for c, s in zip(clusters, species)}
    exact = len(pairs) == len(set(clusters)) == len(set(species.tolist()))
    return len(set(clusters.tolist())), exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--genomes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--methods", nargs="+", default=["greedy", "single", "average"],
                        choices=["greedy", "single", "average", "complete"])
    parser.add_argument("--linkage-up-to", type=int, default=5000,
                        help="run the linkage methods on collections of at most this many "
                             "genomes (they compare every pair: minutes at 20,000)")
    parser.add_argument("--note", default="",
                        help="a sentence recorded with the figures (--record)")
    parser.add_argument("--per-species", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--record", action="store_true",
                        help="also write bench/results/cluster_scale.json")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    print(f"# cluster_scale: p={PARAMS.p}, w={PARAMS.w}, k=31, --ani 95, -p 1 (one thread); "
          f"load average {os.getloadavg()[0]:.1f} at start")
    print("| genomes | species | method | clusters | clusters = species | wall (s) | "
          "peak memory (MiB) | sketch file (MiB) | made in (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="cluster-scale-") as tmp:
        for n in args.genomes:
            started = time.perf_counter()
            registers, species = collection(n, args.per_species, args.seed)
            sketch = Path(tmp) / f"collection{n}.sketch"
            write_sketches(sketch, SketchSet(
                kind="hll", params={"k": 31, "p": PARAMS.p, "w": PARAMS.w, "canonical": True,
                                    "hash": "fmix64"},
                names=[f"g{i:06d}" for i in range(n)], files=[[f"g{i:06d}.fa"] for i in range(n)],
                arrays={"registers": registers}))
            made = time.perf_counter() - started
            del registers
            for method in args.methods:
                if method != "greedy" and n > args.linkage_up_to:
                    continue
                out = Path(tmp) / f"clusters{n}.{method}.tsv"
                step = run(["cluster", str(sketch), "--ani", "95", "--method", method,
                            "-p", "1", "-o", str(out)])
                wall, peak = step["wall_s"], step["peak_mib"]
                clusters, exact = agreement(out, species)
                rows.append({"genomes": n, "species": len(set(species.tolist())),
                             "method": method, "clusters": clusters, "exact": exact,
                             "seconds": round(wall, 1), "peak_mib": round(peak),
                             "sketch_mib": round(sketch.stat().st_size / 2**20)})
                print(f"| {n:,} | {len(set(species.tolist())):,} | {method} | {clusters:,} | "
                      f"{'yes' if exact else 'no'} | {wall:.1f} | {peak:.0f} | "
                      f"{sketch.stat().st_size / 2**20:.0f} | {made:.1f} |", flush=True)
    if args.record:
        record(rows, load, args)


def record(rows: list[dict], load: float, args) -> None:
    from bench.record import write
    write("cluster_scale", {
        "command": (f"python bench/cluster_scale.py --genomes {' '.join(map(str, args.genomes))} "
                    f"--methods {' '.join(args.methods)} --linkage-up-to {args.linkage_up_to} "
                    f"--per-species {args.per_species:g} --seed {args.seed} --record"),
        "note": args.note,
        "input": "synthetic sketch collections of species groups (about 5 genomes a species, "
                 "1.6-6.4 M distinct k-mers a genome, >= 96.7 % ANI within a species, nothing "
                 "shared across species), made at the register level",
        "geometry": "canonical 31-mers, p=14, w=4; cluster --ani 95 -p 1 (one thread), end to "
                    "end from the sketch file in a fresh process",
        "machine": f"this project's 2-core x86-64 VM, load average {load:.1f} at the start "
                   f"(shared with other work: not a quiet machine)",
        "rows": rows})


if __name__ == "__main__":
    main()
