"""Host driver throughput: the packing path (MB/s), the sim backend (kernel cycles, wall time), and
how much of the packing the card driver hides behind kernel calls.

    python bench/host_driver.py [--pack-mbytes 64] [--sim-genomes 6] [--overlap-genomes 8]
        [--overlap-chunk-kbytes 64] [--overlap-only]

Packing: genomes are planned and packed into the sketch kernel's chunk layout (kmerspec.chunks,
T=8 lanes x B=8 bytes, the F1 build) exactly as the xrt backend does before each call. Sim: small
genomes are sketched by the RTL kernel through host.device.SimDevice (T=2, B=4, p=10), which
reports the kernel cycles of every call; the cycles are converted to time at 250 MHz. Overlap:
genomes are sketched through the card driver (host.xrt.XrtDevice on the XRT C API stand-in,
handed to it, a T=2 x B=4, p=10 sketch kernel from python -m hw.build) with the
drivers' packer thread (host.drivers.prefetched); the time the packer spends packing each chunk
and the time the driver waits for the packer before each call are recorded: packing the driver
did not wait for was done while a kernel call ran (hidden). With the stand-in a call is a
simulation (seconds), so this machine's packing rate is then set against a card's kernel time
by the sketch kernel's measured rate (1.080 cycles per 512-bit beat at 250 MHz,
docs/default_geometry.md). Prints tables; asserts nothing.
"""

import pathlib
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.options import bench_parser  # noqa: E402
from host.device import Output, SimDevice  # noqa: E402
from kmerspec.chunks import pack_chunks, plan_blocks  # noqa: E402
from kmerspec.kernels.jacc_sketch import Params, unpack_records  # noqa: E402


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
    device = SimDevice(pause=0.0)   # the kernel's own cycles, no random AXI stalls
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


def bench_overlap(genomes_count: int, chunk_kbytes: int) -> None:
    import host.drivers as drivers
    from host.xrt import XrtDevice
    from kmerspec.golden.hll import HllParams
    from sim import xrt_sim
    root = pathlib.Path(__file__).resolve().parent.parent
    out = pathlib.Path(tempfile.mkdtemp(prefix="host-driver-bench-"))
    subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-o", str(out), "--kernels",
                    "jacc_sketch", "-Pjacc_sketch.k=21", "-Pjacc_sketch.p=10",
                    "-Pjacc_sketch.lanes=2", "-Pjacc_sketch.bytes_per_lane=4"], cwd=root,
                   check=True, capture_output=True)
    api = xrt_sim.stand_in()
    device = XrtDevice(str(out), api=api)
    genomes = genomes_of(genomes_count * 100_000, genomes_count, np.random.default_rng(3))
    packs, waits, exposed, lock = [], [], [], threading.Lock()
    real_wait, real_chunks, real_prefetched = (api.xrtRunWaitFor, drivers.iter_chunks,
                                               drivers.prefetched)

    def timed_wait(run, timeout_ms):
        start = time.perf_counter()
        try:
            return real_wait(run, timeout_ms)
        finally:
            with lock:
                waits.append((start, time.perf_counter()))

    def timed_chunks(blocks, geometry, **options):
        # the packer thread: the time each chunk takes to pack
        chunks = real_chunks(blocks, geometry, max_chunk_bytes=chunk_kbytes << 10)
        while True:
            start = time.perf_counter()
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            with lock:
                packs.append((start, time.perf_counter(), len(chunk[0])))
            yield chunk

    def timed_prefetched(items, depth=2):
        # the driver's side: the time it waits for the packer before each call
        ahead = real_prefetched(items, depth)
        while True:
            start = time.perf_counter()
            try:
                item = next(ahead)
            except StopIteration:
                return
            exposed.append(time.perf_counter() - start)
            yield item
    api.xrtRunWaitFor = timed_wait
    drivers.iter_chunks, drivers.prefetched = timed_chunks, timed_prefetched
    try:
        device.run(Params(lanes=2, bytes_per_lane=4, k=21, p=10, w=4),
                   {"src": bytes(64), "n_bytes": 0, "n_records": 0, "dst": Output(64)})  # warm
        waits.clear()
        start = time.perf_counter()
        drivers.sketch_genomes(device, genomes, 21, HllParams(10, 4))
        wall = time.perf_counter() - start
    finally:
        api.xrtRunWaitFor = real_wait
        drivers.iter_chunks, drivers.prefetched = real_chunks, real_prefetched
    total = sum(len(f) for g in genomes for f in g)
    packing = sum(end - begin for begin, end, _ in packs)
    first = packs[0][1] - packs[0][0]           # nothing runs before the first chunk exists
    waited = sum(exposed[1:])                   # later chunks: packing the driver waited for
    waiting = sum(end - begin for begin, end in waits)
    # packing that ran while the driver sat in xrtRunWaitFor (a kernel call in flight)
    during = sum(max(0.0, min(end, w_end) - max(begin, w_begin))
                 for begin, end, _ in packs[1:] for w_begin, w_end in waits)
    print()
    print(f"{'card driver on the C API stand-in (T=2 x B=4, p=10)':<52} {'chunks':>6} "
          f"{'pack ms':>8} {'1st ms':>7} {'in call':>8} {'waited ms':>9} {'hidden':>7} "
          f"{'kernel s':>8} {'wall s':>7}")
    print(f"{f'{genomes_count} genomes, {total / 1e6:.2f} MB, {chunk_kbytes} kB chunks':<52} "
          f"{len(packs):>6} {packing * 1e3:>8.2f} {first * 1e3:>7.2f} "
          f"{during / max(packing - first, 1e-9):>8.1%} {waited * 1e3:>9.3f} "
          f"{1 - waited / max(packing - first, 1e-9):>7.1%} {waiting:>8.1f} {wall:>7.1f}")
    print("(in call: the packing of chunks 2.. that ran while the driver was in xrtRunWaitFor; "
          "waited: the time the driver waited for the packer before calls 2..; hidden: 1 - "
          "waited / packing of chunks 2..; the first chunk is packed before any call)")
    # a card: the same packing rate against the sketch kernel's measured rate
    card = Params()   # T=8, B=8, 512-bit
    rate = sum(size for _, _, size in packs) / packing           # packed bytes per second here
    kernel = 1.080 / 250e6 / card.bus_bytes                       # card seconds per packed byte
    print(f"on a card (1.080 cycles per 512-bit beat at 250 MHz: {1 / kernel / 1e9:.1f} GB/s): "
          f"a 64 MB chunk takes the kernel {kernel * 64e6 * 1e3:.1f} ms and this machine's "
          f"packer {64e6 / rate * 1e3:.0f} ms ({rate / 1e6:.1f} MB/s): the kernel time is hidden "
          f"behind the packing, which bounds the throughput")


def main() -> None:
    parser = bench_parser(__doc__, pack_mbytes=64, sim_genomes=6, overlap_genomes=8,
                          overlap_chunk_kbytes=64)
    parser.add_argument("--overlap-only", action="store_true")
    args = parser.parse_args()
    if not args.overlap_only:
        bench_packing(args.pack_mbytes)
        bench_sim(args.sim_genomes)
    bench_overlap(args.overlap_genomes, args.overlap_chunk_kbytes)


if __name__ == "__main__":
    main()
