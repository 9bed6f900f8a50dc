"""dist --metric containment|ani, dist --top K and search --db, by the default estimator (the
joint MLE) and by --estimator hll: every value against the golden model pair by pair, every
--top row against a plain sort of the full matrix, every search row against the full matrix of
dist; and one-line errors with nothing written."""

import numpy as np
import pytest

from host.sketchfile import read_sketches
from kmerspec.golden.hll import HllParams
from tests.metric_checks import (close_to_golden, golden_matrix, matrix_text, printed_matrix,
                                 top_edges_text)
from tests.cli_helpers import run_status

METRICS = ("jaccard", "containment", "ani", "mash")


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """Nine genomes: a base with growing mutation, a half (contained in the base), an exact
    copy under another name (ties), an empty file; sketched with k=21, p=10."""
    directory = tmp_path_factory.mktemp("collection")
    rng = np.random.default_rng(17)
    base = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 4000)]
    texts = {}
    for i in range(5):
        genome = base.copy()
        mutate = rng.random(genome.size) < 0.01 * i
        genome[mutate] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, mutate.sum())]
        texts[f"g{i}.fa"] = genome.tobytes()
    texts["half.fa"] = base[:2000].tobytes()
    texts["g2copy.fa"] = texts["g2.fa"]
    texts["other.fa"] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 3000)].tobytes()
    paths = []
    for name, text in texts.items():
        (directory / name).write_bytes(b">" + name.encode() + b"\n" + text + b"\n")
        paths.append(directory / name)
    (directory / "empty.fa").write_bytes(b"")
    paths.append(directory / "empty.fa")
    sketch = directory / "all.sketch"
    assert run_status("sketch", *paths, "--k", "21", "--index-bits", "10", "-o", sketch) == 0
    sketches = read_sketches(sketch)
    return {"paths": paths, "sketch": sketch, "names": sketches.names,
            "registers": sketches.registers(), "directory": directory}


