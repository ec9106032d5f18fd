"""`otelguard install-hook <cli>` / `uninstall-hook <cli>`: the CLI's settings entry that runs
`otelguard hook <cli>`, merged into the user's settings, never replacing them.

| CLI | --user (default) | --project | what is written |
|---|---|---|---|
| Claude Code | `~/.claude/settings.json` | `.claude/settings.json` | `hooks.PreToolUse`, `PostToolUse`, `PostToolUseFailure` |
| Gemini CLI | `~/.gemini/settings.json` | `.gemini/settings.json` | `hooks.BeforeTool`, `AfterTool` |
| Codex CLI | `$CODEX_HOME` or `~/.codex`: `hooks.json`, `config.toml` | `.codex/...` | `hooks.PreToolUse`, `PostToolUse`; `[features] hooks = true` |
| opencode | `${XDG_CONFIG_HOME:-~/.config}/opencode/plugins/otelguard.js` | `.opencode/plugins/otelguard.js` | the plugin, with otelguard's path |

The command is the absolute path of the `otelguard` that runs this. An entry of otelguard's already
there (any path) is left as it is, so installing twice changes nothing. Only otelguard's entries are
written: every other byte of the file stays as it was (`json_edit`; TOML with its comments, through
tomlkit), so uninstalling gives back the file as it was before installing, unless it was edited in
between. A settings file that is a link (dotfiles) is edited where the link points, the link kept; a
link to nothing is not followed. The file's previous version is kept beside what the link names, as
`<name>.otelguard-backup`. A settings file that is not plain JSON, gives a key twice (a rewrite would
drop the first copy) or is read-only is not touched: the command says so and what to add by hand.
Uninstalling removes otelguard's entries (and the plugin file) and nothing else; Codex's
`[features] hooks` stays, as other hooks may need it.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import json_edit

USER, PROJECT = "user", "project"

# CLI -> (settings directory under home / project, settings file, hook events, matcher)
_JSON_HOOKS = {
    "claude-code": (".claude", "settings.json", ("PreToolUse", "PostToolUse", "PostToolUseFailure"), "*"),
    "gemini-cli": (".gemini", "settings.json", ("BeforeTool", "AfterTool"), ".*"),
    "codex": (".codex", "hooks.json", ("PreToolUse", "PostToolUse"), ".*"),
}
_PLUGIN_NAME = "otelguard.js"
_PLUGIN_MARK = "otelguard install-hook opencode"  # in the plugin's first comment: the file is ours
BACKUP_SUFFIX = ".otelguard-backup"


class InstallError(Exception):
    """A settings file otelguard will not rewrite (the message says what to do instead)."""


@dataclass
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is to be removed
    keeps_backup: bool = True  # (otelguard's own plugin file needs none)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null"))

    @property
    def target(self) -> Path:
        """The file written: where `path` leads when it is a link (the link stays)."""
        return Path(os.path.realpath(self.path))

    @property
    def backup(self) -> Path | None:
        """Where the file's previous version is kept when it is rewritten, beside the name it was
        given (a link's target may be in a repository of dotfiles); None: nothing to keep."""
        if self.before is None or self.after is None or not self.keeps_backup:
            return None
        return self.path.with_name(self.path.name + BACKUP_SUFFIX)

    def apply(self) -> None:
        if not self.changed:
            return
        if self.after is None:
            self.path.unlink()
            return
        target = self.target
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + ".otelguard-tmp")
        temporary.write_text(self.after, encoding="utf-8")
        if target.exists():
            shutil.copymode(target, temporary)
        backup = self.backup
        if backup is not None:
            shutil.copy2(target, backup)
        os.replace(temporary, target)  # never a half-written settings file


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
        plugin = _plugin_change(_opencode_dir(scope, home, project) / _PLUGIN_NAME, command, install)
        if plugin.changed and plugin.before is not None and not plugin.target.stat().st_mode & stat.S_IWUSR:
            raise InstallError(f"{plugin.path} is read-only; otelguard does not change it: make it writable first")
        return [plugin]
    folder, name, events, matcher = _JSON_HOOKS[cli]
    base = _codex_dir(scope, home, project) if cli == "codex" else (home if scope == USER else project) / folder
    result = [_json_change(base / name, cli, events, matcher, command, install)]
    if cli == "codex" and install:
        result.append(_codex_features(base / "config.toml"))
    for change, by_hand in zip(result, (_by_hand(cli, command), "`hooks = true` under [features]"), strict=False):
        if change.changed and change.before is not None and not change.target.stat().st_mode & stat.S_IWUSR:
            raise InstallError(f"{change.path} is read-only; otelguard does not change it: make it writable, or add "
                               f"by hand {by_hand}")
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
    """The change to a CLI's settings JSON: otelguard's entries added (or taken out) where they go,
    each other byte as it was (`json_edit`)."""
    before = _read(path)
    settings = _read_json(path, before, cli, command)
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is not an object; add otelguard's entries by hand ({_by_hand(cli, command)})")
    for event in events:
        if hooks.get(event) is not None and not isinstance(hooks[event], list):
            raise InstallError(f"{path}: hooks.{event} is not a list; add otelguard's entry by hand")
    if before is None or not before.strip():
        if not install:
            return FileChange(path, before, before)
        return FileChange(path, before, json.dumps({"hooks": {event: [_group(cli, matcher, command)] for event in events}},
                                                   indent=2, ensure_ascii=False) + "\n")
    root = json_edit.locate(before)
    edits = (_installed if install else _uninstalled)(before, root, hooks, cli, events, matcher, command)
    return FileChange(path, before, json_edit.applied(before, edits))


