import random

import pytest

# Tests that build a component only to read its interface, parameters or identity words carry
# Amaranth's linter line "# amaranth: UnusedElaboratable=no", which covers what the test file
# itself makes; the units in hw/ make their own parts (memories, hash stages) when they are
# elaborated, so nothing is left to warn about. (A filter set here would not hold: pytest
# restores the warning filters after loading conftest files.)


def pytest_collection_modifyitems(items):
    """Full-length regressions (``-m slow``, run on request) build and simulate default
    geometries for up to an hour: the per-test time limit of pyproject.toml is for CI's tests."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))


# -- the deselected count in the last line under xdist ------------------------------------------
# Under xdist the workers collect and deselect (-m 'not slow' in pyproject.toml); the controller
# that prints "N passed ... in T s" never sees the deselection, so the slow tests a plain run
# leaves out would go unmentioned. Each worker reports its count and the controller adds it.

_deselected = 0


def pytest_deselected(items):
    global _deselected
    _deselected += len(items)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: sent to the controller as it finishes
        worker_output["deselected"] = _deselected


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    # every worker collects (and deselects from) the whole test set: one worker's count is the
    # run's, so the controller keeps the largest instead of adding them
    global _deselected
    _deselected = max(_deselected, getattr(node, "workeroutput", {}).get("deselected", 0))


class _DeselectedByWorker:
    """One test a worker deselected, for the count in the last line (plugins that read every
    report, as Hypothesis's, see an object without results)."""


def pytest_terminal_summary(terminalreporter):
    shown = len(terminalreporter.stats.get("deselected", []))
    if _deselected > shown:  # the controller under xdist (without it, pytest counts them)
        terminalreporter.stats.setdefault("deselected", []).extend(
            _DeselectedByWorker() for _ in range(_deselected - shown))


@pytest.fixture
def rng():
    return random.Random(0x5EED)


@pytest.fixture
def refs(tmp_path, genomes):
    """The sketch file the command line makes of the test module's ``genomes`` fixture."""
    from tests.cli_helpers import run
    path = tmp_path / "refs.sketch"
    assert run("sketch", *genomes, "-o", path) == 0
    return path


@pytest.fixture
def xrt_stand_in(monkeypatch):
    """A fresh XRT C API stand-in (sim/xrt_sim.py) for one test, with its own device and
    simulations: a test hands it to host.xrt.XrtDevice (``api=``), and ``--backend xrt`` takes
    it through host.device.xrt_stand_in (KMER_SKETCH_PYXRT=sim); its ``started`` counts the runs
    of each compute unit and ``register_writes`` lists the register writes. After the test its
    compute units are closed and its memory banks removed."""
    from host.calls import STAND_IN_ENV
    from sim import xrt_sim
    fresh = xrt_sim.XrtStandIn()
    monkeypatch.setattr(xrt_sim, "_instance", fresh)
    monkeypatch.setenv(STAND_IN_ENV, "sim")
    yield fresh
    fresh.release()


# -- the instruction sets of the native pair loops -----------------------------------------------

def simd_levels() -> list[str]:
    """The instruction sets host/fast/_allpairs.c and _mle.c can run at on this CPU."""
    from host.fast.native import available_levels, native
    return available_levels(native.set_simd_level, ("scalar", "ssse3", "avx2", "avx512"))


@pytest.fixture(params=simd_levels())
def simd_level(request):
    """Each instruction set of this CPU in turn, the best one restored afterwards."""
    from host.fast.native import native
    native.set_simd_level(request.param)
    yield request.param
    native.set_simd_level("best")


@pytest.fixture(scope="session")
def f2_cl_dir(tmp_path_factory):
    """The small F2 CL (jacc_sketch and jacc_similarity: tests/f2_build.py SMALL), built once."""
    from tests.f2_build import hw_build_f2
    return hw_build_f2(tmp_path_factory.mktemp("f2") / "small")[0]


@pytest.fixture
def f2_stand_in(monkeypatch, f2_cl_dir):
    """A fresh stand-in of AWS's SDK (sim/f2_sim.py) whose slot 0 holds the small CL, for one
    test: tests hand it to host.f2.F2Device (``api=``), ``--backend f2`` takes it through
    host.backends (KMER_SKETCH_F2_SIM). Its simulation ends after the test."""
    from host.backends import F2_STAND_IN_ENV
    from sim import f2_sim
    fresh = f2_sim.F2StandIn(f2_cl_dir)
    monkeypatch.setitem(f2_sim._instances, str(f2_cl_dir.resolve()), fresh)
    monkeypatch.setenv(F2_STAND_IN_ENV, str(f2_cl_dir))
    yield fresh
    fresh.release()
