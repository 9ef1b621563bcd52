import dataclasses

import pytest

from lakehouse import settings as settings_module


@pytest.fixture(scope="session")
def settings(tmp_path_factory):
    """The project's settings, with a warehouse of the test session's own."""
    settings_module.write_env_file()
    warehouse = tmp_path_factory.mktemp("warehouse")
    return dataclasses.replace(settings_module.load(), warehouse=str(warehouse),
                               quality_dir=tmp_path_factory.mktemp("quality"),
                               checkpoints=str(warehouse / "_checkpoints"),
                               shuffle_partitions=2, spark_ui=False,
                               compact_every_delta_commits=3)


@pytest.fixture(scope="session")
def spark(settings):
    """One SparkSession for the whole test session."""
    from lakehouse import spark as spark_module

    session = spark_module.session(settings, "tests")
    yield session
    session.stop()
