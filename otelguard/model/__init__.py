"""The records every layer shares, the actions, the attribute names, and the value rules (canonical arguments, Markdown fences)."""
