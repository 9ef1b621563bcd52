from pathlib import Path

import pytest

from lakehouse import settings


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in (*settings.SECRET_VARIABLES, "PGPORT",
                 "KAFKA_BOOTSTRAP_SERVERS", "CONNECT_URL", "METASTORE_DATABASE", "THRIFT_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_missing_secret_names_the_variable(clean_env):
    loaded = settings.load()
    with pytest.raises(settings.ConfigurationError,
                       match=r"PGPASSWORD is not set\. Run `make env`"):
        loaded.pg_params()


def test_env_file_is_written_once_and_read(clean_env, monkeypatch):
    assert settings.write_env_file() == ["PGPASSWORD", "DEBEZIUM_PASSWORD", "METASTORE_PASSWORD",
                                         "MINIO_ROOT_PASSWORD", "ANALYST_PASSWORD",
                                         "SOURCE_WRITER_PASSWORD", "LAKEHOUSE_READER_PASSWORD",
                                         "ERASER_PASSWORD"]
    first = (clean_env / ".env").read_text()
    assert settings.write_env_file() == []
    assert (clean_env / ".env").read_text() == first
    assert oct((clean_env / ".env").stat().st_mode & 0o777) == "0o600"
    loaded = settings.load()
    assert loaded.pg_params()["password"] == first.split("PGPASSWORD=")[1].split()[0]


def test_an_env_file_readable_by_others_is_tightened(clean_env):
    settings.write_env_file()
    (clean_env / ".env").chmod(0o644)
    assert settings.write_env_file() == []
    assert oct((clean_env / ".env").stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in clean_env.iterdir()] == [".env"]


def test_environment_wins_over_env_file(clean_env, monkeypatch):
    (clean_env / ".env").write_text("PGPASSWORD=from-file\n")
    monkeypatch.setenv("PGPASSWORD", "from-env")
    assert settings.load().pg_password == "from-env"


@pytest.mark.parametrize("name, value, message", [
    ("PGPORT", "54x", "PGPORT='54x' is not a TCP port number"),
    ("KAFKA_BOOTSTRAP_SERVERS", "localhost", "KAFKA_BOOTSTRAP_SERVERS='localhost' must look like host:port"),
    ("CONNECT_URL", "localhost:8083", "CONNECT_URL='localhost:8083' must look like http://host:port"),
])
def test_bad_settings_fail_at_start_with_what_to_fix(clean_env, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(settings.ConfigurationError, match=message):
        settings.load()


def test_malformed_env_file_line_is_reported(clean_env):
    (clean_env / ".env").write_text("GOOD=1\nthis is not a setting\n")
    with pytest.raises(settings.ConfigurationError, match=r"\.env:2: expected KEY=value"):
        settings.load()


def test_a_child_process_given_the_environment_loads_the_same_settings(clean_env, monkeypatch):
    import dataclasses

    custom = dataclasses.replace(settings.load(), warehouse="/data/wh", checkpoints="/data/ck",
                                 shuffle_partitions=2, spark_ui=False, commits_retained=7,
                                 compact_every_delta_commits=3, pg_port=5433,
                                 metastore_database="metastore_x", thrift_port=10001,
                                 thrift_bind_host="0.0.0.0", thrift_memory="1g")
    for name, value in custom.environment().items():
        monkeypatch.setenv(name, value)
    assert settings.load() == custom


def test_an_s3a_warehouse_brings_hadoops_s3_connector_and_the_stores_endpoint(clean_env, monkeypatch):
    import dataclasses

    from lakehouse.spark import session_config

    monkeypatch.setenv("MINIO_ROOT_PASSWORD", "secret")
    local = dataclasses.replace(settings.load(), metastore_database="")
    assert "hadoop-aws" not in session_config(local)["spark.jars.packages"]
    on_minio = dataclasses.replace(local, warehouse="s3a://retailmax/warehouse",
                                   s3_endpoint="http://127.0.0.1:9000")
    config = session_config(on_minio)
    assert config["spark.jars.packages"].endswith(",org.apache.hadoop:hadoop-aws:3.3.4")
    assert (config["spark.hadoop.fs.s3a.endpoint"], config["spark.hadoop.fs.s3a.path.style.access"],
            config["spark.hadoop.fs.s3a.access.key"], config["spark.hadoop.fs.s3a.secret.key"]) == \
        ("http://127.0.0.1:9000", "true", "retailmax", "${env.MINIO_ROOT_PASSWORD}")
    monkeypatch.delenv("MINIO_ROOT_PASSWORD")
    with pytest.raises(settings.ConfigurationError, match=r"^MINIO_ROOT_PASSWORD is not set"):
        session_config(on_minio)


def test_no_secret_is_in_a_sessions_settings(clean_env, monkeypatch):
    """PySpark passes every setting on the JVM's command line, which `ps` shows."""
    from lakehouse.spark import session_config

    for name in settings.SECRET_VARIABLES:
        monkeypatch.setenv(name, f"secret-{name}")
    # The jars `make install` put in the project's state directory.
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", str(Path(__file__).resolve().parents[2] / ".lake"))
    config = session_config(settings.load())
    assert config["spark.hadoop.javax.jdo.option.ConnectionPassword"] == "${env.METASTORE_PASSWORD}"
    assert not [key for key, value in config.items() if "secret-" in value]


def test_an_applications_share_of_a_clusters_cores_is_set_only_when_asked(clean_env, monkeypatch):
    import dataclasses

    from lakehouse.spark import session_config

    local = dataclasses.replace(settings.load(), metastore_database="")
    assert "spark.cores.max" not in session_config(local)
    monkeypatch.setenv("SPARK_CORES_MAX", "1")
    assert session_config(dataclasses.replace(settings.load(), metastore_database=""))[
        "spark.cores.max"] == "1"
