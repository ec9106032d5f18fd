"""Hypothesis profiles for the property tests: a quick default and a thorough one.

The profile is chosen by the HYPOTHESIS_PROFILE environment variable (`thorough`; anything unset or
empty is `quick`), or by Hypothesis's own `--hypothesis-profile` option, which wins over the variable.
tests/conftest.py registers and loads it before any test module is imported.

A property states its example count as `@settings(max_examples=examples(1500), ...)`: the number is
what the thorough profile runs (`.ci/run` selects it), and the quick profile runs a tenth of it, at
least QUICK_FLOOR, so the properties keep their relative weights under both. A count written as a bare
number in `@settings` overrides every profile: write it through `examples` instead.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
QUICK = "quick"
THOROUGH = "thorough"

QUICK_SHARE = 10  # the quick profile runs 1/QUICK_SHARE of a property's thorough count...
QUICK_FLOOR = 20  # ...but never fewer than this (nor more than the thorough count)

# Hypothesis's own default, for a property that states no count.
UNSTATED = 100


def register_profiles() -> None:
    """Register `quick` and `thorough`; they differ in example counts only."""
    settings.register_profile(QUICK, max_examples=_quick(UNSTATED))
    settings.register_profile(THOROUGH, max_examples=UNSTATED, print_blob=True)


def load_profile() -> str:
    """Load the profile HYPOTHESIS_PROFILE names (`quick` when unset); return its name."""
    name = os.environ.get(PROFILE_VARIABLE) or QUICK
    settings.load_profile(name)  # an unknown name raises InvalidArgument
    return name


def examples(thorough: int) -> int:
    """The example count for a property that runs `thorough` examples under the thorough profile."""
    if settings.get_current_profile_name() == THOROUGH:
        return thorough
    return _quick(thorough)


def _quick(thorough: int) -> int:
    return min(thorough, max(thorough // QUICK_SHARE, QUICK_FLOOR))
