"""Print the Yosys resource / logic-depth table of built kernels.

    python bench/resources.py [BUILD_DIR]            # tables from BUILD_DIR/kernels/*/resources.json
    python bench/resources.py --run [--board f1] [--kernels checksum,sketch] [-P k.p=v]
                                                     # synthesize now (slow), then print

BUILD_DIR defaults to build/hw (what ``python -m hw.build --resources`` writes).  ``--json`` prints
the reports as one JSON list instead.
"""

import argparse
import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hw.build import main as build_main, resource_table  # noqa: E402


def load_reports(build_dir):
    reps = []
    for p in sorted(pathlib.Path(build_dir).glob("kernels/*/resources.json")):
        reps.append(json.loads(p.read_text()))
    return reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", default="build/hw")
    ap.add_argument("--run", action="store_true", help="run python -m hw.build --resources first")
    ap.add_argument("--board", default="f1")
    ap.add_argument("--kernels")
    ap.add_argument("-P", "--param", action="append", default=[])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    bdir = a.build_dir
    if a.run:
        if a.build_dir == "build/hw":
            bdir = tempfile.mkdtemp(prefix="kmer-resources-")
        args = ["--board", a.board, "-o", bdir, "--resources", "--no-run"]
        if a.kernels:
            args += ["--kernels", a.kernels]
        for p in a.param:
            args += ["-P", p]
        rc = build_main(args)
        if rc:
            return rc
    reps = load_reports(bdir)
    if not reps:
        print(f"no resources.json under {bdir}/kernels (run python -m hw.build --resources)",
              file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(reps, indent=2))
    else:
        print(resource_table(reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
