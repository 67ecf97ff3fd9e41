"""Tests of fairshare.sim.catalog.files: named catalogs, catalog files (format, validation, merging), the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fairshare
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import CATALOG_FILES, CATALOGS, DATA_DIR, load_catalog
from fairshare.sim.catalog.files import FORMAT

R50 = "ResNet-50 (batch size 64)"


def test_data_dir_is_the_package_data() -> None:
    assert DATA_DIR == Path(fairshare.__file__).resolve().parent / "data"
    assert all((DATA_DIR / name).is_file() for name in CATALOG_FILES.values())
    for name in CATALOG_FILES.values():
        assert json.loads((DATA_DIR / name).read_text())["format"] == FORMAT == "fairshare-catalog/1"
    assert all(set(parts) <= set(CATALOG_FILES) for parts in CATALOGS.values())


def test_named_catalogs_load() -> None:
    for name in [*CATALOGS, *CATALOG_FILES]:
        assert len(load_catalog(name).models) > 0
    assert load_catalog("h200").gpu_types == ("H200",)
    assert load_catalog() is load_catalog("default")                     # cached, immutable


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"name": "nope"}, r"`name` = 'nope': neither a known catalog"),
    ({"name": []}, r"`name` = \[\]: no catalog given"),
    ({"derive": ["magic"]}, r"`derive` = 'magic': unknown derivation"),
    ({"name": "gavel", "derive": ["gavel-on-h200"]}, r"`derive` = 'gavel-on-h200': needs H200"),
    ({"gpu_types": "V100"}, r"`gpu_types` = 'V100': must be a sequence"),
])
def test_load_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        load_catalog(**kwargs)


def _write_catalog(path: Path, **changes: object) -> Path:
    doc = {"format": "fairshare-catalog/1", "name": "a100-test", "kind": "measured",
           "source": {"description": "made up for a test"}, "gpu_types": ["A100"], "models": [R50, "bert"],
           "alone": [{"model": R50, "scale": 1, "A100": 10.0}, {"model": "bert", "scale": 1, "A100": 5.0}],
           "pairs": [{"a": R50, "b": "bert", "scale": 1, "A100": [6.0, 4.0]}]}
    doc.update(changes)
    path.write_text(json.dumps(doc))
    return path


def test_user_catalog_file_merges_with_default(tmp_path: Path) -> None:
    path = _write_catalog(tmp_path / "a100.json")
    cat = load_catalog(["default", path])
    assert cat.gpu_types[-1] == "A100" and cat.models[-1] == "bert"
    assert cat.alone_throughput(R50, 1, "A100") == 10.0 and cat.alone_throughput(R50, 1, "V100") > 4
    assert cat.pair_throughput("bert", R50, "A100") == (4.0, 6.0)
    assert cat.provenance("bert", 1, "A100").name == "a100-test"
    jobs, gpu, tput = cat.colocation_candidates([R50, "bert"], [1, 1], ["V100", "A100"])
    assert jobs.tolist() == [[0, 1]] and gpu.tolist() == [1] and tput.tolist() == [[6.0, 4.0]]


@pytest.mark.parametrize(("changes", "match"), [
    ({"format": "x"}, r"a100.json: format` = 'x'"),
    ({"kind": "guessed"}, r"a100.json: kind` = 'guessed'"),
    ({"source": {}}, r"a100.json: source.description"),
    ({"models": []}, r"a100.json: models` = \[\]"),
    ({"alone": [{"model": "gpt5", "scale": 1, "A100": 1.0}]}, r"alone\[0\].model` = 'gpt5'"),
    ({"alone": [{"model": R50, "scale": 0, "A100": 1.0}]}, r"alone\[0\].scale` = 0"),
    ({"alone": [{"model": R50, "scale": 1, "A100": -1.0}]}, r"alone\[0\].A100` = -1.0"),
    ({"alone": [{"model": R50, "scale": 1, "H100": 1.0}]}, r"alone\[0\].H100` = 1.0: not a GPU type"),
    ({"pairs": [{"a": R50, "b": "bert", "scale": 1, "A100": [1.0]}]}, r"pairs\[0\].A100` = \[1.0\]"),
])
def test_malformed_catalog_file(tmp_path: Path, changes: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        load_catalog(_write_catalog(tmp_path / "a100.json", **changes))


def test_duplicate_entry_across_parts(tmp_path: Path) -> None:
    path = _write_catalog(tmp_path / "v100.json", gpu_types=["V100"],
                          alone=[{"model": R50, "scale": 1, "V100": 1.0}], pairs=[])
    with pytest.raises(InvalidInputError, match=r"v100.json: alone` = .*already given"):
        load_catalog(["gavel", path])



def test_merge_keeps_first_seen_order_and_sources(tmp_path: Path) -> None:
    path = _write_catalog(tmp_path / "a100.json")
    cat = load_catalog([path, "h200"])
    assert cat.gpu_types == ("A100", "H200") and cat.models[:2] == (R50, "bert")
    assert [s.name for s in cat.sources] == ["a100-test", "h200"]
    assert cat.alone_source.max() == 1 and cat.provenance("cyclegan", 1, "H200").name == "h200"


def test_cache_is_keyed_by_every_argument(tmp_path: Path) -> None:
    path = _write_catalog(tmp_path / "a100.json")
    assert load_catalog(path) is load_catalog(str(path)) is load_catalog([path])
    assert load_catalog(path, gpu_types=["A100"]) is not load_catalog(path)
    assert load_catalog(derive=["gavel-on-h200"]) is not load_catalog()
    assert load_catalog(derive="gavel-on-h200") is load_catalog(derive=("gavel-on-h200",))


@pytest.mark.parametrize(("changes", "match"), [
    ({"alone": [{"model": R50, "scale": 1, "A100": 10**400}]}, r"alone\[0\].A100` = '1000.*out of float64 range"),
    ({"alone": [{"model": R50, "scale": 1, "A100": True}]}, r"alone\[0\].A100` = True: must be a finite"),
    ({"alone": [{"model": R50, "scale": 1.5, "A100": 1.0}]}, r"alone\[0\].scale` = 1.5: must be an integer"),
    ({"alone": ["x"]}, r"alone\[0\]` = 'x': must be an object"),
    ({"alone": [{"model": R50, "scale": 1, "A100": 1.0}] * 2}, r"alone\[1\]` = .*duplicate entry"),
    ({"pairs": [{"a": R50, "b": "bert", "scale": 1, "A100": [1.0, 1.0]},
                {"a": "bert", "b": R50, "scale": 1, "A100": [1.0, 1.0]}]}, r"pairs\[1\]` = .*duplicate pair"),
    ({"gpu_types": [""]}, r"gpu_types` = \[''\]: must be a non-empty list of distinct names"),
])
def test_malformed_catalog_file_more(tmp_path: Path, changes: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        load_catalog(_write_catalog(tmp_path / "a100.json", **changes))


@pytest.mark.parametrize(("changes", "match"), [
    ({"pairz": []}, r"a100.json: pairz` = \[\]: unknown key"),  # a typo would drop every pair figure
    ({"alone": [{"model": R50, "scale": 3.0, "A100": 1.0}]}, r"alone\[0\].scale` = 3.0: must be an integer"),
    ({"alone": [{"model": R50, "scale": 2**40, "A100": 1.0}]}, r"alone\[0\].scale` = 1099511627776"),
    ({"alone": [{"model": R50, "scale": True, "A100": 1.0}]}, r"alone\[0\].scale` = True"),
    ({"gpu_types": ["scale"], "alone": [{"model": R50, "scale": 1}], "pairs": []}, r"gpu_types` = 'scale'"),
    ({"gpu_types": ["model"], "alone": [{"model": R50, "scale": 1}], "pairs": []}, r"gpu_types` = 'model'"),
    ({"pairs": [{"a": R50, "b": "bert", "scale": 2, "A100": [1.0, 1.0]}]}, r"pairs\[0\].A100` .*no alone figure"),
    ({"alone": [{"model": R50, "scale": 1, "A100": 1e300}]}, r"alone\[0\].A100` = 1e\+300: must be a finite number "
                                                            r"from 0 to 1e\+12"),
    ({"pairs": [{"a": R50, "b": "bert", "scale": 1, "A100": [1e13, 1.0]}]}, r"pairs\[0\].A100"),
])
def test_catalog_files_issue_31(tmp_path: Path, changes: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        load_catalog(_write_catalog(tmp_path / "a100.json", **changes))


def test_validate_summary_says_which_number_is_which(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fairshare.cli import main

    path = _write_catalog(tmp_path / "a100.json")
    assert main(["catalog", "validate", str(path)]) == 0
    assert "scales: 1; 2 alone figures and 1 pair figures" in capsys.readouterr().out


def test_unreadable_and_incomplete_files(tmp_path: Path) -> None:
    (tmp_path / "junk.json").write_text("{")
    with pytest.raises(InvalidInputError, match=r"`catalog file` = .*junk.json'?: cannot be read as JSON"):
        load_catalog(tmp_path / "junk.json")
    doc = json.loads(_write_catalog(tmp_path / "x.json").read_text())
    del doc["alone"]
    (tmp_path / "x.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidInputError, match=r"`x.json: alone` = None: missing"):
        load_catalog(tmp_path / "x.json")
