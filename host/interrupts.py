"""Signals as Unix tools handle them: SIGTERM, SIGHUP and SIGINT end a command after its cleanup,
and the process then dies of the signal itself.

* A signal ignored when the command starts stays ignored (``nohup`` ignores SIGHUP, a shell's
  ``trap '' TERM`` SIGTERM, a non-interactive shell SIGINT for a command started with ``&``).
* The first of the others raises :class:`Interrupted` (a KeyboardInterrupt that carries the
  signal) in the main thread, once, so that every ``finally`` runs there: outputs not yet
  committed are removed, temporary files closed, a card's calls settled (host.xrt). A Python
  handler runs only when the main thread runs Python code, and the kernel may hand the signal
  to any thread, so the interpreter's wakeup descriptor, which it writes each signal's number to
  from whichever thread takes it, is read by a watching thread that sends the signal on to the
  main thread (``pthread_kill``): a blocking call there (a lock, a read, a wait) returns EINTR
  and the handler runs.
* The command's last act (host.__main__) is :func:`die_by`: the default action restored and the
  signal sent again, so that the shell sees a process killed by it (``$?`` is 128 + its number,
  and a ``for`` loop ends on Ctrl-C, as bash ends a loop only when its child died of SIGINT).
* Should the main thread not be done within :data:`GRACE_SECONDS` (stuck in a call that no
  signal interrupts), or should a second signal come, the watching thread removes the outputs,
  prints the line and ends the process by the signal itself.
* :func:`uninterrupted`: a block that no Python signal handler can split (the card driver's
  bookkeeping around XRT's calls): a handler that would raise runs when the block ends.
"""

import collections
import contextlib
import fcntl
import os
import select
import signal
import threading
import time
from collections.abc import Callable

__all__ = ["ENDING_SIGNALS", "Interrupted", "ending_signals", "die_by", "uninterrupted",
           "GRACE_SECONDS", "interrupted_line"]

#: the signals that end a command with its outputs cleaned up
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
#: how long the main thread has to clean up after the first signal
GRACE_SECONDS = 5.0


class Interrupted(KeyboardInterrupt):
    """The command was ended by the signal ``signum`` (raised in the main thread, once)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted_line(signum: int) -> str:
    return f"error: interrupted ({signal.Signals(signum).name})"


class _Ending:
    """The state of one :func:`ending_signals` block."""

    def __init__(self, handled: tuple):
        self.handled = handled
        self.signum: int | None = None     # the first signal taken
        self.raised = False                # Interrupted raised in the main thread
        self.echoes: collections.Counter = collections.Counter()


_ENDING: _Ending | None = None


def _raise_once(signum, frame):
    """The Python handler: the first signal raises Interrupted in the main thread; any later
    one returns (a cleanup under way is not split; the watching thread acts on it)."""
    ending = _ENDING
    if ending is None or ending.raised:
        return
    ending.raised = True
    ending.signum = ending.signum or signum
    raise Interrupted(signum)


def _forget_in_child() -> None:
    """A forked child (multiprocessing with fork) shares the wakeup pipe: a signal it takes
    must not end the parent, so the child drops the pipe and gets the default handlers back
    (a no-op handler would make it unkillable by terminate())."""
    with contextlib.suppress(ValueError, OSError):
        for number in ENDING_SIGNALS:
            if signal.getsignal(number) is _raise_once:
                signal.signal(number, signal.default_int_handler if number == signal.SIGINT
                              else signal.SIG_DFL)
        signal.set_wakeup_fd(-1)


os.register_at_fork(after_in_child=_forget_in_child)


def _above_standard_streams(fd: int) -> int:
    """``fd`` moved to 3 or above: with standard output closed, a pipe made now would take
    descriptor 1 and hide that."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _default_action_and_kill(signum: int) -> None:
    """End the process by ``signum`` with its default action, from any thread (Python's
    signal.signal works in the main thread only; the C library's does not care)."""
    import ctypes  # here: only the rare end by the watching thread needs it
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.signal(signum, None)   # SIG_DFL is 0
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    time.sleep(1)
    os._exit(128 + signum)


def die_by(signum: int) -> None:
    """The process ends by ``signum`` with its default action (in the main thread, after the
    cleanup): the shell sees a process killed by the signal. The exit functions a normal exit
    would run (atexit: temporary directories of finalizers, child processes of
    multiprocessing) run first, for at most :data:`GRACE_SECONDS`, their messages (a Dask
    cluster closed twice) to /dev/null: the command has said its one line."""
    import atexit
    with contextlib.suppress(OSError):      # the command's line is said: nothing after it
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    finishing = threading.Thread(target=atexit._run_exitfuncs, name="exit-functions",
                                 daemon=True)
    finishing.start()
    finishing.join(GRACE_SECONDS)
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)      # not reached unless the signal was held back


@contextlib.contextmanager
def ending_signals(discard_outputs: Callable[[], None]):
    """The block runs with the ending signals handled as the module docstring says;
    ``discard_outputs`` removes the command's uncommitted outputs when the watching thread has
    to end the process itself. Only in the main thread (set_wakeup_fd needs it)."""
    global _ENDING
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = tuple(number for number in ENDING_SIGNALS
                    if signal.getsignal(number) is not signal.SIG_IGN)
    ending = _Ending(handled)
    read_end, write_end = (_above_standard_streams(fd) for fd in os.pipe())
    os.set_blocking(write_end, False)
    main = threading.main_thread().ident
    stop = threading.Event()

    def end_now(signum: int) -> None:
        with contextlib.suppress(Exception):
            discard_outputs()
        with contextlib.suppress(OSError):
            os.write(2, (interrupted_line(signum) + "\n").encode())
        _default_action_and_kill(signum)

    def watch():
        deadline = None     # set by the first signal: the main thread's time to clean up
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_end], [], [], wait)
            if not ready:
                end_now(ending.signum)      # the grace is over: the main thread is stuck
            data = os.read(read_end, 64)
            if stop.is_set() or not data:
                return
            for signum in data:
                if signum not in handled:
                    continue
                if ending.echoes[signum]:  # the one sent on to the main thread, coming back
                    ending.echoes[signum] -= 1
                    continue
                if deadline is None:
                    ending.signum = ending.signum or signum
                    ending.echoes[signum] += 1
                    signal.pthread_kill(main, signum)
                    deadline = time.monotonic() + GRACE_SECONDS
                else:
                    end_now(signum)        # a second signal while cleaning up: now

    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {}
    _ENDING = ending
    try:
        for number in handled:
            previous[number] = signal.signal(number, _raise_once)
        watcher = threading.Thread(target=watch, name="signal-watcher", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            os.write(write_end, b"\0")  # wakes the watcher, which sees stop
            watcher.join()
    finally:
        signal.set_wakeup_fd(previous_fd)
        for number, handler in previous.items():
            signal.signal(number, handler)
        _ENDING = None
        os.close(read_end)
        os.close(write_end)


@contextlib.contextmanager
def uninterrupted():
    """The block runs to its end: a Python signal handler that would raise in it (Python's
    KeyboardInterrupt, :class:`Interrupted`) runs when it ends instead. Only the main thread
    runs Python signal handlers, so elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    swapped = {}
    for number in ENDING_SIGNALS:
        handler = signal.getsignal(number)
        if callable(handler):
            swapped[number] = signal.signal(number, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for number, handler in swapped.items():
            signal.signal(number, handler)
        for signum in pending:
            swapped[signum](signum, None)
