"""`otelguard install-hook` / `uninstall-hook` on the settings file a user keeps: only otelguard's
entries change (every other byte as it was, so uninstalling gives the file back), a link (dotfiles) is
edited where it points and stays a link, the previous version is kept, and a file otelguard cannot
rewrite faithfully (a key given twice, read-only, a link to nothing) is left alone, saying why."""

from __future__ import annotations

import difflib
import json
import os
import stat

import pytest

from otelguard.cli import main

MINE = """{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(ls:*)", "Read(~/notes/**)"], "deny": []},
    "model":   "opus",
    "env": {
        "GREETING": "grüß dich \\u2603"
    },
    "hooks": {
        "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done" } ] } ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/audit.sh"}]
            }
        ]
    }
}"""  # (no newline at the end: kept so)


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return home


def commands(settings: dict, event: str) -> list[str]:
    return [hook["command"] for group in settings["hooks"].get(event, []) for hook in group["hooks"]]


@pytest.mark.parametrize("text", [
    MINE,
    "{}\n",
    '{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]}]}}\n',
    '{\n\t"model": "opus",\n\t"hooks": {\n\t\t"Notification": [{"hooks": []}]\n\t}\n}\n',
], ids=["indented-by-four", "empty", "one-line", "tabs"])
def test_install_adds_only_otelguards_entries_and_uninstall_gives_the_file_back(home, text):
    path = home / ".claude" / "settings.json"
    path.write_text(text, encoding="utf-8")
    assert main(["install-hook", "claude-code"]) == 0
    installed = path.read_text(encoding="utf-8")
    settings = json.loads(installed)
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        assert commands(settings, event)[-1].endswith("hook claude-code")
    # everything that was there is there as it was: the new text is the old with otelguard's added
    assert {key: value for key, value in settings.items() if key != "hooks"} \
        == {key: value for key, value in json.loads(text).items() if key != "hooks"}
    remaining = iter(installed)
    assert all(char in remaining for char in text)  # (each character of the old, in order, in the new)
    if text is MINE:  # lines of their own: only lines added
        assert [line for line in difflib.ndiff(text.splitlines(), installed.splitlines()) if line[0] in "-?"] == []
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert path.read_text(encoding="utf-8") == text


def test_uninstall_takes_otelguards_hook_out_of_a_group_it_shares(home):
    path = home / ".claude" / "settings.json"
    assert main(["install-hook", "claude-code"]) == 0
    settings = json.loads(path.read_text())
    ours = commands(settings, "PreToolUse")[0]
    text = json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "~/first.sh"}, {"type": "command", "command": ours},
        {"type": "command", "command": "~/last.sh"}]}]}}, indent=2) + "\n"
    path.write_text(text)
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert json.loads(path.read_text()) == {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "~/first.sh"}, {"type": "command", "command": "~/last.sh"}]}]}}


def test_the_previous_version_is_kept_beside_the_file(home, capsys):
    path = home / ".claude" / "settings.json"
    path.write_text(MINE, encoding="utf-8")
    assert main(["install-hook", "claude-code"]) == 0
    backup = home / ".claude" / "settings.json.otelguard-backup"
    assert backup.read_text(encoding="utf-8") == MINE
    assert f"its previous version is {backup}" in capsys.readouterr().out
    installed = path.read_text(encoding="utf-8")
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert backup.read_text(encoding="utf-8") == installed


def test_a_linked_settings_file_is_edited_where_the_link_leads_and_stays_a_link(home, tmp_path, capsys):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(MINE, encoding="utf-8")
    link = home / ".claude" / "settings.json"
    link.symlink_to(target)
    assert main(["install-hook", "claude-code"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert commands(json.loads(target.read_text()), "PostToolUse")
    assert f"where the link leads: {target}" in capsys.readouterr().out
    assert sorted(path.name for path in dotfiles.iterdir()) == ["claude-settings.json"]  # the backup is beside the link
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert link.is_symlink() and target.read_text(encoding="utf-8") == MINE


def test_a_link_to_nothing_is_not_followed(home, tmp_path, capsys):
    link = home / ".claude" / "settings.json"
    link.symlink_to(tmp_path / "dotfiles" / "missing.json")
    assert main(["install-hook", "claude-code"]) == 2
    assert "which does not exist" in capsys.readouterr().err
    assert link.is_symlink() and not (tmp_path / "dotfiles").exists()


def test_a_key_given_twice_is_refused_not_dropped(home, capsys):
    path = home / ".claude" / "settings.json"
    text = '{\n  "model": "sonnet",\n  "model": "opus"\n}\n'
    path.write_text(text)
    assert main(["install-hook", "claude-code"]) == 2
    error = capsys.readouterr().err
    assert "'model' is given twice" in error and "PreToolUse" in error  # what to add by hand
    assert path.read_text() == text


@pytest.mark.parametrize("cli", ["claude-code", "codex", "opencode"])
def test_a_read_only_file_is_left_as_it_is(home, capsys, cli):
    assert main(["install-hook", cli]) == 0
    path = {"claude-code": home / ".claude" / "settings.json", "codex": home / ".codex" / "hooks.json",
            "opencode": home / ".config" / "opencode" / "plugins" / "otelguard.js"}[cli]
    if cli != "opencode":
        path.write_text('{"model": "opus"}\n')
    path.chmod(0o444)
    text = path.read_text()
    capsys.readouterr()
    assert main(["uninstall-hook" if cli == "opencode" else "install-hook", cli]) == 2
    assert "is read-only" in capsys.readouterr().err
    assert path.read_text() == text and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_codex_and_gemini_settings_come_back_as_they_were(home):
    codex = home / ".codex" / "hooks.json"
    codex.parent.mkdir()
    codex.write_text('{\n    "hooks": {\n        "Stop": [{"hooks": [{"type": "command", "command": "x"}]}]\n    }\n}\n')
    gemini = home / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text('{ "theme": "dark", "ui": { "hideBanner": true } }')
    before = {path: path.read_text() for path in (codex, gemini)}
    for cli in ("codex", "gemini-cli"):
        assert main(["install-hook", cli]) == 0
    assert json.loads(gemini.read_text())["ui"] == {"hideBanner": True}
    for cli in ("codex", "gemini-cli"):
        assert main(["uninstall-hook", cli]) == 0
    assert {path: path.read_text() for path in (codex, gemini)} == before
