"""An in-process MCP server whose tools return the content the demo server does not: binary resources,
an image type providers do not read, and nothing at all."""

from __future__ import annotations

import base64

import mcp_types as types
from mcp.server.mcpserver import MCPServer

from mcpstation.testing._media import red_square_png

# The smallest well-formed PDF: one empty page (header, catalog, pages, page, xref, trailer).
MINIMAL_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\n"
    b"xref\n0 4\n0000000000 65535 f \n0000000009 00000 n \n0000000052 00000 n \n0000000101 00000 n \n"
    b"trailer<</Size 4/Root 1 0 R>>\nstartxref\n161\n%%EOF\n"
)
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>'
ARCHIVE = b"PK\x05\x06" + b"\x00" * 18  # an empty ZIP archive


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _blob(uri: str, mime_type: str, data: bytes) -> types.EmbeddedResource:
    contents = types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=_b64(data))
    return types.EmbeddedResource(type="resource", resource=contents)


def build_media_server() -> MCPServer:
    mcp = MCPServer("media", version="0.1.0")

    @mcp.tool(structured_output=False)
    def report() -> list[types.TextContent | types.EmbeddedResource]:
        """A short text and the report itself, an embedded PDF."""
        return [
            types.TextContent(type="text", text="The report:"),
            _blob("media://reports/q3.pdf", "application/pdf", MINIMAL_PDF),
        ]

    @mcp.tool(structured_output=False)
    def logo() -> types.EmbeddedResource:
        """The logo as an embedded PNG resource."""
        return _blob("media://logo.png", "image/png", red_square_png())

    @mcp.tool(structured_output=False)
    def vector() -> types.ImageContent:
        """An SVG image: a type the providers do not read."""
        return types.ImageContent(type="image", data=_b64(SVG), mime_type="image/svg+xml")

    @mcp.tool(structured_output=False)
    def archive() -> types.EmbeddedResource:
        """An embedded ZIP archive: binary content no provider reads."""
        return _blob("media://exports/all.zip", "application/zip", ARCHIVE)

    @mcp.tool(structured_output=False)
    def nothing() -> list[types.TextContent]:
        """Succeeds with no content at all."""
        return []

    return mcp
