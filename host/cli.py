"""Command line: ``python -m host {sketch,dist,search,screen,cluster,jsd,motifs,merge,info} ...``.

Every failure the user can cause prints one line ``error: <file or option>: <cause>`` and exits
with status 2 (``--debug`` shows the traceback instead); a bug prints one line asking for
``--debug`` and exits with 1. Outputs (side files and plots included) are written only when the
command succeeds (host.outputs.Outputs): ``-o -`` is standard output, a FIFO or character device is
written in place, ``/dev/stdout`` and ``/dev/fd/N`` through the descriptor, a symlink is followed,
and an input file is never overwritten, whatever path or descriptor names it; a closed standard
descriptor is opened on /dev/null first, so no message lands in an output, and ``-`` on a closed
one is an error; standard error open on an input file is pointed at /dev/null before the first
message, so no message lands in an input. SIGTERM, SIGHUP and SIGINT, unless ignored when the
command starts, remove what is not committed and end the process by the signal itself
(host.interrupts); a closed pipe, standard output or standard error, ends the command quietly
(status 141). Warnings (inputs without k-mers) are gathered into one line printed at the end of
a successful run. docs/cli.md lists these behaviours and their tests.

Each command is a module of host.commands; this module builds the parser from them and runs
one, turning its failures into the one-line messages.
"""

import argparse
import contextlib
import errno
import io
import os
import signal
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .commands import COMMAND_NAMES, command
from .commands.collections import expand_collections
from .commands.common import (Session, check_backend, f2_stand_in, genome_names, one_line,
                              pyxrt_stand_in)
from .commands.options import Parser
from .interrupts import ending_signals, interrupted_line
from .io import InputError, descriptor_of
from .outputs import (ReaderGone, closed_at_start, input_identities, move_off_input,
                      open_closed_standard_streams, output_transaction)

__all__ = ["main", "build_parser", "genome_names"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command ``only`` alone (what a run of it needs:
    its help, usage errors and arguments are the same either way)."""
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
    for name in COMMAND_NAMES if only is None else (only,):
        command(name).add_parser(commands)
    return parser


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when its first argument after the global options is one;
    None otherwise (no command, a misspelt one, or ``--help`` before it), which needs the
    parser of them all to answer."""
    for argument in argv:
        if argument == "--debug":
            continue
        return argument if argument in COMMAND_NAMES else None
    return None


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
    import tempfile
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
        except BaseException:       # a signal: the one line says what happened
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


def _working_directory_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


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
    if isinstance(error, FileNotFoundError) and not error.filename and _working_directory_gone():
        return ("the current directory no longer exists (deleted), so relative paths name "
                "nothing; cd to an existing directory, or give absolute paths"), 2
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or one_line(error)}", 2
    return (f"internal error ({type(error).__name__}: {one_line(error)}); rerun with --debug "
            f"for the traceback and report it"), 1


