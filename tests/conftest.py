"""Shared test settings: Hypothesis profiles (`ci` is deterministic and bounded), and the
agent CLI tests left out of the default run (`AGENT_CLI`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Real-world data kept beside the project, never copied into it.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


#: The marker of the tests that run an agent CLI installed from npm (tests/test_agent_cli.py):
#: left out of the default run, as declared here, and run by an `-m` that names it
#: (`pytest -m agent_cli`; scripts/agent-cli-check installs the CLI, then does that).
AGENT_CLI = "agent_cli"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{AGENT_CLI}: runs an agent CLI installed from npm (scripts/agent-cli-check); "
        "deselected unless -m names it",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect (shown in the summary, never skipped) the agent CLI tests unless `-m` names
    them: they need a CLI the test install does not bring."""
    if AGENT_CLI in (config.getoption("markexpr") or ""):
        return
    left = [item for item in items if item.get_closest_marker(AGENT_CLI) is not None]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item.get_closest_marker(AGENT_CLI) is None]
