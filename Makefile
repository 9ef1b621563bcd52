# RetailMax Lakehouse. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PYTHON := $(VENV)/bin/python
LAKEHOUSE := $(VENV)/bin/lakehouse
# Each test group's JUnit report: what `python -m benchmarks.ci_times` reads after `.ci/run`.
REPORTS := .lake/test-reports
# Debian packages the native mode needs: PostgreSQL server, a JDK for Kafka, Maven for jars,
# and the browser (with its driver) in which the tests open the dashboard.
APT_PACKAGES := postgresql openjdk-17-jdk-headless maven chromium chromium-driver

.PHONY: help install docker env up services cluster down status seed simulate notebooks scheduler test test-unit test-long test-compose lint bench chaos docs docs-build clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

# The Compose mode's own: Debian's Docker engine, and debootstrap, which makes the base image
# where no image registry answers (infra/docker/base-image.sh).
DOCKER_PACKAGES := docker.io debootstrap

# Installs the Debian packages of $(1) that are missing.
define apt_install
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  $$( [ $$(id -u) -eq 0 ] || echo sudo ) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$( [ $$(id -u) -eq 0 ] || echo sudo ) apt-get install -y -qq $$missing; \
	fi
endef

install: $(VENV)/.installed ## install system packages, the Python virtualenv and the jars (Kafka, Debezium, Hudi)
	$(call apt_install,$(APT_PACKAGES))
	@$(PYTHON) -m infra.native.jars
	@$(PYTHON) -m lakehouse.jvm
	@mkdir -p .lake/logs; SPARK_UI=false $(PYTHON) -m lakehouse.spark 2>.lake/logs/spark-packages.log || \
	  { tail -30 .lake/logs/spark-packages.log; exit 1; }
	@SPARK_UI=false $(PYTHON) -m lakehouse.class_archive 2>.lake/logs/class-archive.log || \
	  { tail -30 .lake/logs/class-archive.log; exit 1; }

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,docs,lint]'
	touch $@

env: ## write random local secrets to .env (kept if present)
	@$(LAKEHOUSE) env

services: install env ## start Postgres, Kafka, Kafka Connect + Debezium (connector registered) and the JDBC server
	$(LAKEHOUSE) services up

up: install env ## the whole demo: services, seed data, live workload
	$(LAKEHOUSE) up

scheduler: services ## the scheduled mode: Dagster's UI on http://localhost:3000 and its daemon, running every table hourly
	$(LAKEHOUSE) scheduler up

cluster: install env ## a Spark standalone master, two workers and HDFS: in containers where the services run in Compose, native processes otherwise (docs/scaling-out.md)
	$(LAKEHOUSE) cluster up

down: ## stop everything `make up`, `make services`, `make scheduler` or `make cluster` started
	@if [ -x $(LAKEHOUSE) ]; then $(LAKEHOUSE) down; fi

status: install env ## health of every service and of the Debezium connector
	$(LAKEHOUSE) status

seed: install env ## load the initial data set (SALES_LINES=10000)
	$(LAKEHOUSE) seed --sales-lines $${SALES_LINES:-10000}

simulate: install env ## run the live workload for DURATION seconds (default 60)
	$(LAKEHOUSE) simulate --duration $${DURATION:-60}

notebooks: install env ## open JupyterLab on notebooks/ with the project's environment (after `make up`)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --ip=127.0.0.1 --port=$${NOTEBOOK_PORT:-8888}

# The unit tests run in a random order (pytest-randomly prints the seed, and
# `pytest tests/unit --randomly-seed=N` replays it); the integration tests build on
# the stack they share, so they keep the order they are written in (tests/integration/conftest.py).
docker: ## install what the Compose mode needs: Debian's Docker engine and debootstrap, and Compose v2 built from its Go module
	$(call apt_install,$(DOCKER_PACKAGES))
	@bash infra/docker/compose.sh

test: install ## every test: unit, integration with every fault scenario (on services of its own, beside any running demo), then the demo in Compose (`make docker` and its image done meanwhile)
	bash tests/groups.sh $(REPORTS)

test-compose: install docker ## only the Compose group: the whole demo in containers, on a Docker engine started for it if none runs (and stopped after)
	bash infra/docker/with-engine.sh $(VENV)/bin/pytest -q --durations=0 --durations-min=15 --junitxml=$(REPORTS)/compose.xml tests/compose

test-long: install ## only the long scenarios that `make test` runs too: the fault matrix, kill -9 of a Bronze and a Silver write, the cluster pass, Connect stopped, bulk loads across a killed and a stopped Connect
	$(VENV)/bin/pytest -q --durations=5 -m long tests/integration

lint: install ## style checks: ruff (lint and layout) over the Python, sqlfluff over the transforms' SQL
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/sqlfluff lint --disable-progress-bar silver/transforms gold/transforms

test-unit: install ## unit tests only (no services)
	$(VENV)/bin/pytest -q tests/unit

bench: install env ## measure a scheduled run, the scheduler's overhead, commit cost, table layout, Gold freshness under the demo, Bronze, Silver/Gold incremental vs full, queries (stop the demo first; ~1 h); writes benchmarks/results/
	$(PYTHON) -m benchmarks

chaos: install env ## fault matrix: kill -9 each service and job 6 times under a live workload, then check every table (stop the demo first; ~20 min); writes benchmarks/results/chaos.*
	$(PYTHON) -m operations.chaos --kills-per-victim $${KILLS_PER_VICTIM:-6}

# MkDocs is pinned at 1.6.1, so Material's and ProperDocs' banners about a future MkDocs 2
# say nothing that applies here. No --quiet on the build: it hides the warnings from the
# counter that --strict fails on, and a broken link would pass.
MKDOCS := NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs

docs: install ## serve the documentation site on http://127.0.0.1:8000
	$(MKDOCS) serve -a 127.0.0.1:$${DOCS_PORT:-8000}

docs-build: install ## build the documentation site strictly (broken links fail)
	$(MKDOCS) build --strict

clean: ## stop everything and delete all local state: .lake/, and the Compose mode's volumes
	@if [ -x $(LAKEHOUSE) ]; then $(LAKEHOUSE) down --delete-volumes; fi
	rm -rf .lake
