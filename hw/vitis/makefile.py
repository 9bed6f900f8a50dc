"""The per-board Makefile: package every kernel (.xo), link each xclbin of the link plan, and on
AWS F1 turn each xclbin into an AFI (``create_vitis_afi.sh``, aws-fpga ``Vitis/tools``) and wait
for it (``make afi-status``).

Platform resolution: ``make PLATFORM=...`` wins; otherwise on F1 aws-fpga's ``vitis_setup.sh``
exports ``AWS_PLATFORM`` as the path of the platform's ``.xpfm`` (and sets no
``PLATFORM_REPO_PATHS``), which is used when present; otherwise, on a board with
``[vitis_platforms]`` (F1), the platform of the Vitis release found (``VITIS_RELEASE``: the
release ``XILINX_VITIS`` ends in, as vitis_setup.sh reads it, else ``v++ --version``), a release
without one refused by ``check-platform`` with the supported ones named; otherwise the board's
default platform name, which v++ finds only under ``PLATFORM_REPO_PATHS`` or
/opt/xilinx/platforms.  ``check-platform`` says which of these is missing before v++ starts.

v++ options are the documented ones (UG1393/UG1702 "--vivado Options", "v++ General Options"):
``--vivado.synth.jobs`` and ``--vivado.impl.jobs`` (``JOBS``) for the Vivado runs of the link;
on a board with ``link_kernel_frequency`` (the Alveo cards, whose platforms default to 300 MHz)
``--kernel_frequency`` = the board's ``kernel_clock_hz`` in MHz, the clock the kernels were
closed for.
"""

import os
import re
import shutil
import subprocess

__all__ = ["makefile", "vitis_release"]

_RELEASE = re.compile(r"^20\d\d\.\d$")


