"""What a host allows servers by default: sampling's limits and elicitation's modes.

Kept apart from `sampling.py` and `elicitation.py` so that a `Host` with neither a sampling
handler nor an elicitation mode on (the default) never imports the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OverMaxTokens = Literal["clip", "refuse"]


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """Limits applied to every server's sampling; `enabled` is the default for servers that don't say."""

    enabled: bool = False
    max_tokens: int = 1024
    requests_per_minute: float = 30.0
    allow_tools: bool = False
    over_max_tokens: OverMaxTokens = "clip"


@dataclass(frozen=True, slots=True)
class ElicitationModes:
    """Which modes one server may use."""

    form: bool = False
    url: bool = False

    @property
    def any(self) -> bool:
        return self.form or self.url
