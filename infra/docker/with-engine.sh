#!/usr/bin/env bash
# Runs a command with a Docker engine answering: the one already running, or one started
# here (Debian's dockerd, as root) and stopped after, so that a later `make up` does not
# find it and choose the Compose mode. Exits with the command's status.
#
# An engine started here runs at the lowest CPU and I/O priority, as do the builds and
# containers it starts: `make test` builds the Compose group's image while the native
# groups run (tests/groups.sh), and the build must take only what they leave idle. Where
# nothing else runs, as in the Compose group itself, the priority changes nothing.
set -uo pipefail
started=
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "no Docker engine answers: start one (sudo systemctl start docker), then run this again" >&2
    exit 1
  fi
  mkdir -p .lake/logs
  nice -n 19 ionice -c 2 -n 7 dockerd >.lake/logs/dockerd.log 2>&1 &
  started=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer within 60 s: see .lake/logs/dockerd.log" >&2; exit 1; }
fi
"$@"
status=$?
if [ -n "$started" ]; then
  kill "$started"
  while kill -0 "$started" 2>/dev/null; do sleep 0.5; done
fi
exit $status
