"""Does an xclbin fit its board, and where does each compute unit go?

Budget: what the board's platform leaves to kernels in each SLR (super logic region, one die of
a stacked device): ``[slr.SLRn]`` of ``boards/<name>.toml`` with ``slr_source``; the whole board's
budget is their sum.  A board file without ``[slr]`` has one budget: its device totals
(``[resources]``) minus ``[shell]``, and its units are not given an SLR.

Placement (:func:`place_units`): every compute unit goes to one SLR, where its resources must fit
in the SLR's figures less ``slr_margin`` (UG1393: up to 10 % of what is available can be taken by
system infrastructure: SLR crossings, memory connections).  Units are placed largest first, each
into the SLR with the most room left; its memory banks are the banks of that SLR (``banks`` of
``[slr.SLRn]``), so that a unit's ports do not cross an SLR boundary.  A unit bigger than every
SLR cannot have an SLR of its own: it spans the fewest adjacent SLRs that hold it (charged to them
in proportion to their room), gets no ``slr=`` and the banks of those SLRs, and the build says so
with the geometry that would fit one SLR.  A unit that would fit an empty SLR but finds no room
left makes the placement fail, naming the unit, the SLR with the most room and the resource.

A kernel's resources come, in this order, from

0. Vivado's utilisation after its out-of-context implementation (``--impl`` with Vivado on PATH:
   ``impl.json`` folded into ``resources.json`` under ``"impl"``) when it was made from the same
   Verilog (sha256);
1. the Yosys report of this build (``resources.json`` next to the kernel's Verilog, written by
   ``--resources``) when it was made from the same Verilog (sha256);
2. ``kernel_area.toml`` (next to this module): figures measured earlier at the kernel's default
   geometry, each with the command or document it comes from, used only when the kernel is built
   with exactly the parameters recorded there;
3. otherwise the kernel is unknown and the xclbin is reported as "not checked", not refused.

These are Yosys ``synth_xilinx`` figures, not Vivado's: a refusal means "over budget by a margin
that tool differences do not explain away", and ``--force`` links anyway.
"""

import hashlib
import json
import pathlib
import tomllib
from dataclasses import dataclass, field

__all__ = ["RESOURCES", "budget", "slr_budgets", "kernel_usage", "FitResult", "check_fit",
           "verilog_digest", "Unit", "Placement", "place_units", "fit_table"]

RESOURCES = ("lut", "ff", "bram36", "uram", "dsp")
AREA_FILE = pathlib.Path(__file__).with_name("kernel_area.toml")


def budget(board):
    """``{resource: amount}`` a board leaves to kernels, and the figures' source: the sum of its
    SLRs' figures, or (board files without ``[slr]``) the device totals minus ``[shell]``."""
    if board.get("slr"):
        left = {r: sum(s[r] for s in board["slr"].values()) for r in RESOURCES}
        return left, board.get("slr_source", "[slr] of the board file")
    shell = board.get("shell") or {}
    left = {r: board["resources"][r] - shell.get(r, 0) for r in RESOURCES}
    return left, shell.get("source", "no [shell] figures in the board file: whole device")


def slr_budgets(board):
    """``[(slr name, {resource: amount kernels may use}, [banks], {resource: available})]``: each
    SLR's figures less the board's ``slr_margin``.  Empty for a board without ``[slr]``.  A board
    file whose ``[slr]`` is incomplete, or whose banks are not each in exactly one SLR, is a
    :class:`BoardError`."""
    from .boards import BoardError
    where = f"board file {board.get('file', board['name'])}"
    margin = board.get("slr_margin", 0.0)
    if not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise BoardError(f"{where}: slr_margin must be a fraction in [0, 1), not {margin!r}")
    seen = []
    for name, s in (board.get("slr") or {}).items():
        for r in RESOURCES:
            if not isinstance(s.get(r), int) or s[r] < 0:
                raise BoardError(f"{where}: [slr.{name}] needs {r} as a count >= 0")
        for b in s.get("banks", []):
            if b not in board["memory_banks"]:
                raise BoardError(f"{where}: [slr.{name}] bank {b!r} is not one of memory_banks "
                                 f"{board['memory_banks']}")
        seen += s.get("banks", [])
    if board.get("slr"):
        odd = sorted({b for b in board["memory_banks"] if seen.count(b) != 1})
        if odd:
            raise BoardError(f"{where}: memory banks {', '.join(odd)} must each be in exactly "
                             "one [slr.*] banks list")
    return [(name, {r: int(s[r] * (1 - margin)) for r in RESOURCES}, list(s.get("banks", [])),
             {r: s[r] for r in RESOURCES})
            for name, s in (board.get("slr") or {}).items()]


