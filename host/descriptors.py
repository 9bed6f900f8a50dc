"""The standard descriptors of a command run, and which file a descriptor is open on.

A descriptor 0, 1 or 2 closed when the command starts is opened on /dev/null at once (so that no
file the command opens takes its number and no message lands in an output) and remembered, so
that ``-`` on it is an error, not an empty input or a lost output; standard error open on an
input file (``2>> input.fa``) is pointed at /dev/null by host.cli and remembered here, so that
an output naming it is refused as one open on the input would be.
"""

import contextlib
import os
import stat
import sys

__all__ = ["open_closed_standard_streams", "closed_at_start", "move_off_input",
           "moved_off_input", "input_behind", "descriptor_open", "silence_stdout"]

#: the standard descriptors (0, 1, 2) that were closed when the command started and now stand
#: on /dev/null (:func:`open_closed_standard_streams`): writing to them or reading them is an
#: error, not an empty input or a lost output
_CLOSED_AT_START: set[int] = set()


def open_closed_standard_streams() -> set[int]:
    """Open /dev/null on each of the descriptors 0, 1 and 2 that is closed, and give Python a
    stream for it; returns every standard descriptor found closed so far in this process.

    A closed descriptor would be taken by the next file the process opens, so a message printed
    to standard error could land in an output (``2>&-``), and Python, which sets ``sys.stderr``
    to None for a closed descriptor 2, prints such messages to standard output. The descriptors
    found closed are remembered (:func:`closed_at_start`): ``-`` for a closed standard input or
    output is refused, not read as an empty file or written to /dev/null."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
        _CLOSED_AT_START.add(descriptor)
        name = ("stdin", "stdout", "stderr")[descriptor]
        stream = open(descriptor, "r" if descriptor == 0 else "w", closefd=False,
                      encoding="utf-8", errors="surrogateescape")
        setattr(sys, name, stream)
    return set(_CLOSED_AT_START)


def closed_at_start(descriptor: int) -> bool:
    """True for a standard descriptor that was closed when the command started."""
    return descriptor in _CLOSED_AT_START


#: standard descriptors that were open on an input file and now stand on /dev/null
#: (host.cli: messages must not be written into an input through ``2>> input``): descriptor ->
#: the input; an output naming such a descriptor is refused as one open on the input would be
_MOVED_OFF_INPUTS: dict[int, str] = {}


def move_off_input(descriptor: int, input_path: str) -> None:
    """Point ``descriptor`` at /dev/null because it is open on the input ``input_path``."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)
    _MOVED_OFF_INPUTS[descriptor] = input_path


def moved_off_input(descriptor: int) -> str | None:
    """The input file ``descriptor`` was open on before :func:`move_off_input`, else None."""
    return _MOVED_OFF_INPUTS.get(descriptor)


def input_behind(descriptor: int, inputs: dict) -> str | None:
    """The input file that ``descriptor`` is open on (``>> input``, ``3<> input``), else None."""
    try:
        status = os.fstat(descriptor)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return inputs.get((status.st_dev, status.st_ino))


def silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def descriptor_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True
