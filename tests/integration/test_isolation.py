"""A test session beside a running demo leaves it as it found it: its own services, on its
own ports, under its own state directory, stopped at its end; the demo's services keep
serving, and no row a test writes reaches the demo's source, topics or warehouse.

`.ci/run` starts the demo's services, seeds them and runs one pass before `make test`, so CI
checks this on every landing, and `make status` after `make test` shows the demo's services
outlived the session's teardown too."""

from __future__ import annotations

import os

import pytest

from lakehouse import settings as settings_module
from tests.support import demo_state

pytestmark = pytest.mark.after_all


def test_the_demo_beside_the_tests_keeps_serving_and_holds_what_it_held(demo_before, settings):
    demo = settings_module.load()
    if demo_before is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs the tests beside the demo's services (.ci/run), and none answered")
        pytest.skip(f"no demo runs beside this session (nothing answers on PGPORT {demo.pg_port})")
    assert (settings.pg_port, settings.kafka_port, settings.connect_port, settings.thrift_port) != (
        demo.pg_port,
        demo.kafka_port,
        demo.connect_port,
        demo.thrift_port,
    )
    after = demo_state(demo)
    for part in ("serving", "databases", "source", "topics", "files"):
        assert after[part] == demo_before[part], part
