import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # shared helpers: _node, _processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