def data_lines(path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


#: the estimators of SPEC 3: the default (None: the joint MLE) and hll, given by name
ESTIMATORS = (None, "hll")


def chosen(estimator) -> list[str]:
    return [] if estimator is None else ["--estimator", estimator]


@pytest.fixture(scope="module")
def golden(collection):
    """The golden matrix of every metric by each estimator (None: the default, mle)."""
    return {(estimator, metric): golden_matrix(collection["registers"], HllParams(10, 4),
                                               metric, 21, estimator=estimator or "mle")
            for estimator in ESTIMATORS for metric in METRICS}


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("metric", METRICS)
def test_full_matrix_equals_golden(tmp_path, collection, golden, metric, estimator):
    out = tmp_path / "m.tsv"
    assert run_status("dist", collection["sketch"], "--metric", metric, *chosen(estimator),
                      "-o", out) == 0
    expected = golden[estimator, metric]
    if estimator == "hll":  # the union estimates: bit for bit
        assert data_lines(out) == matrix_text(expected, collection["names"])
    else:
        assert close_to_golden(printed_matrix(out)[1], expected, metric)
    if metric == "containment":  # asymmetric: the half is contained in the base, not back
        names = collection["names"]
        half, g0 = names.index("half.fa"), names.index("g0.fa")
        assert expected[half, g0] > 0.95 and expected[g0, half] < 0.6


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("top", [1, 3, 20])
def test_top_equals_the_sorted_rows_of_the_full_matrix(tmp_path, collection, golden, metric,
                                                       top, estimator):
    """--top K: the first K of each row of the full matrix sorted, the matrix of golden values
    (hll, bit for bit) or of the values dist prints (mle: each pair's estimate is computed once
    in one orientation, whichever end asks, so --top and the matrix agree bit for bit)."""
    out, whole = tmp_path / "top.edges", tmp_path / "whole.tsv"
    assert run_status("dist", collection["sketch"], "--metric", metric, "--format", "edges",
                      "--top", top, "--threads", 2, *chosen(estimator), "-o", out) == 0
    if estimator == "hll":
        expected = golden[estimator, metric]
    else:
        assert run_status("dist", collection["sketch"], "--metric", metric,
                          "-o", whole) == 0
        expected = printed_matrix(whole)[1]
        assert close_to_golden(expected, golden[estimator, metric], metric)
    lines = data_lines(out)
    assert lines == top_edges_text(expected, collection["names"], top, metric)
    n = len(collection["names"])
    assert len(lines) == n * min(top, n - 1)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_edges_without_threshold_list_every_pair(tmp_path, collection, golden, estimator):
    names = collection["names"]
    n = len(names)
    for metric, pairs in (("jaccard", n * (n - 1) // 2), ("containment", n * (n - 1))):
        out, whole = tmp_path / f"{metric}.edges", tmp_path / f"{metric}.tsv"
        assert run_status("dist", collection["sketch"], "--metric", metric, "--format", "edges",
                          *chosen(estimator), "-o", out) == 0
        assert run_status("dist", collection["sketch"], "--metric", metric, *chosen(estimator),
                          "-o", whole) == 0
        expected = golden[estimator, metric]
        printed = printed_matrix(whole)[1]
        if estimator == "hll":
            assert np.array_equal(printed, np.array([[float(f"{v:.6g}") for v in row]
                                                     for row in expected]))
        else:
            assert close_to_golden(printed, expected, metric)
        lines = data_lines(out)
        assert len(lines) == pairs
        for line in lines:
            a, b, value = line.split("\t")
            assert float(value) == printed[names.index(a), names.index(b)]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("metric", METRICS)
def test_search_equals_rows_of_the_full_matrix(tmp_path, collection, metric, estimator):
    """Queries as a sequence file and as a sketch file: every reference, best first, equals
    the query's row of dist over references and queries together."""
    directory = collection["directory"]
    query_sequence = directory / "query.fa"
    rng = np.random.default_rng(5)
    genome = bytearray((directory / "g1.fa").read_bytes().split(b"\n")[1])
    for at in rng.integers(0, len(genome), 30):
        genome[at] = ord("ACGT"[(("ACGT".index(chr(genome[at]))) + 1) % 4])
    query_sequence.write_bytes(b">query\n" + bytes(genome[:3000]) + b"\n")
    again = tmp_path / "again.fa"  # a reference under another name: a query of J = 1
    again.write_bytes((directory / "other.fa").read_bytes())
    query_sketch = tmp_path / "q.sketch"
    assert run_status("sketch", again, "--k", "21", "--index-bits", "10", "-o", query_sketch) == 0
    db = collection["sketch"]
    out = tmp_path / "hits.tsv"
    assert run_status("search", query_sequence, query_sketch, "--db", db, "--metric", metric,
                      *chosen(estimator), "-o", out) == 0
    refs = collection["names"]
    lines = data_lines(out)
    assert len(lines) == 2 * len(refs)
    # the full matrix of references and queries together
    whole = tmp_path / "whole.tsv"
    assert run_status("dist", db, query_sequence, query_sketch, "--metric", metric,
                      *chosen(estimator), "-o", whole) == 0
    header, *rows = whole.read_text().splitlines()[1:]
    columns = header.split("\t")[1:]
    matrix = {row.split("\t")[0]: dict(zip(columns, row.split("\t")[1:])) for row in rows}
    for line in lines:
        query, reference, value = line.split("\t")
        assert matrix[query][reference] == value, line
    # best first, ties in --db order, against golden values
    sketches = read_sketches(query_sketch)
    # sketch files first, then the sequence files (as dist orders its inputs)
    queries = np.concatenate([sketches.registers(),
                              read_sketches_of(tmp_path, query_sequence).registers()])
    expected = golden_matrix(queries, HllParams(10, 4), metric, 21,
                             columns=collection["registers"], estimator=estimator or "mle")
    sign = 1.0 if metric == "mash" else -1.0
    for q, name in enumerate(["again.fa", "query.fa"]):
        found = lines[q * len(refs):(q + 1) * len(refs)]
        if estimator == "hll":
            order = sorted(range(len(refs)), key=lambda r: (sign * expected[q, r], r))
            assert found == [f"{name}\t{refs[r]}\t{expected[q, r]:.6g}" for r in order]
        else:  # the printed values sorted, each close to golden's
            values = {line.split("\t")[1]: float(line.split("\t")[2]) for line in found}
            assert [line.split("\t")[1] for line in found] == sorted(
                refs, key=lambda r: (sign * values[r], refs.index(r)))
            assert close_to_golden(np.array([values[r] for r in refs]), expected[q], metric)


def read_sketches_of(tmp_path, sequence):
    out = tmp_path / "one.sketch"
    assert run_status("sketch", sequence, "--k", "21", "--index-bits", "10", "-o", out) == 0
    return read_sketches(out)


def test_search_top_and_threshold_are_prefixes_of_the_ranking(tmp_path, collection):
    db, query = collection["sketch"], collection["paths"][1]
    every, top, near, ani = (tmp_path / f"{n}.tsv" for n in ("every", "top", "near", "ani"))
    assert run_status("search", query, "--db", db, "-o", every) == 0
    assert run_status("search", query, "--db", db, "--top", 3, "-o", top) == 0
    assert run_status("search", query, "--db", db, "--threshold", 0.5, "-o", near) == 0
    assert run_status("search", query, "--db", db, "--metric", "ani", "--threshold", 95, "-o",
               ani) == 0
    ranked = data_lines(every)
    assert data_lines(top) == ranked[:3]
    passing = [line for line in ranked if float(line.split("\t")[2]) >= 0.5]
    assert data_lines(near) == passing and 1 <= len(passing) < len(ranked)
    assert all(float(line.split("\t")[2]) >= 95 for line in data_lines(ani))


def test_search_output_path_semantics(tmp_path, collection, capfd):
    """-o - is standard output, as every command."""
    assert run_status("search", collection["paths"][0], "--db", collection["sketch"], "--top", 1,
               "-o", "-") == 0
    out = capfd.readouterr().out.splitlines()
    assert out[1] == "#query\treference\tjaccard" and out[2].startswith("g0.fa\tg0.fa\t1")


@pytest.mark.parametrize("case", ["missing_db", "damaged_db", "sequence_db", "pqa_db",
                                  "option_mismatch", "sketch_mismatch", "ani_threshold",
                                  "top_and_threshold"])
def test_search_errors_are_one_line_and_write_nothing(tmp_path, collection, capsys, case):
    db, query = collection["sketch"], collection["paths"][0]
    args = ["search", query, "--db", db]
    expected = {"missing_db": "no such file", "damaged_db": "damaged sketch file",
                "sequence_db": "a FASTA/FASTQ file, not a sketch file",
                "pqa_db": "--db needs HLL sketches", "option_mismatch": "sketched with k=21",
                "sketch_mismatch": "sketched with p=12",
                "ani_threshold": "--threshold: must be an ANI in percent above 0, at most 100, not 101",
                "top_and_threshold": "not allowed with argument"}[case]
    if case == "missing_db":
        args[3] = tmp_path / "nothing.sketch"
    elif case == "damaged_db":
        args[3] = tmp_path / "cut.sketch"
        args[3].write_bytes(db.read_bytes()[:-100])
    elif case == "sequence_db":
        args[3] = query
    elif case == "pqa_db":
        args[3] = tmp_path / "pqa.sketch"
        assert run_status("sketch", "--kind", "pqa", query, "--R", 4, "--n", 2, "-o", args[3]) == 0
    elif case == "option_mismatch":
        args += ["--k", 25]
    elif case == "sketch_mismatch":
        args[1] = tmp_path / "p12.sketch"
        assert run_status("sketch", query, "--k", "21", "--index-bits", 12, "-o", args[1]) == 0
    elif case == "ani_threshold":
        args += ["--metric", "ani", "--threshold", 101]
    else:
        args += ["--top", 2, "--threshold", 0.5]
    capsys.readouterr()
    out = tmp_path / "out.tsv"
    assert run_status(*args, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert not out.exists()


@pytest.mark.parametrize("options, expected", [
    (["--format", "phylip", "--metric", "containment"], "containment is asymmetric"),
    (["--format", "tsv", "--top", "2"], "--top: gives K edges per genome, which --format tsv "
                                        "cannot hold"),
    (["--format", "phylip", "--top", "2"], "drop --format phylip (--top writes edges)"),
    (["--format", "edges", "--threshold", "1.5", "--metric", "containment"],
     "--threshold: must be a containment above 0, at most 1, not 1.5"),
    (["--format", "edges", "--threshold", "1", "--metric", "mash"],
     "--threshold: must be a Mash distance from 0, below 1, not 1"),
    (["--format", "edges", "--threshold", "0", "--metric", "ani"],
     "--threshold: must be an ANI in percent above 0, at most 100, not 0"),
    (["--format", "edges", "--threshold", "0.5", "--top", "2"], "not allowed with argument"),
    (["--format", "edges", "--top", "0"], "must be from 1"),
])
def test_dist_metric_errors(tmp_path, collection, capsys, options, expected):
    out = tmp_path / "out.tsv"
    capsys.readouterr()
    assert run_status("dist", collection["sketch"], *options, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert not out.exists()


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_search_containment_ani_and_its_aligned_fraction(tmp_path, collection, estimator):
    """--ani-from containment: 100 C^(1/k) of the smaller genome in the larger and the aligned
    fraction min/max, each pair against the golden model's estimates; --min-af zeroes the
    pairs below it; the half of the base is at ANI 100 against every relative containing it
    less its mutations."""
    from kmerspec.golden.hll import estimate
    from kmerspec.golden.hll_joint import hll_detected, joint_mle, mle_detected
    params = HllParams(10, 4)
    names, registers = collection["names"], collection["registers"]
    queries = [collection["paths"][5], collection["paths"][3]]  # half.fa, g3.fa
    rows = {}
    for min_af in ("0", "0.6"):
        out = tmp_path / f"hits{min_af}.tsv"
        assert run_status("search", *queries, "--db", collection["sketch"], "--metric", "ani",
                          "--ani-from", "containment", "--min-af", min_af, *chosen(estimator),
                          "-o", out) == 0
        lines = out.read_text().splitlines()
        assert f"ani_from=containment min_af={min_af}" in lines[0]
        assert lines[1] == "#query\treference\tani\taligned_fraction"
        rows[min_af] = {tuple(row[:2]): (float(row[2]), float(row[3]))
                        for row in (line.split("\t") for line in lines[2:])}
    for query in queries:
        q = registers[names.index(query.name)].tolist()
        for r, name in enumerate(names):
            y = registers[r].tolist()
            if estimator is None:
                found = joint_mle(q, y, params)
                shared, cx, cy = found.shared, found.card_x, found.card_y
                detected = mle_detected(found)
            else:
                cx, cy = estimate(q, params), estimate(y, params)
                union = estimate([max(a, b) for a, b in zip(q, y)], params)
                shared, detected = cx + cy - union, hll_detected(cx, cy, union, params)
            smaller, larger = min(cx, cy), max(cx, cy)
            c = min(max(shared / smaller, 0.0), 1.0) if detected and smaller > 0 else 0.0
            ani = 100 * c ** (1 / 21) if c > 0 else 0.0
            fraction = smaller / larger if larger > 0 else 0.0
            value, printed_fraction = rows["0"][query.name, name]
            assert value == pytest.approx(ani, abs=1e-3), (query.name, name)
            assert printed_fraction == pytest.approx(fraction, abs=1e-4)
            assert rows["0.6"][query.name, name][0] == (value if fraction >= 0.6 else 0.0)
    # the half inside the base and its lightly mutated copies: identity, not half of it
    assert rows["0"]["half.fa", "g0.fa"][0] >= 99.9
    assert abs(rows["0"]["half.fa", "g0.fa"][1] - 0.5) < 0.1
    assert rows["0.6"]["half.fa", "g0.fa"][0] == 0.0


@pytest.mark.parametrize("options, expected", [
    (["--ani-from", "containment"], "gives an ANI, but the metric is jaccard"),
    (["--metric", "ani", "--min-af", "0.3"], "use it with --ani-from containment"),
])
def test_search_ani_source_errors(tmp_path, collection, capsys, options, expected):
    out = tmp_path / "out.tsv"
    capsys.readouterr()
    assert run_status("search", collection["paths"][0], "--db", collection["sketch"], *options,
                      "-o", out) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert not out.exists()
