"""The command line of a bench script: the first line of its docstring as the description, and
its plain numeric options (sizes, counts, seeds) declared by their defaults."""

import argparse


def bench_parser(doc: str, **defaults) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with an option for each keyword of
    ``defaults``: ``pack_mbytes=64`` is ``--pack-mbytes``, an int of default 64 (the type is the
    default's). More options are added to it as usual."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return parser
