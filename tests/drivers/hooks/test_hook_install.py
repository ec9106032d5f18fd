"""`otelguard install-hook` / `uninstall-hook`: the CLIs' settings merged, never clobbered (temp HOME)."""

from __future__ import annotations

import json
import shlex

import pytest
import tomlkit
from hook_support import CLIS

import otelguard
from otelguard.cli import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(project)
    return home


SETTINGS = {
    "claude-code": ".claude/settings.json",
    "gemini-cli": ".gemini/settings.json",
    "codex": ".codex/hooks.json",
    "opencode": ".config/opencode/plugins/otelguard.js",
}
EVENTS = {
    "claude-code": ["PreToolUse", "PostToolUse", "PostToolUseFailure"],
    "gemini-cli": ["BeforeTool", "AfterTool"],
    "codex": ["PreToolUse", "PostToolUse"],
}


def commands(settings: dict, event: str) -> list[str]:
    return [hook["command"] for group in settings["hooks"].get(event, []) for hook in group["hooks"]]


@pytest.mark.parametrize("cli", CLIS)
def test_install_writes_the_absolute_command_once(home, capsys, cli):
    assert main(["install-hook", cli]) == 0
    path = home / SETTINGS[cli]
    text = path.read_text()
    if cli == "opencode":
        assert "otelguard install-hook opencode" in text and '"/' in text  # the absolute path, as JSON
    else:
        settings = json.loads(text)
        for event in EVENTS[cli]:
            [command] = commands(settings, event)
            words = shlex.split(command)
            assert words[0].startswith("/") and words[-2:] == ["hook", cli]
    capsys.readouterr()
    assert main(["install-hook", cli]) == 0
    assert "already installed" in capsys.readouterr().out
    assert path.read_text() == text


def test_install_merges_into_the_users_claude_settings_and_uninstall_takes_only_its_own(home):
    mine = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "model": "opus",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/audit.sh"}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
    }
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(mine, indent=4))
    assert main(["install-hook", "claude-code"]) == 0
    installed = json.loads(path.read_text())
    assert installed["permissions"] == mine["permissions"] and installed["model"] == "opus"
    assert installed["hooks"]["Stop"] == mine["hooks"]["Stop"]
    assert commands(installed, "PreToolUse")[0] == "~/audit.sh" and len(commands(installed, "PreToolUse")) == 2
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert json.loads(path.read_text()) == mine


def test_codex_gets_the_hooks_feature_with_its_config_kept(home):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = '# my codex\nmodel = "o4"  # favourite\n\n[features]\nweb_search = true\n'
    config.write_text(original)
    assert main(["install-hook", "codex"]) == 0
    text = config.read_text()
    assert text.startswith('# my codex\nmodel = "o4"  # favourite\n')
    assert tomlkit.parse(text)["features"] == {"web_search": True, "hooks": True}
    assert main(["uninstall-hook", "codex"]) == 0
    assert config.read_text() == text  # other hooks may need the feature: it stays
    assert json.loads((home / ".codex" / "hooks.json").read_text()) == {}


def test_codex_home_is_where_codex_keeps_its_settings(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codexhome"))
    assert main(["install-hook", "codex"]) == 0
    assert (tmp_path / "codexhome" / "hooks.json").exists() and (tmp_path / "codexhome" / "config.toml").exists()
    assert not (home / ".codex").exists()


@pytest.mark.parametrize("cli", CLIS)
def test_dry_run_prints_the_diff_and_writes_nothing(home, capsys, cli):
    assert main(["install-hook", cli, "--dry-run"]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith("--- /dev/null\n+++ ") and f"hook {cli}" in diff
    assert not (home / SETTINGS[cli]).exists()


@pytest.mark.parametrize("cli", CLIS)
def test_project_scope_writes_into_the_current_project(home, cli):
    assert main(["install-hook", cli, "--project"]) == 0
    project_file = {"claude-code": ".claude/settings.json", "gemini-cli": ".gemini/settings.json",
                    "codex": ".codex/hooks.json", "opencode": ".opencode/plugins/otelguard.js"}[cli]
    assert (home.parent / "project" / project_file).exists()
    assert not (home / SETTINGS[cli]).exists()
    assert main(["uninstall-hook", cli, "--project"]) == 0
    assert cli != "opencode" or not (home.parent / "project" / project_file).exists()


def test_settings_that_are_not_plain_json_are_left_alone(home, capsys):
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    text = '{\n  // my comment\n  "theme": "dark"\n}\n'
    path.write_text(text)
    assert main(["install-hook", "gemini-cli"]) == 2
    error = capsys.readouterr().err
    assert "is not plain JSON" in error and "BeforeTool" in error and "hook gemini-cli" in error
    assert path.read_text() == text


def test_a_foreign_opencode_plugin_of_the_same_name_is_left_alone(home, capsys):
    path = home / SETTINGS["opencode"]
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n")
    assert main(["install-hook", "opencode"]) == 2
    assert "not otelguard's plugin" in capsys.readouterr().err
    assert main(["uninstall-hook", "opencode"]) == 2
    assert path.exists()


def test_uninstalling_what_is_not_installed_changes_nothing(home, capsys):
    assert main(["uninstall-hook", "claude-code"]) == 0
    assert "not installed" in capsys.readouterr().out
    assert not (home / ".claude").exists()


def test_every_public_name_of_the_package_resolves():
    """The package exports lazily (a hook process imports none of them): each name still resolves."""
    assert {name for name in otelguard.__all__ if getattr(otelguard, name) is None} == set()
    assert "GuardSpanProcessor" in dir(otelguard)