def verilog_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recorded(name, params, area_file=AREA_FILE):
    if not pathlib.Path(area_file).exists():
        return None
    with open(area_file, "rb") as f:
        table = tomllib.load(f)
    entry = table.get(name)
    if entry is None:
        return None
    if any(params.get(k) != v for k, v in entry.get("params", {}).items()):
        return None
    return {r: entry.get(r, 0) for r in RESOURCES}, f"recorded ({entry['source']})"


def kernel_usage(name, params, kdir, module, *, area_file=AREA_FILE):
    """``(usage or None, source)`` of one compute unit of kernel ``name``."""
    kdir = pathlib.Path(kdir)
    report = kdir / "resources.json"
    verilog = kdir / f"{module}.v"
    if report.exists() and verilog.exists():
        rep = json.loads(report.read_text())
        digest = verilog_digest(verilog)
        impl = rep.get("impl") or {}
        if impl.get("verilog_sha256") == digest:      # Vivado's utilisation after routing
            return ({r: impl[r] for r in RESOURCES},
                    f"Vivado out-of-context implementation of this build ({impl.get('tool')})")
        if rep.get("verilog_sha256") == digest and "resources" in rep:
            return {r: rep["resources"][r] for r in RESOURCES}, "Yosys report of this build"
    rec = _recorded(name, params, area_file)
    if rec is not None:
        return rec
    return None, "unknown (no resources.json for this Verilog; run with --resources)"


@dataclass
class FitResult:
    xclbin: str
    board: str
    budget: dict
    shell_source: str
    need: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)    # kernel -> where its figures come from
    unknown: list = field(default_factory=list)   # kernels without figures

    @property
    def over(self):
        return {r: (self.need[r], self.budget[r]) for r in RESOURCES
                if self.need.get(r, 0) > self.budget[r]}

    @property
    def checked(self):
        return not self.unknown

    def message(self):
        over = ", ".join(f"{r.upper()} {n:,.0f} of {b:,.0f}" for r, (n, b) in self.over.items())
        return (f"xclbin {self.xclbin} does not fit board {self.board}: {over} "
                f"(available to kernels: {self.shell_source}; kernel figures: "
                + "; ".join(f"{k}: {s}" for k, s in self.sources.items()) + ")")

    def summary(self):
        if self.unknown:
            return (f"{self.xclbin}: fit not checked on {self.board} "
                    f"(no resource figures for {', '.join(self.unknown)})")
        use = ", ".join(f"{r.upper()} {self.need[r]:,.0f}/{self.budget[r]:,.0f}"
                        for r in RESOURCES if self.budget[r])
        return f"{self.xclbin}: {'fits' if not self.over else 'OVER BUDGET'} on {self.board}: {use}"

    def as_json(self):
        return {"budget": self.budget, "shell_source": self.shell_source, "need": self.need,
                "sources": self.sources, "unknown": self.unknown, "fits": not self.over,
                "checked": self.checked}


def check_fit(board, xclbin, members):
    """``members`` = [(kernel name, compute units, usage or None, source)]."""
    left, source = budget(board)
    res = FitResult(xclbin, board["name"], left, source, need={r: 0 for r in RESOURCES})
    for name, n_cu, usage, src in members:
        res.sources[name] = src
        if usage is None:
            res.unknown.append(name)
            continue
        for r in RESOURCES:
            res.need[r] += n_cu * usage.get(r, 0)
    return res


# ---- SLR placement ----------------------------------------------------------------------------

@dataclass
class Unit:
    """One compute unit to place: its kernel, its v++ name, its bundles in order, its resources
    (None: no figures) and their source, and the banks asked for by name ({bundle: bank})."""
    kernel: str
    cu: str
    bundles: list
    usage: dict | None
    source: str = ""
    overrides: dict = field(default_factory=dict)


