"""The compiled loops of host/fast/_native.c, built in place on first use if missing.

A checkout gets them with ``pip install -e .`` or ``python setup.py build_ext --inplace``;
when neither was run, the first import runs the latter (under a file lock, so parallel test
processes build once) and fails loudly if the build fails.
"""

import fcntl
import importlib
import subprocess
import sys
from pathlib import Path

__all__ = ["native"]

_REPOSITORY = Path(__file__).resolve().parents[2]


def _build_in_place() -> None:
    lock_path = _REPOSITORY / "build" / "native.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            importlib.import_module("host.fast._native")
            return  # another process built it while we waited
        except ImportError:
            pass
        result = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                                cwd=_REPOSITORY, capture_output=True, text=True)
        if result.returncode != 0:
            raise ImportError("building host/fast/_native.c failed "
                              f"(python setup.py build_ext --inplace):\n{result.stderr}")
    importlib.invalidate_caches()


try:
    from . import _native as native
except ImportError:
    _build_in_place()
    from . import _native as native
