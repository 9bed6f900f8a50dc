"""The checks every device makes around a kernel call, on the kernel's status registers
(kmerspec.regmap: ERROR and the identity words after the arguments; docs/kernel_interface.md).

Both devices call these with ``read_register(offset) -> int``, their plain 32-bit read of
s_axi_control (XrtDevice: ``kernel.read_register``; SimDevice: the words its simulation read
at the same offsets), so the comparison, the error messages and the timeouts are the same code:

* :func:`before_first_call`: :func:`check_identity` (the binary's magic, layout version and
  every build parameter against the Params the driver asks for; a mismatch raises
  ``<kernel>: built with <param>=<binary's value>, asked for <requested value>``), then a write
  of 1 to FRESH, so that the first call starts from a clean kernel whatever an earlier, possibly
  aborted, process left in it;
* :func:`check_error` after each ap_done: a non-zero ERROR register raises ``<kernel>: <cause>``;
* :func:`timeout_cycles`: how long a call may take before the device gives up on it.
"""

from kmerspec.regmap import ERROR_CAUSES, error_argument, error_code

from .device import DeviceError

__all__ = ["KernelError", "before_first_call", "check_identity", "check_error", "timeout_cycles", "timeout_ms",
           "KERNEL_CLOCK_HZ"]

#: The slowest kernel clock of the supported boards (F1: 250 MHz), for wall-clock timeouts.
KERNEL_CLOCK_HZ = 250_000_000
#: Cycles per bus beat moved that a call may take (the kernels run at one beat per cycle when
#: the memory does; the JACC similarity kernel spends up to V/D cycles per streamed group beat)
CYCLES_PER_BEAT = 64
#: Cycles every call may take on top (start, pipelines, a PQA or sketch read-out, memory latency)
FIXED_CYCLES = 1_000_000


class KernelError(DeviceError):
    """A kernel refused a call or its binary does not match the request."""


def check_identity(kernel, read_register) -> None:
    """Raise KernelError unless the binary behind ``read_register`` was built with ``kernel``
    (a kmerspec.kernels Params)."""
    status = kernel.desc.status_map()
    words = [read_register(offset) for offset in status.identity_offsets]
    mismatch = kernel.identity_mismatch(words)
    if mismatch is not None:
        raise KernelError(f"{kernel.KERNEL}: {mismatch}")


def before_first_call(kernel, read_register, write_register) -> None:
    """Check the binary's identity, then request a clean start (FRESH) for the next call."""
    check_identity(kernel, read_register)
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


def timeout_cycles(kernel, sizes: dict) -> int:
    """The cycles a call may take: CYCLES_PER_BEAT per bus beat of its buffers (``sizes``:
    argument name -> bytes, inputs and outputs) plus FIXED_CYCLES."""
    bus_bytes = min(bundle.data_width for bundle in kernel.desc.bundles) // 8
    beats = sum(-(-size // bus_bytes) for size in sizes.values())
    return FIXED_CYCLES + CYCLES_PER_BEAT * beats


def timeout_ms(kernel, sizes: dict) -> int:
    """:func:`timeout_cycles` at KERNEL_CLOCK_HZ, in milliseconds (for pyxrt's run.wait)."""
    return -(-timeout_cycles(kernel, sizes) * 1000 // KERNEL_CLOCK_HZ)
