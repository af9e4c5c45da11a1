"""Optional adapters to what people already use: agent frameworks, model providers, OpenTelemetry."""

__all__ = []