def vitis_release(env=None, which=shutil.which, run=subprocess.run):
    """The Vitis release in use ("2024.1"), or None: the first six characters of the last
    component of ``XILINX_VITIS`` (as aws-fpga's vitis_setup.sh reads it), else the version
    ``v++ --version`` prints."""
    env = os.environ if env is None else env
    base = os.path.basename(env.get("XILINX_VITIS", "").rstrip("/"))[:6]
    if _RELEASE.match(base):
        return base
    vpp = which("v++")
    if vpp is None:
        return None
    try:
        text = run([vpp, "--version"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bv(20\d\d\.\d)\b", text)
    return m.group(1) if m else None


_CHECK_RELEASE = (
    "\t@r='$(VITIS_RELEASE)'; if [ -n \"$$r\" ] && ! echo ' $(VITIS_RELEASES) ' | "
    "grep -q \" $$r \"; then echo \"error: Vitis $$r cannot target {board}: supported Vitis "
    "releases: $(VITIS_RELEASES)\" >&2; exit 2; fi\n")

_CHECK_PLATFORM = (
    "check-platform:\n"
    "{release_check}"
    "\t@p='$(PLATFORM)'; case \"$$p\" in *.xpfm) test -f \"$$p\" && exit 0; "
    "echo \"error: platform file $$p does not exist\" >&2; exit 2;; esac; "
    "for d in $$(echo '$(PLATFORM_REPO_PATHS)' | tr : ' ') /opt/xilinx/platforms; do "
    "test -f \"$$d/$$p/$$p.xpfm\" && exit 0; done; "
    "echo \"error: v++ cannot find platform $$p: {hint}\" >&2; exit 2\n")


def _xo_rules(kernels):
    rules, xos = [], []
    for desc, krel in kernels:
        xo = f"xo/{desc.name}.xo"
        xos.append(xo)
        rules += [
            f"{xo}: {krel}/{desc.name}.v {krel}/kernel.xml {krel}/package_{desc.name}.tcl",
            "\tmkdir -p xo",
            f"\t$(VIVADO) -mode batch -nojournal -nolog -source {krel}/package_{desc.name}.tcl "
            f"-tclargs $@ $(PART) $(FREQ_HZ)",
            "",
        ]
    return xos, rules


def _link_rules(board, name, xos):
    cfg = f"link_{name}.cfg"
    deps = " ".join(xos)
    freq = " --kernel_frequency $(KERNEL_FREQ_MHZ)" if board.get("link_kernel_frequency") else ""
    vpp_link = ("\t$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --save-temps "
                f"--temp_dir _x.{name}.$(TARGET) --vivado.synth.jobs $(JOBS) "
                f"--vivado.impl.jobs $(JOBS){freq} --config {cfg} -o $@ {deps}")
    if board["package_step"]:
        return [
            f"{name}.link.xclbin: {deps} {cfg} | check-platform", vpp_link, "",
            f"{name}.xclbin: {name}.link.xclbin | check-platform",
            f"\t$(VPP) -p -t $(TARGET) --platform $(PLATFORM) --package.out_dir package.{name} "
            "-o $@ $<",
            "",
        ]
    return [f"{name}.xclbin: {deps} {cfg} | check-platform", vpp_link, ""]


def _afi_rules(name):
    # create_vitis_afi.sh stages the DCP in ./to_aws and aborts when that directory exists, and
    # its last step (xclbinutil -o <name>.awsxclbin) fails when that file exists -- after the
    # upload and create-fpga-image: every xclbin gets its own working directory, cleared of a
    # previous run's to_aws and .awsxclbin (its *_afi_id.txt files are kept).
    wd = f"afi_{name}"
    return [
        f"{name}.awsxclbin: {name}.xclbin | check-afi-env",
        f"\tmkdir -p {wd} && rm -rf {wd}/to_aws {wd}/{name}.awsxclbin",
        f"\tcd {wd} && $(VITIS_DIR)/tools/create_vitis_afi.sh -xclbin=../{name}.xclbin -o={name} "
        "-s3_bucket=$(S3_BUCKET) -s3_dcp_key=$(S3_DCP_KEY) -s3_logs_key=$(S3_LOGS_KEY)",
        f"\tcp {wd}/{name}.awsxclbin $@",
        "",
    ]


_CHECK_AFI_ENV = [
    "check-afi-env:",
    "\t@test -n \"$(VITIS_DIR)\" || { echo 'error: VITIS_DIR is not set: source aws-fpga/"
    "vitis_setup.sh' >&2; exit 2; }",
    "\t@test -n \"$(S3_BUCKET)\" || { echo 'error: set S3_BUCKET (create_vitis_afi.sh "
    "-s3_bucket)' >&2; exit 2; }",
    "\t@test -n \"$(S3_DCP_KEY)\" || { echo 'error: set S3_DCP_KEY, the S3 folder of the DCP "
    "(create_vitis_afi.sh -s3_dcp_key)' >&2; exit 2; }",
    "",
]


_AFI_STATUS = r"""
# make afi-status: wait until the newest AFI of every xclbin (afi_<xclbin>/*_afi_id.txt, written by
# create_vitis_afi.sh) is 'available' (aws ec2 describe-fpga-images; states pending, available,
# failed, unavailable: aws-fpga hdk/docs/describe_fpga_images.md), polling every AFI_POLL_S
# seconds for at most AFI_WAIT_S; failed/unavailable or the time running out is an error.
AFI_WAIT_S ?= 10800
AFI_POLL_S ?= 60
AWS ?= aws
afi-status:
	@for x in {xclbins}; do \
	  f=$$(ls -t afi_$$x/*_afi_id.txt 2>/dev/null | head -n 1); \
	  test -n "$$f" || {{ echo "error: no AFI id for $$x (afi_$$x/*_afi_id.txt): make $$x.awsxclbin first" >&2; exit 2; }}; \
	  id=$$(grep -o 'afi-[0-9a-f]*' "$$f" | head -n 1); \
	  test -n "$$id" || {{ echo "error: $$f names no afi-... id" >&2; exit 2; }}; \
	  waited=0; \
	  while :; do \
	    state=$$($(AWS) ec2 describe-fpga-images --fpga-image-ids $$id --query 'FpgaImages[0].State.Code' --output text) || {{ echo "error: aws ec2 describe-fpga-images --fpga-image-ids $$id failed" >&2; exit 2; }}; \
	    echo "$$x: $$id $$state after $$waited s"; \
	    case "$$state" in \
	      available) break;; \
	      pending) ;; \
	      *) echo "error: AFI $$id of $$x is $$state (see State.Message of aws ec2 describe-fpga-images --fpga-image-ids $$id)" >&2; exit 1;; \
	    esac; \
	    test $$waited -lt $(AFI_WAIT_S) || {{ echo "error: AFI $$id of $$x still pending after $$waited s (AFI_WAIT_S=$(AFI_WAIT_S))" >&2; exit 1; }}; \
	    sleep $(AFI_POLL_S); waited=$$((waited + $(AFI_POLL_S))); \
	  done; \
	done
"""


def makefile(board, kernels, xclbins, platform, *, explicit_platform=False):
    """``kernels`` = [(desc, kdir relative to the board dir)]; ``xclbins`` = [(name, [desc])];
    ``platform``: the default platform (``explicit_platform``: chosen on the command line, so
    not replaced by the one of the Vitis release)."""
    aws = board["aws_afi"]
    L = [
        f"# Generated by python -m hw.build for board '{board['name']}'.",
        "# Needs Vivado and Vitis (v++) on PATH"
        + (", and for the AFI step the aws-fpga Vitis setup (VITIS_DIR, RELEASE_VER, aws CLI)."
           if aws else "."),
        "",
    ]
    if aws:
        L += [
            "# aws-fpga's vitis_setup.sh exports AWS_PLATFORM = the path of the platform's .xpfm and",
            "# does not set PLATFORM_REPO_PATHS, where v++ would look a bare platform name up.",
            "ifneq ($(strip $(AWS_PLATFORM)),)",
            "PLATFORM ?= $(AWS_PLATFORM)",
            "endif",
        ]
    table = board.get("vitis_platforms") or {}
    if table:
        L += [
            "# The Vitis release: XILINX_VITIS ends in it (.../Vitis/2024.1), as aws-fpga's",
            "# vitis_setup.sh reads it; else v++ --version.  Evaluated once.",
            "ifeq ($(origin VITIS_RELEASE),undefined)",
            "VITIS_RELEASE := $(shell r=$$(basename \"$(XILINX_VITIS)\" | cut -c1-6); "
            "if echo \"$$r\" | grep -qx '20[0-9][0-9]\\.[0-9]'; then echo $$r; else "
            "$(or $(VPP),v++) --version 2>/dev/null | grep -o 'v20[0-9][0-9]\\.[0-9]' | "
            "head -n 1 | cut -c2-; fi)",
            "endif",
            "VITIS_RELEASES := " + " ".join(sorted(table)),
        ]
        L += [f"PLATFORM_{rel} := {plat}" for rel, plat in sorted(table.items())]
        if not explicit_platform:
            L += [
                "ifneq ($(filter $(VITIS_RELEASE),$(VITIS_RELEASES)),)",
                "PLATFORM ?= $(PLATFORM_$(VITIS_RELEASE))",
                "endif",
            ]
    L += [
        f"PLATFORM ?= {platform}",
        f"PART ?= {board['part']}",
        f"FREQ_HZ ?= {board['kernel_clock_hz']}",
        *([f"KERNEL_FREQ_MHZ ?= {board['kernel_clock_hz'] / 1e6:g}"]
          if board.get("link_kernel_frequency") else []),
        "TARGET ?= hw",
        "VIVADO ?= vivado",
        "VPP ?= v++",
        "JOBS ?= 8",
        "",
    ]
    xos, xo_rules = _xo_rules(kernels)
    by_name = {desc.name: f"xo/{desc.name}.xo" for desc, _ in kernels}
    finals = [f"{name}.awsxclbin" if aws else f"{name}.xclbin" for name, _ in xclbins]
    L += ["XOS := " + " ".join(xos), "", "all: " + " ".join(finals), "", "xo: $(XOS)", ""]
    L += xo_rules
    for name, descs in xclbins:
        L += _link_rules(board, name, [by_name[d.name] for d in descs])
        if aws:
            L += _afi_rules(name)
    hint = ("source aws-fpga's vitis_setup.sh (sets AWS_PLATFORM), or set PLATFORM to the .xpfm "
            "path or PLATFORM_REPO_PATHS to its parent directory" if aws else
            "install the platform under /opt/xilinx/platforms, or set PLATFORM to the .xpfm path "
            "or PLATFORM_REPO_PATHS to its parent directory")
    release_check = _CHECK_RELEASE.format(board=board["name"]) if table else ""
    L.append(_CHECK_PLATFORM.format(hint=hint, release_check=release_check))
    if aws:
        L += _CHECK_AFI_ENV
        L.append(_AFI_STATUS.format(xclbins=" ".join(name for name, _ in xclbins)))
    # afi_*/*_afi_id.txt and *_agfi_id.txt are kept: they name AFIs that exist in the AWS account.
    clean = ("rm -rf xo _x.* _pack_* package.* *.xclbin *.awsxclbin *.log *.jou .Xil to_aws "
             "afi_*/to_aws afi_*/*.tar afi_*/*.dcp afi_*/*_build.json afi_*/*_clocks.json "
             "afi_*/*_manifest.txt afi_*/*.awsxclbin")
    L += [".PHONY: all xo clean check-platform" + (" check-afi-env afi-status" if aws else ""),
          "clean:", f"\t{clean}", ""]
    return "\n".join(L)
