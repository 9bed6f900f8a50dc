"""Running the command line in the test process, as the CLI test files do."""

from host.cli import main


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
