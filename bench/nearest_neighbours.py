"""Cost of ``dist --top K``, ``--metric containment`` and ``search`` against the full Jaccard
matrix, sw backend, in this process.

    python bench/nearest_neighbours.py [--genomes 400,800] [--top 10] [--queries 50] [--threads N]

Input: sketch files of N random k-mer sets (10^4..10^6 k-mers each, p=14, w=4; bench/scheduler.py's
many_sketches). Each command runs once through host.cli.main with the output to a file, so
seconds and CPU-s include reading the sketch file and writing the output (a matrix is N^2
formatted numbers, --top N K lines). "unions" counts the union estimates computed: the full
Jaccard matrix computes each pair once and mirrors it (held whole up to 1 GiB of matrix);
--top and containment compute each tile of 32 rows against every genome, so every pair twice,
and hold one tile. "peak MB" is tracemalloc's peak of Python and numpy allocations during the
command (at these N dominated by the loaded sketches). Prints a table; asserts nothing.
"""

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scheduler import many_sketches  # noqa: E402
from host.cli import main as cli  # noqa: E402


def measured(arguments: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB) of one command."""
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    assert cli(arguments) == 0, arguments
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return wall, cpu, peak


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--genomes", default="400,800")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    threads = ["--threads", str(args.threads)] if args.threads else []
    print("| N | command | unions | seconds | CPU-s | unions per CPU-s | peak MB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(v) for v in args.genomes.split(",")):
            sketches = Path(tmp) / f"n{n}.sketch"
            queries = Path(tmp) / f"q{n}.sketch"
            many_sketches(sketches, n)
            many_sketches(queries, args.queries)
            out = str(Path(tmp) / "out")
            runs = [
                ("dist (Jaccard matrix)", ["dist", str(sketches)], n * (n - 1) // 2),
                (f"dist --format edges --top {args.top}",
                 ["dist", str(sketches), "--format", "edges", "--top", str(args.top)], n * n),
                ("dist --metric containment", ["dist", str(sketches), "--metric",
                                               "containment"], n * n),
                (f"search ({args.queries} queries) --top {args.top}",
                 ["search", str(queries), "--db", str(sketches), "--top", str(args.top)],
                 args.queries * n),
            ]
            for label, command, pairs in runs:
                wall, cpu, peak = measured([*command, "-o", out, *threads])
                print(f"| {n} | `{label}` | {pairs:,} | {wall:.2f} | {cpu:.2f} | "
                      f"{pairs / max(cpu, 1e-9):,.0f} | {peak:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
