"""The kernels users build are the kernels simulated: ``--sim-geometry default`` selects the
Params defaults (what ``python -m hw.build`` builds); bit-exact regressions of the default
geometries on fragments of real genomes and reads under the DDR-like memory model with random
stalls (slow: each default kernel is a Verilator build of minutes; bench/default_geometry.py
prints their throughput); ``dist`` on the simulated default kernels equals ``--backend sw``."""

import subprocess
import sys

import pytest

from host.device import DeviceError, SimDevice
from host.drivers import SIM_GEOMETRY, _geometry
from kmerspec.kernels import jacc_similarity, jacc_sketch, jsd_builder, jsd_similarity, motif
from sim.real_data import fasta_fragment, fastq_fragment, genome_fragments
from sim.runner import run_kernel_bench

DEFAULTS = {module.Params.KERNEL: module.Params()
            for module in (jacc_sketch, jacc_similarity, jsd_builder, motif)}


@pytest.mark.parametrize("kernel", sorted(DEFAULTS))
def test_default_sim_geometry_is_the_hw_build_default(kernel):
    """No field overridden, so the driver's Params are the defaults hw.build builds; ``small``
    keeps the narrow CI kernels."""
    from hw.build import KERNELS
    assert kernel in KERNELS
    assert _geometry(SimDevice(geometry="default"), kernel) == {}
    assert _geometry(SimDevice(), kernel) == SIM_GEOMETRY[kernel]
    assert _geometry(SimDevice(geometry="small"), kernel) == SIM_GEOMETRY[kernel]
    assert type(DEFAULTS[kernel])(**_geometry(SimDevice(geometry="default"), kernel)) \
        == DEFAULTS[kernel]


def test_sim_device_rejects_unknown_geometry_and_memory():
    with pytest.raises(DeviceError, match="geometry must be one of small, default, not 'huge'"):
        SimDevice(geometry="huge")
    with pytest.raises(DeviceError, match="memory model must be 'ideal' or 'ddr'"):
        SimDevice(memory="sram")


