"""`vllm-ledger render`: the host-file schema, the rendered scripts run by bash with `vllm` and
`docker` replaced by a program that records its argv, and shellcheck over every variant."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.deploy.host import Host, load_host, parse_host
from vllm_ledger.deploy.hostschema import SCHEMA
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.errors import BadArgument, ConfigError

SHELLCHECK = "/usr/bin/shellcheck"

# Values a shell would mangle if anything were left unquoted.
NASTY = "a b 'single' \"double\" $HOME ${PATH} `id` $(id) \\ ; & | < > * ? ~ # !\nsecond line"

GPU_NODE: dict[str, Any] = {
    "model": "/models/Qwen2.5-7B-Instruct",
    "served_model_name": "qwen",
    "port": 19001,
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [0, 1],
    "tensor_parallel_size": 2,
    "api_server_count": 8,
    "max_model_len": 32768,
    "gpu_memory_utilization": 0.9,
    "max_num_seqs": 64,
    "max_num_batched_tokens": 8192,
    "dtype": "bfloat16",
    "api_key": {"file": "/srv/secrets/vllm.key"},
    "artifacts_dir": "/srv/artifacts",
    "ledger_code_dir": "/srv/vllm-ledger",
    "volumes": [{"host": "/models", "container": "/models"}],
    "extra_args": ["--enable-prefix-caching"],
    "extra_env": {"HF_HUB_OFFLINE": "1"},
}

FAKE_PROGRAM = """#!{python}
import json, os, sys
with open(os.environ["ARGV_LOG"], "a") as f:
    f.write(json.dumps({{"prog": os.path.basename(sys.argv[0]), "argv": sys.argv[1:],
                        "env": dict(os.environ)}}) + "\\n")
