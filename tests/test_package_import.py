"""A plain import costs what it uses: no database layer, no extra server stack, no optional parser or integration.

Each check runs in a fresh interpreter and lists what it loaded. The SDK itself (`from mcp import
ClientSession`) brings Starlette, uvicorn and sse-starlette; the station may load nothing of the
server stack beyond what the SDK already does.
"""

from __future__ import annotations

import json
import subprocess
import sys

IMPORT_TIMEOUT_S = 120.0  # a fresh interpreter importing the package on a loaded machine
DATABASE = ("sqlalchemy", "alembic", "asyncpg", "aiosqlite")
SERVER_STACK = ("uvicorn", "starlette", "sse_starlette")
OPTIONAL = ("websockets", "yaml", "ruamel", "jwt", "cryptography", "typer", "rich", "numpy", "opentelemetry.sdk")
HEAVY = DATABASE + SERVER_STACK + OPTIONAL
# Our own parts a station loads only when it uses them: the provider schema compilers (exports).
OWN_ON_USE = ("mcpstation.catalog.compile", "mcpstation.catalog.schemas")
# What a station leaves to its first `Host` (sampling, elicitation) or never needs unless asked for.
HOST_ON_USE = ("mcpstation.host.elicitation", "mcpstation.host.sampling")
HOST_ON_REQUEST = ("mcpstation.host.openai_sampler", "mcpstation.host.terminal")
# Code mode's run side: loaded with the first script (or, for the stubs, when code mode is first offered).
CODE_ON_USE = (
    "mcpstation.codemode._run",
    "mcpstation.codemode.limits",
    "mcpstation.codemode.names",
    "mcpstation.codemode.sandbox",
    "mcpstation.codemode.stubs",
    "mcpstation.codemode.values",
)

_PROBE = """
import json, sys
{code}
json.dump(sorted(sys.modules), sys.stdout)
"""


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(code=code)], capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    """The heavy packages among `modules`, by their top name as listed in HEAVY."""
    return {name for name in HEAVY if any(m == name or m.startswith(name + ".") for m in modules)}


def test_importing_the_station_loads_nothing_heavy_the_sdk_does_not():
    sdk = heavy(loaded_after("from mcp import ClientSession"))
    station = heavy(loaded_after("from mcpstation import Station, StationConfig, Caller, ToolResult"))
    assert station <= sdk, f"loaded beyond the SDK: {sorted(station - sdk)}"
    assert not station & set(DATABASE)


def test_importing_the_station_leaves_the_provider_exports_until_used():
    assert not {m for m in loaded_after("from mcpstation import Station") if m.startswith(OWN_ON_USE)}
    used = loaded_after("from mcpstation.catalog import openai_tools\nassert callable(openai_tools)")
    assert set(OWN_ON_USE) <= used


def test_the_host_loads_sampling_and_elicitation_only_for_a_handler_or_a_mode_to_serve():
    lazy = (*HOST_ON_USE, *HOST_ON_REQUEST)
    assert not {m for m in loaded_after("from mcpstation import Station") if m.startswith(lazy)}
    default = loaded_after(
        "from mcpstation.config.models import StdioServerSpec\nfrom mcpstation.host import Host\n"
        "Host().client_kwargs(StdioServerSpec(name='s', command='x'))"
    )
    assert not {*HOST_ON_USE, *HOST_ON_REQUEST} & default
    serving = loaded_after(
        "from mcpstation.config.models import StdioServerSpec\n"
        "from mcpstation.host import ElicitationModes, Host, SamplingPolicy\n"
        "async def handler(request): ...\n"
        "host = Host(sampling_handler=handler, sampling=SamplingPolicy(enabled=True),"
        " elicitation=ElicitationModes(form=True))\n"
        "kwargs = host.client_kwargs(StdioServerSpec(name='s', command='x'))\n"
        "assert {'sampling_callback', 'elicitation_callback'} <= set(kwargs), kwargs\n"
    )
    assert set(HOST_ON_USE) <= serving and not set(HOST_ON_REQUEST) & serving


def test_importing_the_station_leaves_code_mode_until_a_script_runs():
    assert not {m for m in loaded_after("from mcpstation import Station") if m.startswith(CODE_ON_USE)}
    assert set(CODE_ON_USE) <= loaded_after("import mcpstation.codemode._run")


def test_the_provider_adapters_load_no_database_and_no_optional_parser():
    loaded = loaded_after(
        "import mcpstation.integrations, mcpstation.integrations.openai, mcpstation.integrations.anthropic"
    )
    beyond = heavy(loaded) - heavy(loaded_after("from mcp import ClientSession"))
    assert not beyond, f"loaded beyond the SDK: {sorted(beyond)}"


