"""`Sealer`: each user's upstream credentials encrypted before they reach the store.

AES-256-GCM (from `cryptography`), with the row's key `(user issuer, user subject, server)` as
associated data: a sealed record copied into another user's row, or another server's, does not
open. The key is derived (HKDF-SHA256) from `[auth] token_key` when set; otherwise from a random
key file kept beside an SQLite store (`<database>.user-oauth.key`, mode 0600). A PostgreSQL store
has no "beside": its replicas must share `token_key`, so it is required there. A store in memory
gets a key for the process's life (its rows die with it anyway).
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pydantic import SecretStr

VERSION = "v1"
NONCE_BYTES = 12
KEY_BYTES = 32
_INFO = b"mcpstation user-oauth v1"


class SealError(Exception):
    """A sealed record does not open with this key for this row (another key, another row, tampered)."""


class Sealer:
    """Seals and opens per-user records with one key (see the module docstring)."""

    def __init__(self, secret: bytes) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=_INFO).derive(secret)
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "<Sealer AES-256-GCM>"

    @classmethod
    def from_settings(cls, token_key: SecretStr | None, database_file: Path | None, *, in_memory: bool) -> Sealer:
        """The sealer of `[auth] token_key`, else of the key file beside `database_file`, else (a
        store in memory) of a key for this process.

        Raises:
            ValueError: no key can be had (a PostgreSQL store without `token_key`).
        """
        if token_key is not None:
            return cls(token_key.get_secret_value().encode())
        if database_file is not None:
            return cls(_key_file(database_file.with_name(f"{database_file.name}.user-oauth.key")))
        if in_memory:
            return cls(secrets.token_bytes(KEY_BYTES))
        raise ValueError(
            "auth.token_key is needed: per-user upstream tokens are sealed with it, and the replicas "
            "of a PostgreSQL store must share it"
        )

    def seal(self, plain: bytes, row: tuple[str, ...]) -> str:
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plain, _aad(row))
        return f"{VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def open(self, sealed: str, row: tuple[str, ...]) -> bytes:
        """The plain record.

        Raises:
            SealError: it was not sealed by this key for this row.
        """
        version, _, body = sealed.partition(".")
        if version != VERSION:
            raise SealError(f"unknown seal version {version!r}")
        try:
            raw = base64.urlsafe_b64decode(body)
            return self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], _aad(row))
        except (InvalidTag, ValueError):
            raise SealError("the record does not open with this key for this row") from None


def _aad(row: tuple[str, ...]) -> bytes:
    return b"\x00".join(part.encode() for part in row)


def _key_file(path: Path) -> bytes:
    """The key in `path`, created (0600, atomically: the first process to create it wins) if missing."""
    try:
        return base64.b64decode(path.read_bytes())
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return base64.b64decode(path.read_bytes())
    with os.fdopen(fd, "wb") as out:
        out.write(base64.b64encode(secrets.token_bytes(KEY_BYTES)))
        out.flush()
        os.fsync(out.fileno())
    return base64.b64decode(path.read_bytes())
