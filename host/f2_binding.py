"""AWS's FPGA SDK (``libfpga_mgmt.so``, which carries fpga_pci too) through ctypes: the functions
the F2 driver (host.f2) calls, their prototypes, the structures they fill, and loading the
library.

The library is AWS's C SDK (aws-fpga ``sdk/userspace``, built and installed by ``source
sdk_setup.sh`` on an F2 instance or the FPGA Developer AMI: ``libfpga_mgmt.so.1`` in
/usr/local/lib64, /usr/local/lib, /usr/lib64 or /usr/lib, registered with ldconfig). It is used
at run time only; nothing of it is in this project.

:data:`PROTOTYPES` is every C function the driver calls, with its ctypes prototype as declared
in aws-fpga's ``sdk/userspace/include/fpga_pci.h`` and ``fpga_mgmt.h`` (release v2.0.2);
:data:`HEADERS` names the header of each. tests/test_f2_binding.py parses those headers where
an aws-fpga checkout is named (``KSA_AWS_FPGA``) and compares every prototype, and compiles a C
program against them to compare the sizes and offsets of the structures below with ctypes'. The
stand-in (sim/f2_sim.py) offers exactly these functions with the same conventions.

Functions return 0 or an error: a negative errno (``-EINVAL``), or a positive ``FPGA_ERR_*``
code of hal/fpga_common.h; ``fpga_mgmt_strerror`` names both (``strerror(-err)`` for the
negative ones). The driver's messages quote it.
"""

import ctypes
import os
import pathlib
import time
from ctypes import POINTER, Structure, Union, c_char, c_char_p, c_int, c_uint8, c_uint16, \
    c_uint32, c_uint64, c_void_p, c_bool

from .calls import DeviceError
from .clib import Prototype, bind_functions, loaded_path

__all__ = ["PROTOTYPES", "HEADERS", "STRUCTURES", "CApi", "load_library", "library_candidates",
           "LIBRARY", "FPGA_APP_PF", "APP_PF_BAR0", "APP_PF_BAR4", "BURST_CAPABLE",
           "FPGA_STATUS_LOADED", "FPGA_STATUSES", "FPGA_SLOT_MAX", "AFI_ID_STR_MAX",
           "AfiDeviceIds", "FpgaMetaIds", "FpgaPciResourceMap", "FpgaSlotSpec",
           "FpgaMgmtImageInfo", "strerror"]

LIBRARY = "libfpga_mgmt.so.1"

# hal/fpga_common.h
FPGA_SLOT_MAX = 8
AFI_ID_STR_MAX = 64
F1_DDR_IFS_MAX, F2_DDR_IFS_MAX = 4, 1
FPGA_CACHED_AGFIS_MAX = 16
FPGA_MMCM_GROUP_MAX, FPGA_MMCM_OUT_CLKS_MAX = 3, 7
FPGA_PF_MAX = 2
FPGA_BAR_PER_PF_MAX = 5
FPGA_APP_PF = 0
APP_PF_BAR0, APP_PF_BAR4 = 0, 4
#: fpga_pci.h: attach with write combining (a prefetchable BAR)
BURST_CAPABLE = 0x1
FPGA_STATUS_LOADED = 0
#: FPGA_STATUS2STR of hal/fpga_common.h
FPGA_STATUSES = {0: "loaded", 1: "cleared", 2: "busy", 3: "not-programmed",
                 4: "afi-cache-in-progress", 5: "rl-reload-needed-drop-pci-link",
                 7: "load-failed"}


class AfiDeviceIds(Structure):
    _pack_ = 1
    _fields_ = [("vendor_id", c_uint16), ("device_id", c_uint16), ("svid", c_uint16),
                ("ssid", c_uint16)]


class FpgaMetaIds(Structure):
    _pack_ = 1
    _fields_ = [("afi_id", c_char * AFI_ID_STR_MAX), ("afi_device_ids", AfiDeviceIds)]


