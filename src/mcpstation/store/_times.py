"""Timestamps as the store keeps them: aware UTC, whatever the database hands back."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def utc(value: datetime) -> datetime:
    """Aware UTC: SQLite gives back naive datetimes (stored as UTC); naive input is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def maybe_utc(value: datetime | None) -> datetime | None:
    return None if value is None else utc(value)
