import os
import shutil
import tempfile

import pytest

_DATA_HOME_ENV = "XDG_DATA_HOME"


def pytest_configure(config: pytest.Config) -> None:
    """The run's own data home: a test that runs the CLI or opens a store without naming a data
    directory gets one under it, never the user's (`~/.local/share/mcpstation`)."""
    os.environ[_DATA_HOME_ENV] = tempfile.mkdtemp(prefix="mcpstation-tests-data-")
    # pytest-xdist's `load` scheduling starts each worker on a chunk of a quarter of its share of
    # consecutive tests: the first worker got every `long` test (run first, below) and ran them one
    # after another. Two at a time, each worker starts on two of them. Unless given on the command
    # line; absent when xdist is not loaded.
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` run first. pytest-xdist hands tests out in collection order, so a test of
    a minute or more collected late (the README's quick start, in the last files) started when the
    other workers were nearly done and the whole run waited for it alone."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the rest keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get(_DATA_HOME_ENV, ""), ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