class FpgaPciResourceMap(Structure):
    _pack_ = 1
    _fields_ = [("vendor_id", c_uint16), ("device_id", c_uint16),
                ("subsystem_device_id", c_uint16), ("subsystem_vendor_id", c_uint16),
                ("domain", c_uint16), ("bus", c_uint8), ("dev", c_uint8), ("func", c_uint8),
                ("resource_burstable", c_bool * FPGA_BAR_PER_PF_MAX),
                ("resource_size", c_uint64 * FPGA_BAR_PER_PF_MAX)]


class FpgaSlotSpec(Structure):
    _pack_ = 1
    _fields_ = [("map", FpgaPciResourceMap * FPGA_PF_MAX)]


class FpgaDdrIfMetricsCommon(Structure):
    _pack_ = 1
    _fields_ = [("write_count", c_uint64), ("read_count", c_uint64)]


class FpgaClocksCommon(Structure):
    _pack_ = 1
    _fields_ = [("frequency", c_uint64 * FPGA_MMCM_OUT_CLKS_MAX)]


_METRICS_TAIL = [("clocks", FpgaClocksCommon * FPGA_MMCM_GROUP_MAX), ("power_mean", c_uint64),
                 ("power_max", c_uint64), ("power", c_uint64),
                 ("cached_agfis", c_uint64 * FPGA_CACHED_AGFIS_MAX), ("flags", c_uint64)]


class F2MetricsCommon(Structure):
    _pack_ = 1
    _fields_ = [("int_status", c_uint32), ("pcim_axi_protocol_error_status", c_uint32),
                ("pcim_range_error_addr", c_uint64), ("pcim_range_error_count", c_uint32),
                ("pcim_axi_protocol_error_addr", c_uint64),
                ("pcim_axi_protocol_error_count", c_uint32),
                ("pcim_write_count", c_uint64), ("pcim_read_count", c_uint64),
                ("dma_pcis_timeout_addr", c_uint64), ("dma_pcis_timeout_count", c_uint32),
                ("ocl_slave_timeout_addr", c_uint32), ("ocl_slave_timeout_count", c_uint32),
                ("sda_slave_timeout_addr", c_uint64), ("sda_slave_timeout_count", c_uint32),
                ("virtual_jtag_slave_timeout_addr", c_uint32),
                ("virtual_jtag_slave_timeout_count", c_uint32),
                ("virtual_jtag_write_count", c_uint32), ("virtual_jtag_read_count", c_uint32),
                ("ddr_ifs", FpgaDdrIfMetricsCommon * F2_DDR_IFS_MAX)] + _METRICS_TAIL


class F1MetricsCommon(Structure):
    _pack_ = 1
    _fields_ = [("int_status", c_uint32), ("pcim_axi_protocol_error_status", c_uint32),
                ("dma_pcis_timeout_addr", c_uint64), ("dma_pcis_timeout_count", c_uint32),
                ("pcim_range_error_addr", c_uint64), ("pcim_range_error_count", c_uint32),
                ("pcim_axi_protocol_error_addr", c_uint64),
                ("pcim_axi_protocol_error_count", c_uint32), ("reserved2", c_uint8 * 12),
                ("ocl_slave_timeout_addr", c_uint64), ("ocl_slave_timeout_count", c_uint32),
                ("bar1_slave_timeout_addr", c_uint64), ("bar1_slave_timeout_count", c_uint32),
                ("sdacl_slave_timeout_addr", c_uint32), ("sdacl_slave_timeout_count", c_uint32),
                ("virtual_jtag_slave_timeout_addr", c_uint32),
                ("virtual_jtag_slave_timeout_count", c_uint32),
                ("pcim_write_count", c_uint64), ("pcim_read_count", c_uint64),
                ("ddr_ifs", FpgaDdrIfMetricsCommon * F1_DDR_IFS_MAX)] + _METRICS_TAIL


class _Metrics(Union):
    _fields_ = [("f1_metrics", F1MetricsCommon), ("f2_metrics", F2MetricsCommon)]


class FpgaMgmtImageInfo(Structure):
    """``struct fpga_mgmt_image_info`` (fpga_mgmt.h; not packed, its members are)."""
    _fields_ = [("status", c_int), ("status_q", c_int), ("slot_id", c_int),
                ("ids", FpgaMetaIds), ("spec", FpgaSlotSpec), ("sh_version", c_uint32),
                ("metrics", _Metrics)]


