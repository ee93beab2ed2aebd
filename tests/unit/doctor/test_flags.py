"""The ``flags`` row's reading of a rendered file (doctor/flags.py): the ``vllm serve`` argv of a
script, a docker line, a unit and a compose or Kubernetes list. Each argv parsed by vLLM is
tests/test_vllm_flags.py's."""

from __future__ import annotations

from vllm_ledger.doctor.flags import serve_argv


def test_a_scripts_argv_ends_where_the_shell_line_does() -> None:
    script = (
        "#!/bin/bash\nset -eu\nexec /opt/venv/bin/vllm serve m \\\n  --port 8000 \\\n  --tp 2\n"
    )
    assert serve_argv(script) == ["serve", "m", "--port", "8000", "--tp", "2"]
    docker = "docker run --rm --entrypoint vllm img:1 serve m --port 8000 && echo done # end\n"
    assert serve_argv(docker) == ["serve", "m", "--port", "8000"]
    unit = "[Service]\nExecStart=/usr/bin/vllm serve m --port 8000\n"
    assert serve_argv(unit) == ["serve", "m", "--port", "8000"]


def test_a_yaml_list_of_strings_that_starts_with_serve() -> None:
    compose = 'services:\n  vllm:\n    command:\n      - "serve"\n      - "m"\n      - "--port"\n'
    compose += '      - "8000"\n    ports:\n      - "8000:8000"\n'
    assert serve_argv(compose) == ["serve", "m", "--port", "8000"]


def test_a_file_without_vllm_serve_has_none() -> None:
    assert serve_argv("#!/bin/sh\necho serve\nserve m\n") is None
    assert serve_argv("") is None
