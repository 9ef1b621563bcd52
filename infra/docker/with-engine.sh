#!/usr/bin/env bash
# Runs a command with a Docker engine answering (infra/docker/engine.sh: the one already
# running, or one started here and stopped after). Exits with the command's status.
set -uo pipefail
engine="$(dirname "$0")/engine.sh"
bash "$engine" start || exit
"$@"
status=$?
bash "$engine" stop
exit $status
