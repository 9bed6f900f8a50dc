"""What the host's input check (SPEC 1.1) costs: the sw backend's sketching pass with and
without it, and the check alone on the bytes handed to the golden/sim/xrt backends.

    python bench/input_check.py [--repeats 7]

Genomes: the FASTA files of Debian's ``sibelia-examples`` (S. aureus NCTC8325, the S. aureus
and H. pylori record groups; 17.9 MB in all), decompressed to a temporary directory. One
thread, k = 31, p = 14, w = 4 (host.fast.hll.sketch_files, 4 MiB blocks read from disk):

* ``checked``: host.reader.SequenceFile, the native k-mer stream with check=True (the sw
  backend as the CLI runs it);
* ``unchecked``: the same files and blocks through a stream with check=False (the parser
  alone, as before the check);
* ``check_sequence``: host.io.check_sequence on each file's bytes in memory (the check alone,
  no k-mers; what read_sequence_file adds for the golden, sim and xrt backends).

CPU seconds (process time) per pass over all files, median of ``--repeats`` passes, the rows
taking turns so that a change of machine load hits each alike. Prints a table; asserts nothing
but that both sketch passes give the same registers.
"""

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.fast.hll import sketch_files  # noqa: E402
from host.io import check_sequence  # noqa: E402
from host.reader import SequenceFile  # noqa: E402
from kmerspec.golden.hll import HllParams  # noqa: E402

SIBELIA = Path("/usr/share/doc/sibelia/examples")
GENOMES = [SIBELIA / "C-Sibelia/Staphylococcus_aureus/NCTC8325.fasta.gz",
           SIBELIA / "Sibelia/Staphylococcus_aureus/Staphylococcus.fasta.gz",
           SIBELIA / "Sibelia/Helicobacter_pylori/Helicobacter_pylori.fasta.gz"]


class UncheckedFile(SequenceFile):
    """A file streamed from disk whose k-mer stream does not run the input check."""

    check_input = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    missing = [str(path) for path in GENOMES if not path.exists()]
    if missing:
        sys.exit(f"error: {missing[0]} not found; apt-get install sibelia-examples")
    params = HllParams(14, 4)
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for genome in GENOMES:
            paths.append(Path(directory) / genome.name.removesuffix(".gz"))
            paths[-1].write_bytes(gzip.decompress(genome.read_bytes()))
        texts = [path.read_bytes() for path in paths]
        total = sum(len(text) for text in texts)

        def sketch(kind):
            return [sketch_files([kind(path)], 31, params).tobytes() for path in paths]

        if sketch(SequenceFile) != sketch(UncheckedFile):
            sys.exit("error: the checked and unchecked passes differ")
        rows = {"checked (sw backend)": lambda: sketch(SequenceFile),
                "unchecked (parser alone)": lambda: sketch(UncheckedFile),
                "check_sequence (check alone)": lambda: [check_sequence(p, t)
                                                         for p, t in zip(paths, texts)]}
        seconds = {name: [] for name in rows}
        for _ in range(args.repeats):
            for name, run in rows.items():
                started = time.process_time()
                run()
                seconds[name].append(time.process_time() - started)
    print(f"{len(paths)} files, {total / 1e6:.1f} MB, k=31 p=14 w=4, one thread, "
          f"median of {args.repeats}")
    print()
    print("| pass | CPU s | MB/s | all runs |")
    print("| --- | --- | --- | --- |")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"| {name} | {median:.3f} | {total / median / 1e6:.0f} | "
              f"{', '.join(f'{t:.3f}' for t in times)} |")


if __name__ == "__main__":
    main()
