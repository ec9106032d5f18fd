"""Moved to `otelguard.model.actions`: this alias of it goes in the next release."""

import warnings

from .model.actions import *  # noqa: F403  (the alias: every public name of the moved module)

warnings.warn("otelguard.actions moved to otelguard.model.actions; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