def _group(cli: str, matcher: str, command: list[str]) -> dict[str, Any]:
    """otelguard's entry for one hook event: a matcher group running `otelguard hook <cli>`."""
    entry: dict[str, Any] = {"type": "command", "command": shlex.join([*command, "hook", cli])}
    if cli == "gemini-cli":
        entry["name"] = "otelguard"
    return {"matcher": matcher, "hooks": [entry]}


def _installed(text: str, root: json_edit.Node, hooks: dict[str, Any], cli: str, events: tuple[str, ...],
               matcher: str, command: list[str]) -> list[json_edit.Edit]:
    """A group of otelguard's appended to each event's list that has no entry of otelguard's; the
    events missing, and `hooks` itself when missing, added after what is there."""
    group = _group(cli, matcher, command)
    hooks_child = root.member("hooks")
    if hooks_child is None:
        return [json_edit.appended(text, root, [("hooks", {event: [group] for event in events})])]
    edits, missing = [], []
    for event in events:
        groups = hooks.get(event)
        event_child = hooks_child.node.member(event)
        if groups is None or event_child is None:  # (null: as absent)
            if event_child is not None:
                edits.append(json_edit.Edit(event_child.node.start, event_child.node.end, json.dumps([group])))
            else:
                missing.append((event, [group]))
        elif not any(is_ours(hook, cli) for item in groups if isinstance(item, dict) for hook in _hooks_of(item)):
            edits.append(json_edit.appended(text, event_child.node, [(None, group)]))
    if missing:
        edits.append(json_edit.appended(text, hooks_child.node, missing))
    return edits


def _uninstalled(text: str, root: json_edit.Node, hooks: dict[str, Any], cli: str, events: tuple[str, ...],
                 matcher: str, command: list[str]) -> list[json_edit.Edit]:
    """otelguard's hook entries taken out; a group left with none goes, an event left with no group
    goes, and `hooks` left with no event goes."""
    hooks_child = root.member("hooks")
    if hooks_child is None:
        return []
    edits: list[json_edit.Edit] = []
    emptied: set[int] = set()
    for number, event_child in enumerate(hooks_child.node.children or ()):
        groups = hooks.get(event_child.key or "")
        if event_child.key not in events or not isinstance(groups, list):
            continue
        gone, inner = set(), []
        for index, (group, group_child) in enumerate(zip(groups, event_child.node.children or (), strict=True)):
            entries = _hooks_of(group)
            ours = {position for position, hook in enumerate(entries) if is_ours(hook, cli)}
            if ours and len(ours) == len(entries):
                gone.add(index)  # the group held only otelguard's hook
            elif ours:
                entries_child = group_child.node.member("hooks")
                assert entries_child is not None  # (entries came from it)
                inner += json_edit.removed(entries_child.node, ours)
        if gone and len(gone) == len(groups):
            emptied.add(number)
        else:
            edits += inner + (json_edit.removed(event_child.node, gone) if gone else [])
    if emptied and len(emptied) == len(hooks_child.node.children or ()):
        return [*edits, *json_edit.removed(root, {(root.children or []).index(hooks_child)})]
    return [*edits, *(json_edit.removed(hooks_child.node, emptied) if emptied else [])]


def _hooks_of(group: Any) -> list[Any]:
    entries = group.get("hooks") if isinstance(group, dict) else None
    return entries if isinstance(entries, list) else []


def _read(path: Path) -> str | None:
    """The file's text; None when there is none. A link is read where it points; a link to nothing
    is refused (writing would replace the link with a file)."""
    if path.is_symlink() and not path.exists():
        raise InstallError(f"{path} is a link to {os.readlink(path)}, which does not exist; otelguard does not "
                           "follow it: create the file it names, or remove the link")
    return path.read_text(encoding="utf-8") if path.exists() else None


def _read_json(path: Path, text: str | None, cli: str, command: list[str]) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        settings = json_edit.unique_keys(text)
    except json_edit.DuplicateKey as error:
        raise InstallError(f"{path}: {error} (the CLI reads the last copy only); otelguard does not rewrite it: "
                           f"remove the duplicate, or add by hand {_by_hand(cli, command)}") from None
    except (ValueError, RecursionError) as error:
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

    before = _read(path)
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
    before = _read(path)
    if before is not None and _PLUGIN_MARK not in before:
        raise InstallError(f"{path} exists and is not otelguard's plugin; move it away first")
    if not install:
        return FileChange(path, before, None, keeps_backup=False)
    template = (Path(__file__).with_name("opencode_plugin.js")).read_text(encoding="utf-8")
    return FileChange(path, before, template.replace("__OTELGUARD_COMMAND__", json.dumps(command)), keeps_backup=False)
