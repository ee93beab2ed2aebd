"""`render --mode kubernetes` and `--mode image` against the real schemas, promtool, golden files.

Every core resource (StatefulSet, Service, ConfigMap) is validated offline by
kubernetes-validate (strict: no unknown field) against the Kubernetes versions in
``K8S_VERSIONS``; the prometheus-operator resources (ServiceMonitor, PrometheusRule) by the
pydantic models that cloudcoil-models-prometheus-operator generates from that project's CRDs,
and must read back unchanged (a field the CRD does not know would be dropped). The
PrometheusRule's spec goes through ``promtool check rules``.

tests/data/kubernetes/ holds what `render` writes for the example host file
(tests/data/render/gpu-node.json): NAME.kubernetes[.usage].yaml and NAME.image/. After an
intended change, rewrite them with ``UPDATE_GOLDEN=1 pytest tests/test_kubernetes_manifests.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.conftest import run_cli
from tests.e2e.prom import PROMTOOL, promtool
from vllm_ledger.deploy.host import load_host
from vllm_ledger.deploy.image import WHEEL, derived_image
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.observe.alerts import rules_document
from vllm_ledger.observe.dashboard import dashboard

DATA = Path(__file__).resolve().parent / "data" / "kubernetes"
HOSTS = Path(__file__).resolve().parent / "data" / "render"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
K8S_VERSIONS = ("1.33.0", "1.37.0")  # kubernetes-validate 1.37.0 ships schemas 1.25 .. 1.37
CRD_KINDS = ("ServiceMonitor", "PrometheusRule")


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, str]:
    out = tmp_path_factory.mktemp("k8s")
    texts = {}
    for usage in (False, True):
        path = out / f"{usage}.yaml"
        rc, _, err = run_cli(
            "render",
            "--host",
            str(HOSTS / "gpu-node.json"),
            "--mode",
            "kubernetes",
            "--output",
            str(path),
            *(["--usage"] if usage else []),
        )
        assert rc == 0, err
        texts[usage] = path.read_text()
    return texts


def _check_golden(path: Path, text: str) -> None:
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed: review, then UPDATE_GOLDEN=1"


@pytest.mark.parametrize("usage", [False, True])
def test_manifests_match_golden(rendered: dict[bool, str], usage: bool) -> None:
    _check_golden(DATA / f"gpu-node.kubernetes{'.usage' if usage else ''}.yaml", rendered[usage])


def test_image_folder_matches_golden(tmp_path: Path) -> None:
    out = tmp_path / "image"
    rc, _, err = run_cli(
        "render", "--host", str(HOSTS / "gpu-node.json"), "--mode", "image", "--output", f"{out}/"
    )
    assert rc == 0, err
    assert f"docker build -t {derived_image(load_host(HOSTS / 'gpu-node.json'))}" in err
    assert "make dist" in err
    folder = DATA / "gpu-node.image"
    written = {p.name: p.read_text() for p in out.iterdir()}
    if UPDATE:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for name, text in written.items():
            (folder / name).write_text(text)
    assert written == {p.name: p.read_text() for p in folder.iterdir()}, "UPDATE_GOLDEN=1"


def test_dockerfile_installs_the_wheel_offline_on_the_host_files_image() -> None:
    text = (DATA / "gpu-node.image" / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[0] == "FROM vllm/vllm-openai:v0.32.0"
    assert f"COPY {WHEEL} /tmp/vllm-ledger/" in lines
    install = next(line for line in lines if "pip install" in line)
    assert "--no-deps" in install and "--no-index" in install
    assert WHEEL.startswith("vllm_ledger-") and WHEEL.endswith(".whl")
    assert (DATA / "gpu-node.image" / ".dockerignore").read_text().splitlines()[-2:] == [
        "*",
        f"!{WHEEL}",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("usage", [False, True])
def test_core_resources_pass_kubernetes_validate_strict(
    rendered: dict[bool, str], usage: bool, version: str
) -> None:
    kinds = []
    for doc in _docs(rendered[usage]):
        if doc["kind"] in CRD_KINDS:
            continue
        assert kubernetes_validate.validate(doc, version, strict=True) == version.rsplit(".", 1)[0]
        kinds.append(doc["kind"])
    assert kinds == ["StatefulSet", "Service", "ConfigMap"]


def test_kubernetes_validate_strict_refuses_an_unknown_field(rendered: dict[bool, str]) -> None:
    doc = _docs(rendered[True])[0]
    doc["spec"]["template"]["spec"]["containers"][1]["readOnly"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSIONS[0], strict=True)


def _crd_round_trip(doc: dict[str, Any]) -> dict[str, Any]:
    # Imported here: the models take seconds to build, paid only by the worker running these.
    from cloudcoil.models.prometheus_operator import v1 as prometheus_operator

    model = getattr(prometheus_operator, doc["kind"])
    back: dict[str, Any] = model.model_validate(doc).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    return back


@pytest.mark.parametrize("usage", [False, True])
def test_prometheus_operator_resources_match_their_crd_models(
    rendered: dict[bool, str], usage: bool
) -> None:
    docs = [d for d in _docs(rendered[usage]) if d["kind"] in CRD_KINDS]
    assert [d["kind"] for d in docs] == list(CRD_KINDS)
    for doc in docs:
        assert _crd_round_trip(doc) == doc


def test_the_crd_check_catches_an_unknown_field_and_a_bad_duration(
    rendered: dict[bool, str],
) -> None:
    monitor = next(d for d in _docs(rendered[True]) if d["kind"] == "ServiceMonitor")
    unknown = json.loads(json.dumps(monitor))
    unknown["spec"]["endpoints"][0]["scrapeEvery"] = "30s"
    assert _crd_round_trip(unknown) != unknown
    bad = json.loads(json.dumps(monitor))
    bad["spec"]["endpoints"][0]["interval"] = "30 seconds"
    with pytest.raises(ValueError):
        _crd_round_trip(bad)


def test_prometheus_rule_carries_exactly_the_observability_rules(
    rendered: dict[bool, str], tmp_path: Path
) -> None:
    rule = next(d for d in _docs(rendered[True]) if d["kind"] == "PrometheusRule")
    assert rule["spec"] == rules_document()
    # every rule, as observability --alerts full writes them (its default is the first three)
    rc, _, err = run_cli("observability", "--output", str(tmp_path / "stack"), "--alerts", "full")
    assert rc == 0, err
    assert rule["spec"] == yaml.safe_load((tmp_path / "stack" / "alerts.yml").read_text())


@pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool is not installed")
def test_prometheus_rule_spec_passes_promtool(rendered: dict[bool, str], tmp_path: Path) -> None:
    rule = next(d for d in _docs(rendered[True]) if d["kind"] == "PrometheusRule")
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule["spec"]))
    r = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout + r.stderr


def test_dashboard_configmap_is_the_dashboard(rendered: dict[bool, str]) -> None:
    cm = next(d for d in _docs(rendered[True]) if d["kind"] == "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = cm["data"].values()
    assert json.loads(text) == dashboard(32768)  # the host file's max_model_len


def test_a_folder_gets_one_file_per_resource_with_the_same_documents(
    rendered: dict[bool, str], tmp_path: Path
) -> None:
    out = tmp_path / "k8s"
    rc, _, err = run_cli(
        "render", "--host", str(HOSTS / "gpu-node.json"), "--mode", "kubernetes", "--usage",
        "--output", f"{out}/",
    )  # fmt: skip
    assert rc == 0, err
    files = sorted(out.iterdir())
    assert len(files) == 5 and all(p.suffix == ".yaml" for p in files)
    docs = [doc for p in files for doc in _docs(p.read_text())]
    assert sorted(docs, key=json.dumps) == sorted(_docs(rendered[True]), key=json.dumps)
    assert "kubectl apply -f" in err


def test_api_server_count_moves_the_writers_and_the_exporter_together(tmp_path: Path) -> None:
    """VLLM_LEDGER_WRITERS is the API server count, always; the exporter is told no count of
    its own (it serves vllm_ledger_writers_expected from what each writer recorded, which is
    VLLM_LEDGER_WRITERS), and the alert compares the two gauges, so nothing can drift."""
    data = json.loads((HOSTS / "gpu-node.json").read_text())
    seen = {}
    for count in (3, 8):
        data["api_server_count"] = count
        host_file = tmp_path / f"host{count}.json"
        host_file.write_text(json.dumps(data))
        out = tmp_path / f"{count}.yaml"
        rc, _, err = run_cli(
            "render", "--host", str(host_file), "--mode", "kubernetes", "--usage",
            "--output", str(out),
        )  # fmt: skip
        assert rc == 0, err
        sts = _docs(out.read_text())[0]
        vllm, exporter = sts["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in vllm["env"]}
        args = vllm["args"]
        assert env["VLLM_LEDGER_WRITERS"] == str(count)
        assert args[args.index("--api-server-count") + 1] == str(count)
        assert "env" not in exporter
        assert not any(str(count) == a for a in exporter["args"])
        seen[count] = (env, exporter)
    assert seen[3][1] == seen[8][1]  # the sidecar is the same: it reads the count from the ledger
    rules = {r["alert"]: r["expr"] for r in rules_document()["groups"][0]["rules"]}
    assert rules["LedgerWriterMissing"].startswith(
        "(vllm_ledger_writers_expected - vllm_ledger_writers_alive)"
    )


def test_no_image_in_the_host_file_is_one_line(tmp_path: Path) -> None:
    rc, _, err = run_cli(
        "render", "--host", str(HOSTS / "cpu-bare.json"), "--mode", "kubernetes", "--usage",
        "--output", str(tmp_path / "x.yaml"),
    )  # fmt: skip
    assert rc == 2
    assert err.count("\n") == 1 and "image: required in kubernetes mode" in err
    assert not (tmp_path / "x.yaml").exists()


def test_image_mode_needs_a_folder_and_takes_no_ledger_flags(tmp_path: Path) -> None:
    host = str(HOSTS / "gpu-node.json")
    rc, _, err = run_cli(
        "render", "--host", host, "--mode", "image", "--output", str(tmp_path / "f")
    )
    assert rc == 2 and "--mode image writes a folder" in err
    rc, _, err = run_cli(
        "render", "--host", host, "--mode", "image", "--usage", "--output", f"{tmp_path}/i/"
    )
    assert rc == 2 and "--usage and --tz" in err
    assert list(tmp_path.iterdir()) == []


def test_manifests_are_the_module_output(rendered: dict[bool, str]) -> None:
    host = load_host(HOSTS / "gpu-node.json")
    assert _docs(rendered[True]) == [m.doc for m in manifests(host, usage=True)]


def test_each_file_written_has_its_wrote_line(tmp_path: Path) -> None:
    out = tmp_path / "k8s"
    rc, stdout, err = run_cli(
        "render", "--host", str(HOSTS / "gpu-node.json"), "--mode", "kubernetes", "--usage",
        "--output", f"{out}/",
    )  # fmt: skip
    assert (rc, stdout) == (0, "")
    lines = err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        f"wrote {out / m.filename}" for m in manifests(load_host(HOSTS / "gpu-node.json"))
    ]
    assert lines[-1].endswith(f"kubectl apply -f {out}")
