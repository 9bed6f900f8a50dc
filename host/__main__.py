"""``python -m host`` (and the ``kmer-sketch`` script): the command line of host.cli."""

import gc
import os
import signal
import sys


def run() -> int:
    # The command line never calls BLAS, but OpenBLAS starts a thread per core when numpy is
    # imported, and each spins for about a tenth of a second on a core that the sketch threads
    # need. A user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    signum = None
    try:
        # The imports make a few hundred thousand objects and no garbage; the cyclic collector
        # would walk them again and again (8 % of the instructions of a sketch of a small file,
        # callgrind): it is off while they load, and what they made is set aside (gc.freeze)
        # so later collections skip it.
        gc.disable()
        try:
            from . import cli
        finally:
            gc.freeze()
            gc.enable()
        status = cli.main()
        signum = cli.ended_by_signal
    except KeyboardInterrupt:
        # Ctrl-C while the modules load (main handles it once the command runs): one line, no
        # traceback; nothing has been written yet
        status, signum = 128 + signal.SIGINT, signal.SIGINT
        print("error: interrupted (SIGINT)", file=sys.stderr)
    if status > 128:
        # Ended by a signal (its outputs already removed) or by a closed pipe: exit now instead
        # of waiting for worker threads to finish the genome they hold (Python joins them at
        # exit), which could take minutes, or forever on a pipe that never delivers.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        if signum is not None:
            # as Unix tools do: die of the signal, so that a shell loop ends on Ctrl-C
            from .interrupts import die_by
            die_by(signum)
        os._exit(status)
    return status


if __name__ == "__main__":
    sys.exit(run())
