"""The HTTP face of the station: the API at `/api/mcp/*`, events, metrics, the gateway and the console.

```python
sock = bind_socket("127.0.0.1", 8765)
app = build_app(station, host="127.0.0.1", port=bound_port(sock))
await ApiServer(app).serve(sockets=[sock])
```
"""

from mcpstation.api.app import DEFAULT_API_HOST, DEFAULT_API_PORT, build_app, build_gateway_app
from mcpstation.api.auth import (
    LOCAL_DEV_WARNING,
    Authenticator,
    LocalDev,
    allowed_hosts_for,
    check_bind,
    is_control_request,
    is_loopback,
)
from mcpstation.api.control import build_control_app
from mcpstation.api.metrics import MetricsLayer, render_metrics
from mcpstation.api.middleware import AccessGuard, middleware_stack
from mcpstation.api.serve import ApiServer, bind_socket, bound_port

__all__ = [
    "DEFAULT_API_HOST",
    "DEFAULT_API_PORT",
    "LOCAL_DEV_WARNING",
    "AccessGuard",
    "ApiServer",
    "Authenticator",
    "LocalDev",
    "MetricsLayer",
    "allowed_hosts_for",
    "bind_socket",
    "bound_port",
    "build_app",
    "build_control_app",
    "build_gateway_app",
    "check_bind",
    "is_control_request",
    "is_loopback",
    "middleware_stack",
    "render_metrics",
]
