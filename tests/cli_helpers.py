"""Running the command line in the test process, or in bash, as the CLI test files do."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from host.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: the environment of a command line run in a child process: this checkout's host package
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def interruptible() -> None:
    """Popen's ``preexec_fn`` for a child that a test sends SIGINT: its SIGINT at the default.
    A shell without job control starts a background job (``pytest ... &``) with SIGINT
    ignored, which its children inherit, and a command started so rightly ignores Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(*args):
    """``python -m host ARGS`` in this process: its exit status (argparse's usage errors raise
    SystemExit, as they do for a user)."""
    return main([str(a) for a in args])


def run_status(*args):
    """The exit status of :func:`run`, argparse's usage errors (SystemExit) included."""
    try:
        return run(*args)
    except SystemExit as error:
        return error.code


def one_error_line(captured) -> str:
    """The one line a mistake prints (``capsys`` or ``capfd``): ``error: ...``, no traceback."""
    err = captured.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


def shell(command: str, cwd, **extra) -> subprocess.CompletedProcess:
    """``command`` in bash (for pipes and redirections), each word ``host`` that starts a
    command being ``python -m host``."""
    command = re.sub(r"(?<![\w/.-])host ", f"{sys.executable} -m host ", command)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=120, **extra)


class FullDisk:
    """An output's file on a full file system: every write fails with ENOSPC (which names no
    file), the rest is the real file's."""

    def __init__(self, raw):
        self.raw = raw

    def write(self, data):
        import errno
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.raw, name)
