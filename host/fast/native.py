"""The compiled loops of host/fast/_native.c, built in place on first use if missing.

A checkout gets them with ``pip install -e .`` or ``python setup.py build_ext --inplace``;
when neither was run, or the C sources of a checkout are newer than the built module (a pull
or merge changed them), the first import runs the latter (under a file lock, so parallel test
processes build once) and fails loudly if the build fails.

The k-mer stream sketches with the widest SIMD level the CPU has (host/fast/_kmer_simd.c);
the environment variable ``KSA_KMER_SIMD`` (``scalar``, ``avx2``, ``avx512``, ``avx512-gfni``:
AVX-512 whose reverse-complement words come from the forward ones by GFNI) forces one for
the whole process, for benches and comparisons; a level the CPU lacks fails the import.
"""

import fcntl
import importlib
import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["native", "available_levels"]

_REPOSITORY = Path(__file__).resolve().parents[2]


def _is_stale() -> bool:
    """The built module is missing, or older than a C source beside it (a checkout only)."""
    spec = importlib.util.find_spec("host.fast._native")
    if spec is None or spec.origin is None:
        return True
    built = Path(spec.origin).stat().st_mtime
    sources = [*Path(__file__).parent.glob("*.c"), *Path(__file__).parent.glob("*.h")]
    return any(source.stat().st_mtime > built for source in sources)


def _build_in_place() -> None:
    import subprocess  # here: start-up without a build does not need it
    lock_path = _REPOSITORY / "build" / "native.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_stale():
            return  # another process built it while we waited
        result = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                                cwd=_REPOSITORY, capture_output=True, text=True)
        if result.returncode != 0:
            raise ImportError("building host/fast/_native.c failed "
                              f"(python setup.py build_ext --inplace):\n{result.stderr}")
    importlib.invalidate_caches()


if _is_stale():
    _build_in_place()
from . import _native as native  # noqa: E402

def available_levels(set_level, levels) -> list[str]:
    """The instruction-set levels among ``levels`` that ``set_level`` (native.set_simd_level
    or native.set_kmer_simd_level) accepts on this CPU; the best level is set again after."""
    accepted = []
    for level in levels:
        try:
            set_level(level)
            accepted.append(level)
        except ValueError:
            pass
    set_level("best")
    return accepted


SIMD_LEVEL_ENV = "KSA_KMER_SIMD"
if os.environ.get(SIMD_LEVEL_ENV):
    try:
        native.set_kmer_simd_level(os.environ[SIMD_LEVEL_ENV])
    except ValueError as error:
        raise ImportError(f"{SIMD_LEVEL_ENV}={os.environ[SIMD_LEVEL_ENV]}: {error}") from None
