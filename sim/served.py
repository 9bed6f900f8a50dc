"""A cocotb simulation run in a thread and served over a Unix socket, one request at a time: the
way the stand-ins of a vendor's C library (sim/xrt_sim.py: XRT's, sim/f2_sim.py: AWS's FPGA
SDK) reach the simulated hardware. The cocotb module connects to ``parameters["socket"]``, says
``("ready", ...)`` and answers each request with one message whose first item names its kind;
simulated time stands still between requests.

A failure of the simulation (a test assertion, a protocol checker, the simulator exiting) is
kept and raised to the caller of the next request: the cocotb failure itself when there is one
(the CLI names the simulator's log from it), else a RuntimeError naming ``label`` and what
happened. Every simulation still open when the process exits is closed.
"""

import atexit
import pathlib
import socket
import threading
import weakref
from multiprocessing.connection import Connection

__all__ = ["ServedSimulation"]


class ServedSimulation:
    """``text`` (Verilog) under the cocotb module ``module`` with top ``toplevel``, served on the
    Unix socket ``address`` (which must not exist; removed once connected). ``label`` starts
    every message, e.g. "kernel checksum_1" or "CL kmer_jacc". Returns once the module has
    connected; the caller then expects its "ready"."""

    def __init__(self, label: str, address: pathlib.Path, text: str, module: str,
                 toplevel: str, parameters: dict):
        from sim.runner import run_cocotb
        self.label = label
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._connection = None
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(address))
        server.listen(1)
        server.settimeout(0.5)
        options = {"socket": str(address), **parameters}

        def simulate():
            try:
                run_cocotb(text, module, toplevel=toplevel, parameters=options)
            except BaseException as error:  # reported to the caller of the next request
                self._failure = error

        self._thread = threading.Thread(target=simulate, name=f"sim-{toplevel}", daemon=True)
        self._thread.start()
        try:
            while self._connection is None:
                try:
                    client, _ = server.accept()
                except socket.timeout:
                    if not self._thread.is_alive():
                        raise self._failed("did not start") from None
                    continue
                self._connection = Connection(client.detach())
        finally:
            server.close()
            pathlib.Path(address).unlink(missing_ok=True)
        _live.add(self)

    def _failed(self, what: str) -> BaseException:
        failure = self._failure
        if failure is not None and type(failure).__name__ == "CocotbFailure":
            return failure          # the CLI names the simulator log
        detail = str(failure).splitlines()[0] if failure else "the simulator exited"
        return RuntimeError(f"{self.label}: the simulation {what} ({detail})")

    def _expect(self, kind: str):
        """The next message, which must be of ``kind`` (the caller holds the lock)."""
        try:
            message = self._connection.recv()
        except (EOFError, OSError):
            self._thread.join(timeout=60)
            raise self._failed("ended") from None
        if message[0] != kind:
            raise RuntimeError(f"{self.label}: the simulation answered {message[0]!r}, "
                               f"expected {kind}")
        return message

    def exchange(self, request: tuple, kind: str):
        """Send ``request``, return the answer, which must be of ``kind``."""
        with self._lock:
            if self._connection is None:
                raise RuntimeError(f"{self.label}: the simulation is closed")
            self._connection.send(request)
            return self._expect(kind)

    def close(self, timeout: float = 60):
        """End the simulation (the module's serve loop ends on "close" or the socket closing)
        and wait for its thread."""
        with self._lock:
            if self._connection is not None:
                try:
                    self._connection.send(("close",))
                except OSError:
                    pass
                self._connection.close()
                self._connection = None
        self._thread.join(timeout=timeout)
        _live.discard(self)


_live: "weakref.WeakSet[ServedSimulation]" = weakref.WeakSet()


@atexit.register
def _close_all():
    for simulation in list(_live):
        try:
            simulation.close()
        except BaseException:
            pass
