"""Host driver throughput: the packing path (MB/s) and the sim backend (kernel cycles, wall time).

    python bench/host_driver.py [--pack-mbytes 64] [--sim-genomes 6]

Packing: genomes are planned and packed into the sketch kernel's chunk layout (kmerspec.chunks,
T=8 lanes x B=8 bytes, the F1 build) exactly as the xrt backend does before each call. Sim: small
genomes are sketched by the RTL kernel through host.device.SimDevice (T=2, B=4, p=10), which
reports the kernel cycles of every call; the cycles are converted to time at 250 MHz. Prints
tables; asserts nothing.
"""

import argparse
import time

import numpy as np

from host.device import Output, SimDevice
from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels.jacc_sketch import Params, unpack_records


def genomes_of(total_bytes: int, count: int, rng: np.random.Generator) -> list[list[bytes]]:
    sizes = rng.integers(total_bytes // (2 * count), 3 * total_bytes // (2 * count), count)
    genomes = []
    for size in sizes:
        bases = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, int(size))].tobytes()
        genomes.append([b">g\n" + b"\n".join(bases[i:i + 80] for i in range(0, len(bases), 80))])
    return genomes


def bench_packing(megabytes: int) -> None:
    geometry = Params()  # T=8, B=8: the 512-bit build for F1/Alveo
    genomes = genomes_of(megabytes << 20, 16, np.random.default_rng(1))
    total = sum(len(f) for g in genomes for f in g)
    start = time.perf_counter()
    blocks = plan_blocks(genomes, geometry)
    chunks = list(pack_chunks(blocks, geometry))
    seconds = time.perf_counter() - start
    packed = sum(len(chunk) for chunk, _ in chunks)
    print(f"{'packing (sketch layout, T=8 x B=8)':<38} {'input MB':>9} {'chunks':>7} "
          f"{'padding':>8} {'MB/s':>8}")
    print(f"{'16 genomes':<38} {total / 1e6:>9.1f} {len(chunks):>7} "
          f"{packed / total - 1:>7.1%} {total / seconds / 1e6:>8.1f}")


def bench_sim(genomes_count: int) -> None:
    geometry = kernel = Params(lanes=2, bytes_per_lane=4, k=21, p=10, w=4)
    genomes = genomes_of(genomes_count * 6000, genomes_count, np.random.default_rng(2))
    total = sum(len(f) for g in genomes for f in g)
    chunks = list(pack_chunks(plan_blocks(genomes, geometry), geometry, max_chunk_bytes=8192))
    calls = [{"src": chunk, "n_bytes": len(chunk), "n_records": len(tags),
              "dst": Output(max(1, len(tags)) * geometry.record_bytes)} for chunk, tags in chunks]
    device = SimDevice()
    device.run_many(kernel, calls[:1])  # build (or reuse) the Verilator model outside the timing
    start = time.perf_counter()
    results = device.run_many(kernel, calls)
    seconds = time.perf_counter() - start
    for (chunk, tags), result in zip(chunks, results):
        assert len(unpack_records(result.outputs["dst"], len(tags), geometry)) == len(tags)
    cycles = sum(result.cycles for result in results)
    beats = sum(len(chunk) for chunk, _ in chunks) // geometry.bus_bytes
    print()
    print(f"{'sim backend (sketch kernel T=2 x B=4, p=10)':<44} {'calls':>6} {'beats':>7} "
          f"{'cycles':>8} {'cyc/beat':>8} {'wall s':>7} {'cycles/s':>9} {'at 250 MHz':>11}")
    print(f"{f'{genomes_count} genomes, {total / 1e3:.0f} kB':<44} {len(calls):>6} {beats:>7} "
          f"{cycles:>8} {cycles / beats:>8.2f} {seconds:>7.1f} {cycles / seconds:>9.0f} "
          f"{cycles / 250e6 * 1e6:>8.1f} us")
    print("(cycles per call from ap_start to ap_done as the AXI-Lite driver polls them: "
          "includes the genome-end stops and the record writes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack-mbytes", type=int, default=64)
    parser.add_argument("--sim-genomes", type=int, default=6)
    args = parser.parse_args()
    bench_packing(args.pack_mbytes)
    bench_sim(args.sim_genomes)


if __name__ == "__main__":
    main()