def test_the_store_package_and_its_records_import_without_sqlalchemy():
    code = (
        "import mcpstation.store\n"
        "from mcpstation.store import CallEntry, ChangeKind, DynamicServer, ToolPin, default_data_dir\n"
        "from mcpstation.pipeline import AuditTrail\n"
        "from mcpstation.pinning import ToolPins\n"
        "from mcpstation.catalog_cache import CatalogCache\n"
    )
    assert not heavy(loaded_after(code)) & set(DATABASE)
    assert "sqlalchemy" in heavy(loaded_after("from mcpstation.store import Store"))  # the engine comes with it


def test_a_station_without_a_store_runs_a_call_without_loading_the_database():
    code = (
        "import anyio\n"
        "from mcpstation import InProcessServerSpec, Station, StationConfig\n"
        "from mcpstation.testing.demo_server import build_demo_server\n"
        "async def main():\n"
        "    config = StationConfig(servers=[InProcessServerSpec(name='demo', server=build_demo_server())])\n"
        "    async with Station(config) as station:\n"
        "        result = await station.call_tool('mcp_demo_add', {'a': 2, 'b': 3})\n"
        "        assert result.structured == {'result': 5}, result\n"
        "anyio.run(main)\n"
    )
    assert not heavy(loaded_after(code)) & {*DATABASE, "websockets", "yaml", "jwt"}


def test_the_stdio_gateway_leaves_the_http_gateway_unloaded():
    http_side = ("mcpstation.gateway.http", "mcpstation.gateway._events", "mcpstation.api")
    code = "from mcpstation.gateway.stdio import serve_stdio\nfrom mcpstation.gateway import GatewayRelay"
    loaded = loaded_after(code)
    assert not {m for m in loaded if m.startswith(http_side)}
    assert "mcpstation.gateway.http" in loaded_after("from mcpstation.gateway import gateway_asgi_app")


def test_a_sqlite_store_leaves_the_postgresql_dialect_unloaded(tmp_path):
    """SQLAlchemy's PostgreSQL package imports every PostgreSQL driver's module: a gateway or a
    one-shot command on a SQLite file must not pay for it (the second open: the schema is current)."""
    code = (
        "import anyio, pathlib\n"
        "from mcpstation.store import Store\n"
        "async def main():\n"
        f"    async with await Store.open(data_dir=pathlib.Path({str(tmp_path)!r})) as store:\n"
        "        await store.write_calls([])\n"
        "anyio.run(main)\n"
    )
    loaded_after(code)  # creates and migrates the file
    loaded = loaded_after(code)
    assert "sqlalchemy" in loaded
    assert not {m for m in loaded if m.startswith("sqlalchemy.dialects.postgresql")}


def test_a_stdio_gateway_answers_before_it_loads_the_station_the_config_or_the_store():
    """What `gateway --stdio` loads to answer from its list snapshot: the SDK and the gateway's shell."""
    code = (
        "from mcpstation.cli import gateway\n"
        "from mcpstation.gateway._snapshot import read_snapshot\n"
        "from mcpstation.per_input import input_key\n"
        "from mcpstation.gateway._starting import StartingGateway\n"
        "from mcpstation.gateway._serving import gateway_server\n"
    )
    loaded = loaded_after(code)
    station = ("mcpstation.station", "mcpstation.store.store", "mcpstation.config.models", "mcpstation.pipeline")
    assert not {m for m in loaded if m.startswith(station)}
    assert not heavy(loaded) & set(DATABASE)


def test_a_one_shot_call_starts_its_server_before_it_loads_the_sdk_the_store_or_the_station():
    """What `mcpstation call` has loaded when it starts the tool's server (`connection.early`)."""
    code = (
        "import sys\n"
        "from mcpstation.cli import _call_owners, _local\n"
        "from mcpstation.config.models import StationConfig\n"
        "from mcpstation.connection.early import EarlyStarts\n"
        "config = StationConfig(servers=[{'name': 't', 'command': sys.executable, 'args': ['-c', 'pass']}])\n"
        "assert EarlyStarts().start(config.server('t')) is not None\n"
    )
    loaded = loaded_after(code)
    station = ("mcpstation.station", "mcpstation.store.store", "mcpstation.pool", "mcpstation.pipeline")
    assert not {m for m in loaded if m == "mcp" or m.startswith(("mcp.", *station))}
    assert not heavy(loaded) & set(DATABASE)
