import pytest

# Tests that take tens of seconds (the conformance shards, the CLI's and other multi-process tests)
# start first, so that at the end of a run no worker is still on one while the others wait.
SLOW_FIRST = (
    "tests/conformance/",
    "tests/store/test_faces_on_both_databases.py",
    "tests/test_readme_quick_start.py",
    "tests/security/test_secret_sentinel.py",
    "tests/store/test_replicas_behind_haproxy.py",
    "tests/gateway/test_conformance_server.py",
    "tests/cli/",
    "tests/store/test_ups_on_one_sqlite_file.py",
    "tests/policy/test_paths.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(SLOW_FIRST))  # stable: the order within each stays


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
