#!/usr/bin/env bash
# Install the outside fleet's MCP servers (bench/search/outside), each npm package in its own tree
# DIR/npm/<name> (install scripts skipped), for `collect.py --fleet outside --root DIR`.
#   bench/search/install_outside.sh /tmp/mcpstation-outside-servers
set -euo pipefail
DIR=${1:?usage: install_outside.sh DIR}
install() {  # name package@version
  mkdir -p "$DIR/npm/$1"
  (cd "$DIR/npm/$1" && { [ -f package.json ] || echo '{"private": true}' > package.json; } &&
   npm install --no-audit --no-fund --ignore-scripts "$2")
}
install kubernetes mcp-server-kubernetes@4.1.7
install linear linear-mcp-server@0.1.0
install gdrive @modelcontextprotocol/server-gdrive@2025.1.14
install firecrawl firecrawl-mcp@3.26.0
install tavily tavily-mcp@0.2.22
install desktop-commander @wonderwhy-er/desktop-commander@0.2.52
install mongodb mongodb-mcp-server@3.0.4
install elasticsearch @elastic/mcp-server-elasticsearch@0.3.1
install airtable airtable-mcp-server@1.14.0
install circleci @circleci/mcp-server-circleci@0.20.0
install mysql @benborla29/mcp-server-mysql@2.0.9
install context7 @upstash/context7-mcp@4.1.1
install exa exa-mcp-server@3.4.1
install figma figma-developer-mcp@0.13.2
install hubspot @hubspot/mcp-server@0.4.0
install aws-kb-retrieval @modelcontextprotocol/server-aws-kb-retrieval@0.6.2
echo "installed into $DIR; now: .venv/bin/python bench/search/collect.py --fleet outside --root $DIR"
