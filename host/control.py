"""The checks every device makes around a kernel call, on the kernel's status registers
(kmerspec.regmap: ERROR and the identity words after the arguments; docs/kernel_interface.md),
and how long a call may take.

Both devices call these with ``read_register(offset) -> int``, their plain 32-bit read of
s_axi_control (XrtDevice: ``xrtKernelReadRegister`` of XRT's C API on a compute unit opened
exclusively; SimDevice: the words its simulation read at the same offsets), so the comparison,
the error messages and the timeouts are the same code:

* :func:`check_identity` before a compute unit's first call: the binary's magic, layout version
  and every build parameter against the Params the driver asks for; a mismatch raises
  ``<kernel>: built with <param>=<binary's value>, asked for <requested value>``;
* :func:`request_clean_start` (a write of 1 to FRESH) before a compute unit's first call, and
  again before the call that follows any call that ended in an error or a timeout, so that no
  call continues the state of a failed one or of an earlier, possibly aborted, process;
* :func:`check_error` after each ap_done: a non-zero ERROR register raises ``<kernel>: <cause>``;
* :func:`timeout_cycles`: each kernel's cycle model (:func:`model_cycles`) times TIMEOUT_MARGIN.
"""

from kmerspec.regmap import ERROR_CAUSES, error_argument, error_code

from .calls import KernelError

__all__ = ["KernelError", "check_identity", "request_clean_start", "check_error",
           "model_cycles", "timeout_cycles", "timeout_ms", "KERNEL_CLOCK_HZ", "TIMEOUT_MARGIN",
           "FIXED_CYCLES"]

#: The slowest kernel clock of the supported boards (F1: 250 MHz), for wall-clock timeouts.
KERNEL_CLOCK_HZ = 250_000_000
#: A call is declared hung after this many times its kernel's cycle model. The models use the
#: rates measured on the DDR-like memory model (docs/default_geometry.md: every kernel within
#: 1.08 of its model's rate); the margin covers a memory up to 4 times slower than that one
#: (refresh, several compute units sharing a bank, PCIe traffic to the same bank).
TIMEOUT_MARGIN = 4
#: Cycles of every call besides its data: start, pipelines, memory latency, and the clear a
#: clean start (FRESH) makes of the kernel's largest table (motif: 11 k x 5 x 2^14 Count-Min
#: counters, 0.9 M cycles, the largest of the default builds).
FIXED_CYCLES = 1 << 21


def check_identity(kernel, read_register) -> None:
    """Raise KernelError unless the binary behind ``read_register`` was built with ``kernel``
    (a kmerspec.kernels Params)."""
    status = kernel.desc.status_map()
    words = [read_register(offset) for offset in status.identity_offsets]
    mismatch = kernel.identity_mismatch(words)
    if mismatch is not None:
        raise KernelError(f"{kernel.KERNEL}: {mismatch}")


def request_clean_start(kernel, write_register) -> None:
    """Ask for a clean start (FRESH = 1): the next call clears the kernel's state first."""
    write_register(kernel.desc.status_map().fresh, 1)


def check_error(kernel, read_register, arguments: dict) -> None:
    """Raise KernelError if the ERROR register after a call reports a failure; ``arguments``
    are the call's (argument name -> value or buffer address) for the message."""
    desc = kernel.desc
    word = read_register(desc.status_map().error)
    if not word:
        return
    code = error_code(word)
    index = error_argument(word)
    arg = desc.args[index] if index < len(desc.args) else None
    value = arguments.get(arg.name, 0) if arg is not None else 0
    bus_bytes = desc.bundle(arg.bundle).data_width // 8 if arg is not None and arg.bundle else 0
    cause = ERROR_CAUSES.get(code)
    if cause is None:
        raise KernelError(f"{desc.name}: the kernel reported error 0x{word:x}")
    if arg is None and "{arg}" in cause:
        raise KernelError(f"{desc.name}: the kernel reported error 0x{word:x}")
    value = value if isinstance(value, int) else 0
    raise KernelError(f"{desc.name}: " + cause.format(arg=arg.name if arg else "", value=value,
                                                      bus_bytes=bus_bytes))


