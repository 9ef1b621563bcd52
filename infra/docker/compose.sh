#!/usr/bin/env bash
# Docker Compose v2 as the docker CLI's plugin, at the version infra/versions.env pins, built
# from its Go module with the machine's Go: Debian packages only Compose v1, which has no
# `up --wait`, and no image or binary registry is needed this way. Kept if already there.
set -euo pipefail
cd "$(dirname "$0")/../.."
version="$(sed -n 's/^COMPOSE_VERSION=//p' infra/versions.env)"
plugin=/usr/local/lib/docker/cli-plugins/docker-compose
if [ "$(docker compose version --short 2>/dev/null)" = "$version" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "Go is needed to build Docker Compose $version"; exit 1; }
began=$SECONDS
source_dir="$(cd /tmp && go mod download -json "github.com/docker/compose/v2@v$version" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "$(dirname "$plugin")"
(cd "$source_dir" && CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" -o "$plugin" ./cmd)
echo "Docker Compose $version built in $((SECONDS - began)) s"
