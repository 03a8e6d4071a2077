# The two commands of the README. Both set up what they need first.
.PHONY: demo test lint collector

# Analyse the shipped incident sample: terminal summary plus an HTML report here.
# Exit code 1 means "findings at or above --fail-on", which is the point of the demo.
demo:
	@bash .ci/setup
	@.venv/bin/gpu-triage analyze samples/incident-toolkit-disabled || test $$? -eq 1

# Install the real parts the tests use (containerd, shellcheck) and run
# the whole suite. pytest's exit code 5 ("no tests collected") is a failure here.
test:
	@bash .ci/setup --system
	@.venv/bin/python -m pytest; code=$$?; \
	  if [ $$code -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$code

# Static checks: ruff, mypy --strict, and the import layering (packages in the order
# bundle -> analyzers -> reports -> gpu_triage, no import cycle: tests/test_layering.py).
lint:
	@.venv/bin/ruff check bundle analyzers reports gpu_triage collectors tests samples
	@.venv/bin/mypy
	@.venv/bin/python -m pytest -q -p no:cacheprovider tests/test_layering.py

# The one-file collector for customers: dist/gpu-triage-collect.pyz (standard library only,
# node.sh inside; run with `python3 gpu-triage-collect.pyz`, Python 3.8 or newer). The same
# sources always give the same bytes.
collector:
	@python3 -m collectors.pyz dist/gpu-triage-collect.pyz
