"""Command line: ``python -m host {sketch,dist,search,screen,cluster,jsd,motifs,merge,info} ...``.

Every failure the user can cause prints one line ``error: <file or option>: <cause>`` and exits
with status 2 (``--debug`` shows the traceback instead); a bug prints one line asking for
``--debug`` and exits with 1. Outputs (side files and plots included) are written only when the
command succeeds (host.outputs.Outputs): ``-o -`` is standard output, a FIFO or character device is
written in place, ``/dev/stdout`` and ``/dev/fd/N`` through the descriptor, a symlink is followed,
and an input file is never overwritten, whatever path or descriptor names it; a closed standard
descriptor is opened on /dev/null first, so no message lands in an output, and ``-`` on a closed
one is an error. SIGTERM, SIGHUP and SIGINT remove what is not committed;
a closed pipe ends the command quietly. Warnings (inputs without k-mers) are gathered into one
line printed at the end of a successful run. docs/cli.md lists these behaviours and their tests.

Each command is a module of host.commands; this module builds the parser from them and runs
one, turning its failures into the one-line messages.
"""

import argparse
import contextlib
import errno
import fcntl
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .commands import COMMANDS
from .commands.collections import expand_collections
from .commands.common import (Session, check_backend, f2_stand_in, genome_names, one_line,
                              pyxrt_stand_in)
from .commands.inputs import sketch_sequences
from .commands.options import Parser
from .io import InputError
from .outputs import (ReaderGone, closed_at_start, descriptor_of, open_closed_standard_streams,
                      output_transaction)

__all__ = ["main", "build_parser", "genome_names"]

# the names tests and benches used before the commands had modules of their own
_Session, _sketch_sequences = Session, sketch_sequences


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m host",
        description="k-mer sketching (HyperLogLog/Jaccard, Jensen-Shannon, emerging motifs) on "
                    "an FPGA or its bit-exact software models. Input is FASTA or FASTQ, plain or "
                    "compressed, one genome per file, named by its file name (by its path where "
                    "file names collide), or directories of them, or lists (-l FILE). Errors "
                    "print one line and exit with status 2.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show a traceback on errors (default: one line)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


# -- running a command ------------------------------------------------------------------------

@contextlib.contextmanager
def _simulator_log(args):
    """With --backend sim (or xrt on the pyxrt stand-in), the simulator's output (Verilator
    warnings, build lines) goes to a log file instead of the terminal; the log is kept and named
    only if the command fails.

    Yields the stream progress lines go to (the terminal's standard error)."""
    backend = getattr(args, "backend", None)
    if backend != "sim" and not (backend in ("xrt", "auto") and pyxrt_stand_in()) \
            and not (backend == "f2" and f2_stand_in()):
        yield sys.stderr
        return
    directory = Path(tempfile.gettempdir()) / "kmer-sketch-sim"
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / f"host-{args.command}-{os.getpid()}.log"
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    terminal = os.fdopen(os.dup(2), "w")
    python_streams = sys.stdout, sys.stderr
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
        try:
            yield terminal
        except Exception as error:
            log.flush()
            if log_path.stat().st_size:
                error.simulator_log = log_path
            else:
                log_path.unlink(missing_ok=True)
            raise
        else:
            log_path.unlink(missing_ok=True)
        finally:
            log.flush()
            sys.stdout, sys.stderr = python_streams
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            terminal.close()


def _simulator_failure(error: BaseException) -> bool:
    runner = sys.modules.get("sim.runner")
    return runner is not None and isinstance(error, runner.CocotbFailure)


def _error_message(error: BaseException) -> tuple[str, int]:
    """The one line for ``error`` and the exit status (2: the user's to fix; 1: a bug)."""
    from .calls import DeviceError, KernelError
    log = getattr(error, "simulator_log", None)
    if _simulator_failure(error):
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return f"--backend sim: the simulation failed ({one_line(first)}); simulator output " \
               f"in {log}", 2
    if isinstance(error, (InputError, KernelError, ValueError)):
        # the user's input, or the kernel's own refusal: the simulator's output adds nothing
        return one_line(error), 2
    if isinstance(error, DeviceError):
        message = one_line(error)
        return (f"{message} (simulator output in {log})" if log else message), 2
    if isinstance(error, MemoryError):
        return "out of memory (inputs or parameters too large for this machine)", 2
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or one_line(error)}", 2
    return (f"internal error ({type(error).__name__}: {one_line(error)}); rerun with --debug "
            f"for the traceback and report it"), 1


#: the signals that end a command with its outputs cleaned up
CLEANUP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _above_standard_streams(fd: int) -> int:
    """``fd`` moved to 3 or above: with standard output closed, a pipe made now would take
    descriptor 1 and hide that."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _forget_wakeup_in_child() -> None:
    """A forked child (multiprocessing with fork) shares the wakeup pipe: a signal it takes
    must not end the parent, so the child drops the pipe and gets the default handlers back
    (a no-op SIGTERM handler would make it unkillable by terminate())."""
    with contextlib.suppress(ValueError, OSError):
        for number in CLEANUP_SIGNALS:
            if signal.getsignal(number) is _note_signal:
                signal.signal(number, signal.default_int_handler if number == signal.SIGINT
                              else signal.SIG_DFL)
        signal.set_wakeup_fd(-1)


os.register_at_fork(after_in_child=_forget_wakeup_in_child)


def _note_signal(signum, frame):
    """Python's handler does nothing: the watcher thread of _cleanup_on_signals acts."""