def test_cli_rejects_unknown_sim_geometry(tmp_path):
    genome = tmp_path / "a.fa"
    genome.write_bytes(b">a\nACGT\n")
    run = subprocess.run([sys.executable, "-m", "host", "dist", str(genome), "--backend", "sim",
                          "--sim-geometry", "huge"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "--sim-geometry: invalid choice: 'huge'" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("pause", [0.0, 0.2])
def test_sketch_kernel_default_geometry_real_data(pause):
    """T = 8 x 8 bytes (512-bit bus), k = 31, p = 14 on real FASTA and FASTQ fragments, several
    genomes per chunk and genomes spanning chunks, DDR-like memory (with stalls)."""
    genomes = genome_fragments(12, 5000)
    run_kernel_bench(jacc_sketch.Params(), "sim.sketch.tb_sketch_kernel", {
        "genomes": [[f.decode("latin-1") for f in files] for files in genomes],
        "pause": pause, "seed": 7, "memory": "ddr", "max_chunk_bytes": 16384,
        "max_block_beats": 32})


@pytest.mark.slow
def test_similarity_kernel_default_geometry_real_data(tmp_path):
    """V = 80, D = 4, p = 14 on sketches of real fragments (more than V, so two calls), the full
    plan and a pruned plan with stalls, DDR-like memory; records equal the software model."""
    import numpy as np

    from host.fast.hll import sketch_genomes
    geometry = jacc_similarity.Params()
    genomes = genome_fragments(96, 3000)
    registers = np.stack(list(sketch_genomes(genomes, 31, geometry.hll, True, 1)))
    np.save(tmp_path / "sketches.npy", registers)
    run_kernel_bench(geometry, "sim.jacc_similarity.tb_kernel", {
        "sketches": str(tmp_path / "sketches.npy"), "seed": 5, "memory": "ddr",
        "runs": [[None, 0.0, None], [0.3, 0.2, None]], "out": str(tmp_path / "report.json")})


@pytest.mark.slow
def test_jsd_builder_kernel_default_geometry_real_data():
    """8 lanes x 8 bytes, k = 31, s = 10, CM 5 x 2^14, PQA 2^12 x 8, two banks, on real FASTA
    and FASTQ fragments over several chunks, DDR-like memory with stalls: every queue, entropy
    and total equals the golden model."""
    run_kernel_bench(jsd_builder.Params(), "sim.jsd.tb_builder_kernel", {
        "genomes": [[f.decode("latin-1") for f in files] for files in genome_fragments(6, 4000)],
        "update": "cu", "pause": 0.2, "seed": 7, "memory": "ddr", "max_chunk_bytes": 8192,
        "max_block_beats": 32})


@pytest.mark.slow
def test_jsd_similarity_kernel_default_geometry_real_data(tmp_path):
    """8 pivots, R = 12, n = 8 on the golden records of real fragments (the default builder's
    algorithm), both modes, DDR-like memory with stalls: every JSD equals the golden model."""
    import json
    genomes = genome_fragments(5, 12000)
    (tmp_path / "genomes.json").write_text(json.dumps(
        [[f.decode("latin-1") for f in files] for files in genomes]))
    run_kernel_bench(jsd_similarity.Params(), "sim.jsd.tb_similarity_kernel", {
        "genomes_file": str(tmp_path / "genomes.json"), "pause": 0.2, "seed": 7, "memory": "ddr",
        "runs": [{"pivots": [0, 1, 2], "pqas": [0, 3, 4], "mode": "textbook"},
                 {"pivots": [4], "pqas": [1, 2], "mode": "counts"}]})


@pytest.mark.slow
def test_motif_kernel_default_geometry_real_data():
    """k = 10..20, 4 x 2^14 CM-CU, 64 x 4 store, 8-byte front end, on a real FASTA test set and
    real FASTQ reads, DDR-like memory with stalls: every store entry equals the golden model."""
    geometry = motif.Params()
    ks = geometry.kmax - geometry.kmin + 1
    control = fasta_fragment("dwv", 2000).decode("latin-1")
    run_kernel_bench(geometry, "sim.motif.tb_motif_kernel", {
        "runs": [{"test": [fasta_fragment("lambda_virus", 6000).decode("latin-1")],
                  "control": [control], "thresholds": [2] * ks, "growth": 2},
                 {"test": [fastq_fragment(6000).decode("latin-1")], "control": [control],
                  "thresholds": [2] * ks, "growth": 2}],
        "pause": 0.2, "seed": 3, "memory": "ddr"})


@pytest.mark.slow
def test_dist_default_sim_geometry_equals_sw(tmp_path):
    """``python -m host dist a.fa b.fa reads.fq --backend sim --sim-geometry default`` (the
    default sketch and similarity kernels simulated) prints what ``--backend sw`` prints."""
    files = {"a.fa": fasta_fragment("dwv", 4000), "b.fa": fasta_fragment("vdv1dwv5", 4000),
             "reads.fq": fastq_fragment(4000)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in files]
    outputs = {}
    for backend in ("sw", "sim"):
        extra = ["--sim-geometry", "default"] if backend == "sim" else []
        run = subprocess.run([sys.executable, "-m", "host", "dist", *paths, "-o", "-",
                              "--backend", backend, *extra], capture_output=True, text=True,
                             timeout=7200)
        assert run.returncode == 0, run.stderr
        outputs[backend] = run.stdout
    assert outputs["sim"] == outputs["sw"]
    assert len(outputs["sw"].splitlines()) >= 3


COUNTER_MODULE = '''
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class Counter(wiring.Component):
    def __init__(self, width):
        super().__init__({"enable": In(1), "count": Out(width)})

    def elaborate(self, platform):
        m = Module()
        with m.If(self.enable):
            m.d.sync += self.count.eq(self.count + 1)
        return m
'''


def _counter_verilog(directory, width):
    """The Verilog of a small design whose Python source lives in ``directory`` (as in another
    checkout: Yosys names that path in the src attributes)."""
    import importlib.util

    from sim.runner import to_verilog_text
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "counter_design.py"
    source.write_text(COUNTER_MODULE)
    spec = importlib.util.spec_from_file_location(f"counter_{abs(hash(str(directory)))}", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return to_verilog_text(module.Counter(width), "counter")


def test_build_cache_key_ignores_the_checkout_path(tmp_path):
    """The same design generated from two checkouts shares one build directory; a changed design
    or changed build options get another."""
    from sim.runner import build_directory
    here = _counter_verilog(tmp_path / "work" / "wt" / "one", 8)
    there = _counter_verilog(tmp_path / "tmp" / "ci-clone", 8)
    assert str(tmp_path / "work" / "wt" / "one") in here
    assert here != there
    key = build_directory("counter", "verilator", here, "[]")
    assert build_directory("counter", "verilator", there, "[]") == key
    wider = _counter_verilog(tmp_path / "work" / "wt" / "one", 9)
    assert build_directory("counter", "verilator", wider, "[]") != key
    assert build_directory("counter", "icarus", here, "[]") != key
    assert build_directory("counter", "verilator", here, '["OPT_FAST=-O0"]') != key


def test_build_cache_key_names_the_linked_cocotb(tmp_path, monkeypatch):
    """A model links its environment's cocotb libraries by path: built from another venv (gone
    since, as a CI clone's), it would not start, so another environment gets another build."""
    import sim.runner as runner
    text = _counter_verilog(tmp_path / "one", 8)
    key = runner.build_directory("counter", "verilator", text, "[]")
    assert runner.linked_runtime().endswith("libs")
    monkeypatch.setattr(runner, "linked_runtime", lambda: "/gone/venv/cocotb/libs")
    assert runner.build_directory("counter", "verilator", text, "[]") != key


def test_cxx_optimisation_is_O0_unless_chosen(monkeypatch):
    from sim.runner import CXX_OPT_ENV, verilator_cxx_opt
    monkeypatch.delenv(CXX_OPT_ENV, raising=False)
    assert verilator_cxx_opt() == "-O0"
    monkeypatch.setenv(CXX_OPT_ENV, "-O1")
    assert verilator_cxx_opt() == "-O1"
    monkeypatch.setenv(CXX_OPT_ENV, "-O1; rm -rf /")
    with pytest.raises(RuntimeError, match="KSA_CXX_OPT must be a compiler optimisation flag"):
        verilator_cxx_opt()