def _records(kernel, sizes: dict, scalars: dict, output: str) -> int:
    """Records a call writes: its ``n_records`` scalar, else what its output buffer holds."""
    if "n_records" in scalars:
        return max(0, scalars["n_records"])
    record = getattr(kernel, "record_bytes", 0)
    return -(-sizes.get(output, 0) // record) if record else 0


def _rates(kernel, sizes: dict, scalars: dict) -> tuple[float, int]:
    """(cycles per input bus beat, cycles for the records) of ``kernel``'s model.

    Rates (docs/default_geometry.md, DDR-like memory, 512-bit bus): the chunk kernels take about
    one input beat per cycle (sketch 1.080, JSD builder 1.069) but the JSD builder's Count-Min
    update inserts one k-mer a cycle, about 4 per beat; each genome that ends costs the sketch
    kernel its register read-out (2^p) and the JSD builder its PQA read-out and entropy finish
    (2^R n entries, 4,114 cycles at R = 12, n = 8). The JACC similarity kernel spends up to
    V / D cycles per streamed group beat; the JSD similarity kernel 1.074 cycles per record beat
    and an entropy finish per streamed PQA. The motif kernel parses ``bytes_per_cycle`` bases a
    cycle for each k of kmin..kmax in turn (0.995 bases per cycle per k measured), so a 512-bit
    beat costs 64 / B cycles per k (B = 1: 64 per k), then drains its store (sets x ways per k).
    Each rate is the measured one rounded up by at least 1.16 (1.25 x 64 / B x ks for motif,
    whose default build measured 88.97 cycles per beat against 88 = 8 x 11).
    """
    name = kernel.KERNEL
    if name == "jacc_sketch":
        return 1.25, _records(kernel, sizes, scalars, "dst") * (kernel.registers + 64)
    if name == "jsd_builder":
        return 4.0, _records(kernel, sizes, scalars, "dst") * (
            2 * (1 << kernel.R) * kernel.n + 8192)
    if name == "jacc_similarity":
        return float(max(1, kernel.pivots // kernel.streams)), 0
    if name == "jsd_similarity":
        return 1.25, max(0, scalars.get("n_pqas", 0)) * (2 * (1 << kernel.R) * kernel.n + 8192)
    if name == "motif":
        ks = kernel.kmax - kernel.kmin + 1
        beat = kernel.data_width // 8
        return (1.25 * beat / kernel.bytes_per_cycle * ks,
                2 * kernel.store_sets * kernel.store_ways * ks)
    return 1.25, 0      # a streaming kernel at one beat a cycle (the checksum example)


def model_cycles(kernel, sizes: dict, scalars: dict | None = None) -> int:
    """The cycles a call of ``kernel`` (a kmerspec.kernels Params) takes by its kernel's model:
    FIXED_CYCLES, its rate per bus beat of every buffer (inputs and outputs: ``sizes``, argument
    name -> bytes) and its records (``scalars``: the call's scalar arguments)."""
    bus_bytes = min(bundle.data_width for bundle in kernel.desc.bundles) // 8
    beats = sum(-(-size // bus_bytes) for size in sizes.values())
    rate, records = _rates(kernel, sizes, scalars or {})
    return FIXED_CYCLES + int(rate * beats + 0.5) + records


def timeout_cycles(kernel, sizes: dict, scalars: dict | None = None) -> int:
    """The cycles a call may take before it is declared hung: TIMEOUT_MARGIN x
    :func:`model_cycles`."""
    return TIMEOUT_MARGIN * model_cycles(kernel, sizes, scalars)


def timeout_ms(kernel, sizes: dict, scalars: dict | None = None) -> int:
    """:func:`timeout_cycles` at KERNEL_CLOCK_HZ, in milliseconds (for xrtRunWaitFor)."""
    return -(-timeout_cycles(kernel, sizes, scalars) * 1000 // KERNEL_CLOCK_HZ)
