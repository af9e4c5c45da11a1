"""The web console in headless Chromium: sign in, add a server, see it ready, call a tool, see the result.

Runs `mcpstation up` as a real process and drives Debian's Chromium with Playwright (never
`playwright install`). Skipped, with the reason, when `/usr/bin/chromium` or Playwright is missing.
Screenshots go to `test-artifacts/` at 1280 px and 375 px.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT_MS
from fork_server import interpreter

START_TIMEOUT_S = 60.0
PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)

if not CHROMIUM.exists():
    print(f"browser tests skipped: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium to run the console browser test", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")


@dataclass
class Station:
    url: str
    token: str
    log: Path


def _env(data_dir: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(data_dir)}


@pytest.fixture
def station(tmp_path: Path) -> Iterator[Station]:
    config = tmp_path / "mcpstation.toml"
    config.write_text(
        f'[policy]\nallowed_dynamic_stdio_commands = ["{PY}"]\nconfirm_tools = ["demo/add"]\n\n'
        f'[servers.demo]\ncommand = "{PY}"\nargs = ["-m", "mcpstation.testing.demo_server"]\n'
    )
    created = subprocess.run(
        [PY, "-m", "mcpstation", "token", "create", "--role", "admin", "--name", "browser", "--json"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    token = json.loads(created.stdout)["token"]
    log = tmp_path / "up.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [PY, "-m", "mcpstation", "--config", str(config), "up", "--port", "0"],
            cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := re.search(r"serving the console at (http://127\.0\.0\.1:\d+)/", log.read_text())):
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.1)
        yield Station(found.group(1), token, log)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_console_adds_a_server_sees_it_ready_and_calls_a_tool(station: Station):
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        _click_through(station)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- mcpstation up log ---\n{station.log.read_text()}") from None


def _click_through(station: Station) -> None:
    sync_api.expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{station.url}/")

            page.get_by_role("textbox", name="API token").fill(station.token)
            page.get_by_role("button", name="Sign in").click()
            demo_row = page.locator("tr[data-server=demo]")
            sync_api.expect(demo_row.locator(".state")).to_have_text("READY")
            sync_api.expect(page.locator("#live-text")).to_have_text("Live")

            page.locator("#add-server summary").click()
            page.get_by_role("textbox", name="Name", exact=True).fill("extra")
            page.get_by_role("textbox", name="Command").fill(PY)
            page.get_by_label("Arguments, one per line").fill("-m\nmcpstation.testing.demo_server")
            page.get_by_role("button", name="Add server").click()
            sync_api.expect(page.locator("#server-message")).to_have_text("connected 'extra': 12 tools")
            extra_row = page.locator("tr[data-server=extra]")
            sync_api.expect(extra_row.locator(".state")).to_have_text("READY")
            page.screenshot(path=str(ARTIFACTS / "console-servers-1280.png"), full_page=True)

            page.get_by_role("link", name="Tools").click()
            page.get_by_label("Filter tools").fill("extra_add")
            page.get_by_role("link", name=re.compile("mcp_extra_add")).click()
            assert page.url.endswith("#/tools/mcp_extra_add")
            page.get_by_label("a (required)").fill("2")
            page.get_by_label("b (required)").fill("3")
            page.get_by_role("button", name="Call tool").click()
            result = page.locator("#result-body")
            sync_api.expect(result.locator(".badge")).to_have_text("OK")
            sync_api.expect(result.locator("pre.text")).to_have_text("5")
            page.screenshot(path=str(ARTIFACTS / "console-tool-1280.png"), full_page=True)

            page.goto(f"{station.url}/#/tools/mcp_extra_get_image")
            # A hash change renders the view after goto returns: until then "Call tool" is add's button.
            sync_api.expect(page.locator("#tool-name")).to_have_text("mcp_extra_get_image")
            page.get_by_role("button", name="Call tool").click()
            image = result.locator("img.media")
            sync_api.expect(image).to_be_visible()
            assert image.get_attribute("src").startswith("data:image/png;base64,")

            page.go_back()
            sync_api.expect(page.locator("#tool-name")).to_have_text("mcp_extra_add")

            # demo/add is in confirm_tools: the console asks its person, and runs it only on Allow.
            page.goto(f"{station.url}/#/tools/mcp_demo_add")
            sync_api.expect(page.locator("#tool-name")).to_have_text("mcp_demo_add")
            page.get_by_label("a (required)").fill("4")
            page.get_by_label("b (required)").fill("5")
            page.get_by_role("button", name="Call tool").click()
            question = page.get_by_role("alertdialog", name="Confirm this call")
            sync_api.expect(question).to_contain_text("mcp_demo_add")
            question.get_by_role("button", name="Deny").click()
            sync_api.expect(result.locator(".badge")).to_have_text("Error")
            sync_api.expect(result).to_contain_text("denied")
            page.get_by_role("button", name="Call tool").click()
            question.get_by_role("button", name="Allow").click()
            sync_api.expect(result.locator(".badge")).to_have_text("OK")
            sync_api.expect(result.locator("pre.text")).to_have_text("9")

            page.get_by_role("link", name="Audit").click()
            sync_api.expect(page.locator("#audit-calls tr").first).to_be_visible()
            assert "add" in page.locator("#audit-calls").inner_text()

            page.set_viewport_size({"width": 375, "height": 800})
            page.goto(f"{station.url}/#/servers")
            sync_api.expect(page.locator("tr[data-server=extra] .state")).to_have_text("READY")
            assert page.evaluate("document.documentElement.scrollWidth") <= 375, "horizontal scroll at 375 px"
            page.screenshot(path=str(ARTIFACTS / "console-servers-375.png"), full_page=True)
            page.goto(f"{station.url}/#/tools/mcp_extra_add")
            sync_api.expect(page.locator("#tool-name")).to_have_text("mcp_extra_add")
            assert page.evaluate("document.documentElement.scrollWidth") <= 375, "horizontal scroll at 375 px"
            page.screenshot(path=str(ARTIFACTS / "console-tool-375.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()
