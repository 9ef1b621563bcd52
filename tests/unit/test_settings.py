import re
from pathlib import Path

import pytest

from lakehouse import settings


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in (*settings.SECRET_VARIABLES, *(s.variable for s in settings.declared().values())):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_missing_secret_names_the_variable(clean_env):
    loaded = settings.load()
    with pytest.raises(settings.ConfigurationError, match=r"PGPASSWORD is not set\. Run `make env`"):
        loaded.pg_params()


def test_env_file_is_written_once_and_read(clean_env, monkeypatch):
    assert settings.write_env_file() == [
        "PGPASSWORD",
        "DEBEZIUM_PASSWORD",
        "METASTORE_PASSWORD",
        "MINIO_ROOT_PASSWORD",
        "ANALYST_PASSWORD",
        "SOURCE_WRITER_PASSWORD",
        "LAKEHOUSE_READER_PASSWORD",
        "ERASER_PASSWORD",
    ]
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


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("PGPORT", "54x", "PGPORT='54x' is not a TCP port number"),
        (
            "KAFKA_BOOTSTRAP_SERVERS",
            "localhost",
            "KAFKA_BOOTSTRAP_SERVERS='localhost' must look like host:port",
        ),
        ("CONNECT_URL", "localhost:8083", "CONNECT_URL='localhost:8083' must look like http://host:port"),
    ],
)
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

    custom = dataclasses.replace(
        settings.load(),
        warehouse="/data/wh",
        checkpoints="/data/ck",
        shuffle_partitions=2,
        spark_ui=False,
        commits_retained=7,
        compact_every_delta_commits=3,
        pg_port=5433,
        metastore_database="metastore_x",
        thrift_port=10001,
        thrift_bind_host="0.0.0.0",
        thrift_memory="1g",
    )
    for name, value in custom.environment().items():
        monkeypatch.setenv(name, value)
    assert settings.load() == custom


def test_an_s3a_warehouse_brings_hadoops_s3_connector_and_the_stores_endpoint(clean_env, monkeypatch):
    import dataclasses

    from lakehouse.spark import session_config

    monkeypatch.setenv("MINIO_ROOT_PASSWORD", "secret")
    local = dataclasses.replace(settings.load(), metastore_database="")
    assert "hadoop-aws" not in session_config(local)["spark.jars.packages"]
    on_minio = dataclasses.replace(
        local, warehouse="s3a://retailmax/warehouse", s3_endpoint="http://127.0.0.1:9000"
    )
    config = session_config(on_minio)
    assert config["spark.jars.packages"].endswith(",org.apache.hadoop:hadoop-aws:3.3.4")
    assert (
        config["spark.hadoop.fs.s3a.endpoint"],
        config["spark.hadoop.fs.s3a.path.style.access"],
        config["spark.hadoop.fs.s3a.access.key"],
        config["spark.hadoop.fs.s3a.secret.key"],
    ) == ("http://127.0.0.1:9000", "true", "retailmax", "${env.MINIO_ROOT_PASSWORD}")
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
    assert (
        session_config(dataclasses.replace(settings.load(), metastore_database=""))["spark.cores.max"] == "1"
    )


# A valid value other than the default, for each kind of setting: a kind missing here fails
# the round trip below, so a new one cannot go untested.
OTHER_VALUE = {
    settings.TEXT: lambda default, tmp: f"{default}-other",
    settings.PATH: lambda default, tmp: tmp / "elsewhere",
    settings.LOCATION: lambda default, tmp: str(tmp / "elsewhere"),
    settings.SWITCH: lambda default, tmp: not default,
    settings.PORT: lambda default, tmp: default + 1,
    settings.POSITIVE: lambda default, tmp: default + 1,
    settings.COUNT: lambda default, tmp: default + 1,
    settings.DATE: lambda default, tmp: "2001-02-03",
    settings.CRON: lambda default, tmp: "15 4 * * 1",
    settings.HOST_PORT: lambda default, tmp: "broker:19092",
    settings.HTTP_URL: lambda default, tmp: "http://connect:18083",
    settings.OS_ACCOUNT: lambda default, tmp: "someone_else",
}


@pytest.mark.parametrize("field", list(settings.declared()))
def test_every_setting_round_trips_through_the_environment(clean_env, monkeypatch, field):
    import dataclasses

    declared = settings.declared()[field]
    base = settings.load()
    value = OTHER_VALUE[declared.kind](getattr(base, field), clean_env)
    custom = dataclasses.replace(base, **{field: value})
    assert custom != base
    for name, text in custom.environment().items():
        monkeypatch.setenv(name, text)
    assert settings.load() == custom


