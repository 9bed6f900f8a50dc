"""``python -m host`` (and the ``kmer-sketch`` script): the command line of host.cli."""

import os
import sys


def run() -> int:
    # The command line never calls BLAS, but OpenBLAS starts a thread per core when numpy is
    # imported, and each spins for about a tenth of a second on a core that the sketch threads
    # need. A user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .cli import main
    return main()


if __name__ == "__main__":
    sys.exit(run())
