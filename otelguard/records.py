"""Moved to `otelguard.model.records`: this alias of it goes in the next release."""

import warnings

from .model.records import *  # noqa: F403  (the alias: every public name of the moved module)

warnings.warn("otelguard.records moved to otelguard.model.records; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