#: C structure name -> ctypes class, for the layout test
STRUCTURES = {"struct afi_device_ids": AfiDeviceIds, "struct fpga_meta_ids": FpgaMetaIds,
              "struct fpga_pci_resource_map": FpgaPciResourceMap,
              "struct fpga_slot_spec": FpgaSlotSpec,
              "struct f2_metrics_common": F2MetricsCommon,
              "struct f1_metrics_common": F1MetricsCommon,
              "struct fpga_mgmt_image_info": FpgaMgmtImageInfo}

#: ``pci_bar_handle_t`` (fpga_pci.h: ``typedef int``)
BAR_HANDLE = c_int
#: The C functions the driver calls
PROTOTYPES = {
    "fpga_mgmt_init": Prototype(c_int, ()),
    "fpga_mgmt_strerror": Prototype(c_char_p, (c_int,)),
    "fpga_mgmt_describe_local_image": Prototype(c_int, (c_int, POINTER(FpgaMgmtImageInfo),
                                                        c_uint32)),
    "fpga_pci_init": Prototype(c_int, ()),
    "fpga_pci_attach": Prototype(c_int, (c_int, c_int, c_int, c_uint32, POINTER(BAR_HANDLE))),
    "fpga_pci_detach": Prototype(c_int, (BAR_HANDLE,)),
    "fpga_pci_peek": Prototype(c_int, (BAR_HANDLE, c_uint64, POINTER(c_uint32))),
    "fpga_pci_poke": Prototype(c_int, (BAR_HANDLE, c_uint64, c_uint32)),
    "fpga_pci_write_burst": Prototype(c_int, (BAR_HANDLE, c_uint64, POINTER(c_uint32),
                                              c_uint64)),
    "fpga_pci_get_address": Prototype(c_int, (BAR_HANDLE, c_uint64, c_uint64,
                                              POINTER(c_void_p))),
}
#: The header (sdk/userspace/include/) that declares each function
HEADERS = {name: ("fpga_mgmt.h" if name.startswith("fpga_mgmt") else "fpga_pci.h")
           for name in PROTOTYPES}


def strerror(api, code: int) -> str:
    """The SDK's name of an error code (``fpga_mgmt_strerror``), with the code."""
    text = api.fpga_mgmt_strerror(code)
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return f"{text} ({code})"


class CApi:
    """The functions of :data:`PROTOTYPES` from the loaded library, and the host's clock
    (``clock()``: seconds, ``sleep(seconds)``), which a stand-in replaces by simulated time."""

    def __init__(self, library: ctypes.CDLL, origin: str):
        self.origin = origin
        self.description = f"{LIBRARY} (AWS FPGA SDK) from {origin}"
        bind_functions(self, library, PROTOTYPES)

    @staticmethod
    def clock() -> float:
        return time.monotonic()

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)


def library_candidates() -> list[str]:
    """Where libfpga_mgmt is looked for: $SDK_DIR/userspace/lib/so (a kit built by sdk_setup.sh),
    the directories install_fpga_mgmt_tools.sh copies it to, then the dynamic linker's path."""
    found = []
    roots = [pathlib.Path(os.environ["SDK_DIR"]) / "userspace" / "lib" / "so"] \
        if os.environ.get("SDK_DIR") else []
    roots += [pathlib.Path(d) for d in ("/usr/local/lib64", "/usr/local/lib", "/usr/lib64",
                                        "/usr/lib")]
    for root in roots:
        path = root / LIBRARY
        if path.is_file():
            found.append(str(path))
    return found + [LIBRARY]


def load_library() -> CApi:
    for candidate in library_candidates():
        try:
            library = ctypes.CDLL(candidate, use_errno=True)
        except OSError:
            continue
        return CApi(library, loaded_path(candidate))
    raise DeviceError(f"the f2 backend needs AWS's FPGA SDK ({LIBRARY} not found: on the F2 "
                      "instance, git clone https://github.com/aws/aws-fpga -b f2 and "
                      "'source aws-fpga/sdk_setup.sh')")

