"""Whether a service answers on its port: the one question the service manager, the
notebooks and the pages ask before they talk to it."""

from __future__ import annotations

import socket


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
