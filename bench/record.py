"""Bench records: what a bench script printed, as data, for bench/benchmarks_doc.py.

``write(name, record)`` stores ``bench/results/<name>.json`` with the date and commit of the run;
a bench script calls it under its ``--record`` option, after printing its table as usual."""

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def commit() -> str:
    """The checked-out commit, with ``+changes`` when the tree differs from it."""
    root = RESULTS.parent.parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                          capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def machine() -> str:
    """The CPU's model name, the cores this process sees, the system and architecture."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def write(name: str, record: dict) -> Path:
    record = {"bench": name, "date": datetime.date.today().isoformat(), "commit": commit(),
              **record}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"recorded {path}")
    return path
