"""What a stdio server inherits: the network variables for the user's own servers, `inherit_env`, never everything.

The end-to-end test runs what a TLS-inspecting proxy does to a server: the test runs a loopback
CONNECT proxy (which counts what passes) in front of an HTTPS server whose certificate comes from
a CA made in the test; the server reaches it only with HTTPS_PROXY and SSL_CERT_FILE.
"""

from __future__ import annotations

import datetime
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteStream, SocketAttribute
from anyio.streams.tls import TLSListener
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mcpstation import Station
from mcpstation.config import load_config, parse_config
from mcpstation.config.environment import NETWORK_VARIABLES, withheld_network_variables
from mcpstation.config.models import StdioServerSpec
from mcpstation.connection._launch import child_environment
from mcpstation.store import Store

START_TIMEOUT_S = 60.0  # a whole station start with one real server, on a loaded 2-core machine
NETWORK_SERVER = Path(__file__).resolve().parent / "network_server.py"
HOST = "mcpstation-test.example"  # only the test's proxy knows where this is
BODY = b"hello through the proxy"
HEAD_LIMIT = 16 * 1024  # bytes of a request head the test's servers read
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def test_a_config_server_inherits_the_network_variables_and_its_inherit_env() -> None:
    environ = {
        "HTTPS_PROXY": "http://proxy:3128",
        "no_proxy": "localhost",
        "NODE_EXTRA_CA_CERTS": "/etc/ca.pem",
        "npm_config_registry": "https://npm.internal",
        "OPENAI_API_KEY": "sk-secret",
        "TEAM_TOKEN": "t",
        "TEAM_URL": "u",
        "MINE": "m",
    }
    config = parse_config(
        '[station]\ninherit_env = ["TEAM_*"]\n\n'
        '[servers.a]\ncommand = "/bin/true"\ninherit_env = ["MINE"]\nenv = { TEAM_URL = "own" }\n\n'
        '[servers.b]\ncommand = "/bin/true"\n',
        fmt="toml",
        environ={},
    )
    a = child_environment(config.server("a"), environ)  # type: ignore[arg-type]
    for name in ("HTTPS_PROXY", "no_proxy", "NODE_EXTRA_CA_CERTS", "npm_config_registry", "TEAM_TOKEN", "MINE"):
        assert a[name] == environ[name], name
    assert a["TEAM_URL"] == "own"  # its own env wins
    assert "OPENAI_API_KEY" not in a
    b = child_environment(config.server("b"), environ)  # type: ignore[arg-type]
    assert "MINE" not in b and b["TEAM_TOKEN"] == "t" and b["HTTPS_PROXY"] == environ["HTTPS_PROXY"]
    assert "PATH" in b and "HOME" in b  # the SDK's short list


def test_a_server_added_at_run_time_inherits_none_of_them() -> None:
    environ = {"HTTPS_PROXY": "http://proxy:3128", "SSL_CERT_FILE": "/etc/ca.pem", "MINE": "m"}
    spec = StdioServerSpec(name="agent", command="/bin/true")  # validated on its own, as a run-time add is
    given = child_environment(spec, environ)
    assert "HTTPS_PROXY" not in given and "SSL_CERT_FILE" not in given
    assert withheld_network_variables(environ, given) == ("HTTPS_PROXY", "SSL_CERT_FILE")
    approved = StdioServerSpec(name="agent", command="/bin/true", inherit_env=("MINE",))  # a person approved this
    assert child_environment(approved, environ)["MINE"] == "m"
    assert "HTTPS_PROXY" not in child_environment(approved, environ)


def test_the_network_variables_cover_proxies_cas_and_package_indexes_in_both_cases() -> None:
    for name in ("HTTP_PROXY", "https_proxy", "NO_PROXY", "all_proxy", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
                 "NODE_EXTRA_CA_CERTS", "PIP_INDEX_URL", "npm_config_cafile", "NPM_CONFIG_PROXY"):  # fmt: skip
        assert child_environment(StdioServerSpec(name="s", command="/bin/true").from_config(()), {name: "x"})[name]
    assert "NPM_CONFIG_*" in NETWORK_VARIABLES and "npm_config_*" in NETWORK_VARIABLES