@contextlib.contextmanager
def _cleanup_on_signals(outputs_of):
    """SIGTERM, SIGHUP and SIGINT end the command at once: the outputs not yet committed
    (hidden ``.partial`` files) are removed, one line names the signal, and the process exits
    with 128 + its number.

    A signal goes to whichever thread the kernel picks, and a Python handler runs only when the
    main thread runs Python code, which a main thread waiting for a worker (blocked on a lock,
    the worker on a pipe) never does. So Python's handlers are no-ops and its wakeup file
    descriptor, which the interpreter writes each signal's number to from whatever thread
    takes it, is read by a watching thread that does the cleanup. The signal mask is left
    alone (child processes inherit it). Only in the main thread (set_wakeup_fd needs it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = (_above_standard_streams(fd) for fd in os.pipe())
    os.set_blocking(write_end, False)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {number: signal.signal(number, _note_signal) for number in CLEANUP_SIGNALS}
    stop = threading.Event()

    def watch():
        while True:
            data = os.read(read_end, 64)
            if stop.is_set() or not data:
                return
            for signum in data:
                if signum not in CLEANUP_SIGNALS:
                    continue
                outputs = outputs_of()
                if outputs is not None:
                    outputs.discard()
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    sys.stderr.write(f"error: interrupted ({signal.Signals(signum).name})\n")
                    sys.stderr.flush()
                os._exit(128 + signum)

    watcher = threading.Thread(target=watch, name="signal-cleanup", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        os.write(write_end, b"\0")  # wakes the watcher, which sees stop
        watcher.join()
        signal.set_wakeup_fd(previous_fd)
        for number, handler in previous.items():
            signal.signal(number, handler)
        os.close(read_end)
        os.close(write_end)


def input_paths(args) -> list[str]:
    """Every input file of the command (list files too), which no output may overwrite."""
    paths = []
    for name in ("files", "inputs", "queries", "db", "reads", "test", "control", "lists"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            paths.append(value)
        elif value:
            paths.extend(value)
    return paths


#: what ``-`` names among the input files: standard input, a genome named "stdin"
STDIN = "/dev/stdin"


def _stdin_for_dash(args) -> None:
    """``-`` among the input files is standard input, once; refused when standard input was
    closed (``<&-``), which would otherwise read as an empty genome."""
    dashes = 0
    for name in ("files", "inputs", "queries", "reads", "test", "control"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            dashes += value.count("-")
            setattr(args, name, [STDIN if path == "-" else path for path in value])
    if dashes > 1:
        raise InputError("-: standard input given twice as input; it can be read once (give "
                         "each genome once)")
    for path in input_paths(args):
        descriptor = descriptor_of(path) if path else None
        if descriptor is not None and closed_at_start(descriptor):
            shown = "-" if path == STDIN and dashes else path
            what = ("standard input" if descriptor == 0
                    else f"file descriptor {descriptor}")
            raise InputError(f"{shown}: {what} is closed; nothing to read")


def _close_backend(session: Session) -> None:
    """The command has ended: a card's compute units and device are closed (XRT holds a unit
    opened exclusively until then)."""
    close = getattr(session.backend, "close", None)
    if close is not None:
        close()


def main(argv: Sequence[str] | None = None) -> int:
    open_closed_standard_streams()  # first: no file or message may take descriptor 0, 1 or 2
    parser = build_parser()
    args = parser.parse_args(argv)
    session = None
    try:
        with _cleanup_on_signals(lambda: session and session.outputs):
            _stdin_for_dash(args)
            expand_collections(args)  # -l lists and directories, before any input is read
            check_backend(args)
            with output_transaction(input_paths(args)) as outputs:
                with _simulator_log(args) as terminal:
                    session = Session(outputs, terminal)
                    try:
                        args.run(args, session)
                    finally:
                        _close_backend(session)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("error: interrupted (SIGINT)", file=sys.stderr)
        return 130
    except ReaderGone:
        # the reader of standard output (a pipe) has gone, as with | head: stop quietly, with
        # the status of a process ended by SIGPIPE, as other Unix tools do
        return 128 + signal.SIGPIPE
    except Exception as error:
        if args.debug:
            raise
        if (isinstance(error, OSError) and not error.filename and session is not None
                and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)):
            # a write into an output's file (its hidden .partial) failed: name the outputs
            error.filename = ", ".join(session.outputs.names()) or None
        message, status = _error_message(error)
        print(f"error: {message}", file=sys.stderr)
        return status
    if len(session.warnings) == 1:
        print(f"warning: {one_line(session.warnings[0])}", file=sys.stderr)
    elif session.warnings:
        almost = " or almost no" if any("almost no k-mers" in w for w in session.warnings) else ""
        print(f"warning: {len(session.warnings)} inputs have no{almost} k-mers: "
              f"{one_line('; '.join(session.warnings))}", file=sys.stderr)
    return 0
