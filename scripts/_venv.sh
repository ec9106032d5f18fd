# Sourced by scripts/demo and scripts/test: makes .venv and installs otelguard (editable) with the
# extra "$1", unless .venv already holds an install of this pyproject.toml, extra and Python.
# Remove .venv (or its .installed-* stamps) to force a fresh install.
extra="$1"
stamp=".venv/.installed-$extra"
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1) $(python3 --version 2>&1)"
if [[ -x .venv/bin/python && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
    return 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# -W: pip shows the build backend's warnings, and setuptools warns "Editable installation" on every
# editable install (information only: the package is found through an import hook). Nothing to act on.
.venv/bin/python -W "ignore:Editable installation:UserWarning" -m pip install -q -e ".[$extra]"
echo "$wanted" > "$stamp"
