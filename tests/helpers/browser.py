"""Debian's Chromium, as the console's browser tests drive it with Playwright (never `playwright install`)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"  # screenshots, at 1280 px and 375 px
UI_TIMEOUT_MS = 30_000  # bound on each wait for the page (a server start is part of some)
