"""`telling_line`: the stderr line that says why a server failed, not the summary printed after it."""

from __future__ import annotations

import pytest

from mcpstation.connection._stderr import telling_line

NPM_404 = [
    "npm error code E404",
    "npm error 404 Not Found - GET https://registry.npmjs.org/@scope%2fnope - Not found",
    "npm error 404",
    "npm error 404  '@scope/nope@*' is not in this registry.",
    "npm error 404",
    "npm error 404 Note that you can also install from a",
    "npm error 404 tarball, folder, http url, or git url.",
    "npm error A complete log of this run can be found in: /home/ada/.npm/_logs/x-debug-0.log",
]
NPX_WARNING = "npm warn exec The following package was not found and will be installed: @scope/nope@1.0.0"
SUMMARY = "npm error A complete log of this run can be found in: /home/ada/.npm/_logs/x-debug-0.log"
NPM_TLS = [
    "npm error code SELF_SIGNED_CERT_IN_CHAIN",
    "npm error errno SELF_SIGNED_CERT_IN_CHAIN",
    "npm error request to https://registry.npmjs.org/x failed, reason: self-signed certificate in certificate chain",
    "npm error A complete log of this run can be found in: /home/ada/.npm/_logs/x-debug-0.log",
]
OLD_NPM = ["npm ERR! code E404", "npm ERR! 404 Not Found - GET https://x", "npm ERR! 404",
           "npm ERR! A complete log of this run can be found in:", "npm ERR!     /root/.npm/_logs/x.log"]  # fmt: skip
PYTHON = ["Starting server", "Traceback (most recent call last):", '  File "/s/server.py", line 1, in <module>',
          "    import nothing", "ModuleNotFoundError: No module named 'nothing'"]  # fmt: skip
NODE = ["/s/index.js:3", "    throw new Error('boom');", "    ^", "", "Error: boom",
        "    at Object.<anonymous> (/s/index.js:3:11)", "", "Node.js v22.11.0"]  # fmt: skip


@pytest.mark.parametrize(
    "tail, expected",
    [
        (NPM_404, NPM_404[1]),
        ([NPX_WARNING, *NPM_404], NPM_404[1]),
        (NPM_TLS, NPM_TLS[2]),
        (OLD_NPM, OLD_NPM[1]),
        (PYTHON, PYTHON[-1]),
        (NODE, "Error: boom"),
        (["listening on stdio", "fatal: missing API key"], "fatal: missing API key"),
        (["hello", "world"], "world"),  # nothing says it failed: the last line, as before
        (
            ["npm error A complete log of this run can be found in: /x"],
            "npm error A complete log of this run can be found in: /x",
        ),
        ([], None),
    ],
    ids=["npm-404", "npm-warn-first", "npm-tls", "npm-ERR!", "python", "node", "fatal", "plain", "summary", "empty"],
)
def test_the_telling_line_is_the_error_not_the_summary(tail: list[str], expected: str | None) -> None:
    assert telling_line(tail) == expected
