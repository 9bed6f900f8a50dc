"""Dask execution (host/scheduler.py, --scheduler/--workers): identical results to one process,
no lost or duplicated rows when a worker dies mid-run, and a bad scheduler address named in one
line."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from host.cli import main
from host.scheduler import DaskExecutor
from host.fast.hll import insert_kmers
from kmerspec.golden.hll import HllParams
from host.sketchfile import SketchSet, write_sketches
from tests.genomes import write_related_genomes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def slow_double(item, delay):
    time.sleep(delay)
    return 2 * item


@pytest.fixture(scope="module")
def executor():
    dask_executor = DaskExecutor(workers=2)
    yield dask_executor
    dask_executor.close()


def kill_one_worker(client, among=None) -> int:
    """SIGKILL one worker process (the first of ``among``, worker addresses, if given)."""
    pids = client.run(os.getpid, workers=among)
    victim = sorted(pids.values())[0] if among is None else pids[sorted(among)[0]]
    os.kill(victim, signal.SIGKILL)
    return victim


def test_map_ordered_survives_a_killed_worker(executor):
    results = []
    for position, result in enumerate(executor.map_ordered(slow_double, range(60), 0.05)):
        results.append(result)
        if position == 5:
            kill_one_worker(executor.client)
    assert results == [2 * i for i in range(60)]


@pytest.fixture
def genome_files(tmp_path):
    return [str(path) for path in write_related_genomes(tmp_path, count=6, length=20_000,
                                                        step=0.02, seed=21)]


def test_scheduler_results_equal_single_process(tmp_path, genome_files, executor):
    address = executor.client.scheduler.address
    for command, extra in (("sketch", []), ("dist", ["--format", "tsv"]),
                           ("dist", ["--format", "edges", "--threshold", "0.3"]),
                           ("dist", ["--format", "edges", "--metric", "ani", "--threshold",
                                     "97"]),
                           ("cluster", ["--ani", "97"]),
                           ("cluster", ["--ani", "97", "--method", "average"])):
        local, remote = tmp_path / f"local.{command}", tmp_path / f"remote.{command}"
        assert main([command, *genome_files, "-o", str(local), *extra]) == 0
        assert main([command, *genome_files, "-o", str(remote), "--scheduler", address,
                     *extra]) == 0
        assert local.read_bytes() == remote.read_bytes(), command


def test_scheduler_metrics_and_top_equal_single_process(tmp_path, genome_files, executor):
    """Containment rows tile by tile, and --top with the K best kept per tile by the workers."""
    address = executor.client.scheduler.address
    for extra in (["--metric", "containment"],
                  ["--metric", "containment", "--format", "edges", "--top", "2"],
                  ["--metric", "mash", "--format", "edges", "--top", "3"]):
        local, remote = tmp_path / "local.out", tmp_path / "remote.out"
        assert main(["dist", *genome_files, "-o", str(local), *extra]) == 0
        assert main(["dist", *genome_files, "-o", str(remote), "--cluster", address,
                     *extra]) == 0
        assert local.read_bytes() == remote.read_bytes(), extra


def many_sketches(path, genomes=600, p=12):
    params = HllParams(p, 4)
    rng = np.random.default_rng(22)
    registers = np.zeros((genomes, params.m), dtype=np.uint8)
    pool = rng.integers(0, 2**64, 300_000, dtype=np.uint64)
    for row in registers:
        start = int(rng.integers(0, 200_000))
        insert_kmers(row, pool[start:start + int(rng.integers(1000, 100_000))], params)
    write_sketches(path, SketchSet(
        kind="hll", params={"k": 31, "p": p, "w": 4, "canonical": True, "hash": "fmix64"},
        names=[f"genome{i}" for i in range(genomes)], files=[[f"genome{i}.fa"] for i in range(genomes)],
        arrays={"registers": registers}))


def test_dist_output_is_complete_when_a_worker_dies(tmp_path, executor):
    """A worker is killed while it computes a tile of the run (seen on the scheduler, not
    guessed with a sleep), and the output still equals the one-process output."""
    sketches = tmp_path / "many.sketch"
    many_sketches(sketches)
    local = tmp_path / "local.tsv"
    assert main(["dist", str(sketches), "-o", str(local)]) == 0
    client = executor.client
    client.wait_for_workers(2, timeout=120)  # the nanny restarts the one an earlier test killed
    remote = tmp_path / "remote.tsv"
    run = subprocess.Popen([sys.executable, "-m", "host", "dist", str(sketches), "-o", str(remote),
                            "--scheduler", client.scheduler.address], cwd=ROOT)
    try:
        busy = {}
        deadline = time.monotonic() + 120
        while not busy and run.poll() is None and time.monotonic() < deadline:
            busy = {worker: keys for worker, keys in client.processing().items() if keys}
            time.sleep(0.01)
        killed_while_running = bool(busy) and run.poll() is None
        if busy:
            kill_one_worker(client, among=list(busy))
        assert run.wait(timeout=300) == 0
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert killed_while_running, "no tile of the run was seen on a worker before it ended"
    assert remote.read_bytes() == local.read_bytes()


def test_cluster_is_an_alias_of_scheduler(tmp_path, genome_files, executor):
    local, remote = tmp_path / "local.tsv", tmp_path / "remote.tsv"
    assert main(["dist", *genome_files, "-o", str(local)]) == 0
    assert main(["dist", *genome_files, "-o", str(remote), "--cluster",
                 executor.client.scheduler.address]) == 0
    assert local.read_bytes() == remote.read_bytes()


@pytest.mark.parametrize("option", ["--scheduler", "--cluster"])
@pytest.mark.parametrize("address, cause", [
    ("garbage", "not a Dask scheduler address (missing port number in address 'garbage'); give "
                "tcp://HOST:PORT"),
    ("foo://x:1", "not a Dask scheduler address (unknown address scheme 'foo'"),
    ("", "an empty address")])
def test_a_bad_scheduler_address_is_one_line_naming_the_option(tmp_path, genome_files, capsys,
                                                               option, address, cause):
    out = tmp_path / "out.tsv"
    assert main(["dist", *genome_files, "-o", str(out), option, address]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    shown = f"{option} {address}:" if address else f"{option}:"
    assert err.startswith(f"error: {shown} {cause}"), err
    assert not out.exists()


def test_bad_addresses_leave_no_client_to_close_at_exit(tmp_path, genome_files):
    """An address Dask cannot parse is refused before a Client is made: a Client whose start
    failed stays behind, and the interpreter's exit then waits 60 s for each one to close (a
    notebook or a test process calling the API again and again)."""
    script = ("import sys\nfrom host.cli import main\nfor address in sys.argv[3:]:\n"
              "    assert main(['dist', sys.argv[1], sys.argv[2], '-o', 'out.tsv',"
              " '--scheduler', address]) == 2\n")
    done = subprocess.run([sys.executable, "-c", script, *map(str, genome_files[:2]), "garbage",
                           "foo://x:1", "tcp://nowhere"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=50, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("not a Dask scheduler address") == 3, done.stderr
