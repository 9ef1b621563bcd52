"""`lakehouse dashboard`: serves dashboard/app.py with Streamlit on DASHBOARD_PORT."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lakehouse.settings import Settings

APP = Path(__file__).resolve().parent / "app.py"


def command(settings: Settings) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.port",
        str(settings.dashboard_port),
        "--server.address",
        "localhost",
        # A server for a page, not a development loop: no browser to open, no file
        # watcher polling the tree, no usage statistics sent anywhere.
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--client.toolbarMode",
        "viewer",
        "--browser.gatherUsageStats",
        "false",
        "--theme.base",
        "light",
    ]


def serve(settings: Settings) -> None:
    """Becomes the Streamlit server (exec), so that a signal to this process reaches it."""
    print(f"dashboard on http://localhost:{settings.dashboard_port}/ (Ctrl-C stops)", flush=True)
    arguments = command(settings)
    os.execve(arguments[0], arguments, {**os.environ, **settings.environment()})