"""


def host_of(**changes: Any) -> Host:
    data = {**GPU_NODE, **changes}
    return parse_host({k: v for k, v in data.items() if v is not None})


def refusal(data: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        parse_host(data)
    return str(exc.value)


# ---- the schema ------------------------------------------------------------------------------


def test_minimal_host_file_takes_documented_defaults() -> None:
    host = parse_host({"model": "m"})
    props = SCHEMA["properties"]
    assert host.mode == props["mode"]["default"] == "docker"
    assert (host.port, host.host, host.api_server_count) == (8000, "0.0.0.0", 1)
    assert (host.restart, host.gpus, host.shm_size) == ("unless-stopped", "all", "16g")
    assert host.name == "vllm-8000"


def test_every_schema_key_is_documented_and_lands_in_host() -> None:
    fields = set(Host.__dataclass_fields__)
    for key, prop in SCHEMA["properties"].items():
        assert prop.get("description"), key
        if key == "$schema":
            continue
        if key == "api_key":
            assert {"api_key_env", "api_key_file"} <= fields
        elif key == "attribution":
            assert {"attribute_user", "tenant_header", "key_names"} <= fields
            for sub, sub_prop in prop["properties"].items():
                assert sub_prop.get("description"), f"attribution.{sub}"
        else:
            assert key in fields, key


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"model": "m", "colour": "red"}, "colour: unknown key (allowed: "),
        ({"model": "m", "prot": 1}, "prot: unknown key (did you mean port?)"),
        ({}, "model: required"),
        ({"model": "m", "port": 70000}, "port: 70000 is above the maximum 65535"),
        ({"model": "m", "port": "8000"}, 'port: must be an integer, not "8000"'),
        ({"model": "m", "port": True}, "port: must be an integer, not true"),
        ({"model": "m", "api_server_count": 0}, "api_server_count: 0 is below the minimum 1"),
        ({"model": "m", "gpu_memory_utilization": 0}, "gpu_memory_utilization: 0 must be above 0"),
        ({"model": "m", "gpu_memory_utilization": 1.5}, "gpu_memory_utilization: 1.5 is above"),
        ({"model": "m", "dtype": "fp7"}, 'dtype: "fp7" is not one of auto, half, float16'),
        ({"model": "m", "gpus": "some"}, 'gpus: "some" is not valid: "all", or a list'),
        ({"model": "m", "gpus": [0, -1]}, "gpus: [0, -1] is not valid"),
        ({"model": "m", "restart": "sometimes"}, 'restart: "sometimes" does not match'),
        ({"model": "-m"}, "model: \"-m\" must not start with '-'"),
        ({"model": "m", "artifacts_dir": "srv/a"}, 'artifacts_dir: "srv/a" must be an absolute'),
        (
            {"model": "m", "api_key": {"value": "sk-123"}},
            "api_key.value: unknown key (allowed: env, file; the key itself never goes in "
            "the host file)",
        ),
        ({"model": "m", "api_key": {}}, "api_key: needs one of env, file"),
        ({"model": "m", "api_key": {"env": "A", "file": "/k"}}, "api_key: give only one of"),
        ({"model": "m", "api_key": {"env": "my-key"}}, 'api_key.env: "my-key" is not an env'),
        ({"model": "m", "volumes": [{"host": "/a"}]}, "volumes[0].container: required"),
        (
            {"model": "m", "volumes": [{"host": "/a", "container": "/b", "ro": True}]},
            "volumes[0].ro: unknown key",
        ),
        ({"model": "m", "extra_args": ["--x", 3]}, "extra_args[1]: must be a string, not 3"),
        ({"model": "m", "extra_env": {"A B": "1"}}, 'extra_env.A B: "A B" is not an environment'),
        ({"model": "m", "extra_env": {"A": 1}}, "extra_env.A: must be a string, not 1"),
        (
            {"model": "m", "extra_env": {"VLLM_LEDGER_DIR": "/x"}},
            "extra_env.VLLM_LEDGER_DIR: ledger settings come from usage",
        ),
        ({"model": "m", "extra_env": {"VLLM_API_KEY": "sk"}}, "extra_env.VLLM_API_KEY: the key"),
        (
            {"model": "m", "extra_args": ["--api-server-count", "2"]},
            "extra_args[0]: --api-server-count has its own key: set api_server_count instead",
        ),
        (
            {"model": "m", "extra_args": ["--api_server_count=2"]},
            "extra_args[0]: --api-server-count has its own key",
        ),
        (
            {"model": "m", "extra_args": ["-tp", "2"]},
            "extra_args[0]: -tp has its own key: set tensor_para",
        ),
        (
            {"model": "m", "extra_args": ["--api-key", "sk"]},
            "extra_args[0]: --api-key has its own key: set api_key (never the key itself) instead",
        ),
        ({"model": "m", "extra_args": ["--headless"]}, "extra_args[0]: --headless is not allowed"),
        ({"model": "m\x00"}, "model: contains a NUL character"),
        (["model"], "host file: must be an object"),
    ],
)
def test_bad_host_files_are_refused_naming_the_key(data: Any, message: str) -> None:
    text = refusal(data)
    assert text.startswith(message), text
    assert "\n" not in text


def test_a_refusal_keeps_what_and_what_to_do_apart(tmp_path: Path) -> None:
    """The line the user reads is ``what: hint``; a caller gets the parts and the key."""
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({"model": "m", "extra_env": {"VLLM_API_KEY": "sk"}}))
    with pytest.raises(ConfigError) as exc:
        load_host(hf)
    assert str(exc.value) == (
        f"host file {hf}: extra_env.VLLM_API_KEY: the key must not be in the host file: "
        'set api_key {"env": NAME} or {"file": PATH} instead'
    )
    assert (exc.value.what, exc.value.hint, exc.value.key) == (
        f"host file {hf}: extra_env.VLLM_API_KEY: the key must not be in the host file",
        'set api_key {"env": NAME} or {"file": PATH} instead',
        "extra_env",
    )
    with pytest.raises(BadArgument) as bad:
        load_host(tmp_path / "none.json")
    assert (bad.value.what, bad.value.hint, bad.value.argument) == (
        f"host file {tmp_path / 'none.json'} not found",
        "",
        "path",
    )
    hf.write_text(json.dumps({"model": "m", "imgae": "x"}))
    with pytest.raises(ConfigError) as exc:
        load_host(hf)
    assert (str(exc.value), exc.value.hint, exc.value.key) == (
        f"host file {hf}: imgae: unknown key (did you mean image?)",
        "",
        "imgae",
    )


@pytest.mark.parametrize(
    ("changes", "mode", "usage", "message"),
    [
        ({"image": None}, "docker", False, "image: required in docker mode"),
        ({"artifacts_dir": None}, "bare", True, "artifacts_dir: required with usage"),
        (
            {"shutdown_timeout_seconds": 5},
            "bare",
            True,
            "shutdown_timeout_seconds: 5 is not above the ledger's 5 s drain limit",
        ),
        ({"artifacts_dir": "/srv/a:b"}, "docker", True, "artifacts_dir: a docker volume path"),
        (
            {"volumes": [{"host": "/a:b", "container": "/c"}]},
            "docker",
            False,
            "volumes[0].host: a docker volume path cannot contain ':'",
        ),
    ],
)
def test_refusals_that_depend_on_mode_and_usage(
    changes: dict[str, Any], mode: str, usage: bool, message: str
) -> None:
    host = host_of(**changes)
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        render_script(host, mode=mode, usage=usage)


def test_cli_refuses_with_one_line_and_exit_2(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({"model": "m", "image": "i", "prot": 8000}))
    rc, out, err = run_cli("render", "--host", str(hf), "--output", str(tmp_path / "run.sh"))
    assert (rc, out) == (2, "")
    assert err == f"vllm-ledger: error: host file {hf}: prot: unknown key (did you mean port?)\n"
    assert not (tmp_path / "run.sh").exists()
    hf.write_text('{"model": "m", "model": "n"}')
    rc, _, err = run_cli("render", "--host", str(hf), "--output", "-")
    assert (rc, err) == (2, f"vllm-ledger: error: host file {hf}: model: key given twice\n")
    hf.write_text('{"model": "m",}')
    rc, _, err = run_cli("render", "--host", str(hf), "--output", "-")
    assert rc == 2 and err.startswith(f"vllm-ledger: error: host file {hf} is not JSON: line 1")
    rc, _, err = run_cli("render", "--host", str(tmp_path / "none.json"), "--output", "-")
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: host file {tmp_path / 'none.json'} not found: "
        "pass --host HOST.json\n",
    )
    hf.write_text(json.dumps({"model": "m"}))
    rc, _, err = run_cli("render", "--host", str(hf), "--output", "-", "--usage", "--mode", "bare")
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: host file {hf}: artifacts_dir: required with "
        "--usage (the ledger goes to ARTIFACTS/usage)\n",
    )
    rc, _, err = run_cli("render", "--output", "-")
    assert (rc, err) == (
        2,
        "vllm-ledger: error: render needs --host HOST.json and --output FILE (or --print-schema)\n",
    )


def test_print_schema_is_the_json_schema(tmp_path: Path) -> None:
    rc, out, err = run_cli("render", "--print-schema")
    assert (rc, err) == (0, "")
    schema = json.loads(out)
    assert schema == json.loads(json.dumps(SCHEMA))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["model"]


def test_load_host_reads_a_file(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps(GPU_NODE))
    host = load_host(hf)
    assert host.gpus == (0, 1)
    assert host.api_key_file == "/srv/secrets/vllm.key"
    assert host.extra_env == (("HF_HUB_OFFLINE", "1"),)


# ---- rendering -------------------------------------------------------------------------------


def test_same_input_same_bytes_whatever_the_key_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(GPU_NODE))
    b.write_text(json.dumps(dict(reversed(list(GPU_NODE.items()))), indent=4))
    outs: list[bytes] = []
    for hf in (a, b, a):
        out = tmp_path / f"run-{len(outs)}.sh"
        rc, _, err = run_cli("render", "--host", str(hf), "--output", str(out), "--usage")
        assert rc == 0, err
        assert (
            err == f"wrote {out} (docker mode, ledger on); review it, then start it: bash {out}\n"
        )
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_without_usage_no_ledger_setting_appears() -> None:
    for mode in ("docker", "bare"):
        text = render_script(host_of(), mode=mode, usage=False)
        assert text.startswith(f"#!/usr/bin/env bash\n# vLLM launch script ({mode} mode), ")
        text = "".join(line for line in text.splitlines(True) if not line.startswith("#"))
        for word in (
            "VLLM_LEDGER",
            "PYTHONPATH",
            "ledger",
            "/srv/artifacts",
            "--shutdown-timeout",
            "--stop-timeout",
            "--hostname",
            "vllm_ledger",
            "--middleware",
        ):
            assert word not in text, (mode, word)
        with_usage = render_script(host_of(), mode=mode, usage=True)
        assert "VLLM_LEDGER_WRITERS=8" in with_usage
        assert "--shutdown-timeout 10" in with_usage
        assert "--middleware vllm_ledger.middleware.LedgerMiddleware \\\n" in with_usage


def test_writer_count_follows_the_api_server_count() -> None:
    for count in (1, 3, 8):
        for mode in ("docker", "bare"):
            text = render_script(host_of(api_server_count=count), mode=mode, usage=True)
            assert f"VLLM_LEDGER_WRITERS={count}\n" in text or (
                f"--env VLLM_LEDGER_WRITERS={count} \\\n" in text
            )
            assert f"--api-server-count {count} \\\n" in text


def test_a_given_shutdown_timeout_is_kept_and_docker_waits_longer() -> None:
    text = render_script(host_of(shutdown_timeout_seconds=30), mode="docker", usage=True)
    assert "--shutdown-timeout 30 \\\n" in text
    assert "--stop-timeout 40 \\\n" in text
    plain = render_script(host_of(shutdown_timeout_seconds=0), mode="docker", usage=False)
    assert "--shutdown-timeout 0 \\\n" in plain


def test_the_api_key_never_appears_in_the_script() -> None:
    text = render_script(host_of(api_key={"env": "PROD_VLLM_KEY"}), mode="docker", usage=True)
    assert 'VLLM_API_KEY="${PROD_VLLM_KEY:?the API key variable PROD_VLLM_KEY is not set}"' in text
    assert "  --env VLLM_API_KEY \\\n" in text
    assert "--api-key" not in text


# ---- running the rendered scripts with vllm/docker replaced ----------------------------------


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A PATH folder whose `vllm` and `docker` record argv and environment as JSON lines."""
    d = tmp_path / "fakebin"
    d.mkdir()
    for prog in ("vllm", "docker"):
        p = d / prog
        p.write_text(FAKE_PROGRAM.format(python=sys.executable))
        p.chmod(0o755)
    return d


