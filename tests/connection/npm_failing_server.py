"""A stdio "server" that fails as `npx` does for a package the registry does not have: npm's error
block on stderr, its summary line last, then exit 1.

    python npm_failing_server.py [PACKAGE]
"""

from __future__ import annotations

import sys

package = sys.argv[1] if len(sys.argv) > 1 else "@example/no-such-server"
quoted = package.replace("/", "%2f")
for line in (
    "npm error code E404",
    f"npm error 404 Not Found - GET https://registry.npmjs.org/{quoted} - Not found",
    "npm error 404",
    f"npm error 404  '{package}@*' is not in this registry.",
    "npm error 404",
    "npm error 404 Note that you can also install from a",
    "npm error 404 tarball, folder, http url, or git url.",
    "npm error A complete log of this run can be found in: /home/ada/.npm/_logs/2026-12-03T15_00_00_000Z-debug-0.log",
):
    print(line, file=sys.stderr)
sys.exit(1)
