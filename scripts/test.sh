#!/usr/bin/env bash
# Sets up, then runs the whole test suite (slow suites included).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLSERVER_EXTRAS="${TOOLSERVER_EXTRAS:-dev,http,mcp,dense,trainer,hf,verl,trl,skyrl}" bash "$ROOT/scripts/setup.sh"
# The slot users of the default config (320): tests run servers side by side on ranges of them.
if [ "$(id -u)" -eq 0 ]; then "${TOOLSERVER_VENV:-/opt/toolserver/venv}/bin/toolserver" setup-sandbox; fi
# podman, runc and debootstrap for tests/container/ (marker container), which build the image themselves.
if [ "$(id -u)" -eq 0 ]; then bash "$ROOT/deploy/build-local.sh" --tools; fi
# qemu and the cgroup v2 guest's image for tests/integration/test_cgroup2_guest.py (marker vm):
# built once (about a minute) and cached under /var/cache/toolserver/cgroup2-vm.
if [ "$(id -u)" -eq 0 ]; then bash "$ROOT/scripts/cgroup2-vm.sh" build; fi
cd "$ROOT"
VENV_BIN="${TOOLSERVER_VENV:-/opt/toolserver/venv}/bin"
# The lint and type gates (their configuration: [tool.ruff] and [tool.mypy] in pyproject.toml).
echo "test.sh: ruff check"
"$VENV_BIN/ruff" check .
echo "test.sh: mypy --strict over toolserver, sandbox, toolclient, toolcontract and trainer"
"$VENV_BIN/mypy"
status=0
"$VENV_BIN/python" -m pytest -q -ra --durations=40 "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
