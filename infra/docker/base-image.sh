#!/usr/bin/env bash
# The Debian image every service image builds on (infra/docker/Dockerfile's BASE_IMAGE,
# debian:bookworm-slim unless set): kept if Docker has it, pulled where a registry answers,
# otherwise made here from Debian's packages with debootstrap (minbase, as the slim image is)
# and imported under the same name. Needs root, docker and debootstrap (`make install`).
set -euo pipefail
image="${BASE_IMAGE:-debian:bookworm-slim}"
if docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
if timeout 60 docker pull -q "$image" >/dev/null 2>&1; then
  echo "base image $image pulled"
  exit 0
fi
suite="${image#*:}"
suite="${suite%%-*}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
began=$SECONDS
debootstrap --variant=minbase "$suite" "$root" >"$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
rm -f "$root.log"
# What the slim image leaves out: package lists (apt-get update fetches them) and caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import - "$image" >/dev/null
echo "base image $image made with debootstrap in $((SECONDS - began)) s (no registry answered)"
