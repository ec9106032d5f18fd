"""`otelguard install-hook <cli>` / `uninstall-hook <cli>`: the CLI's settings entry that runs
`otelguard hook <cli>`, merged into the user's settings, never replacing them.

| CLI | --user (default) | --project | what is written |
|---|---|---|---|
| Claude Code | `~/.claude/settings.json` | `.claude/settings.json` | `hooks.PreToolUse`, `PostToolUse`, `PostToolUseFailure` |
| Gemini CLI | `~/.gemini/settings.json` | `.gemini/settings.json` | `hooks.BeforeTool`, `AfterTool` |
| Codex CLI | `$CODEX_HOME` or `~/.codex`: `hooks.json`, `config.toml` | `.codex/...` | `hooks.PreToolUse`, `PostToolUse`; `[features] hooks = true` |
| opencode | `${XDG_CONFIG_HOME:-~/.config}/opencode/plugins/otelguard.js` | `.opencode/plugins/otelguard.js` | the plugin, with otelguard's path |

The command is the absolute path of the `otelguard` that runs this. An entry of otelguard's already
there (any path) is left as it is, so installing twice changes nothing; everything else in the file
stays, in its order (TOML with its comments). A settings file that is not JSON is not touched: the
command says so and what to add by hand. Uninstalling removes otelguard's entries (and the plugin
file) and nothing else; Codex's `[features] hooks` stays, as other hooks may need it.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USER, PROJECT = "user", "project"

# CLI -> (settings directory under home / project, settings file, hook events, matcher)
_JSON_HOOKS = {
    "claude-code": (".claude", "settings.json", ("PreToolUse", "PostToolUse", "PostToolUseFailure"), "*"),
    "gemini-cli": (".gemini", "settings.json", ("BeforeTool", "AfterTool"), ".*"),
    "codex": (".codex", "hooks.json", ("PreToolUse", "PostToolUse"), ".*"),
}
_PLUGIN_NAME = "otelguard.js"
_PLUGIN_MARK = "otelguard install-hook opencode"  # in the plugin's first comment: the file is ours


class InstallError(Exception):
    """A settings file otelguard will not rewrite (the message says what to do instead)."""


@dataclass
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is to be removed

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null"))

    def apply(self) -> None:
        if not self.changed:
            return
        if self.after is None:
            self.path.unlink()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".otelguard-tmp")
        temporary.write_text(self.after, encoding="utf-8")
        if self.path.exists():
            shutil.copymode(self.path, temporary)
        os.replace(temporary, self.path)  # never a half-written settings file


def otelguard_command() -> list[str]:
    """The command that runs this otelguard, by absolute path."""
    beside = Path(sys.executable).with_name("otelguard")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("otelguard")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "otelguard"]


def changes(cli: str, *, scope: str = USER, install: bool = True, command: list[str] | None = None,
            home: Path | None = None, project: Path | None = None) -> list[FileChange]:
    """What installing (or uninstalling) the hook of `cli` changes, file by file (nothing written)."""
    command = command or otelguard_command()
    home = home or Path.home()
    project = project or Path.cwd()
    if cli == "opencode":
        return [_plugin_change(_opencode_dir(scope, home, project) / _PLUGIN_NAME, command, install)]
    folder, name, events, matcher = _JSON_HOOKS[cli]
    base = _codex_dir(scope, home, project) if cli == "codex" else (home if scope == USER else project) / folder
    result = [_json_change(base / name, cli, events, matcher, command, install)]
    if cli == "codex" and install:
        result.append(_codex_features(base / "config.toml"))
    return result


def is_ours(hook: Any, cli: str) -> bool:
    """A hook entry that runs `otelguard hook <cli>` (whatever otelguard's path)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return words[-2:] == ["hook", cli] and any(Path(word).name in ("otelguard", "otelguard.exe") or word == "otelguard"
                                               for word in words[:-2])


