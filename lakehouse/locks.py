"""One writer per table at a time (docs/architecture.md, "One writer at a time"): a second
writer refuses, naming the first."""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from lakehouse.settings import Settings


class WriterBusy(RuntimeError):
    """Another process is writing the same tables."""


@contextmanager
def exclusive_writer(settings: Settings, name: str) -> Iterator[None]:
    path = settings.state_dir / "run" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise WriterBusy(
                f"the {name} tables are being written by {holder}; wait for it to "
                f"finish or stop it (`make down` stops the continuous pipeline)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} ({' '.join(os.path.basename(a) for a in sys.argv[:3])})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()


def layer_writers(settings: Settings, tables) -> ExitStack:
    """The writer locks of every layer `tables` are in, taken in layer order: a table
    service, savepoint or restore must not overlap a writer of the same table."""
    from lakehouse.tables import LAYERS

    held = ExitStack()
    for layer in LAYERS:
        if any(t.layer == layer for t in tables):
            held.enter_context(exclusive_writer(settings, layer))
    return held