# -- a proxy and a CA of the test's own ----------------------------------------------------------------


@dataclass
class Network:
    """The test's HTTPS server behind its CONNECT proxy, and the CA that signed the server's certificate."""

    proxy_url: str
    ca_file: Path
    connects: list[str] = field(default_factory=list)


def make_certificates(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA (its certificate written to `ca.pem`) and a server context for HOST signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcpstation test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital_signature, key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = folder / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    chain, key_file = folder / "server.pem", folder / "server.key"
    chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(chain, key_file)
    return ca_file, context


async def read_head(stream: ByteStream) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        head += await stream.receive()
        if len(head) > HEAD_LIMIT:
            raise ValueError("request head too long")
    return head


async def relay(source: ByteStream, sink: ByteStream, scope: anyio.CancelScope) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    scope.cancel()  # one side is done: so is the tunnel


@asynccontextmanager
async def serving_network(folder: Path) -> AsyncIterator[Network]:
    ca_file, context = make_certificates(folder)
    https_socket = await anyio.create_tcp_listener(local_host="127.0.0.1")
    https_port = https_socket.listeners[0].extra(SocketAttribute.local_port)
    https = TLSListener(https_socket, context, standard_compatible=False)
    proxy = await anyio.create_tcp_listener(local_host="127.0.0.1")
    network = Network(f"http://127.0.0.1:{proxy.listeners[0].extra(SocketAttribute.local_port)}", ca_file)

    async def answer(client: ByteStream) -> None:
        async with client:
            await read_head(client)
            await client.send(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)
            )

    async def tunnel(client: ByteStream) -> None:
        async with client:
            method, target, _version = (await read_head(client)).split(b"\r\n", 1)[0].decode().split(" ")
            network.connects.append(f"{method} {target}")
            if method != "CONNECT" or target != f"{HOST}:443":
                await client.send(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            async with await anyio.connect_tcp("127.0.0.1", https_port) as upstream:
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                async with anyio.create_task_group() as pipes:
                    pipes.start_soon(relay, client, upstream, pipes.cancel_scope)
                    pipes.start_soon(relay, upstream, client, pipes.cancel_scope)

    async with https, proxy, anyio.create_task_group() as servers:
        servers.start_soon(https.serve, answer)
        servers.start_soon(proxy.serve, tunnel)
        yield network
        servers.cancel_scope.cancel()


@pytest.fixture
def network_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The station's environment without any proxy of the machine's own."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.mark.anyio
async def test_a_config_server_reaches_https_through_the_users_proxy_and_ca(
    tmp_path: Path, network_env: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(f'[servers.net]\ncommand = "{sys.executable}"\nargs = ["{NETWORK_SERVER}"]\n')
    async with serving_network(tmp_path) as network:
        network_env.setenv("HTTPS_PROXY", network.proxy_url)
        network_env.setenv("SSL_CERT_FILE", str(network.ca_file))
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(load_config(path)) as station:
                result = await station.call_tool("mcp_net_fetch", {"url": f"https://{HOST}/"})
    assert result.ok, result.error
    assert result.text == BODY.decode()
    assert network.connects == [f"CONNECT {HOST}:443"]


@pytest.mark.anyio
async def test_a_server_added_at_run_time_goes_without_the_users_proxy(
    tmp_path: Path, network_env: pytest.MonkeyPatch
) -> None:
    network_env.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    config = parse_config(f'[policy]\nallowed_dynamic_stdio_commands = ["{sys.executable}"]\n', fmt="toml", environ={})
    spec = {"name": "net", "command": sys.executable, "args": [str(NETWORK_SERVER)]}
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store, Station(config, store=store) as station:
            assert (await station.add_server(spec, actor="llm:bob")).pending  # a script: a person decides
            assert (await station.approve_server("net", actor="alice")).ok
            result = await station.call_tool("mcp_net_variable", {"name": "HTTPS_PROXY"})
    assert result.ok, result.error
    assert result.text == "<unset>"
