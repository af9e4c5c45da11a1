"""The time budgets a server gets: its own setting, else the station's."""

from __future__ import annotations

from mcpstation.config.models import AnyServerSpec, StationSettings

INTERACTIVE_SIGN_IN_S = 300.0  # connect budget for servers whose OAuth sign-in waits for a person


def startup_budget_s(spec: AnyServerSpec, settings: StationSettings) -> float:
    """How long one start (spawn or connect, handshake, first listing) may take."""
    budget = spec.startup_timeout_s or settings.server_startup_timeout_s
    oauth = getattr(spec, "oauth", None)
    if oauth is not None and oauth.mode == "authorization_code":
        budget = max(budget, INTERACTIVE_SIGN_IN_S)  # a person may be signing in
    return budget


def call_timeout_s(spec: AnyServerSpec, settings: StationSettings) -> float:
    """How long one request may wait for its answer, unless the caller says otherwise."""
    return spec.call_timeout_s or settings.call_timeout_s


def idle_stop_s(spec: AnyServerSpec, settings: StationSettings) -> float:
    """How long a lazy server may go unused before it is stopped."""
    return spec.idle_stop_s or settings.idle_stop_s
