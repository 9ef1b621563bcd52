"""One service in the foreground: the main process of its container (docker-compose.yml).

`python -m infra.serve <service>` sets the service up and becomes it, with the native mode's
own code (infra/native): the same command, configuration files and settings, so a service
behaves the same in both modes. Only where its state lives differs: under the container's
LAKEHOUSE_STATE_DIR, on a volume. `python -m infra.serve --healthy <service>` is its
container's healthcheck: the native mode's own check, exit status 0 when healthy.
"""

from __future__ import annotations

import sys

from infra.native import cluster
from infra.native.services import native_services
from lakehouse.settings import load


def main(arguments: list[str]) -> None:
    settings = load()
    services = {s.name: s for s in (*native_services(settings), *cluster.daemons(settings))}
    check = arguments[:1] == ["--healthy"]
    names = arguments[1:] if check else arguments
    if len(names) != 1 or names[0] not in services:
        sys.exit(f"usage: python -m infra.serve [--healthy] {{{','.join(services)}}}")
    if check:
        sys.exit(0 if services[names[0]].healthy() else 1)
    services[names[0]].run_in_foreground()


if __name__ == "__main__":
    main(sys.argv[1:])
