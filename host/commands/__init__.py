"""The commands of ``python -m host``, one module each (``add_parser`` and ``run``), in the
order ``--help`` lists them; the pieces they share are in common.py (session, parameters,
backend), inputs.py (sketching sequence files), collections.py (list files and directories
among the inputs) and options.py (parser pieces).

A command's module is imported when it is named: a run of one command does without the
others' modules and parsers (tests/test_cli_startup.py)."""

import importlib
from types import ModuleType

#: the commands' names, in the order ``--help`` lists them
COMMAND_NAMES = ("sketch", "dist", "search", "screen", "cluster", "jsd", "motifs", "merge", "info")


def command(name: str) -> ModuleType:
    """The module of the command ``name`` (one of COMMAND_NAMES)."""
    if name not in COMMAND_NAMES:
        raise ValueError(f"no command {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
