"""What an agent or the API asks a server to be started with, judged beyond the package it names.

An allowlisted package vouches for its code, not for the arguments and environment an agent
hands it. For a server added at run time (never for one in the user's own config file):

- deny: references to the station's variables (`${OPENAI_API_KEY}`, `$HOME`, `%USERPROFILE%`,
  `${env:X}`) in arguments or environment values: a host secret copied into a process; shell
  syntax in arguments (`$(id)`, backticks, `; rm -rf ~`, `&& curl ...`, a lone `|` or `>`);
- confirm: environment that changes how the server reaches the network or whom it trusts
  (proxies, CA bundles, `NODE_TLS_REJECT_UNAUTHORIZED=0`, `SSLKEYLOGFILE`, ...), set in `env`
  or as `NAME=value` arguments (`docker -e`, `env`); path arguments that reach the root, the
  home folder or a secret store (`/`, `~`, `~/.ssh`, `/etc`, ...).

Environment that changes which code runs (`NODE_OPTIONS`, `PYTHONPATH`, `LD_PRELOAD`, ...) is
refused by the classifier itself (`commands.HIJACKING_ENV_KEYS`).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence

from mcpstation.policy._verdicts import CommandVerdict, Rule, confirm, deny

# Environment that changes the transport (proxies, DNS) or the trust of TLS; upper-cased first.
TRANSPORT_ENV_KEYS = frozenset({
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "WS_PROXY", "WSS_PROXY", "SOCKS_PROXY",
    "GLOBAL_AGENT_HTTP_PROXY", "GLOBAL_AGENT_HTTPS_PROXY", "NODE_USE_ENV_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED",
    "PYTHONHTTPSVERIFY", "GIT_SSL_NO_VERIFY", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSLKEYLOGFILE", "GRPC_PROXY",
    "RES_OPTIONS", "LOCALDOMAIN", "DENO_CERT", "DENO_TLS_CA_STORE", "BUN_CA_BUNDLE_PATH", "AWS_CA_BUNDLE",
})  # fmt: skip
TRANSPORT_ENV_SUFFIXES = ("_PROXY",)
# Under the home folder: where keys, tokens and credentials live.
HOME_SECRET_STORES = (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc", ".npmrc",
                      ".pypirc", ".git-credentials", ".config/gh", ".password-store", ".local/share/keyrings",
                      "Library/Keychains", ".mozilla", ".config/google-chrome", ".config/chromium", ".vault-token",
                      ".terraform.d", ".config/mcpstation", ".local/share/mcpstation")  # fmt: skip
HOME_PARENTS = ("/home", "/Users")  # the folders holding every user's home folder
SYSTEM_SECRET_STORES = ("/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/var/run/docker.sock",
                        "/run/docker.sock", "/var/lib")  # fmt: skip

_HOST_VARIABLE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%")
_SHELL_SEQUENCE = re.compile(r"\$\(|`|;|&&|\|\||[\n\r\x00]")
_SHELL_TOKEN = re.compile(r"(^|\s)(\||&|>>?|<|2>&1|&>)(\s|$)")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def runtime_verdicts(
    args: Sequence[str], env: Mapping[str, str], *, cwd: str | None = None, home: str | None = None
) -> list[CommandVerdict]:
    """Every problem with what a run-time add hands its command, most severe kind first within each check."""
    home = posixpath.normpath(home or os.path.expanduser("~"))
    verdicts: list[CommandVerdict] = []
    for key, value in env.items():
        if _HOST_VARIABLE.search(value):
            verdicts.append(deny(Rule.HOST_VARIABLE, f"environment variable {key} refers to the station's variables"))
        if is_transport_key(key):
            verdicts.append(_transport(key, value, f"environment variable {key}"))
    for arg in args:
        if _HOST_VARIABLE.search(arg):
            verdicts.append(deny(Rule.HOST_VARIABLE, f"argument {arg!r} refers to the station's variables"))
        if _SHELL_SEQUENCE.search(arg) or _SHELL_TOKEN.search(arg):
            verdicts.append(deny(Rule.SHELL_SYNTAX, f"argument {arg!r} holds shell syntax; nothing here runs a shell"))
        assignment = _ASSIGNMENT.match(arg)
        if assignment is not None and is_transport_key(assignment.group(1)):
            verdicts.append(_transport(assignment.group(1), assignment.group(2), f"argument {arg!r}"))
        if (reached := _sensitive_path(arg, cwd=cwd, home=home)) is not None:
            verdicts.append(confirm(Rule.SENSITIVE_PATH, f"argument {arg!r} reaches {reached}"))
    return verdicts


def is_transport_key(key: str) -> bool:
    upper = key.upper()
    return upper in TRANSPORT_ENV_KEYS or upper.endswith(TRANSPORT_ENV_SUFFIXES)


def _transport(key: str, value: str, where: str) -> CommandVerdict:
    return confirm(
        Rule.TRANSPORT_ENV,
        f"{where} sets {key}={value!r}, which changes where the server's traffic goes or whom it trusts",
    )


def _sensitive_path(arg: str, *, cwd: str | None, home: str) -> str | None:
    """What sensitive place `arg` (or the value of `--option=arg`) reaches, or None."""
    for candidate in _path_candidates(arg):
        path = _absolute(candidate, cwd)
        if path is None:
            continue
        if path == "/":
            return "the root of the file system"
        if path == home or _covers(path, home):
            return f"the home folder ({home})"
        for parent in HOME_PARENTS:
            if path == parent or _covers(path, parent):
                return f"every user's home folder ({parent})"
        # inside the home folder only its secret stores count; elsewhere the system's
        stores = (
            [posixpath.join(home, store) for store in HOME_SECRET_STORES]
            if _covers(home, path)
            else SYSTEM_SECRET_STORES
        )
        for store in stores:
            if path == store or _covers(store, path) or _covers(path, store):
                return f"a secret store ({store})"
    return None


def _path_candidates(arg: str) -> list[str]:
    candidates = [arg]
    head, sep, value = arg.partition("=")
    if sep and head.startswith("-"):
        candidates.append(value)
    return [c.removeprefix("file://") for c in candidates if "://" not in c or c.startswith("file://")]


def _absolute(candidate: str, cwd: str | None) -> str | None:
    if candidate.startswith("~"):
        return posixpath.normpath(os.path.expanduser(candidate))
    if candidate.startswith("/"):
        return posixpath.normpath("/" + candidate.lstrip("/"))
    if candidate in (".", "..") or candidate.startswith(("./", "../")):
        return posixpath.normpath(posixpath.join(cwd or os.getcwd(), candidate))
    return None


def _covers(outer: str, inner: str) -> bool:
    """Whether directory `outer` holds `inner` (both normalised, absolute)."""
    return inner.startswith(outer.rstrip("/") + "/")
