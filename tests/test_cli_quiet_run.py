# amaranth: UnusedElaboratable=no
"""A quiet test run (issue 38 item 5): the slow tests a plain run deselects are counted in
pytest's last line under xdist too (tests/conftest.py), and the Count-Min and PQA units make
no memory they never elaborate, nor the Murmur3 hasher a seeds unit (the UnusedElaboratable
warnings a run used to print)."""

import gc
import subprocess
import sys
import warnings
from pathlib import Path

from amaranth.hdl import Fragment, Module, UnusedElaboratable

ROOT = Path(__file__).resolve().parent.parent

_TESTS = """
import pytest

def test_quick():
    pass

@pytest.mark.slow
def test_long_one():
    pass

@pytest.mark.slow
def test_long_two():
    pass
"""


def test_deselected_count_is_in_the_last_line_under_xdist(tmp_path):
    (tmp_path / "test_sample.py").write_text(_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-n", "2", "-m", "not slow", "-c", str(tmp_path / "pytest.ini"),
         "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 2 deselected" in last, result.stdout


def _unused_warnings(build) -> list[str]:
    # Amaranth warns only once something has been elaborated in the process (before, unused
    # elaboratables mean a crash); elaborate one module so that the check does not depend on
    # the tests run before this one
    Fragment.get(Module(), None)
    # what earlier tests of this process left unreachable (their unelaborated kernels) is
    # collected, and warns, here: only what ``build`` leaves is counted below
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, UnusedElaboratable)]


def test_units_read_for_their_interface_make_no_unused_memory():
    """The units built here are not elaborated (this file's linter line silences them, as in
    the unit tests); the memories they would have made in hw/ are what used to warn."""
    from hw.common.countmin import CountMinUnit
    from hw.jsd.murmur3 import Murmur3Hashes
    from hw.jsd.pqa import PqaInsert

    def build():
        unit = CountMinUnit(4, 10, 16, 32, banks=2)
        assert unit.latency > 0 and unit.banks == 2
        queues = PqaInsert(R=4, n=4, banks=2)
        assert queues.banks == 2
        assert Murmur3Hashes([1, 2]).seeds == (1, 2)
    assert _unused_warnings(build) == []
