"""Builds the Compose group's image ahead of the group: `make test` (tests/groups.sh) runs
`python -m tests.compose.image` in the background while the unit and integration groups run,
so that the group's own build finds every layer in Docker's cache. The image holds no
secret, but Compose reads docker-compose.yml only with the secrets it names set: throwaway
values stand in for those the environment lacks."""

from __future__ import annotations

import os
import secrets

from infra import stack
from lakehouse import settings as settings_module
from tests.compose.conftest import PROJECT, compose_settings


def main() -> None:
    for name in settings_module.SECRET_VARIABLES:
        os.environ.setdefault(name, secrets.token_urlsafe(18))
    os.environ["COMPOSE_PROJECT_NAME"] = PROJECT
    stack.build_image(compose_settings())


if __name__ == "__main__":
    main()
