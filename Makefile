# GridWeb: `make run` starts the site, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: venv run migrate test chromium lint

# One place that makes the virtualenv and installs the pinned requirements and the worked
# policy package (examples/policies, docs/write-a-policy.md; editable, so its code is read live);
# redone only when one of them is newer than the stamp.
venv: $(STAMP)

$(STAMP): requirements.txt examples/policies/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -e examples/policies
	@touch $(STAMP)

migrate: venv
	$(PY) manage.py migrate --noinput

# Embedded mode: SQLite + in-memory channel layer, no Redis or PostgreSQL needed.
# The demo runs (the shipped traces and a Zikos reproduction) are simulated once, the first
# time; later starts find them and go straight to the server.
run: migrate
	$(PY) manage.py gridweb_demo --run-now
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(PY) manage.py runserver 0.0.0.0:8000

# Debian's Chromium for the browser tests; without root this may fail, and those tests skip.
chromium:
	@command -v chromium >/dev/null 2>&1 || \
	  (DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	   DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	  echo "warning: could not install chromium; browser tests will be skipped"

test: venv chromium
	$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(PY) -m ruff check .
