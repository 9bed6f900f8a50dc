"""docs/benchmarks.md and the README's headline table are what bench/benchmarks_doc.py makes of
the bench records, and the records agree with the figures the link plan uses."""

import importlib.util
import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generator():
    spec = importlib.util.spec_from_file_location("benchmarks_doc",
                                                  ROOT / "bench" / "benchmarks_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_and_readme_are_generated_from_the_records(capsys):
    assert generator().main(["--check"]) == 0, capsys.readouterr().err


def test_readme_headline_figures_come_from_the_records():
    module = generator()
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index(module.BEGIN):readme.index(module.END)]
    rows = [line for line in table.splitlines() if line.startswith("| ")][2:]
    assert 1 <= len(rows) <= 10
    assert [row.split(" | ")[1] for row in rows] == [figure for _, figure, _ in module.headlines()]


def test_check_fails_on_a_stale_readme(tmp_path, monkeypatch):
    module = generator()
    stale = tmp_path / "README.md"
    figure = module.headlines()[0][1]
    assert figure in (ROOT / "README.md").read_text()
    stale.write_text((ROOT / "README.md").read_text().replace(figure, "2" + figure))
    monkeypatch.setattr(module, "README", stale)
    assert module.main(["--check"]) == 1


def test_resource_records_agree_with_the_link_plans_figures():
    area = tomllib.loads((ROOT / "hw" / "vitis" / "kernel_area.toml").read_text())
    rows = json.loads((ROOT / "bench" / "results" / "resources.json").read_text())["rows"]
    assert {row["kernel"] for row in rows} == set(area)
    for row in rows:
        for resource in ("lut", "ff", "bram36", "dsp"):
            assert row[resource] == area[row["kernel"]][resource], (row["kernel"], resource)
        assert row["uram"] == area[row["kernel"]].get("uram", 0), row["kernel"]
