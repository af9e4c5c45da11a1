"""`Host`: what the station answers when a server asks it something.

```python
host = Host.from_config(config, sampling_handler=my_llm, elicitation_handler=TerminalElicitor())
async with Station(config, hooks=host) as station:
    await host.set_roots([RootSpec(uri="file:///work/project")])   # servers hear about it
```

Registering an SDK callback *is* declaring the capability, so `client_kwargs` registers one only
when that capability is on for that server:

| capability | on when |
|---|---|
| roots | the host has at least one enabled root when the session starts |
| sampling | a handler exists and `server.sampling` (else `[host.sampling] enabled`) |
| elicitation | `server.elicitation_form` / `_url` (else `[host.elicitation]` allow_form / allow_url) |
| logging | always: records go to `mcpstation.server.<name>` |

The SDK declares both elicitation modes at once, so one mode on declares both and a request in
the other mode is refused with an error naming the setting.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import httpx2
import mcp_types as types
from mcp.client import Client

from mcpstation.config.models import AnyServerSpec, LogLevel, RootSpec, StationConfig
from mcpstation.errors import ConfigError
from mcpstation.host._allowances import ElicitationModes, SamplingPolicy
from mcpstation.host.oauth import OAuthProviders, OAuthStore
from mcpstation.host.roots import Roots, notify_roots_changed
from mcpstation.host.server_logs import apply_log_level, effective_level, logging_callback_for

if TYPE_CHECKING:
    from mcpstation.host.elicitation import ElicitationHandler, Elicitor
    from mcpstation.host.sampling import SamplingGate, SamplingHandler

logger = logging.getLogger(__name__)

AuthProviderFactory = Callable[[AnyServerSpec], httpx2.Auth | None]
DEFAULT_LOG_LEVEL: LogLevel = "info"


class Host:
    """Implements `SessionHooks`: per-server callbacks for roots, sampling, elicitation and logs.

    It also keeps the live client of every ready session (`attach` / `detach`) so that changing
    the roots can be announced to the servers that cache them.
    """

    def __init__(
        self,
        *,
        roots: Iterable[RootSpec] = (),
        sampling_handler: SamplingHandler | None = None,
        sampling: SamplingPolicy | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation: ElicitationModes | None = None,
        log_level: LogLevel | None = DEFAULT_LOG_LEVEL,
        auth_provider_factory: AuthProviderFactory | None = None,
    ) -> None:
        """`sampling` / `elicitation` are the defaults for servers that set no override.

        Raises:
            ValueError: a root is not a file:// URI.
        """
        self._roots = Roots(roots)
        self.sampling_policy = sampling or SamplingPolicy()
        self._sampling: SamplingGate | None = None
        if sampling_handler is not None:  # the sampling module loads with a handler to serve, not before
            from mcpstation.host.sampling import SamplingGate

            self._sampling = SamplingGate(sampling_handler, self.sampling_policy)
        self.elicitation_modes = elicitation or ElicitationModes()
        self._elicitation_handler = elicitation_handler
        self.log_level = log_level
        self._auth_provider_factory = auth_provider_factory
        self._clients: dict[str, Client] = {}

    @classmethod
    def from_config(
        cls,
        config: StationConfig,
        *,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        auth_provider_factory: AuthProviderFactory | None = None,
        log_level: LogLevel | None = DEFAULT_LOG_LEVEL,
        store: OAuthStore | None = None,
    ) -> Host:
        """A host for `config.host`. Without `sampling_handler`, `[host.sampling] base_url` and
        `model` build an `OpenAICompatibleSampler`; with neither, no server can sample. OAuth
        tokens go to `store` when given, else to 0600 files in the data directory.

        Raises:
            ConfigError: a root is not a file:// URI.
        """
        settings = config.host
        sampling = settings.sampling
        if sampling_handler is None and sampling.base_url and sampling.model:
            from mcpstation.host.openai_sampler import OpenAICompatibleSampler  # only a host that samples this way

            sampling_handler = OpenAICompatibleSampler(sampling.base_url, sampling.model, sampling.api_key_env)
        elif sampling_handler is None and sampling.enabled:
            logger.warning(
                "[host.sampling] is enabled but there is no sampling handler; servers will not be offered "
                "sampling. Set base_url and model, or pass sampling_handler="
            )
        elicitation = settings.elicitation
        try:
            return cls(
                roots=settings.roots,
                sampling_handler=sampling_handler,
                sampling=SamplingPolicy(
                    enabled=sampling.enabled,
                    max_tokens=sampling.max_tokens,
                    requests_per_minute=sampling.requests_per_minute,
                    allow_tools=sampling.tool_support,
                ),
                elicitation_handler=elicitation_handler,
                elicitation=ElicitationModes(
                    form=elicitation.enabled and elicitation.allow_form,
                    url=elicitation.enabled and elicitation.allow_url,
                ),
                log_level=log_level,
                auth_provider_factory=auth_provider_factory
                if auth_provider_factory is not None
                else OAuthProviders(store=store),
            )
        except ValueError as exc:
            raise ConfigError(str(exc), path=config.source, key="host.roots") from exc

    # -- SessionHooks ------------------------------------------------------------------------------

    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        """The `Client(...)` callbacks for `spec`: only the capabilities that are on for it."""
        level = effective_level(spec, self.log_level)
        kwargs: dict[str, Any] = {
            "logging_callback": logging_callback_for(spec.name, level),
            "log_level": level,  # modern sessions only; legacy ones get `apply_log_level`
        }
        if self._roots.offered:
            kwargs["list_roots_callback"] = self._roots.list_roots
        if self.sampling_enabled_for(spec) and self._sampling is not None:
            kwargs["sampling_callback"] = self._sampling.callback_for(spec.name)
            if self.sampling_policy.allow_tools:
                kwargs["sampling_capabilities"] = types.SamplingCapability(tools=types.SamplingToolsCapability())
        modes = self.elicitation_modes_for(spec)
        if modes.any:
            kwargs["elicitation_callback"] = self._elicitor.callback_for(spec.name, modes)
        return kwargs

    @functools.cached_property
    def _elicitor(self) -> Elicitor:
        """Made when a server is first offered elicitation: the module loads with the first such server."""
        from mcpstation.host.elicitation import Elicitor

        return Elicitor(self._elicitation_handler)

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        """An OAuth provider for `spec` from `auth_provider_factory`, else None."""
        if self._auth_provider_factory is None:
            return None
        return self._auth_provider_factory(spec)

    # -- per-server capability decisions -------------------------------------------------------------

    def sampling_enabled_for(self, spec: AnyServerSpec) -> bool:
        """Whether `spec` may sample (needs a handler as well to be offered)."""
        return spec.sampling if spec.sampling is not None else self.sampling_policy.enabled

    def elicitation_modes_for(self, spec: AnyServerSpec) -> ElicitationModes:
        default = self.elicitation_modes
        return ElicitationModes(
            form=spec.elicitation_form if spec.elicitation_form is not None else default.form,
            url=spec.elicitation_url if spec.elicitation_url is not None else default.url,
        )

    # -- live sessions -------------------------------------------------------------------------------

    def attach(self, name: str, client: Client) -> None:
        """Remember `name`'s ready client (call once its session is READY)."""
        self._clients[name] = client

    def detach(self, name: str, client: Client | None = None) -> None:
        """Forget `name`'s client (call when its session ends); with `client`, only if it is that one."""
        if client is None or self._clients.get(name) is client:
            self._clients.pop(name, None)

    @property
    def attached(self) -> tuple[str, ...]:
        return tuple(sorted(self._clients))

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        """Everything to do once a session is ready: attach it and set its log level (legacy)."""
        self.attach(spec.name, client)
        await self.apply_log_level(client, spec)

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        self.detach(spec.name, client)

    async def apply_log_level(self, client: Client, spec: AnyServerSpec) -> bool:
        """`logging/setLevel` for a handshake-era session; see `server_logs.apply_log_level`."""
        return await apply_log_level(client, spec, self.log_level)

    # -- roots ---------------------------------------------------------------------------------------

    @property
    def roots(self) -> tuple[RootSpec, ...]:
        return self._roots.configured

    async def set_roots(self, roots: Iterable[RootSpec]) -> tuple[str, ...]:
        """Replace the roots and tell every attached handshake-era server; returns who was told.

        Modern servers see the new list the next time they ask. A session started while the host
        had no enabled root did not declare roots, so its server cannot ask: reconnect it.

        Raises:
            ValueError: a root is not a file:// URI (nothing changes).
        """
        self._roots.replace(roots)
        logger.info("roots changed: %s", ", ".join(r.uri for r in self._roots.offered) or "none")
        return await notify_roots_changed(dict(self._clients))
