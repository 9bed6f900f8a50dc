"""The sim backend (host.drivers.find_motifs on host.device.SimDevice: packed inputs -> simulated
kernel -> MotifRows) equals the golden find_motifs on a small ChIP-like set."""

import random

import pytest

from kmerspec.golden.motif import MotifParams, find_motifs
from host.device import SimDevice
from host.drivers import find_motifs as find_motifs_on
from sim.runner import available_simulators
from tests.test_motif_kernel import GEOMETRY, chip_like

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")


def test_find_motifs_sim_equals_golden():
    rng = random.Random(4)
    # the geometry of the kernel test, so that its Verilator build is reused
    params = MotifParams(**GEOMETRY, thresholds=(9, 8, 7, 7), growth=2)
    test = [chip_like(rng, 20, 40, "TTGACCA", 0.8).encode()]
    control = [chip_like(rng, 20, 40, "TTGACCA", 0.05).encode()]
    expected = find_motifs(test, control, params)
    assert expected   # the planted motif emerges
    assert find_motifs_on(SimDevice(), test, control, params) == expected
