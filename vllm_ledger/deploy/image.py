"""A derived vLLM image with this project's wheel installed: ``render --mode image``. Pure.

``image_files(host)`` returns the build folder's files: a ``Dockerfile`` that starts ``FROM``
the host file's vLLM image and installs ``vllm_ledger-VERSION-py3-none-any.whl`` (``make dist``
writes it) with ``pip install --no-deps --no-index``, so the build reaches no network beyond
pulling the base image, and a ``.dockerignore`` that sends only the wheel to the builder. The
wheel's entry point (``vllm.stat_logger_plugins``) makes vLLM load the plugin; the ledger writes
only where ``VLLM_LEDGER_DIR`` says (the kubernetes manifests set it). Its entry point is
``vllm serve --middleware vllm_ledger.middleware.LedgerMiddleware`` (the vLLM OpenAI image's own
``vllm serve``, with the attribution middleware), so ``docker run IMAGE MODEL ...`` tags
requests as every rendered mode does; the middleware does nothing where no ledger records.

``derived_image(host)`` is the reference the kubernetes manifests run: ``NAME-ledger:TAG-VERSION``
(NAME the base image's last path part, TAG its tag, or the first 12 digits of its digest), without
a registry: tag and push it to the registry your cluster pulls from and point the manifests at it
(docs/kubernetes.md).

The image is written into the Dockerfile as is: the host file's validation took only an image
reference by the registries' grammar (``deploy/imageref.py``), and ``dockerfile`` checks the
host's values again, however it was built, so no line break or second instruction can reach it.
"""

from __future__ import annotations

import json
import shlex

from vllm_ledger import __version__
from vllm_ledger.deploy.attribution import middleware_args
from vllm_ledger.deploy.host import Host, check_values
from vllm_ledger.deploy.imageref import NAME_MAX_CHARS, TAG_MAX_CHARS, split_reference
from vllm_ledger.errors import ConfigError

DOCKERFILE = "Dockerfile"
DOCKERIGNORE = ".dockerignore"
WHEEL = f"vllm_ledger-{__version__}-py3-none-any.whl"
DERIVED_SUFFIX = "-ledger"


def require_image(host: Host, mode: str) -> str:
    """The host file's vLLM image, or ConfigError naming ``image``."""
    if host.image is None:
        raise ConfigError(
            f"image: required in {mode} mode (a pinned vLLM OpenAI image, e.g. "
            "vllm/vllm-openai:v0.32.0)",
            key="image",
        )
    return host.image


def _name_and_tag(image: str) -> tuple[str, str]:
    """The derived image's name and tag before the suffixes, both valid by the grammar (the
    name cut, at a word's end, so that ``NAME-ledger`` stays within the 255 characters)."""
    ref = split_reference(image)
    name = ref.last_component[: NAME_MAX_CHARS - len(DERIVED_SUFFIX)].rstrip("._-")
    if ref.tag is not None:
        tag = ref.tag
    else:
        tag = ref.digest.partition(":")[2][:12] if ref.digest is not None else "latest"
    return name, tag


def derived_image(host: Host) -> str:
    """The derived image's reference (no registry): ``vllm-openai-ledger:v0.32.0-0.1.0``."""
    name, tag = _name_and_tag(require_image(host, "image"))
    return f"{name}{DERIVED_SUFFIX}:{tag[: TAG_MAX_CHARS - 1 - len(__version__)]}-{__version__}"


def dockerfile(host: Host) -> str:
    check_values(host)
    image = require_image(host, "image")
    return "\n".join(
        [
            f"# The vLLM image with vllm-ledger {__version__} installed, rendered by vllm-ledger "
            f"{__version__}.",
            "# Do not edit: change the host file, render again and review the diff.",
            f"# Needs {WHEEL} beside this file (make dist writes it to dist/).",
            f"# Build: docker build -t {derived_image(host)} .",
            "# Nothing is downloaded but the base image: pip installs the wheel alone, offline.",
            f"FROM {image}",
            f"COPY {WHEEL} /tmp/vllm-ledger/",
            "RUN python3 -m pip install --no-deps --no-index --no-cache-dir "
            f"/tmp/vllm-ledger/{WHEEL} \\",
            "  && rm -rf /tmp/vllm-ledger \\",
            "  && python3 -c 'import importlib.metadata as m; "
            'assert [e for e in m.entry_points(group="vllm.stat_logger_plugins") '
            'if e.name == "ledger"]\' \\',
            "  && python3 -c 'import vllm_ledger.middleware' \\",
            "  && vllm-ledger --version",
            "# vllm serve with the attribution middleware (docs/attribution.md); the kubernetes",
            "# manifests run this image with their own command, which passes it too.",
            f"ENTRYPOINT {json.dumps(['vllm', 'serve', *middleware_args(True)])}",
            "",
        ]
    )


def image_files(host: Host) -> list[tuple[str, str]]:
    """The build folder's files as (name, text), in the order they are written."""
    return [
        (DOCKERFILE, dockerfile(host)),
        (DOCKERIGNORE, f"# Send the wheel alone to the builder.\n*\n!{WHEEL}\n"),
    ]


def build_command(host: Host, folder: str) -> str:
    """How to build it, as the ``wrote`` line says."""
    where = shlex.quote(folder)
    return f"make dist && cp dist/{WHEEL} {where}/ && docker build -t {derived_image(host)} {where}"


__all__ = ["DOCKERFILE", "WHEEL", "build_command", "derived_image", "dockerfile", "image_files"]