def run_script(
    script: Path, fake_bin: Path, tmp_path: Path, env: dict[str, str] | None = None
) -> tuple[int, str, str, list[dict[str, Any]]]:
    log = tmp_path / "argv.jsonl"
    log.unlink(missing_ok=True)
    full_env = {
        "PATH": f"{fake_bin}:/usr/bin:/bin",
        "ARGV_LOG": str(log),
        "HOME": str(tmp_path),
        **(env or {}),
    }
    p = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=tmp_path,
        timeout=120,
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return p.returncode, p.stdout, p.stderr, calls


def render_to(tmp_path: Path, data: dict[str, Any], *flags: str) -> Path:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps(data))
    out = tmp_path / "run.sh"
    rc, _, err = run_cli("render", "--host", str(hf), "--output", str(out), *flags)
    assert rc == 0, err
    return out


def test_nasty_values_arrive_as_literal_arguments_bare(tmp_path: Path, fake_bin: Path) -> None:
    artifacts = tmp_path / "art $x `y` 'q' \"d\""
    data = {
        "model": "/models/" + NASTY,
        "served_model_name": NASTY,
        "host": "127.0.0.1",
        "port": 8123,
        "api_server_count": 2,
        "artifacts_dir": str(artifacts),
        "ledger_code_dir": str(REPO),
        "ledger_python": sys.executable,
        "api_key": {"file": str(tmp_path / "key $(file)")},
        "extra_args": ["--chat-template-content-format", NASTY, "--x=" + NASTY, "", "-"],
        "extra_env": {"NASTY_VALUE": NASTY, "EMPTY": "", "PYTHONPATH": "/opt/x y"},
    }
    (tmp_path / "key $(file)").write_text("sk-secret $(rm -rf /) `x`\n")
    script = render_to(tmp_path, data, "--usage", "--mode", "bare")
    rc, out, err, calls = run_script(script, fake_bin, tmp_path)
    assert rc == 0, err
    assert [c["prog"] for c in calls] == ["vllm"]
    argv, env = calls[0]["argv"], calls[0]["env"]
    assert argv == [
        "serve",
        "/models/" + NASTY,
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--served-model-name",
        NASTY,
        "--api-server-count",
        "2",
        "--shutdown-timeout",
        "10",
        "--middleware",
        "vllm_ledger.middleware.LedgerMiddleware",
        "--chat-template-content-format",
        NASTY,
        "--x=" + NASTY,
        "",
        "-",
    ]
    assert env["NASTY_VALUE"] == NASTY and env["EMPTY"] == ""
    assert env["VLLM_API_KEY"] == "sk-secret $(rm -rf /) `x`"
    assert "sk-secret" not in script.read_text()
    plugin = artifacts / "ledger-plugin"
    assert env["PYTHONPATH"] == f"{plugin}:/opt/x y"
    assert env["VLLM_LEDGER_DIR"] == str(artifacts / "usage")
    assert (env["VLLM_LEDGER_WRITERS"], env["VLLM_LEDGER_PORT"]) == ("2", "8123")
    assert (plugin / "VLLM_LEDGER_BUNDLE").is_file()
    assert (plugin / "vllm_ledger" / "plugin.py").is_file()
    assert (artifacts / "usage").is_dir()
    ledger_cli = f"PYTHONPATH={REPO} {sys.executable} -m vllm_ledger"
    q_usage = "'" + str(artifacts / "usage").replace("'", "'\"'\"'") + "'"
    assert out.startswith(
        f"ledger plugin: {plugin}\nledger report: {ledger_cli} report --root {q_usage}\n"
    )
    assert (
        f"ledger check:  {ledger_cli} verify --metrics-url http://127.0.0.1:8123/metrics "
        f"--root {q_usage}\n"
    ) in out


