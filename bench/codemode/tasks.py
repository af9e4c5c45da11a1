"""The tasks, each written down twice as a model would play it: one tool call per step (a plan that reads
each turn's results before choosing the next calls), and one `mcp_run_code` script. Each has a checker.

Kinds follow the usual split: independent (calls that need nothing from each other), sequential (each
call needs the one before), iterative (a loop whose length depends on the results).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

Call = tuple[str, dict[str, Any]]
Plan = Generator[list[Call], list[Any], Any]
"""Yields each turn's calls (run at once, like a model's parallel tool calls), is sent their results,
returns the answer."""


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # independent | sequential | iterative
    prompt: str
    direct: Callable[[], Plan]
    script: str
    expected: Any

    def check(self, answer: Any) -> bool:
        return bool(answer == self.expected)


def _sum_pairs() -> Plan:
    pairs = [(2, 3), (10, 20), (7, 8), (100, 1), (4, 4)]
    sums = yield [("mcp_calc_add", {"a": a, "b": b}) for a, b in pairs]
    return sum(s["result"] for s in sums)


def _issues_fanout() -> Plan:
    titles = ["Crash on start", "Typo in README", "Slow search", "Broken link"]
    made = yield [("mcp_github_create_issue", {"owner": "acme", "repo": "app", "title": t}) for t in titles]
    return [m["arguments"]["title"] for m in made]


def _arith_chain() -> Plan:
    [x] = yield [("mcp_calc_add", {"a": 3, "b": 4})]
    [x] = yield [("mcp_calc_multiply", {"a": x["result"], "b": 5})]
    [x] = yield [("mcp_calc_add", {"a": int(x["result"]), "b": 6})]
    [x] = yield [("mcp_calc_multiply", {"a": x["result"], "b": 7})]
    return int(x["result"])


def _issue_to_slack() -> Plan:
    [issue] = yield [("mcp_github_create_issue", {"owner": "acme", "repo": "app", "title": "Login fails on Safari"})]
    title = issue["arguments"]["title"]
    [post] = yield [("mcp_slack_slack_post_message", {"channel_id": "C042", "text": f"filed: {title}"})]
    entity = {"name": title, "entityType": "issue", "observations": [post["arguments"]["text"]]}
    [saved] = yield [("mcp_memory_create_entities", {"entities": [entity]})]
    return saved["arguments"]["entities"][0]["name"]


def _double_until() -> Plan:
    n, steps = 1, 0
    while n <= 1000:
        [r] = yield [("mcp_calc_multiply", {"a": n, "b": 2})]
        n, steps = int(r["result"]), steps + 1
    return [n, steps]


def _running_total() -> Plan:
    numbers = [5, 9, 14, 3, 8, 11]
    total = 0
    pending: list[Call] = []
    for i, x in enumerate(numbers):  # each total is stored while the next addition runs, as a model would batch
        results = yield [*pending, ("mcp_calc_add", {"a": total, "b": x})]
        total = results[-1]["result"]
        pending = [("mcp_redis_set", {"key": f"total{i}", "value": str(total)})]
    yield pending
    return total


TASKS = [
    Task(
        "sum_pairs",
        "independent",
        "Add each of these pairs with the calculator and tell me the sum of the results: "
        "(2,3) (10,20) (7,8) (100,1) (4,4).",
        _sum_pairs,
        """import asyncio
pairs = [(2, 3), (10, 20), (7, 8), (100, 1), (4, 4)]
sums = await asyncio.gather(*[mcp_calc_add(a=a, b=b) for a, b in pairs])
sum(s["result"] for s in sums)
""",
        159,
    ),
    Task(
        "issues_fanout",
        "independent",
        "Open these four issues on acme/app and give me their titles as GitHub recorded them: "
        "Crash on start; Typo in README; Slow search; Broken link.",
        _issues_fanout,
        """import asyncio
titles = ["Crash on start", "Typo in README", "Slow search", "Broken link"]
made = await asyncio.gather(*[mcp_github_create_issue(owner="acme", repo="app", title=t) for t in titles])
[m["arguments"]["title"] for m in made]
""",
        ["Crash on start", "Typo in README", "Slow search", "Broken link"],
    ),
    Task(
        "arith_chain",
        "sequential",
        "With the calculator tools, compute ((3 + 4) * 5 + 6) * 7.",
        _arith_chain,
        """x = (await mcp_calc_add(a=3, b=4))["result"]
y = (await mcp_calc_multiply(a=x, b=5))["result"]
z = (await mcp_calc_add(a=int(y), b=6))["result"]
int((await mcp_calc_multiply(a=z, b=7))["result"])
""",
        287,
    ),
    Task(
        "issue_to_slack",
        "sequential",
        "File 'Login fails on Safari' on acme/app, post the filed title to Slack channel C042, then remember "
        "the issue in the memory graph with the Slack text as an observation. Which entity did you store?",
        _issue_to_slack,
        """issue = await mcp_github_create_issue(owner="acme", repo="app", title="Login fails on Safari")
title = issue["arguments"]["title"]
post = await mcp_slack_slack_post_message(channel_id="C042", text=f"filed: {title}")
saved = await mcp_memory_create_entities(
    entities=[{"name": title, "entityType": "issue", "observations": [post["arguments"]["text"]]}]
)
saved["arguments"]["entities"][0]["name"]
""",
        "Login fails on Safari",
    ),
    Task(
        "double_until",
        "iterative",
        "Starting from 1, keep doubling with the calculator until the number passes 1000. "
        "Give the number and how many doublings it took.",
        _double_until,
        """n, steps = 1, 0
while n <= 1000:
    n = int((await mcp_calc_multiply(a=n, b=2))["result"])
    steps += 1
[n, steps]
""",
        [1024, 10],
    ),
    Task(
        "running_total",
        "iterative",
        "Add up 5, 9, 14, 3, 8, 11 one at a time with the calculator, storing each running total in Redis "
        "under total0, total1, ...; what is the final total?",
        _running_total,
        """total = 0
for i, x in enumerate([5, 9, 14, 3, 8, 11]):
    total = (await mcp_calc_add(a=total, b=x))["result"]
    await mcp_redis_set(key=f"total{i}", value=str(total))
total
""",
        50,
    ),
]
