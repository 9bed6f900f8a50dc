"""``screen`` beside ``mash screen`` on the bundled reads: which references are in the read set,
and at what identity (docs/usage.md "Screening reads").

    python bench/screen_mash.py            # compare with the recorded mash output
    python bench/screen_mash.py --record   # run mash (Debian: apt-get install mash) and
                                           # record its output in tests/data/mash_screen.tsv

Inputs: examples/reads/SRR059298_2000.fq.gz (2,000 reads of a bee-virus run) against the four
bee-virus genomes of examples/genomes and phage lambda (examples/README.md). For k = 21 (Mash's
default) and k = 31 (this tool's), with and without winner-take-all (``-w``): Mash's identity
(``mash sketch -k K``, 1,000 hashes a reference, then ``mash screen [-w]``), this tool's (``sketch
-k K``, HLL p = 14 (the default) and 16, w = 4, then ``screen [-w]``) and the exact value: C = |R n Q| / |R| over the
full sets of canonical k-mers of reference R and read set Q (host.fast.kmers, SPEC 1's parser),
with -w the k-mers of R in Q that no reference of higher exact C holds; identity C^(1/k). Prints
one Markdown table per case (this tool's figures with their difference from Mash's; a
reference left out at the default detection with its p-value and its estimate at
``--detection 0``) and the largest difference from Mash's identity at each p. Asserts nothing
(tests/test_cli_screen.py checks the ranking and the 0.05 bound against the recorded output).
"""

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.cli import main as host_main  # noqa: E402
from host.fast.kmers import kmer_array  # noqa: E402

REFERENCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "genomes").glob("*.fa.gz")) \
    + ["examples/lambda_virus.fa.gz"]
READS = "examples/reads/SRR059298_2000.fq.gz"
RECORD = ROOT / "tests" / "data" / "mash_screen.tsv"
CASES = [(21, False), (21, True), (31, False), (31, True)]


def record_mash() -> None:
    """Run mash for every case and write its output, with the commands, to RECORD."""
    mash = shutil.which("mash")
    if mash is None:
        raise SystemExit("mash is not installed (Debian: apt-get install mash)")
    version = subprocess.run([mash, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    lines = [f"# mash screen {version} on the bundled examples, recorded by python "
             f"bench/screen_mash.py --record, from the repository root:",
             f"#   mash sketch -k K -o refs {' '.join(REFERENCES)}",
             f"#   mash screen [-w] refs.msh {READS}",
             "# columns: k, -w or nothing, then mash screen's own: identity, shared-hashes, "
             "median-multiplicity, p-value, query-ID, query-comment"]
    with tempfile.TemporaryDirectory() as directory:
        for k, winner in CASES:
            sketch = Path(directory) / f"refs{k}"
            subprocess.run([mash, "sketch", "-k", str(k), "-o", str(sketch), *REFERENCES],
                           cwd=ROOT, check=True, capture_output=True)
            command = [mash, "screen", *(["-w"] if winner else []), f"{sketch}.msh", READS]
            out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout
            lines += [f"{k}\t{'-w' if winner else ''}\t{line}" for line in out.splitlines()]
    RECORD.write_text("\n".join(lines) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}")


def recorded_mash() -> dict:
    """{(k, winner): {reference file name: identity}} from RECORD."""
    found: dict = {}
    for line in RECORD.read_text().splitlines():
        if line.startswith("#"):
            continue
        k, winner, identity, _shared, _multiplicity, _p, reference = line.split("\t")[:7]
        found.setdefault((int(k), winner == "-w"), {})[Path(reference).name] = float(identity)
    return found


def ours(k: int, winner: bool, p: int, directory: Path, *options: str) -> dict:
    """{reference: (identity, p-value)} from python -m host screen, the references sketched
    with 2^p registers."""
    sketch = directory / f"refs{k}_{p}.sketch"
    if not sketch.exists():
        assert host_main(["sketch", "-k", str(k), "--index-bits", str(p),
                          *(str(ROOT / r) for r in REFERENCES), "-o", str(sketch)]) == 0
    out = directory / "screen.tsv"
    assert host_main(["screen", str(sketch), str(ROOT / READS), "-o", str(out),
                      *(["-w"] if winner else []), *options]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()
            if not line.startswith("#")]
    return {row[0]: (float(row[1]), float(row[5])) for row in rows}


def kmer_set(path: str, k: int) -> np.ndarray:
    with gzip.open(ROOT / path, "rb") as file:
        return np.unique(kmer_array(file.read(), k, True))


def exact(k: int, winner: bool) -> dict:
    reads = kmer_set(READS, k)
    sets = {Path(r).name: kmer_set(r, k) for r in REFERENCES}
    found = {name: np.isin(kmers, reads) for name, kmers in sets.items()}
    containment = {name: hits.mean() for name, hits in found.items()}
    if winner:
        taken = np.empty(0, dtype=np.uint64)
        for name in sorted(containment, key=lambda n: -containment[n]):
            left = sets[name][found[name] & ~np.isin(sets[name], taken)]
            taken = np.union1d(taken, sets[name])
            containment[name] = left.size / sets[name].size
    return {name: c ** (1 / k) if c > 0 else 0.0 for name, c in containment.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true",
                        help="run mash and record its output first (needs mash)")
    args = parser.parse_args()
    if args.record:
        record_mash()
    mash = recorded_mash()
    worst: dict = {}
    missed: dict = {}
    with tempfile.TemporaryDirectory() as directory:
        for k, winner in CASES:
            print(f"\nk = {k}, {'winner-take-all (-w)' if winner else 'every reference (no -w)'}\n")
            print("| reference | exact | mash screen | screen, p = 14 (default) | "
                  "screen, p = 16 |")
            print("| --- | --- | --- | --- | --- |")
            truth = exact(k, winner)
            mine = {p: ours(k, winner, p, Path(directory)) for p in (14, 16)}
            # every positive estimate, for the references left out at the default detection
            below = {p: ours(k, winner, p, Path(directory), "--detection", "0")
                     for p in (14, 16)}
            for name in sorted(truth, key=lambda n: -truth[n]):
                theirs = mash[k, winner].get(name, 0.0)
                cells = [f"{truth[name]:.4f}" if truth[name] else "0",
                         f"{theirs:.4f}" if theirs else "not reported"]
                for p in (14, 16):
                    value = mine[p].get(name, (0.0, 1.0))[0]
                    if value and theirs:
                        worst[p] = max(worst.get(p, 0.0), abs(value - theirs))
                    elif value or theirs:
                        missed.setdefault(p, []).append(f"k={k}{' -w' if winner else ''} "
                                                        f"{name}")
                    if value:
                        cells.append(f"{value:.4f} ({value - theirs:+.4f})")
                    elif name in below[p]:
                        estimate, p_value = below[p][name]
                        cells.append(f"not reported (p = {p_value:.2g}; {estimate:.4f} at "
                                     f"`--detection 0`)")
                    else:
                        cells.append("not reported")
                print(f"| {name} | {' | '.join(cells)} |")
    print()
    for p, value in worst.items():
        print(f"p = {p}: largest |screen - mash screen| identity where both report the "
              f"reference {value:.4f}; reported by one only: {', '.join(missed.get(p, [])) or 'none'}")


if __name__ == "__main__":
    main()
