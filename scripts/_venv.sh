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
.venv/bin/python -m pip install -q -e ".[$extra]"
echo "$wanted" > "$stamp"
