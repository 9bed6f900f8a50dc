"""dist/search --detection and --estimator (SPEC 3 "Estimators", "Detection"): unrelated
genomes print nothing shared (J = C = 0, Mash distance 1, ANI 0) in every format, related ones
print their unchanged estimates, by either estimator; the default (the joint MLE) and
--estimator mle against the golden joint MLE, --estimator hll against the golden hll estimator;
one-line errors."""

import math

import numpy as np
import pytest

from host.sketchfile import read_sketches
from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import joint_mle
from tests.metric_checks import golden_matrix, matrix_text
from tests.cli_helpers import run_status

K, P = 21, 10
PARAMS = HllParams(P, 4)
RELATED = {("base.fa", "mutant.fa"), ("base.fa", "half.fa"), ("mutant.fa", "half.fa")}


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """A base genome, a 1 % mutant, its first half, and three unrelated random genomes."""
    directory = tmp_path_factory.mktemp("detection")
    rng = np.random.default_rng(2026)
    letters = np.frombuffer(b"ACGT", np.uint8)
    base = letters[rng.integers(0, 4, 20000)]
    mutant = base.copy()
    mutate = rng.random(base.size) < 0.01
    mutant[mutate] = letters[rng.integers(0, 4, mutate.sum())]
    texts = {"base.fa": base, "mutant.fa": mutant, "half.fa": base[:10000]}
    for i, size in enumerate((20000, 30000, 8000)):
        texts[f"other{i}.fa"] = letters[rng.integers(0, 4, size)]
    paths = []
    for name, text in texts.items():
        path = directory / name
        path.write_bytes(b">" + name.encode() + b"\n" + text.tobytes() + b"\n")
        paths.append(path)
    sketch = directory / "all.sketch"
    assert run_status("sketch", *paths, "--k", K, "--index-bits", P, "-o", sketch) == 0
    sketches = read_sketches(sketch)
    return {"paths": paths, "sketch": sketch, "names": sketches.names,
            "registers": sketches.registers()}


def matrix(path) -> tuple[list[str], np.ndarray]:
    lines = [line.split("\t") for line in path.read_text().splitlines()
             if not line.startswith("#")]
    return [row[0] for row in lines], np.array([[float(v) for v in row[1:]] for row in lines])


def related(a: str, b: str) -> bool:
    return a == b or (a, b) in RELATED or (b, a) in RELATED


@pytest.mark.parametrize("estimator", [None, "hll", "mle"])
@pytest.mark.parametrize("metric,nothing", [("jaccard", 0.0), ("containment", 0.0),
                                            ("ani", 0.0), ("mash", 1.0)])
def test_unrelated_pairs_print_nothing_shared(tmp_path, collection, metric, nothing, estimator):
    default, raw = tmp_path / "default.tsv", tmp_path / "raw.tsv"
    chosen = [] if estimator is None else ["--estimator", estimator]
    assert run_status("dist", collection["sketch"], "--metric", metric, *chosen,
                      "-o", default) == 0
    assert run_status("dist", collection["sketch"], "--metric", metric, "--detection", "0",
                      *chosen, "-o", raw) == 0
    names, floored = matrix(default)
    _, estimates = matrix(raw)
    noise = 0
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if related(a, b):
                assert floored[i, j] == estimates[i, j] and floored[i, j] != nothing
            else:
                assert floored[i, j] == nothing
                noise += estimates[i, j] != nothing
    assert noise > 0  # without detection, some unrelated pair gets a value from noise
    # the default estimator is the joint MLE (SPEC 3)
    assert f"estimator={estimator or 'mle'} detection=3.0" in default.read_text().splitlines()[0]


@pytest.mark.parametrize("z", ["0", "1.5", "3", "8"])
@pytest.mark.parametrize("metric", ["jaccard", "containment"])
def test_matrix_equals_golden_with_detection(tmp_path, collection, metric, z):
    out = tmp_path / "m.tsv"
    assert run_status("dist", collection["sketch"], "--estimator", "hll", "--metric", metric,
                      "--detection", z, "-o", out) == 0
    expected = golden_matrix(collection["registers"], PARAMS, metric, K, z=float(z))
    assert out.read_text().splitlines()[2:] == matrix_text(expected, collection["names"])


