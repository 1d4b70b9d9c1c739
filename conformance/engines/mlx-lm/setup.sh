#!/bin/bash
# Makes the mlx-lm adapter's own virtual environment, .venv next to this
# script, from requirements.txt (every version pinned), and skips it when
# the venv was already installed from the same file (a copy of the file is
# kept in the venv once pip succeeds, as tools/setup.sh does for the others).
# About 80 s and 355 MB the first time; nothing after.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
requirements="$here/requirements.txt"
stamp="$venv/requirements.txt"

if [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$stamp"; then
  echo "setup: $venv is installed (requirements.txt unchanged)"
  exit 0
fi
[[ -x "$venv/bin/python" ]] || { echo "setup: creating $venv"; python3 -m venv "$venv"; }
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r "$requirements" >/dev/null; then
  echo "setup: pip install -r $requirements into $venv failed" >&2
  exit 1
fi
cp "$requirements" "$stamp"
echo "setup: $venv has $("$venv/bin/python" -m pip list 2>/dev/null \
  | grep -iE '^(mlx|mlx-cpu|mlx-lm|protobuf) ' | tr -s ' ' | paste -sd, -)"
