"""Guarding coding-agent CLIs (Claude Code, Gemini CLI, Codex CLI, opencode) through their tool hooks.

The CLI starts `otelguard hook <cli>` once per tool call, before and after it runs. The command reads
the hook's JSON, replays the session's recent calls from a local SQLite history through the same
engine and guards as every other driver, judges the new call, and answers in the CLI's own JSON:
a reminder as context the CLI adds for the model, a block as a denied call. `otelguard install-hook`
writes the CLI's settings entry.

Modules: `paths` (where config, history and log live), `hook_config` (the hooks' validated config,
cached), `payload` (each CLI's stdin into one `HookEvent`), `history` (the SQLite store), `replay`
(events into the engine), `answers` (a decision in each CLI's JSON), `command` (the hook process),
`install` (settings entries), `export` (verdicts out over OTLP, off the hook's path).
Nothing here is imported by `import otelguard`.
"""

CLIS = ("claude-code", "gemini-cli", "codex", "opencode")  # the CLIs whose hooks otelguard answers

PRE, POST = "pre", "post"  # a tool call about to run, or that ran
# Each CLI's tool hooks, by the event name its hook input gives (`hook_event_name`; opencode's plugin
# names none, otelguard calls them so), and the phase of the call each tells of.
TOOL_EVENTS = {
    "claude-code": {"PreToolUse": PRE, "PostToolUse": POST, "PostToolUseFailure": POST},
    "codex": {"PreToolUse": PRE, "PostToolUse": POST, "PostToolUseFailure": POST},
    "gemini-cli": {"BeforeTool": PRE, "AfterTool": POST},
    "opencode": {"tool.execute.before": PRE, "tool.execute.after": POST},
}