def test_phylip_and_edges_print_the_same_floor(tmp_path, collection):
    phylip, edges = tmp_path / "d.phylip", tmp_path / "e.tsv"
    assert run_status("dist", collection["sketch"], "--metric", "mash", "--format", "phylip",
               "-o", phylip) == 0
    assert run_status("dist", collection["sketch"], "--metric", "ani", "--format", "edges",
               "-o", edges) == 0
    rows = [line.split() for line in phylip.read_text().splitlines()[1:]]
    for row in rows:
        for name, value in zip(collection["names"], row[1:]):
            assert (float(value) == 1.0) == (not related(row[0], name))
    for a, b, value in (line.split("\t") for line in edges.read_text().splitlines()[2:]):
        assert (float(value) == 0.0) == (not related(a, b))


def test_threshold_keeps_only_pairs_above_detection(tmp_path, collection):
    default, raw = tmp_path / "default.tsv", tmp_path / "raw.tsv"
    for out, z in ((default, "3"), (raw, "0")):
        assert run_status("dist", collection["sketch"], "--format", "edges", "--threshold", "0.001",
                   "--detection", z, "-o", out) == 0
    pairs = {tuple(line.split("\t")[:2]) for line in default.read_text().splitlines()[2:]}
    raw_pairs = {tuple(line.split("\t")[:2]) for line in raw.read_text().splitlines()[2:]}
    assert pairs == {pair for pair in raw_pairs if related(*pair)}
    assert raw_pairs - pairs  # noise pairs were listed without detection


@pytest.fixture(scope="module")
def golden_joint(collection):
    """The golden joint MLE of every ordered pair."""
    registers = collection["registers"]
    return {(i, j): joint_mle(registers[i].tolist(), registers[j].tolist(), PARAMS)
            for i in range(len(registers)) for j in range(len(registers)) if i != j}


def mle_expected(golden_joint, n: int, kind: str, z: float = 3.0) -> np.ndarray:
    out = np.eye(n)
    for (i, j), found in golden_joint.items():
        value = found.jaccard() if kind == "jaccard" else found.containment()
        out[i, j] = value if found.shared > 0 and found.likelihood_ratio >= z * z else 0.0
    return out


@pytest.fixture(scope="module")
def golden_mle(collection, golden_joint):
    n = len(collection["registers"])
    return {kind: mle_expected(golden_joint, n, kind) for kind in ("jaccard", "containment")}


@pytest.mark.parametrize("z", ["0", "1.5", "8"])
@pytest.mark.parametrize("metric", ["jaccard", "containment"])
def test_default_matrix_is_the_golden_mle_with_detection(tmp_path, collection, golden_joint,
                                                         metric, z):
    """No --estimator: the joint MLE, against the golden model, at every Z."""
    out = tmp_path / "m.tsv"
    assert run_status("dist", collection["sketch"], "--metric", metric, "--detection", z,
                      "-o", out) == 0
    _, values = matrix(out)
    expected = mle_expected(golden_joint, len(collection["names"]), metric, float(z))
    # 6 significant digits printed; sw within 1e-6 of the union of golden (SPEC 3)
    assert np.allclose(values, expected, rtol=2e-5, atol=1e-5)
    assert ((values > 0) == (expected > 0)).all()


@pytest.mark.parametrize("estimator", [None, "mle"])
@pytest.mark.parametrize("metric", ["jaccard", "containment", "ani"])
def test_mle_matrix_equals_golden(tmp_path, collection, golden_mle, metric, estimator):
    out = tmp_path / "m.tsv"
    chosen = [] if estimator is None else ["--estimator", estimator]
    assert run_status("dist", collection["sketch"], *chosen, "--metric", metric, "-o", out) == 0
    names, values = matrix(out)
    base = golden_mle["containment" if metric == "containment" else "jaccard"]
    if metric == "ani":
        d = np.where(base > 0, np.minimum(-np.log(2 * np.maximum(base, 1e-300) / (1 + base)) / K,
                                          1.0), 1.0)
        base = 100 * (1 - d)
    # 6 significant digits printed; sw within 1e-6 of the union of golden (SPEC 3)
    assert np.allclose(values, base, rtol=2e-5, atol=1e-5)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert (values[i, j] > 0) == related(a, b)
    assert "estimator=mle" in out.read_text().splitlines()[0]


