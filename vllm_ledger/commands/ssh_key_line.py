"""vllm-ledger ssh-key-line: the authorized_keys line that pins the bot's key to `status`."""

from __future__ import annotations

import argparse
import re
import sys

from vllm_ledger.bot.ssh_command import status_command
from vllm_ledger.bot.validate import check_path, check_python
from vllm_ledger.commands._files import input_file
from vllm_ledger.errors import BadArgument, FieldError
from vllm_ledger.infile import read_regular_text

NAME = "ssh-key-line"
HELP = "print the authorized_keys line that lets a key run only the status command"
EPILOG = """example:
  vllm-ledger ssh-key-line --code-dir /srv/LLMDeploy --data-dir /srv/artifacts/usage \\
      bot_ed25519.pub >> ~/.ssh/authorized_keys

`restrict` turns off PTY, port, agent and X11 forwarding; `command=` runs the status
command whatever the client asks for, so a stolen bot key can only read the status.
exit status: 0 printed, 2 a bad flag or a key file that cannot be read
"""

MAX_KEY_BYTES = 64 * 1024  # one OpenSSH public key line is at most a few KiB
_KEY_TYPE = re.compile(
    r"^(?:ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)"
    r"|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com)$"
)
_KEY_BLOB = re.compile(r"^[A-Za-z0-9+/]{16,16384}={0,2}$")
_COMMENT = re.compile(r"^[A-Za-z0-9._@+-]{1,100}$")
_FROM = re.compile(r"^[0-9A-Za-z.:/*?!,_-]{1,512}$")


MAX_KEY_FILE_BYTES = 64 * 1024  # an OpenSSH public key is well under 16 KiB


def key_line(
    public_key: str,
    code_dir: str,
    data_dir: str,
    python: str = "python3",
    from_pattern: str | None = None,
    budgets: str | None = None,
) -> str:
    """``restrict,command="..." TYPE BLOB [COMMENT]`` from a validated key and paths;
    ``budgets``: the host's budgets file the status command reports on (docs/budgets.md)."""
    try:
        code_dir = check_path("code_dir", code_dir)
        data_dir = check_path("data_dir", data_dir)
        python = check_python(python)
        if budgets is not None:
            budgets = check_path("budgets", budgets)
    except FieldError as exc:
        raise BadArgument(f"--{exc.field.replace('_', '-')}: {exc.message}") from exc
    fields = public_key.strip().split()
    if len(fields) < 2 or not _KEY_TYPE.fullmatch(fields[0]) or not _KEY_BLOB.fullmatch(fields[1]):
        raise BadArgument(
            "the key file is not one OpenSSH public key line "
            "(TYPE BASE64 [COMMENT]): pass the .pub file"
        )
    options = ["restrict"]
    if from_pattern is not None:
        if not _FROM.fullmatch(from_pattern):
            raise BadArgument("--from: give address patterns such as 10.0.0.5 or 10.0.0.0/24")
        options.append(f'from="{from_pattern}"')
    options.append(f'command="{status_command(code_dir, data_dir, python, budgets=budgets)}"')
    comment = fields[2] if len(fields) == 3 and _COMMENT.fullmatch(fields[2]) else None
    return " ".join([",".join(options), fields[0], fields[1], *([comment] if comment else [])])


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--code-dir",
        required=True,
        metavar="DIR",
        help="where the vllm_ledger package (or a bundle) is on the deployment host",
    )
    p.add_argument(
        "--data-dir", required=True, metavar="DIR", help="the ledger root on the deployment host"
    )
    p.add_argument(
        "--python",
        default="python3",
        metavar="PYTHON",
        help="python3, python3.N or an absolute path (default python3)",
    )
    p.add_argument(
        "--budgets",
        metavar="FILE",
        help="the host's budgets file: the status the key runs reports each budget "
        "(docs/budgets.md)",
    )
    p.add_argument(
        "--from",
        dest="from_pattern",
        metavar="PATTERNS",
        help="also restrict the key to these source addresses (from=...)",
    )
    p.add_argument(
        "key_file",
        type=input_file(
            "KEYFILE.pub",
            "bot_ed25519.pub",
            max_bytes=MAX_KEY_BYTES,
            what="key file",
            hint="pass the bot's .pub key file, e.g. bot_ed25519.pub",
        ),
        metavar="KEYFILE.pub",
        help="the bot's public key",
    )


def run(args: argparse.Namespace) -> int:
    try:
        text = read_regular_text(args.key_file, MAX_KEY_FILE_BYTES, encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadArgument(f"cannot read {args.key_file}: pass the bot's .pub key file") from exc
    sys.stdout.write(
        key_line(text, args.code_dir, args.data_dir, args.python, args.from_pattern, args.budgets)
        + "\n"
    )
    return 0
