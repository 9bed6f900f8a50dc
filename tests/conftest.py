import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

# Many tests build a component only to read its interface, parameters or identity words; the
# warning for each (and again for every one collected when Python exits) would bury CI's summary.
warnings.filterwarnings("ignore", category=UnusedElaboratable)


def pytest_collection_modifyitems(items):
    """Full-length regressions (``-m slow``, run on request) build and simulate default
    geometries for up to an hour: the per-test time limit of pyproject.toml is for CI's tests."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))


@pytest.fixture
def rng():
    return random.Random(0x5EED)