def test_search_with_mle_equals_dist_rows(tmp_path, collection, golden_mle):
    out = tmp_path / "s.tsv"
    queries = collection["paths"][2:4]  # half.fa, other0.fa: sequence files, sketched like --db
    assert run_status("search", *queries, "--db", collection["sketch"], "--estimator", "mle",
               "--metric", "containment", "-o", out) == 0
    names = collection["names"]
    for line in out.read_text().splitlines()[2:]:
        query, reference, value = line.split("\t")
        expected = golden_mle["containment"][names.index(query), names.index(reference)]
        assert math.isclose(float(value), expected, rel_tol=2e-5, abs_tol=1e-5)


@pytest.mark.parametrize("estimator", [None, "hll"])
def test_search_floors_unrelated_references(tmp_path, collection, estimator):
    out = tmp_path / "s.tsv"
    chosen = [] if estimator is None else ["--estimator", estimator]
    assert run_status("search", collection["paths"][3], "--db", collection["sketch"],
                      "--metric", "ani", *chosen, "-o", out) == 0
    values = {line.split("\t")[1]: float(line.split("\t")[2])
              for line in out.read_text().splitlines()[2:]}
    assert values["other0.fa"] == 100.0
    assert all(v == 0.0 for name, v in values.items() if name != "other0.fa")


def test_mle_top_is_the_sorted_golden_row(tmp_path, collection, golden_mle):
    out = tmp_path / "top.tsv"
    assert run_status("dist", collection["sketch"], "--estimator", "mle", "--format", "edges",
               "--top", "1", "-o", out) == 0
    names = collection["names"]
    for line in out.read_text().splitlines()[2:]:
        a, b, _ = line.split("\t")
        row = golden_mle["jaccard"][names.index(a)].copy()
        row[names.index(a)] = -1
        assert names.index(b) == int(np.argmax(row))


@pytest.mark.parametrize("value,message", [("-1", "must be from 0 to 100 standard deviations"),
                                           ("abc", "not a number: 'abc'"),
                                           ("nan", "must be from 0 to 100")])
def test_bad_detection_is_one_line(tmp_path, collection, capsys, value, message):
    out = tmp_path / "never.tsv"
    assert run_status("dist", collection["sketch"], "--detection", value, "-o", out) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--detection" in err and message in err
    assert not out.exists()


@pytest.mark.parametrize("estimator", [None, "mle"])
def test_sim_backend_with_mle_estimates_on_the_host(tmp_path, collection, capfd, estimator):
    """The kernels return union features only: sim says so in one line and prints what sw
    prints (sketch inputs, so no kernel runs), by default too."""
    outputs = {}
    chosen = [] if estimator is None else ["--estimator", estimator]
    for backend in ("sw", "sim"):
        out = tmp_path / f"{backend}.tsv"
        assert run_status("dist", collection["sketch"], *chosen, "--backend", backend,
                          "-o", out) == 0
        outputs[backend] = out.read_bytes()
        err = capfd.readouterr().err
        assert (err.splitlines() == [] if backend == "sw" else
                err.splitlines() == ["note: --estimator mle: the pairs are estimated on the host "
                                     "from the sketches; the similarity kernel returns union "
                                     "features (Z, nz) only, not the register pairs the joint "
                                     "MLE needs"])
    assert outputs["sim"] == outputs["sw"]


def p_value_lines(path) -> list[tuple[str, str, float, float]]:
    lines = path.read_text().splitlines()
    assert lines[1].endswith("\tp_value")
    return [(a, b, float(v), float(p)) for a, b, v, p in
            (line.split("\t") for line in lines[2:])]