def input_paths(args) -> list[str]:
    """Every input file of the command (list files, tables, an --order file and an xclbin too),
    which no output may overwrite."""
    paths = []
    for name in ("files", "inputs", "queries", "db", "references", "reads", "test", "control",
                 "lists", "quality", "xclbin"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            paths.append(value)
        elif value:
            paths.extend(value)
    order = getattr(args, "order", None)
    if isinstance(order, str):
        from .api.clustering import ORDERS  # cluster's, which sketch does without
        if order not in ORDERS:
            paths.append(order)
    return paths


#: what ``-`` names among the input files: standard input, a genome named "stdin"
STDIN = "/dev/stdin"


def _stdin_for_dash(args) -> None:
    """``-`` among the input files is standard input, once; refused when standard input was
    closed (``<&-``), which would otherwise read as an empty genome."""
    dashes = 0
    for name in ("files", "inputs", "queries", "reads", "test", "control", "db", "references"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            dashes += value.count("-")
            setattr(args, name, [STDIN if path == "-" else path for path in value])
        elif value == "-":     # search --db -, screen - READS...
            dashes += 1
            setattr(args, name, STDIN)
    args.stdin_as_dash = dashes > 0
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


def _as_typed(message: str, args) -> str:
    """``message`` naming standard input as the user did: ``-`` where ``-`` was given (the
    commands read it as /dev/stdin)."""
    return message.replace(STDIN, "-") if getattr(args, "stdin_as_dash", False) else message


def _close_backend(session: Session) -> None:
    """The command has ended: a card's compute units and device are closed (XRT holds a unit
    opened exclusively until then)."""
    close = getattr(session.backend, "close", None)
    if close is not None:
        close()


#: the signal that ended the last command of this process (host.__main__ then dies by it)
ended_by_signal: int | None = None


class _Messages:
    """Standard error for the command's messages: off (on /dev/null) when it is an input
    (``2>> input.fa``), found before the first message and whenever more inputs are known;
    ``gone`` once a write found it a closed pipe (the command then ends quietly, status 141)."""

    def __init__(self):
        self.gone = False

    def guard(self, paths) -> None:
        """Descriptor 2 on /dev/null if it is one of the regular files ``paths`` names."""
        try:
            status = os.fstat(2)
        except OSError:
            return
        if not stat.S_ISREG(status.st_mode):
            return
        same = input_identities(paths).get((status.st_dev, status.st_ino))
        if same is not None:
            move_off_input(2, same)

    def say(self, line: str) -> None:
        if self.gone:
            return
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except BrokenPipeError:
            self.closed_pipe()
        except (OSError, ValueError, AttributeError):
            pass

    def closed_pipe(self) -> None:
        """Standard error is a pipe whose reader has gone: nothing more is written to it."""
        self.gone = True
        _point_at_devnull(2)


def _point_at_devnull(descriptor: int) -> None:
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, descriptor)
        os.close(null)


def _parse(parser, argv, messages: _Messages):
    """``parser.parse_args(argv)``, its usage errors held back until standard error is known not
    to be an input (the inputs are then the arguments naming regular files)."""
    held = io.StringIO()
    real, sys.stderr = sys.stderr, held
    try:
        return parser.parse_args(argv)
    except SystemExit:
        sys.stderr = real
        messages.guard([a for a in (sys.argv[1:] if argv is None else argv)
                        if isinstance(a, str) and not a.startswith("-")])
        if held.getvalue():
            messages.say(held.getvalue().rstrip("\n"))
        raise
    finally:
        sys.stderr = real


def _still_running(session) -> str:
    """The compute units a card run may still use after the command ended, and what to do
    (host.xrt, host.f2), as the end of the interrupted line; "" when none may."""
    device = getattr(getattr(session, "backend", None), "device", None)
    running = list(getattr(device, "still_running", ()))
    if not running:
        return ""
    return (f"; {', '.join(running)} may still be running: {device.reset_advice} before using "
            f"it again")


def main(argv: Sequence[str] | None = None) -> int:
    global ended_by_signal
    open_closed_standard_streams()  # first: no file or message may take descriptor 0, 1 or 2
    messages = _Messages()
    parser = build_parser(named_command(sys.argv[1:] if argv is None else argv))
    args = _parse(parser, argv, messages)
    messages.guard(input_paths(args))
    session = None
    ended_by_signal = None
    try:
        with ending_signals(lambda: session and session.outputs.discard()):
            _stdin_for_dash(args)
            expand_collections(args)  # -l lists and directories, before any input is read
            messages.guard(input_paths(args))
            check_backend(args)
            with output_transaction(input_paths(args)) as outputs:
                with _simulator_log(args) as terminal:
                    session = Session(outputs, terminal)
                    try:
                        args.run(args, session)
                    finally:
                        _close_backend(session)
    except KeyboardInterrupt as interrupt:
        if args.debug:
            raise
        signum = getattr(interrupt, "signum", signal.SIGINT)
        running = _still_running(session)
        messages.guard(input_paths(args))
        messages.say(interrupted_line(signum) + running)
        ended_by_signal = signum
        return 128 + signum
    except ReaderGone:
        # the reader of standard output (a pipe) has gone, as with | head: stop quietly, with
        # the status of a process ended by SIGPIPE, as other Unix tools do
        return 128 + signal.SIGPIPE
    except BrokenPipeError:
        # standard error is a pipe whose reader has gone (2>&1 | head -0): as above
        messages.closed_pipe()
        return 128 + signal.SIGPIPE
    except Exception as error:
        if args.debug:
            raise
        if (isinstance(error, OSError) and not error.filename and session is not None
                and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)):
            # a write into an output's file (its hidden .partial) failed: name the outputs
            error.filename = ", ".join(session.outputs.names()) or None
        message, status = _error_message(error)
        messages.guard(input_paths(args))
        messages.say(f"error: {_as_typed(message, args)}")
        return 128 + signal.SIGPIPE if messages.gone else status
    session.warnings[:] = [_as_typed(warning, args) for warning in session.warnings]
    if len(session.warnings) == 1:
        messages.say(f"warning: {one_line(session.warnings[0])}")
    elif session.warnings:
        almost = " or almost no" if any("almost no k-mers" in w for w in session.warnings) else ""
        messages.say(f"warning: {len(session.warnings)} inputs have no{almost} k-mers: "
                     f"{one_line('; '.join(session.warnings))}")
    for note in session.outputs.notes:     # a replaced output's links or owner not kept
        messages.say(f"warning: {one_line(note)}")
    return 128 + signal.SIGPIPE if messages.gone else 0
