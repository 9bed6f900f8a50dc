"""nextpnr's JSON report (``--report FILE``; nextpnr common/kernel/report.cc) read into the
figures the build prints: utilisation per BEL type, the achieved Fmax of each clock against its
constraint, and the critical path (start, end, logic and routing delay, cells on it)."""

__all__ = ["ReportError", "summarise", "report_lines", "timing_failures", "register_path"]


class ReportError(ValueError):
    pass


#: the BEL types the summary lists (the others of the 85F are unused by the self-test)
UTILISATION = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D",
               "TRELLIS_IO", "DCCA", "EHXPLLL")


def _path_summary(entry):
    segments = entry["path"]
    if not segments:
        return None
    by_type = {}
    for s in segments:
        by_type[s["type"]] = by_type.get(s["type"], 0.0) + s["delay"]
    logic = [s for s in segments if s["type"] == "logic"]
    return {
        "clock": entry["from"], "to_clock": entry["to"],
        "start": f"{segments[0]['from']['cell']}.{segments[0]['from']['port']}",
        "end": f"{segments[-1]['to']['cell']}.{segments[-1]['to']['port']}",
        "end_cell": segments[-1]["to"]["cell"], "end_port": segments[-1]["to"]["port"],
        "start_cell": segments[0]["from"]["cell"],
        "delay_ns": round(sum(s["delay"] for s in segments), 3),
        "logic_ns": round(by_type.get("logic", 0.0), 3),
        "routing_ns": round(by_type.get("routing", 0.0), 3),
        "clk_to_q_ns": round(by_type.get("clk-to-q", 0.0), 3),
        "setup_ns": round(by_type.get("setup", 0.0), 3),
        "cells": len(logic),
        # carry chains (FCO -> FCI) are dedicated wires, not routed nets
        "routing_hops": sum(1 for s in segments if s["type"] == "routing"
                            and (s["from"]["port"], s["to"]["port"]) != ("FCO", "FCI")),
        "logic_arcs": [{"cell": s["from"]["cell"], "from": s["from"]["port"],
                        "to": s["to"]["port"], "delay_ns": s["delay"]} for s in logic],
    }


def summarise(report: dict) -> dict:
    """The build's figures from a parsed nextpnr report."""
    try:
        util = {k: (v["used"], v["available"]) for k, v in report["utilization"].items()}
        fmax = {k: {"achieved_mhz": round(v["achieved"], 2),
                    "constraint_mhz": round(v["constraint"], 2)}
                for k, v in report["fmax"].items()}
        paths = [p for p in (_path_summary(e) for e in report.get("critical_paths", [])) if p]
    except (KeyError, TypeError) as e:
        raise ReportError(f"not a nextpnr report (missing {e})") from None
    if not fmax:
        raise ReportError("the nextpnr report has no clock (was the design constrained?)")
    return {"utilisation": util, "fmax": fmax, "critical_paths": paths}


def register_path(summary: dict):
    """The critical register-to-register path of the clock (the one its Fmax comes from): not
    the asynchronous one (the clock pad to its buffer) nor one into an output pad (a TRELLIS_IO's
    I or T, which nextpnr lists but does not count in Fmax)."""
    for p in summary["critical_paths"]:
        if p["clock"] == p["to_clock"] != "<async>" and p["end_port"] not in ("I", "T"):
            return p
    return None


def timing_failures(summary: dict) -> list[str]:
    """One phrase per clock whose achieved Fmax is below its constraint."""
    return [f"{clock}: {f['achieved_mhz']:.2f} MHz achieved < {f['constraint_mhz']:.2f} MHz "
            "required" for clock, f in summary["fmax"].items()
            if f["achieved_mhz"] < f["constraint_mhz"]]


def report_lines(summary: dict) -> list[str]:
    lines = []
    for name in UTILISATION:
        used, available = summary["utilisation"].get(name, (0, 0))
        if available:
            lines.append(f"{name:>13}: {used:>7,} / {available:>7,} ({100 * used / available:5.1f} %)")
    for clock, f in summary["fmax"].items():
        lines.append(f"Fmax {clock}: {f['achieved_mhz']:.2f} MHz (constraint "
                     f"{f['constraint_mhz']:.2f} MHz)")
    for p in summary["critical_paths"]:
        lines.append(f"critical path ({p['clock']}): {p['start']} -> {p['end']}: "
                     f"{p['delay_ns']:.2f} ns = {p['logic_ns']:.2f} logic ({p['cells']} cells) + "
                     f"{p['routing_ns']:.2f} routing ({p['routing_hops']} nets) + "
                     f"{p['clk_to_q_ns'] + p['setup_ns']:.2f} clock-to-out and setup")
    return lines
