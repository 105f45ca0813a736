# Conventional Sphinx targets for the book, in the current Python environment
# (pip install -r requirements.txt first). nox runs the same verbs in the shared toolchain.
# Every target but test, unit, clean and clean-cache runs a verb of the book's one command,
# `python -m book_extensions <verb>`: `$(PYTHON) -m book_extensions --help` lists them all.
PYTHON  ?= python3
DEVICE  ?= cpu
BUILD    = $(PYTHON) -m book_extensions build --device $(DEVICE)
LANG_   ?= en

.PHONY: help html doctest pdf epub test unit serve parity bench clean clean-cache

help:
	@echo "make html       build every language into _build/$(DEVICE)/html/"
	@echo "make doctest    run the doctests of every language"
	@echo "make pdf        the whole book as PDF, one per language, into _build/$(DEVICE)/offline/"
	@echo "make epub       the whole book as EPUB, one per language, checked by EPUBCheck"
	@echo "make test       run the test suite on every core (all tiers but the scheduled one)"
	@echo "make unit       run the unit tier: no build, no browser (about 30 s)"
	@echo "make serve      live preview (LANG_=zh for Chinese)"
	@echo "make parity     check that the languages have the same pages, code and structure"
	@echo "make bench      build timings and execution counts"
	@echo "make clean      remove _build/ (keeps the execution cache)"
	@echo "make clean-cache remove the execution cache too"
	@echo "DEVICE=cuda selects the GPU build."
	@echo "Each target runs a verb of one command: $(PYTHON) -m book_extensions --help lists"
	@echo "every verb (more than these), and $(PYTHON) -m book_extensions <verb> --help its arguments."

html doctest:
	$(BUILD) $@

pdf epub:
	$(PYTHON) -m book_extensions editions $@ --device $(DEVICE)

test:
	$(PYTHON) -m pytest -n auto

unit:
	$(PYTHON) -m pytest -m unit

serve:
	$(PYTHON) -m book_extensions serve $(LANG_) --device $(DEVICE)

parity:
	$(PYTHON) -m book_extensions parity docs

bench:
	$(PYTHON) -m book_extensions bench

clean:
	rm -rf _build

clean-cache: clean
	rm -rf .jupyter_cache
