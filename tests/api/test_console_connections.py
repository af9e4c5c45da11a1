"""The console's "My connections" page in headless Chromium, for a user signed in with the identity provider.

The world of `tests/identity/test_user_oauth.py`: a real OpenID provider (oidc-provider), a real
upstream MCP server that verifies its own audience, and a station served over HTTP with that
upstream as `jira` (user-oauth). The console is signed in with a station token first (the page
explains, in the API's words, that it has no authorizations), then with alice's access token from
the provider, as a person pastes it. alice connects `jira` from the page: the tab it opens goes
through the provider, where the test provider signs her in (its headless login, told who by
`login_hint`, which the browser adds to the provider's request), and back to the station's
callback. The page then lists her grant, and a tool call through the API reaches the upstream as
her. When the provider forgets her grant (her refresh is refused), the page shows it not
connected, and its row's Connect authorizes it again. Revoke, once cancelled at its confirm and
once accepted, removes the grant: from the page, from the API's listing, and her next call is
refused.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT_MS
from identity_helpers import USERS, IdentityStation, user_oauth_world, whoami
from idp import revoke_grants

from idp import idp_missing  # isort: skip

if not CHROMIUM.exists():
    print(f"browser tests skipped: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium to run the console browser test", allow_module_level=True
    )
async_api = pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install -e '.[test]')")

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

NOT_SIGNED_IN = "only a user signed in with the organisation's identity provider has upstream authorizations"


async def call_as(served: IdentityStation, token: str, name: str) -> dict[str, Any]:
    async with served.http(token) as http:
        answer: dict[str, Any] = (await http.post(f"/api/mcp/tools/{name}/call", json={})).json()
    return answer


async def listed(served: IdentityStation, token: str) -> list[str]:
    async with served.http(token) as http:
        return [a["server"] for a in (await http.get("/api/me/authorizations")).json()["authorizations"]]


async def test_my_connections_connects_lists_and_revokes_a_users_own_grant(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    expect = async_api.expect
    expect.set_options(timeout=UI_TIMEOUT_MS)
    async with user_oauth_world(tmp_path) as (served, upstream), async_api.async_playwright() as playwright:
        name = whoami(served)
        alice = await served.token("alice", USERS)
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(UI_TIMEOUT_MS)

            async def sign_in_at_the_provider_as_alice(route: Any) -> None:
                await route.continue_(url=route.request.url + "&login_hint=alice")

            authorize = re.compile("^" + re.escape(served.idp.issuer) + r"/.*[?&]code_challenge=")
            await context.route(authorize, sign_in_at_the_provider_as_alice)
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            message = page.locator("#connections-message")

            # a station token has no authorizations of its own: the page says so, in the API's words
            await page.goto(f"{served.url}/#/connections")
            await page.get_by_role("textbox", name="API token").fill(served.station_tokens["admin"])
            await page.get_by_role("button", name="Sign in").click()
            await expect(message).to_have_text(NOT_SIGNED_IN)
            await expect(page.locator("#connections")).to_be_hidden()

            await page.get_by_role("button", name="Forget token").click()
            await page.get_by_role("textbox", name="API token").fill(alice)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#connections-none")).to_be_visible()
            await expect(message).to_have_text("")
            await expect(page.locator("#live-text")).to_have_text("No live updates with this token")

            # Connect: the new tab goes through the provider and back to the station's callback
            await page.get_by_role("combobox", name="Connect a server").fill("jira")
            async with context.expect_page() as opened:
                await page.get_by_role("button", name="Connect", exact=True).click()
            tab = await opened.value
            await expect(tab.locator("body")).to_contain_text("alice authorized the station to use server 'jira'")
            assert tab.url.startswith(f"{served.url}/oauth/callback?")
            await expect(message).to_contain_text("Sign in to authorize jira in the new tab")
            await tab.close()

            await page.get_by_role("button", name="Refresh").click()
            row = page.locator("tr[data-connection=jira]")
            await expect(row.locator("[data-label=Status]")).to_have_text("Connected")
            await expect(row.locator("[data-label=Upstream]")).to_have_text(upstream.url)
            await expect(row.locator("[data-label='Token expires']")).not_to_have_text("—")
            await expect(page.locator("#connections-none")).to_be_hidden()
            await page.screenshot(path=str(ARTIFACTS / "console-connections-1280.png"), full_page=True)
            answer = await call_as(served, alice, name)
            assert answer["outcome"] == "ok", answer
            assert json.loads(answer["text"])["sub"] == "alice"

            # the provider forgets alice's grant: her next refresh is refused, and the page offers to connect again
            await revoke_grants(served.idp, "alice")
            grants, user = served.station.user_grants, (served.idp.issuer, "alice")
            spec = served.station.roster.spec("jira")
            assert spec is not None
            grants.forget((user, "jira"), await grants.access_token(user, spec))  # as if the upstream refused it
            served.station.user_connections.close_user(user, "jira")
            assert (await call_as(served, alice, name))["outcome"] == "refused"
            await page.get_by_role("button", name="Refresh").click()
            await expect(row.locator("[data-label=Status]")).to_have_text("Not connected")
            async with context.expect_page() as opened:
                await page.get_by_role("button", name="Connect jira").click()
            tab = await opened.value
            await expect(tab.locator("body")).to_contain_text("alice authorized the station to use server 'jira'")
            await tab.close()
            await page.get_by_role("button", name="Refresh").click()
            await expect(row.locator("[data-label=Status]")).to_have_text("Connected")
            assert (await call_as(served, alice, name))["outcome"] == "ok"

            # Revoke asks first: cancelled, nothing changes; accepted, the grant is gone
            asked: list[str] = []

            async def dismiss(dialog: Any) -> None:
                asked.append(dialog.message)
                await dialog.dismiss()

            page.once("dialog", dismiss)
            await page.get_by_role("button", name="Revoke jira").click()
            await expect(row).to_be_visible()
            assert len(asked) == 1 and "jira" in asked[0]
            assert await listed(served, alice) == ["jira"]

            async def accept(dialog: Any) -> None:
                await dialog.accept()

            page.once("dialog", accept)
            await page.get_by_role("button", name="Revoke jira").click()
            await expect(message).to_have_text("Revoked jira.")
            await expect(row).to_have_count(0)
            await expect(page.locator("#connections-none")).to_be_visible()
            assert await listed(served, alice) == []
            answer = await call_as(served, alice, name)
            assert answer["outcome"] == "refused" and "has not authorized it" in answer["error"], answer

            await page.set_viewport_size({"width": 375, "height": 800})
            assert await page.evaluate("document.documentElement.scrollWidth") <= 375, "horizontal scroll at 375 px"
            assert errors == []
        finally:
            await browser.close()
