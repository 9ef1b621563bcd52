"""The dashboard as its users see it: `lakehouse dashboard` against the real stack, opened in
headless Chromium (Debian's package, driven through its chromedriver by Selenium); the
numbers on the page must be Gold's for the same filter. Screenshots of each page are saved
under .lake/test-session/test-output/."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from bronze.tables import BRONZE_TABLES
from gold.tables import DAILY_SALES
from lakehouse import catalog
from lakehouse.tables import LAYERS
from medallion.tables import derived_tables
from tests.support import cli_env

LAKEHOUSE = Path(sys.executable).parent / "lakehouse"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PAGE_TIMEOUT = 90


@pytest.fixture(scope="module")
def browser():
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1700"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def output_dir(settings) -> Path:
    directory = settings.state_dir / "test-output"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@contextmanager
def dashboard(env: dict[str, str], port: int):
    """`lakehouse dashboard` on `port`, as `make up` starts it, until the block ends."""
    process = subprocess.Popen(
        [str(LAKEHOUSE), "dashboard"],
        env={**env, "DASHBOARD_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"http://localhost:{port}/_stcore/health", timeout=2).text == "ok":
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "the dashboard did not answer within 60 s"
            time.sleep(0.5)
        yield f"http://localhost:{port}"
    finally:
        process.terminate()  # `lakehouse dashboard` execs Streamlit, so this reaches it
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # a browser session can hold Streamlit's shutdown
            process.kill()
            process.wait()


def metrics(driver) -> dict[str, str]:
    """The page's metrics, label to value."""
    shown = {}
    for metric in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stMetric"]'):
        label = metric.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text
        shown[label] = metric.find_element(By.CSS_SELECTOR, '[data-testid="stMetricValue"]').text
    return shown


def open_and_wait(driver, url: str, ready) -> None:
    driver.get(url)
    try:
        WebDriverWait(driver, PAGE_TIMEOUT, poll_frequency=0.5).until(lambda d: ready(d))
    except TimeoutException:
        pytest.fail(
            f"{url} was not ready within {PAGE_TIMEOUT} s; the page shows:\n"
            f"{driver.find_element(By.TAG_NAME, 'body').text}"
        )


def charts(driver) -> int:
    return len(
        driver.find_elements(
            By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'
        )
    )


def test_the_business_page_shows_gold_numbers_for_the_filter_in_a_browser(built, spark, browser, output_dir):
    # The busiest region, and two categories, over every day Gold holds.
    first, last, region = spark.sql(
        f"SELECT min(order_date), max(order_date), max_by(region, line_count) "
        f"FROM {DAILY_SALES.qualified_name}"
    ).first()
    categories = [
        r[0]
        for r in spark.sql(
            f"SELECT product_category FROM {DAILY_SALES.qualified_name} WHERE region = '{region}' "
            f"GROUP BY product_category ORDER BY sum(line_count) DESC LIMIT 2"
        ).collect()
    ]
    sales, units, lines = spark.sql(
        f"SELECT sum(total_sales_amount), sum(units_sold), sum(line_count) "
        f"FROM {DAILY_SALES.qualified_name} WHERE order_date BETWEEN '{first}' AND '{last}' "
        f"AND region = '{region}' AND product_category IN ({', '.join(repr(c) for c in categories)})"
    ).first()
    query = urlencode({"start": first, "end": last, "region": region, "category": ",".join(categories)})

    with dashboard(cli_env(built), built.dashboard_port + 1) as address:
        open_and_wait(browser, f"{address}/?{query}", lambda d: "Sales" in metrics(d) and charts(d) >= 3)
        shown = metrics(browser)
        browser.save_screenshot(str(output_dir / "dashboard-business.png"))

        assert (shown["Sales"], shown["Units sold"], shown["Order lines"]) == (
            f"{sales:,.2f}",
            f"{units:,}",
            f"{lines:,}",
        )
        assert f"{first} to {last}" in browser.find_element(By.TAG_NAME, "body").text

        open_and_wait(browser, f"{address}/pipeline", lambda d: "Rows kept out" in metrics(d))
        tables = [*BRONZE_TABLES, *derived_tables()]
        written = [t for t in tables if catalog.exists(spark, t.path(built))]
        kept_out = sum(
            spark.sql(f"SELECT count(*) FROM {t.quarantine.qualified_name}").first()[0]
            for t in tables
            if catalog.exists(spark, t.quarantine.path(built))
        )
        shown = metrics(browser)
        browser.save_screenshot(str(output_dir / "dashboard-pipeline.png"))
        assert shown["Tables written"] == f"{len(written)} of {len(tables)}"
        assert shown["Rows kept out"] == f"{kept_out:,}"
        body = browser.find_element(By.TAG_NAME, "body").text
        assert "Tables: Postgres and Kafka → Bronze → Silver → Gold" in body


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_before_gold_and_with_a_service_down_the_page_says_what_and_why(
    services, browser, tmp_path, output_dir
):
    kafka = f"localhost:{_closed_port()}"
    env = {
        **cli_env(services),
        "LAKEHOUSE_WAREHOUSE": str(tmp_path / "warehouse"),
        "LAKEHOUSE_CHECKPOINTS": str(tmp_path / "warehouse" / "_checkpoints"),
        "KAFKA_BOOTSTRAP_SERVERS": kafka,
    }
    with dashboard(env, services.dashboard_port + 2) as address:
        open_and_wait(
            browser, address, lambda d: "Gold has no data yet" in d.find_element(By.TAG_NAME, "body").text
        )
        browser.save_screenshot(str(output_dir / "dashboard-before-gold.png"))
        text = browser.find_element(By.TAG_NAME, "body").text
    declared = {layer: sum(t.layer == layer for t in [*BRONZE_TABLES, *derived_tables()]) for layer in LAYERS}
    assert (
        f"Tables committed so far: bronze 0 of {declared['bronze']}, silver 0 of "
        f"{declared['silver']}, gold 0 of {declared['gold']}"
    ) in text
    assert f"kafka is down ({kafka})" in text
    assert "Traceback" not in text