def _json_change(path: Path, cli: str, events: tuple[str, ...], matcher: str, command: list[str],
                 install: bool) -> FileChange:
    before = path.read_text(encoding="utf-8") if path.exists() else None
    settings = _read_json(path, before, cli, events, command)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is not an object; add otelguard's entries by hand ({_by_hand(cli, command)})")
    for event in events:
        groups = hooks.get(event)
        if groups is not None and not isinstance(groups, list):
            raise InstallError(f"{path}: hooks.{event} is not a list; add otelguard's entry by hand")
        groups = groups or []
        if install:
            if not any(is_ours(hook, cli) for group in groups if isinstance(group, dict)
                       for hook in group.get("hooks") or ()):
                entry: dict[str, Any] = {"type": "command", "command": shlex.join([*command, "hook", cli])}
                if cli == "gemini-cli":
                    entry["name"] = "otelguard"
                groups.append({"matcher": matcher, "hooks": [entry]})
            hooks[event] = groups
        else:
            kept = []
            for group in groups:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    others = [hook for hook in group["hooks"] if not is_ours(hook, cli)]
                    if not others and group["hooks"]:
                        continue  # the group held only otelguard's hook
                    group = {**group, "hooks": others}
                kept.append(group)
            if kept:
                hooks[event] = kept
            else:
                hooks.pop(event, None)
    if not hooks:
        settings.pop("hooks")
    if before is None and not settings:
        return FileChange(path, None, None)
    after = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    if before is not None and json.loads(before) == settings:
        after = before  # nothing to change: the file stays as written
    return FileChange(path, before, after)


def _read_json(path: Path, text: str | None, cli: str, events: tuple[str, ...], command: list[str]) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except ValueError as error:
        raise InstallError(f"{path} is not plain JSON ({error}); otelguard does not rewrite it: "
                           f"add by hand {_by_hand(cli, command)}") from None
    if not isinstance(settings, dict):
        raise InstallError(f"{path} does not hold a JSON object; otelguard does not rewrite it")
    return settings


def _by_hand(cli: str, command: list[str]) -> str:
    _, _, events, matcher = _JSON_HOOKS[cli]
    entry = {"matcher": matcher, "hooks": [{"type": "command", "command": shlex.join([*command, "hook", cli])}]}
    return json.dumps({"hooks": {event: [entry] for event in events}})


def _codex_dir(scope: str, home: Path, project: Path) -> Path:
    if scope == PROJECT:
        return project / ".codex"
    codex_home = os.environ.get("CODEX_HOME")
    return Path(codex_home) if codex_home else home / ".codex"


def _codex_features(path: Path) -> FileChange:
    """`[features] hooks = true` in Codex's config.toml (comments and order kept)."""
    import tomlkit

    before = path.read_text(encoding="utf-8") if path.exists() else None
    try:
        document = tomlkit.parse(before or "")
    except tomlkit.exceptions.ParseError as error:
        raise InstallError(f"{path} is not valid TOML ({error}); add `[features]` `hooks = true` by hand") from None
    features = document.get("features")
    if features is None:
        features = tomlkit.table()
        document["features"] = features
    elif not isinstance(features, dict):
        raise InstallError(f"{path}: 'features' is not a table; add `hooks = true` under [features] by hand")
    if features.get("hooks") is not True:
        features["hooks"] = True
    after = tomlkit.dumps(document)
    return FileChange(path, before, after if after != before else before)


def _opencode_dir(scope: str, home: Path, project: Path) -> Path:
    if scope == PROJECT:
        return project / ".opencode" / "plugins"
    config = os.environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else home / ".config") / "opencode" / "plugins"


def _plugin_change(path: Path, command: list[str], install: bool) -> FileChange:
    before = path.read_text(encoding="utf-8") if path.exists() else None
    if before is not None and _PLUGIN_MARK not in before:
        raise InstallError(f"{path} exists and is not otelguard's plugin; move it away first")
    if not install:
        return FileChange(path, before, None)
    template = (Path(__file__).with_name("opencode_plugin.js")).read_text(encoding="utf-8")
    return FileChange(path, before, template.replace("__OTELGUARD_COMMAND__", json.dumps(command)))
