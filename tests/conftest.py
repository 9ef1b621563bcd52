import pytest

from lakehouse import settings as settings_module


@pytest.fixture(scope="session")
def settings():
    settings_module.write_env_file()
    return settings_module.load()
