"""Where the repository's files are, for the tests and their helpers: named once here, so that a test
module can move between folders without a `Path(__file__).parents[...]` chain to recount."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/support/paths.py -> the repository
TESTS = ROOT / "tests"

# Data the tests read (it stays where it is; fixtures of the OTLP readers, real runs, corpora).
FIXTURES = TESTS / "fixtures"  # captured spans and logs (otel_support.FIXTURES also honours OTELGUARD_FIXTURES)
AGENT_CLI_CAPTURES = FIXTURES / "agent-clis"  # the coding-agent CLIs' own telemetry, one run each
AGENT_CLI_HOOKS = FIXTURES / "agent_cli_hooks"  # the CLIs' recorded hook payloads
REAL_RUNS = TESTS / "realruns"  # 192 real mini-swe-agent runs and their labels
NO_PROGRESS_CORPUS = TESTS / "no_progress_corpus"
AGENT_CLIS_JSON = TESTS / "agent_clis.json"  # the coding-agent CLIs' pinned npm packages (.ci/run reads it too)
TYPE_CHECKING_USAGE = TESTS / "type_checking" / "public_api_usage.py"  # the public API as a type checker sees it

# The repository's own parts the tests check or run.
PACKAGE = ROOT / "otelguard"
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
DASHBOARDS = ROOT / "dashboards"
COLLECTOR_CONFIG = ROOT / "collector-config"
BENCHMARKS = ROOT / "benchmarks"