def without_scipy(monkeypatch):
    """scipy, and its modules loaded earlier, unimportable: the software set-up has none (only
    the plot extra installs it)."""
    import sys
    for module in [name for name in sys.modules if name == "scipy" or name.startswith("scipy.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "scipy", None)


@pytest.mark.parametrize("estimator", ["hll", "mle"])
def test_pvalue_column_is_the_golden_p_value(tmp_path, collection, estimator, monkeypatch):
    from kmerspec.golden.hll import estimate
    from kmerspec.golden.hll_joint import hll_p_value, mle_p_value
    without_scipy(monkeypatch)
    out = tmp_path / "e.tsv"
    assert run_status("dist", collection["sketch"], "--format", "edges", "--pvalue", "--estimator",
               estimator, "-o", out) == 0
    names, registers = collection["names"], collection["registers"]
    lines = p_value_lines(out)
    assert len(lines) == len(names) * (len(names) - 1) // 2
    for a, b, value, p in lines:
        x, y = (registers[names.index(g)].tolist() for g in (a, b))
        if estimator == "hll":
            union = estimate([max(i, j) for i, j in zip(x, y)], PARAMS)
            expected = hll_p_value(estimate(x, PARAMS), estimate(y, PARAMS), union, PARAMS)
        else:
            expected = mle_p_value(joint_mle(x, y, PARAMS))
        assert p == pytest.approx(expected, rel=5e-3, abs=1e-300)
        assert (value > 0) == (p <= 0.00135) == related(a, b)


def test_search_pvalue_column(tmp_path, collection, monkeypatch):
    without_scipy(monkeypatch)
    out = tmp_path / "s.tsv"
    assert run_status("search", collection["paths"][0], "--db", collection["sketch"], "--pvalue",
               "-o", out) == 0
    for _, reference, value, p in p_value_lines(out):
        assert (value > 0) == (p <= 0.00135) == related("base.fa", reference)


def test_pvalue_needs_edges(tmp_path, collection, capsys):
    out = tmp_path / "never.tsv"
    assert run_status("dist", collection["sketch"], "--pvalue", "-o", out) == 2
    err = capsys.readouterr().err
    assert err == ("error: --pvalue: adds a column to --format edges lines; the tsv, phylip and "
                   "newick outputs have no room for it\n")
    assert not out.exists()


@pytest.fixture(scope="module")
def switch_sized(tmp_path_factory):
    """24 unrelated random genomes of 41 to 57 kb (2.5 m to 3.5 m distinct 21-mers at p = 14,
    beside linear counting's switch to the raw formula) and their sketch file."""
    directory = tmp_path_factory.mktemp("switch")
    rng = np.random.default_rng(53)
    letters = np.frombuffer(b"ACGT", np.uint8)
    paths = []
    for i, size in enumerate(rng.integers(41_000, 57_000, 24)):
        path = directory / f"g{i:02d}.fa"
        path.write_bytes(b">g\n" + letters[rng.integers(0, 4, size)].tobytes() + b"\n")
        paths.append(path)
    sketch = directory / "all.sketch"
    assert run_status("sketch", *paths, "--k", 21, "-o", sketch) == 0
    return paths, sketch


def test_hll_detection_beside_the_switch_in_every_path(tmp_path, switch_sized):
    """dist --estimator hll on genomes beside the switch (issue 53: the old rule reported
    2.7 % of such pairs related, 20x its level): the matrix, the edges, --top and search
    report no unrelated pair, and --pvalue at --detection 0 is the rule's p-value (the
    smallest above P(N >= 3)); the raw estimates are noise that the old floor passed."""
    paths, sketch = switch_sized
    outputs = {}
    for name, options in {"matrix": [], "edges": ["--format", "edges"],
                          "top": ["--format", "edges", "--top", "3"]}.items():
        out = tmp_path / f"{name}.tsv"
        assert run_status("dist", sketch, "--estimator", "hll", *options, "-o", out) == 0
        outputs[name] = out.read_text().splitlines()[1:]
    _, values = matrix(tmp_path / "matrix.tsv")
    assert (values[~np.eye(len(paths), dtype=bool)] == 0).all()
    assert all(float(line.split("\t")[2]) == 0 for line in outputs["edges"][1:])
    assert all(float(line.split("\t")[2]) == 0 for line in outputs["top"][1:])
    out = tmp_path / "search.tsv"
    assert run_status("search", *paths[:6], "--db", sketch, "--estimator", "hll", "-o",
                      out) == 0
    assert all(float(line.split("\t")[2]) in (0.0, 1.0) for line in
               out.read_text().splitlines()[2:])
    raw = tmp_path / "raw.tsv"
    assert run_status("dist", sketch, "--estimator", "hll", "--format", "edges", "--pvalue",
                      "--detection", "0", "-o", raw) == 0
    rows = [line.split("\t") for line in raw.read_text().splitlines()[2:]]
    floor = 3 * 1.04 / math.sqrt(2 ** 14)
    assert sum(float(row[2]) >= floor for row in rows) >= 3  # the old rule's false hits
    assert min(float(row[3]) for row in rows) > 0.00135
