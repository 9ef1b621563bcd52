#!/usr/bin/env bash
# `make test`: the unit group, the integration group (every fault scenario, on services of
# its own beside any running demo), then the Compose group (the whole demo in containers),
# with a Docker engine answering (infra/docker/with-engine.sh). The Compose group's image
# takes minutes to build, mostly downloads and unpacking: it is built meanwhile, in the
# background, and the group starts on it. Exits with the first failing group's status.
set -uo pipefail
cd "$(dirname "$0")/.."
reports=${1:?the directory for the JUnit reports}
mkdir -p .lake/logs
# A process group of its own, so that a failing group stops the build with all it started.
setsid .venv/bin/python -m tests.compose.image >.lake/logs/compose-image.log 2>&1 &
image=$!
trap 'kill -- -$image 2>/dev/null' EXIT
pytest=(.venv/bin/pytest -q --durations=0 --durations-min=15)
"${pytest[@]}" --junitxml="$reports/unit.xml" tests/unit || exit
"${pytest[@]}" --junitxml="$reports/integration.xml" tests/integration || exit
if ! wait "$image"; then
  echo "the Compose group's image did not build (.lake/logs/compose-image.log):" >&2
  tail -30 .lake/logs/compose-image.log >&2
  exit 1
fi
"${pytest[@]}" --junitxml="$reports/compose.xml" tests/compose