def test_nasty_values_arrive_as_literal_arguments_docker(tmp_path: Path, fake_bin: Path) -> None:
    artifacts = tmp_path / "art $x `y` 'q'"
    data = {
        **GPU_NODE,
        "model": "/models/" + NASTY,
        "served_model_name": NASTY,
        "image": "registry.example:5000/vllm/vllm-openai:v0.32.0",
        "host": "127.0.0.1",
        "artifacts_dir": str(artifacts),
        "ledger_code_dir": str(REPO),
        "ledger_python": sys.executable,
        "api_key": {"env": "MY_KEY"},
        "volumes": [{"host": "/models/a b $c", "container": "/models", "read_only": False}],
        "extra_args": ["--x", NASTY],
        "extra_env": {"NASTY_VALUE": NASTY, "PYTHONPATH": "/opt/x"},
    }
    script = render_to(tmp_path, data, "--usage")
    rc, _, err, calls = run_script(script, fake_bin, tmp_path, env={"MY_KEY": "sk-$(id)"})
    assert rc == 0, err
    [call] = calls
    assert call["prog"] == "docker"
    assert call["env"]["VLLM_API_KEY"] == "sk-$(id)"
    plugin, ledger = artifacts / "ledger-plugin", artifacts / "usage"
    hostname = subprocess.run(
        ["bash", "-c", "echo $HOSTNAME"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert call["argv"] == [
        "run",
        "--detach",
        "--name",
        "vllm-19001",
        "--hostname",
        hostname,
        "--restart",
        "unless-stopped",
        "--gpus",
        '"device=0,1"',
        "--shm-size",
        "16g",
        "--stop-timeout",
        "20",
        "--publish",
        "127.0.0.1:19001:19001",
        "--volume",
        "/models/a b $c:/models:rw",
        "--volume",
        f"{plugin}:/vllm-ledger/plugin:ro",
        "--volume",
        f"{ledger}:/vllm-ledger/usage:rw",
        "--env",
        "VLLM_API_KEY",
        "--env",
        "NASTY_VALUE=" + NASTY,
        "--env",
        "PYTHONPATH=/vllm-ledger/plugin:/opt/x",
        "--env",
        "VLLM_LEDGER_DIR=/vllm-ledger/usage",
        "--env",
        "VLLM_LEDGER_PORT=19001",
        "--env",
        "VLLM_LEDGER_WRITERS=8",
        "--entrypoint",
        "vllm",
        "registry.example:5000/vllm/vllm-openai:v0.32.0",
        "serve",
        "/models/" + NASTY,
        "--host",
        "0.0.0.0",
        "--port",
        "19001",
        "--served-model-name",
        NASTY,
        "--tensor-parallel-size",
        "2",
        "--api-server-count",
        "8",
        "--max-model-len",
        "32768",
        "--gpu-memory-utilization",
        "0.9",
        "--max-num-seqs",
        "64",
        "--max-num-batched-tokens",
        "8192",
        "--dtype",
        "bfloat16",
        "--shutdown-timeout",
        "10",
        "--middleware",
        "vllm_ledger.middleware.LedgerMiddleware",
        "--x",
        NASTY,
    ]
    assert (plugin / "VLLM_LEDGER_BUNDLE").is_file() and ledger.is_dir()


def docker_options(argv: list[str]) -> dict[str, list[str]]:
    """`docker run` options before the image, as {flag: [values]} (every option takes one)."""
    assert argv[:2] == ["run", "--detach"]
    opts: dict[str, list[str]] = {}
    i = 2
    while argv[i].startswith("--"):
        opts.setdefault(argv[i], []).append(argv[i + 1])
        i += 2
    opts["<image>"] = [argv[i]]
    opts["<command>"] = argv[i + 1 :]
    return opts


def test_docker_without_usage_mounts_nothing_of_the_ledger(tmp_path: Path, fake_bin: Path) -> None:
    data = {**GPU_NODE, "api_key": {"env": "MY_KEY"}, "gpus": "all"}
    script = render_to(tmp_path, data)
    rc, _, err, [call] = run_script(script, fake_bin, tmp_path, env={"MY_KEY": "k"})
    assert rc == 0, err
    opts = docker_options(call["argv"])
    assert opts["--volume"] == ["/models:/models:ro"]
    assert opts["--env"] == ["VLLM_API_KEY", "HF_HUB_OFFLINE=1"]
    assert opts["--gpus"] == ["all"]
    assert opts["--publish"] == ["0.0.0.0:19001:19001"]
    assert "--hostname" not in opts and "--stop-timeout" not in opts
    assert opts["<image>"] == ["vllm/vllm-openai:v0.32.0"]
    assert opts["<command>"][:2] == ["serve", "/models/Qwen2.5-7B-Instruct"]
    assert "--shutdown-timeout" not in opts["<command>"]


def test_missing_api_key_stops_the_script_before_vllm(tmp_path: Path, fake_bin: Path) -> None:
    script = render_to(tmp_path, {**GPU_NODE, "api_key": {"env": "MY_KEY"}})
    rc, _, err, calls = run_script(script, fake_bin, tmp_path)
    assert (rc, calls) == (1, [])
    assert "MY_KEY: the API key variable MY_KEY is not set" in err
    script = render_to(tmp_path, {**GPU_NODE, "api_key": {"file": str(tmp_path / "no key")}})
    rc, _, err, calls = run_script(script, fake_bin, tmp_path)
    assert (rc, calls) == (1, [])
    assert err == f"API key file {tmp_path / 'no key'} is not readable\n"


def test_usage_without_code_dir_needs_an_existing_bundle(tmp_path: Path, fake_bin: Path) -> None:
    artifacts = tmp_path / "artifacts"
    data = {"model": "m", "artifacts_dir": str(artifacts), "port": 8001}
    script = render_to(tmp_path, data, "--usage", "--mode", "bare")
    rc, _, err, calls = run_script(script, fake_bin, tmp_path)
    assert (rc, calls) == (1, [])
    plugin = artifacts / "ledger-plugin"
    assert err == (
        f"no ledger plugin bundle in {plugin}: run 'vllm-ledger bundle --output {plugin}' "
        "or set ledger_code_dir in the host file\n"
    )
    rc, _, err = run_cli("bundle", str(plugin))
    assert rc == 0, err
    rc, out, err, [call] = run_script(script, fake_bin, tmp_path)
    assert rc == 0, err
    assert call["env"]["PYTHONPATH"] == str(plugin)
    assert f"ledger report: vllm-ledger report --root {artifacts / 'usage'}\n" in out


def test_bare_gpu_list_sets_cuda_visible_devices(tmp_path: Path, fake_bin: Path) -> None:
    for gpus, expected in (([2, 3], "2,3"), ([], "")):
        script = render_to(tmp_path, {"model": "m", "gpus": gpus}, "--mode", "bare")
        rc, _, err, [call] = run_script(script, fake_bin, tmp_path)
        assert rc == 0, err
        assert call["env"]["CUDA_VISIBLE_DEVICES"] == expected
    script = render_to(tmp_path, {"model": "m"}, "--mode", "bare")
    rc, _, err, [call] = run_script(script, fake_bin, tmp_path)
    assert "CUDA_VISIBLE_DEVICES" not in call["env"]


# ---- shellcheck ------------------------------------------------------------------------------

SHELLCHECK_HOSTS: dict[str, dict[str, Any]] = {
    "gpu-node": GPU_NODE,
    "minimal": {"model": "m", "image": "vllm/vllm-openai:v0.32.0", "artifacts_dir": "/a"},
    "env-key-cpu": {**GPU_NODE, "api_key": {"env": "KEY"}, "gpus": [], "ledger_code_dir": None},
    "nasty": {
        **GPU_NODE,
        "model": NASTY,
        "served_model_name": NASTY,
        "extra_args": [NASTY],
        "extra_env": {"X": NASTY},
        "artifacts_dir": "/a b/$c `d`",
        "api_key": {"file": "/k $(x)"},
        "ledger_python": "/opt/py thon",
    },
}


@pytest.mark.parametrize("name", sorted(SHELLCHECK_HOSTS))
def test_shellcheck_passes_on_rendered_scripts(name: str, tmp_path: Path) -> None:
    data = {k: v for k, v in SHELLCHECK_HOSTS[name].items() if v is not None}
    host = parse_host(data)
    scripts = []
    for mode in ("docker", "bare"):
        for usage in (False, True):
            path = tmp_path / f"{name}-{mode}-{'usage' if usage else 'plain'}.sh"
            path.write_text(render_script(host, mode=mode, usage=usage))
            scripts.append(str(path))
    p = subprocess.run(
        [SHELLCHECK, "--shell=bash", "--severity=style", *scripts], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_every_host_default_is_the_schemas() -> None:
    """deploy/hostschema.py's schema is the one source of defaults: a Host built in code with
    only a model equals one read from a host file with only a model, key by key."""
    import dataclasses

    from vllm_ledger.deploy.host import Host, host_data, parse_host
    from vllm_ledger.deploy.hostschema import SCHEMA

    assert Host(model="m") == parse_host({"model": "m"})
    props = SCHEMA["properties"]
    data = host_data(Host(model="m"))
    for field in dataclasses.fields(Host):
        key = field.name
        if key in props and "default" in props[key]:
            assert data[key] == props[key]["default"], key
