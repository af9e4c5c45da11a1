"""The package and the SDK-free adapters import no framework or provider SDK; a missing extra is a clear error."""

from __future__ import annotations

import subprocess
import sys

IMPORT_TIMEOUT_S = 120.0  # a fresh interpreter importing mcpstation on a loaded machine
OPTIONAL = ("pydantic_ai", "agents", "langchain_core", "openai", "anthropic")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S, check=False
    )


def test_the_package_and_the_provider_adapters_import_no_optional_framework():
    code = (
        "import sys\n"
        "import mcpstation.integrations, mcpstation.integrations.openai, mcpstation.integrations.anthropic\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({OPTIONAL!r})))\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_adapter_without_its_framework_says_which_extra_to_install():
    # A meta-path finder that refuses the framework stands in for an environment without the extra.
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'langchain_core':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "import mcpstation.integrations.langchain\n"
    )
    done = _run(code)
    assert done.returncode != 0
    assert "needs langchain-core: pip install 'mcpstation[langchain]'" in done.stderr
