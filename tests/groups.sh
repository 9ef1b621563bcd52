#!/usr/bin/env bash
# `make test`: the unit group, the integration group (every fault scenario, on services of
# its own beside any running demo), then the Compose group (the whole demo in containers).
# What the Compose group needs first takes minutes: Debian's Docker engine and Compose built
# from its Go module (`make docker`), an engine started (infra/docker/engine.sh), the image
# built from the repository (tests/compose/image.py). It is done meanwhile, in the
# background at the lowest CPU priority, and the group starts on a built image. Exits with
# the first failing group's status; an engine started here is stopped at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
reports=${1:?the directory for the JUnit reports}
mkdir -p .lake/logs
# A process group of its own, so that a failing group stops the preparation with all it
# started.
setsid nice -n 19 bash -c 'make --no-print-directory docker && bash infra/docker/engine.sh start &&
  .venv/bin/python -m tests.compose.image' >.lake/logs/compose-prepare.log 2>&1 &
preparing=$!
trap 'kill -- -$preparing 2>/dev/null; bash infra/docker/engine.sh stop' EXIT
pytest=(.venv/bin/pytest -q --durations=0 --durations-min=15)
"${pytest[@]}" --junitxml="$reports/unit.xml" tests/unit || exit
"${pytest[@]}" --junitxml="$reports/integration.xml" tests/integration || exit
if ! wait "$preparing"; then
  echo "the Compose group could not be prepared (.lake/logs/compose-prepare.log):" >&2
  tail -30 .lake/logs/compose-prepare.log >&2
  exit 1
fi
"${pytest[@]}" --junitxml="$reports/compose.xml" tests/compose
