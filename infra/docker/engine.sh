#!/usr/bin/env bash
# `engine.sh start`: a Docker engine answering, the one already running or Debian's dockerd
# started here (as root); `engine.sh stop`: stops the engine `start` started, if it did, so
# that a later `make up` does not find it and choose the Compose mode. The engine started
# here is recorded in .lake/run/dockerd.pid; one that was running already is left alone.
#
# An engine started here runs at the lowest CPU and I/O priority, as do the builds and
# containers it starts: `make test` builds the Compose group's image while the native
# groups run (tests/groups.sh), and the build must take only what they leave idle. Where
# nothing else runs, as in the Compose group itself, the priority changes nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
pid_file=.lake/run/dockerd.pid
case "${1:-}" in
  start)
    docker info >/dev/null 2>&1 && exit 0
    if [ "$(id -u)" -ne 0 ]; then
      echo "no Docker engine answers: start one (sudo systemctl start docker), then run this again" >&2
      exit 1
    fi
    mkdir -p .lake/logs "$(dirname "$pid_file")"
    nice -n 19 ionice -c 2 -n 7 dockerd >.lake/logs/dockerd.log 2>&1 &
    echo $! >"$pid_file"
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && exit 0; sleep 1; done
    echo "dockerd did not answer within 60 s: see .lake/logs/dockerd.log" >&2
    exit 1
    ;;
  stop)
    [ -f "$pid_file" ] || exit 0
    pid=$(cat "$pid_file")
    # A file an interrupted run left names a process id that may be another's by now.
    if [ "$(ps -o comm= -p "$pid")" = dockerd ]; then
      kill "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
    fi
    rm -f "$pid_file"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