@dataclass
class Placement:
    xclbin: str
    board: str
    margin: float
    source: str
    slrs: list                                       # SLR names, bottom first
    budgets: dict                                    # slr -> {resource: kernels may use}
    available: dict                                  # slr -> {resource: available}
    used: dict                                       # slr -> {resource: placed}
    where: dict = field(default_factory=dict)        # cu -> [slr] (several: spans them)
    banks: dict = field(default_factory=dict)        # cu -> {bundle: bank}
    unchecked: list = field(default_factory=list)    # cus without figures
    spanning: list = field(default_factory=list)     # one line per unit bigger than every SLR
    warnings: list = field(default_factory=list)
    failure: str | None = None

    def slr_of(self, cu):
        """The SLR of ``slr=`` for this unit (None: it spans SLRs, or the board has none)."""
        w = self.where.get(cu) or []
        return w[0] if len(w) == 1 else None

    def as_json(self):
        return {"margin": self.margin, "source": self.source, "budgets": self.budgets,
                "used": {s: {r: round(v) for r, v in u.items()} for s, u in self.used.items()},
                "where": self.where, "unchecked": self.unchecked, "spanning": self.spanning,
                "warnings": self.warnings, "failure": self.failure}


def _room(rem, budget):
    """The smallest fraction left of any resource the SLR has."""
    return min((rem[r] / budget[r] for r in RESOURCES if budget[r]), default=0.0)


def _num(v):
    return f"{v:,.0f}"


def place_units(board, xclbin, units):
    """Place every unit of one xclbin into the board's SLRs and give its ports banks there
    (module docstring).  Returns a :class:`Placement`; ``failure`` says why it could not."""
    slrs = slr_budgets(board)
    margin = float(board.get("slr_margin", 0.0))
    pl = Placement(xclbin, board["name"], margin, board.get("slr_source", ""),
                   [s for s, _, _, _ in slrs], {s: b for s, b, _, _ in slrs},
                   {s: a for s, _, _, a in slrs},
                   {s: {r: 0.0 for r in RESOURCES} for s, *_ in slrs})
    bank_of_slr = {s: banks for s, _, banks, _ in slrs}
    if not slrs:
        return pl
    rem = {s: dict(b) for s, b in pl.budgets.items()}
    biggest = {r: max(b[r] for b in pl.budgets.values()) for r in RESOURCES}

    def size(u):
        return max((u.usage.get(r, 0) / biggest[r] for r in RESOURCES if biggest[r]), default=0)

    known = sorted([u for u in units if u.usage is not None], key=size, reverse=True)
    for u in known:
        need = {r: u.usage.get(r, 0) for r in RESOURCES}
        alone = [s for s in pl.slrs if all(need[r] <= pl.budgets[s][r] for r in RESOURCES)]
        if alone:
            room = [s for s in alone if all(need[r] <= rem[s][r] for r in RESOURCES)]
            if not room:
                s = max(alone, key=lambda s: _room(rem[s], pl.budgets[s]))
                r = max(RESOURCES, key=lambda r: (need[r] - rem[s][r]) / (pl.budgets[s][r] or 1))
                pl.failure = (f"{u.cu} ({u.kernel}) finds no room in any SLR of {pl.board}: "
                              f"{r.upper()} {_num(need[r])} > {_num(rem[s][r])} left in {s} "
                              f"(of {_num(pl.budgets[s][r])}), the SLR with the most room")
                return pl
            s = max(room, key=lambda s: _room({r: rem[s][r] - need[r] for r in RESOURCES},
                                              pl.budgets[s]))
            for r in RESOURCES:
                rem[s][r] -= need[r]
                pl.used[s][r] += need[r]
            pl.where[u.cu] = [s]
            continue
        # bigger than every SLR: the fewest adjacent SLRs that hold it.  The SLR that comes
        # closest names the resources and the geometry that would fit
        widest = max(pl.slrs, key=lambda s: min((pl.budgets[s][r] / need[r] for r in RESOURCES
                                                 if need[r]), default=1.0))
        over = [r for r in RESOURCES if need[r] > pl.budgets[widest][r]]
        span = None
        for length in range(2, len(pl.slrs) + 1):
            fits = []
            for i in range(len(pl.slrs) - length + 1):
                group = pl.slrs[i:i + length]
                left = {r: sum(rem[s][r] for s in group) for r in RESOURCES}
                if all(need[r] <= left[r] for r in RESOURCES):
                    total = {r: sum(pl.budgets[s][r] for s in group) for r in RESOURCES}
                    fits.append((_room({r: left[r] - need[r] for r in RESOURCES}, total), group))
            if fits:
                span = max(fits, key=lambda f: f[0])[1]
                break
        r0 = over[0]
        hint = (f"{u.cu} ({u.kernel}) is bigger than any SLR of {pl.board}: "
                f"{r0.upper()} {_num(need[r0])} > {_num(pl.budgets[widest][r0])} ({widest}: "
                f"{_num(pl.available[widest][r0])} less {margin:.0%}); a geometry with <= "
                f"{int(100 * min(pl.budgets[widest][r] / need[r] for r in over))} % of its "
                + "/".join(r.upper() for r in over) + " would fit one SLR")
        if span is None:
            left = {r: sum(rem[s][r] for s in pl.slrs) for r in RESOURCES}
            r = max(RESOURCES, key=lambda r: need[r] - left[r])
            pl.failure = (f"{u.cu} ({u.kernel}) does not fit {pl.board} even across all its "
                          f"SLRs: {r.upper()} {_num(need[r])} > {_num(left[r])} left; {hint}")
            return pl
        for r in RESOURCES:
            left = sum(rem[s][r] for s in span)
            for s in span:
                share = need[r] * rem[s][r] / left if left else 0
                rem[s][r] -= share
                pl.used[s][r] += share
        pl.where[u.cu] = list(span)
        pl.spanning.append(f"{hint}; linked without slr=, across {'+'.join(span)}")
    for u in units:
        if u.usage is None:        # no figures: put it where most room is left, unchecked
            s = max(pl.slrs, key=lambda s: _room(rem[s], pl.budgets[s]))
            pl.where[u.cu] = [s]
            pl.unchecked.append(u.cu)
    _assign_banks(pl, units, bank_of_slr)
    return pl


