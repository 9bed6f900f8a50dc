"""What every device and driver of host/ shares about a kernel call, and nothing else: the
argument kinds (an input buffer, an :class:`Output`, a 32-bit scalar), the :class:`RunResult`,
the errors, and the small kernel geometries of simulation.

It imports no other module of host/, so that host.device (SimDevice), host.xrt (XrtDevice),
host.control (the status-register checks), host.drivers and host.allpairs all import it and none
of them imports another in a circle (tests/test_import_graph.py).
"""

from dataclasses import dataclass

__all__ = ["Output", "RunResult", "DeviceError", "KernelError", "SIM_GEOMETRY", "SIM_GEOMETRIES",
           "as_bytes", "check_arguments", "buffer_sizes", "scalars", "parse_build", "run_fields",
           "stream_calls", "STAND_IN_ENV", "F2_STAND_IN_ENV"]

#: ``KMER_SKETCH_PYXRT=sim``: the xrt backend drives the XRT C API stand-in (sim/xrt_sim.py,
#: reached through host.device.xrt_stand_in), which simulates the kernels of a ``python -m
#: hw.build`` output directory, instead of a card (the variable keeps the name it had when the
#: stand-in imitated pyxrt)
STAND_IN_ENV = "KMER_SKETCH_PYXRT"

#: ``KMER_SKETCH_F2_SIM=DIR``: the f2 backend drives the stand-in of AWS's SDK (sim/f2_sim.py,
#: reached through host.device.f2_stand_in), whose slot 0 holds the CL directory DIR of
#: ``python -m hw.build --board f2``, simulated
F2_STAND_IN_ENV = "KMER_SKETCH_F2_SIM"


class DeviceError(RuntimeError):
    """The device cannot be used (missing runtime, wrong xclbin, failed run)."""


class KernelError(DeviceError):
    """A kernel refused a call, did not finish it, or its binary does not match the request."""


@dataclass(frozen=True)
class Output:
    """An output buffer of ``size`` bytes."""

    size: int


@dataclass
class RunResult:
    outputs: dict[str, bytes]
    cycles: int | None = None


#: Small kernels for RTL simulation (a 64- or 128-bit bus, few pivots): quick to build and run.
#: Kernel name -> Params fields that differ from the defaults; the other fields follow the run.
SIM_GEOMETRY = {
    "jacc_sketch": {"lanes": 2, "bytes_per_lane": 4},
    "jacc_similarity": {"pivots": 4, "streams": 2, "data_width": 128},
    "jsd_builder": {"lanes": 2, "bytes_per_lane": 8},
    "jsd_similarity": {"pivots": 4, "data_width": 128},
    "motif": {},
}

#: ``--sim-geometry`` choices: ``small`` (SIM_GEOMETRY) or ``default``, no field overridden, so
#: the kernels simulated are the Params defaults, the kernels ``python -m hw.build`` builds.
SIM_GEOMETRIES = {"small": SIM_GEOMETRY, "default": {}}


def as_bytes(value) -> bytes:
    import numpy as np  # here: the sketch command imports this module for its constants
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    return bytes(value)


def check_arguments(desc, arguments: dict) -> None:
    import numpy as np
    names = {a.name for a in desc.args}
    unknown = set(arguments) - names
    missing = names - set(arguments)
    if unknown or missing:
        raise DeviceError(f"kernel {desc.name}: arguments {sorted(missing)} missing, "
                          f"{sorted(unknown)} unknown")
    for arg in desc.args:
        value = arguments[arg.name]
        if arg.kind == "scalar" and not isinstance(value, (int, np.integer)):
            raise DeviceError(f"kernel {desc.name}: scalar {arg.name} must be an int")
        if arg.kind == "pointer" and isinstance(value, (int, np.integer)):
            raise DeviceError(f"kernel {desc.name}: {arg.name} is a buffer, not an int")


def buffer_sizes(arguments: dict) -> dict:
    """Bytes of every buffer of a call (inputs and outputs), for host.control.timeout_cycles."""
    import numpy as np
    return {name: value.size if isinstance(value, Output) else len(as_bytes(value))
            for name, value in arguments.items() if not isinstance(value, (int, np.integer))}


def scalars(desc, arguments: dict) -> dict:
    """The scalar arguments of a call (the values an error message and a cycle model use)."""
    return {arg.name: int(arguments[arg.name]) for arg in desc.args if arg.kind == "scalar"}


def parse_build(text: str | None) -> dict:
    """``{kernel: {field: int}}`` from ``"KERNEL.FIELD=VALUE,..."`` (hw.build's -P syntax)."""
    built: dict = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            key, value = item.split("=", 1)
            kernel, field = key.strip().split(".", 1)
            built.setdefault(kernel, {})[field] = int(value, 0)
        except ValueError:
            raise DeviceError(f"KMER_SKETCH_SIM_BUILD: expected KERNEL.FIELD=INTEGER, "
                              f"got {item!r}") from None
    return built


def run_fields(kernel: str) -> tuple:
    """The Params fields a driver sets from the run (the algorithm); the kernel's other fields
    (lanes, bus width, pivots, ...) are its geometry, taken from the device."""
    from kmerspec.kernels import jsd_builder, motif
    return {"jacc_sketch": ("k", "p", "w"), "jacc_similarity": ("p", "w"),
            "jsd_builder": tuple(jsd_builder.ALGORITHM_FIELDS), "jsd_similarity": ("R", "n"),
            "motif": tuple(field.name for field in motif.ALGORITHM_FIELDS)}.get(kernel, ())


def stream_calls(start, finish, calls, depth, settle):
    """The card devices' ``run_stream``: each call of ``calls`` started (``start(arguments)``)
    as it comes, at most ``depth()`` in flight (one per compute unit), each result yielded
    (``finish(started)``) in order. A stream that fails, or whose consumer stops, first finishes
    the calls still in flight, their errors dropped, so that no buffer is freed under a running
    unit; an interrupted one (KeyboardInterrupt: a signal, host.interrupts) waits for none of
    them: each is settled (``settle(started)``: released if its unit is known to be done, else
    abandoned and the device refused). A ``finish`` interrupted settles its own call."""
    from collections import deque
    pending: deque = deque()
    try:
        for arguments in calls:
            if len(pending) >= depth():
                yield finish(pending.popleft())
            pending.append(start(arguments))
        while pending:
            yield finish(pending.popleft())
    except BaseException as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        while pending:
            call = pending.popleft()
            if interrupted:
                settle(call)
                continue
            try:
                finish(call)
            except KeyboardInterrupt:
                interrupted = True
            except Exception:
                pass    # the first failure is the one raised
        raise

