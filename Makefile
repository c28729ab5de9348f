# Every target creates .venv and installs what it needs, so a fresh clone works with no manual steps.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PORT   ?= 8501
MODELS ?= resnet18 resnet34 resnet50 resnet101 resnet152

.PHONY: run test test-fast loadtest loadtest-browser bench weights lint chromium redis clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(PY)
	$(PIP) -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-scale.txt | $(PY)
	$(PIP) -r requirements-dev.txt -r requirements-scale.txt
	touch $@ $(VENV)/.runtime

## make run: start the page on http://localhost:$(PORT)
run: $(VENV)/.runtime
	$(PY) -m streamlit run app.py --server.port $(PORT)

## make test: lint, then the whole suite (unit, CLI, page, browser, packaging)
# The network guard (tests/netguard) loads before the interpreter's first import, in pytest and
# in every Python process it starts; tests/conftest.py installs it too when pytest runs alone.
# pytest-xdist: one worker per core, tests handed out one by one; the tests that share one of their
# module's module-scoped fixtures (the wheel, Ray, a server, a notebook run) stay on one worker
# (xdist_group and the "@group" ending of the test's id, both set in tests/conftest.py: xdist 3.8's own
# id change does not reach pytest 9); each worker has its own redis-server and free ports.
XDIST := -n auto --dist loadgroup
# The browser tests run one at a time in a second pytest beside the xdist run: they mostly wait for the page
# server and Chromium (0.7 of a core on average). The xdist run is niced, so the page server and Chromium,
# whose waits a test bounds (a student's page follows the teacher within 30 s), come first and the other
# tests take the rest of the cores. The browser run's output is printed when both have finished; either
# failing fails the target. Its page servers run torch on one thread, as the workers do (tests/conftest.py):
# beside the busy workers, a second OpenMP thread mostly spins, and test_present's server took 34 core-seconds
# with two threads against 21 with one for the same pages.
# The browser run collects only the files that hold browser tests (BROWSER_FILES; tests/test_markers.py checks
# that no browser test lives elsewhere): collecting the whole suite to keep 78 of its tests took 17-20 s of a core.
# --durations=20: the slowest tests of each run are printed at its end, where the suite's time goes.
BROWSER_FILES := tests/e2e tests/test_packaging.py tests/test_render.py tests/test_network_guard.py
TESTENV := PYTHONPATH=$(CURDIR)/tests/netguard$${PYTHONPATH:+:$$PYTHONPATH}
test: lint chromium redis
	@log=$$(mktemp); \
	$(TESTENV) OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -m browser $(BROWSER_FILES) --durations=20 > $$log 2>&1 & browser=$$!; \
	$(TESTENV) nice -n 10 $(PY) -m pytest -m "not browser" $(XDIST) --durations=20; rest=$$?; \
	wait $$browser; shown=$$?; echo "== the browser tests (run beside the others) =="; cat $$log; rm -f $$log; \
	exit $$(( rest || shown ))

## make test-fast: the quick loop (about 2 min on 2 cores): all but the browser, slow, packaging and bench
# tests (markers registered in pyproject.toml, written on the tests); no lint. `make test` stays the full check.
FAST := not (browser or slow or packaging or bench)
test-fast: $(VENV)/.dev redis
	$(TESTENV) $(PY) -m pytest -q -m "$(FAST)" $(XDIST)

## make loadtest: the server under headless visitors (30 at once, 30 uploads, 200 in 10 s, 30 students following a teacher), each on a
## fresh server; a PASS/MISS table, tests/artifacts/loadtest.json (benchmarks/load.py)
loadtest: $(VENV)/.dev
	$(TESTENV) $(PY) -m benchmarks.load --n-a 30 --n-b 30 --n-c 200 --c-window 10

## make loadtest-browser: 30 simultaneous browser sessions against one server; p50/p95 in tests/artifacts/load.json
loadtest-browser: $(VENV)/.dev chromium
	VIZHOOKS_LOAD_N=30 $(PY) -m pytest -q -s tests/e2e/test_load.py

## make bench: speed and memory benchmarks (about 25 min on 2 cores); prints a table and rewrites BENCHMARKS.md;
## BENCH_ARGS="--only coldstart live" measures those again and keeps the other rows
BENCH_ARGS ?=
bench: $(VENV)/.dev chromium
	$(PY) -m benchmarks.run $(BENCH_ARGS)

## make weights: pre-fetch ImageNet checkpoints into the torch cache (needs internet once);
## make weights CLIP=RN50:openai: open_clip's weights for the CLIP model choice instead (Hugging Face cache)
CLIP ?=
weights: $(VENV)/.runtime
	$(PY) -m vizhooks --download-weights $(if $(CLIP),clip:$(CLIP),$(MODELS))

## make lint: ruff over the code, mypy over the library (settings in pyproject.toml), the manual built strictly (mkdocs.yml)
# mypy -n auto: one worker process per core. Its cache lives in the venv, so only a new venv (a fresh clone, CI)
# checks torch's types from scratch: 52 s with one process, 36-37 s with two (our 2 cores); warm, 1.5 s either way.
lint: $(VENV)/.dev
	$(PY) -m ruff check vizhooks tests app.py benchmarks docs/hooks.py
	$(PY) -m mypy -n auto
	$(VENV)/bin/lint-imports
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# Browser tests drive Debian's chromium; Playwright's own browser download is never used.
# fonts-wqy-zenhei: a CJK font, so the Chinese page (and its screenshots) shows characters.
chromium:
	@command -v chromium >/dev/null 2>&1 && fc-list :lang=zh | grep -q . || { $(SUDO) apt-get update -qq && \
		$(SUDO) apt-get install -y -qq chromium fonts-wqy-zenhei; }

# The class store tests (tests/test_classroom.py, tests/test_redis_store.py) start Debian's redis-server on a localhost port of their own;
# the package's system service is not needed.
redis:
	@command -v redis-server >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server; }

clean:
	rm -rf $(VENV) .pytest_cache vizhooks-out