def _assign_banks(pl, units, bank_of_slr):
    """Each unit's ports take the banks of its SLR(s) in turn (a turn counter per set of banks,
    so that units sharing an SLR spread over its banks); an SLR without a bank of its own uses
    its nearest neighbours'.  A bank asked for by name is kept; one more than one SLR away from
    the unit is reported."""
    index = {s: i for i, s in enumerate(pl.slrs)}
    home = {b: s for s, banks in bank_of_slr.items() for b in banks}
    turn = {}
    for u in units:
        where = pl.where[u.cu]
        pool = [b for s in where for b in bank_of_slr[s]]
        distance = 1
        while not pool and distance < len(pl.slrs):
            near = {pl.slrs[i] for s in where for i in (index[s] - distance, index[s] + distance)
                    if 0 <= i < len(pl.slrs)}
            pool = [b for s in pl.slrs if s in near for b in bank_of_slr[s]]
            distance += 1
        key = tuple(pool)
        banks = {}
        for bundle in u.bundles:
            if bundle in u.overrides:
                bank = u.overrides[bundle]
                s = home.get(bank)
                if s is not None and min(abs(index[s] - index[w]) for w in where) > 1:
                    pl.warnings.append(f"{u.cu}.{bundle} on {bank} ({s}), more than one SLR "
                                       f"from {'+'.join(where)}: every beat crosses two SLR "
                                       "boundaries")
            else:
                n = turn.get(key, 0)
                bank, turn[key] = pool[n % len(pool)], n + 1
            banks[bundle] = bank
        pl.banks[u.cu] = banks


def fit_table(pl):
    """The per-SLR fit table of a placement: per SLR the units placed there and, per resource,
    used / what kernels may use there (the SLR's figure less the margin) and the percentage."""
    cols = RESOURCES
    head = f"{'SLR':<6}{'units':<34}" + "".join(f"{c.upper():>22}" for c in cols) + "  banks"
    lines = [f"{pl.xclbin} on {pl.board}: per SLR, used / available less {pl.margin:.0%} "
             f"({pl.source})", head, "-" * len(head)]
    for s in pl.slrs:
        names = [cu + ("*" if len(w) > 1 else "") for cu, w in pl.where.items() if s in w]
        cells = []
        for r in cols:
            b, used = pl.budgets[s][r], pl.used[s][r]
            pct = f"{100 * used / b:3.0f}%" if b else "   -"
            cells.append(f"{_num(used)}/{_num(b)} {pct}".rjust(22))
        banks = sorted({bank for cu in names for bank in pl.banks.get(cu.rstrip("*"), {}).values()})
        lines.append(f"{s:<6}{(', '.join(names) or '-'):<34}" + "".join(cells)
                     + "  " + (", ".join(banks) or "-"))
    if any(len(w) > 1 for w in pl.where.values()):
        lines.append("* spans SLRs (no slr=), charged to them in proportion to their room")
    if pl.unchecked:
        lines.append("not checked (no resource figures): " + ", ".join(pl.unchecked))
    return "\n".join(lines)