def test_the_defaults_round_trip_and_derive_from_the_state_directory(clean_env, monkeypatch):
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", "state")
    loaded = settings.load()
    assert loaded.state_dir == clean_env / "state"
    assert loaded.warehouse == str(clean_env / "state" / "warehouse")
    assert loaded.checkpoints == str(clean_env / "state" / "warehouse" / "_checkpoints")
    assert loaded.quality_dir == clean_env / "state" / "quality"
    assert loaded.jars_dir == clean_env / "state" / "jars"
    assert (loaded.connect_url, loaded.spark_ui, loaded.bronze_max_ahead_seconds) == (
        "http://localhost:8083",
        True,
        86400,
    )
    for name, text in loaded.environment().items():
        monkeypatch.setenv(name, text)
    assert settings.load() == loaded


def test_a_remote_warehouse_is_kept_as_given_with_its_checkpoints_beside_it(clean_env, monkeypatch):
    monkeypatch.setenv("LAKEHOUSE_WAREHOUSE", "s3a://retailmax/warehouse/")
    monkeypatch.setenv("CONNECT_URL", "http://connect:8083/")
    monkeypatch.setenv("SPARK_UI", "No")
    loaded = settings.load()
    assert (loaded.warehouse, loaded.checkpoints) == (
        "s3a://retailmax/warehouse/",
        "s3a://retailmax/warehouse/_checkpoints",
    )
    assert (loaded.connect_url, loaded.connect_port, loaded.spark_ui) == ("http://connect:8083", 8083, False)


# One bad value of each kind that can refuse one, with the message users see.
BAD_VALUES = [
    ("PGPORT", "65536", "PGPORT='65536' is not a TCP port number (1-65535)"),
    ("SPARK_WORKERS", "0", "SPARK_WORKERS='0' must be a whole number of at least 1"),
    ("SPARK_CORES_MAX", "-1", "SPARK_CORES_MAX='-1' must be a whole number (0 or more)"),
    (
        "BRONZE_EARLIEST_PLAUSIBLE",
        "2000-13-01",
        "BRONZE_EARLIEST_PLAUSIBLE='2000-13-01' is not a date (YYYY-MM-DD)",
    ),
    (
        "MAINTENANCE_CRON",
        "daily",
        "MAINTENANCE_CRON='daily' must be a cron expression of five "
        "fields (minute hour day month weekday), e.g. '30 3 * * *'",
    ),
    (
        "KAFKA_BOOTSTRAP_SERVERS",
        "broker:x",
        "KAFKA_BOOTSTRAP_SERVERS='broker:x' must look like host:port, e.g. localhost:9092",
    ),
    ("CONNECT_URL", "ftp://connect", "CONNECT_URL='ftp://connect' must look like http://host:port"),
    (
        "THRIFT_OS_USER",
        "root",
        "THRIFT_OS_USER='root' must name an OS account other than root "
        "(lower-case letters, digits, '_' and '-')",
    ),
]


@pytest.mark.parametrize("name, value, message", BAD_VALUES)
def test_a_bad_value_of_each_kind_gets_its_message(clean_env, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(settings.ConfigurationError) as raised:
        settings.load()
    assert str(raised.value) == message


def test_every_kind_that_can_refuse_a_value_has_its_message_tested():
    kinds = {s.variable: s.kind for s in settings.declared().values()}
    refusing = {kind for kind in kinds.values() if kind.complaint}
    assert {kinds[name] for name, _, _ in BAD_VALUES} == refusing


def test_every_setting_is_declared_with_a_variable_a_default_and_a_one_line_doc():
    import dataclasses

    declared = settings.declared()
    assert list(declared) == [f.name for f in dataclasses.fields(settings.Settings)]
    variables = [s.variable for s in declared.values()]
    assert len(set(variables)) == len(variables)
    assert not set(variables) & set(settings.SECRET_VARIABLES)
    for field, s in declared.items():
        assert re.fullmatch(r"[A-Z][A-Z0-9_]+", s.variable), field
        assert s.kind.accepts, field
        assert s.doc.endswith(".") and "\n" not in s.doc and len(s.doc) <= 200, field
    assert list(settings.load().environment()) == variables


def test_settings_are_built_with_keywords_and_keep_their_declared_defaults():
    built = settings.Settings(
        state_dir=Path("/s"),
        jars_dir=Path("/s/jars"),
        warehouse="/s/wh",
        checkpoints="/s/ck",
        quality_dir=Path("/s/q"),
        models_dir=Path("/s/m"),
    )
    assert (built.pg_port, built.spark_ui, built.schedule_cron) == (5432, True, "0 * * * *")
    assert settings.Settings.thrift_os_user == "retailmax-jdbc"


def test_a_session_ships_hadoops_core_settings_without_the_yarn_and_mapreduce_defaults(spark):
    """Hudi serializes the session's Hadoop configuration into every task it ships."""
    from lakehouse.spark import UNUSED_HADOOP_DEFAULTS

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    sources = []
    entries = conf.iterator()
    while entries.hasNext():
        sources.append(tuple(conf.getPropertySources(entries.next().getKey()) or ()))
    assert not [s for s in sources if s and s[0] in UNUSED_HADOOP_DEFAULTS]
    assert conf.get("fs.defaultFS") == "file:///"  # core-default.xml's, which Hudi reads
    assert conf.get("yarn.resourcemanager.address") is None
