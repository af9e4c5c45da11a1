"""Sealing users' upstream records: the key is shared by every process on one SQLite store (a 0600
key file beside it), `auth.token_key` wins, and a PostgreSQL store cannot do without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from mcpstation.host.oauth.sealing import Sealer, SealError

ROW = ("https://idp.example", "alice", "jira")


def test_two_processes_on_one_sqlite_store_share_the_key_file_beside_it(tmp_path: Path) -> None:
    database = tmp_path / "mcpstation.db"
    first = Sealer.from_settings(None, database, in_memory=False)
    second = Sealer.from_settings(None, database, in_memory=False)
    key_file = tmp_path / "mcpstation.db.user-oauth.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert second.open(first.seal(b"tokens", ROW), ROW) == b"tokens"


def test_the_configured_token_key_is_the_key_and_another_key_does_not_open(tmp_path: Path) -> None:
    configured = Sealer.from_settings(SecretStr("a long random string"), tmp_path / "mcpstation.db", in_memory=False)
    assert not (tmp_path / "mcpstation.db.user-oauth.key").exists()
    again = Sealer.from_settings(SecretStr("a long random string"), None, in_memory=False)
    sealed = configured.seal(b"tokens", ROW)
    assert again.open(sealed, ROW) == b"tokens"
    with pytest.raises(SealError):
        Sealer.from_settings(SecretStr("another"), None, in_memory=False).open(sealed, ROW)
    with pytest.raises(SealError):  # tampered
        again.open(sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB"), ROW)


def test_a_postgresql_store_needs_the_token_key() -> None:
    with pytest.raises(ValueError, match="token_key is needed"):
        Sealer.from_settings(None, None, in_memory=False)


def test_a_sealed_record_opens_only_for_its_own_row() -> None:
    sealer = Sealer(b"k" * 32)
    sealed = sealer.seal(b'{"tokens": {}}', ROW)
    assert sealer.open(sealed, ROW) == b'{"tokens": {}}'
    for other in (
        ("https://idp.example", "bob", "jira"),
        ("https://idp.example", "alice", "wiki"),
        ("x", "alice", "jira"),
    ):
        with pytest.raises(SealError, match="does not open"):
            sealer.open(sealed, other)
