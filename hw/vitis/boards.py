"""Board descriptions: one TOML file per board in ``boards/`` (see boards/README.md)."""

import pathlib
import tomllib

__all__ = ["BOARDS_DIR", "list_boards", "load_board", "BoardError"]

BOARDS_DIR = pathlib.Path(__file__).resolve().parents[2] / "boards"
_REQUIRED = ("name", "part", "platforms", "kernel_clock_hz", "memory_banks", "resources")
#: ``kind = "standalone"``: a board without a Vitis shell, built as a bitstream by Amaranth's own
#: vendor flow (hw/selftest/board.py)
_REQUIRED_STANDALONE = ("name", "part", "amaranth_platform", "clock_hz", "resources")
#: ``kind = "hdk"``: a board whose vendor flow takes RTL behind its own shell interface (AWS F2's
#: HDK flow: hw/f2/), built by the function its ``builder`` names
_REQUIRED_HDK = ("name", "part", "kernel_clock_hz", "memory_banks", "resources", "builder")
_REQUIRED_BY_KIND = {"vitis": _REQUIRED, "standalone": _REQUIRED_STANDALONE, "hdk": _REQUIRED_HDK}


class BoardError(ValueError):
    pass


def list_boards(boards_dir=BOARDS_DIR):
    return sorted(p.stem for p in pathlib.Path(boards_dir).glob("*.toml"))


def load_board(name, boards_dir=BOARDS_DIR) -> dict:
    """Board by name (``boards/<name>.toml``) or by path to a TOML file."""
    p = pathlib.Path(name)
    if p.suffix != ".toml" or not p.exists():
        p = pathlib.Path(boards_dir) / f"{name}.toml"
    if not p.exists():
        raise BoardError(f"unknown board {name!r}; known: {', '.join(list_boards(boards_dir))}")
    with open(p, "rb") as f:
        board = tomllib.load(f)
    board.setdefault("kind", "vitis")
    if board["kind"] not in _REQUIRED_BY_KIND:
        raise BoardError(f"board file {p}: kind must be one of "
                         + ", ".join(f'"{k}"' for k in _REQUIRED_BY_KIND)
                         + f", not {board['kind']!r}")
    missing = [k for k in _REQUIRED_BY_KIND[board["kind"]] if k not in board]
    if missing:
        raise BoardError(f"board file {p}: missing {', '.join(missing)}")
    if board["kind"] == "vitis" and (not board["platforms"] or not board["memory_banks"]):
        raise BoardError(f"board file {p}: platforms and memory_banks must not be empty")
    if board["kind"] == "hdk" and not board["memory_banks"]:
        raise BoardError(f"board file {p}: memory_banks must not be empty")
    for k in ("lut", "ff", "bram36", "uram", "dsp"):
        if k not in board["resources"]:
            raise BoardError(f"board file {p}: [resources] lacks {k}")
    board.setdefault("yosys_family", "xcup")
    board.setdefault("package_step", True)
    board.setdefault("aws_afi", False)
    board["file"] = str(p)
    return board
