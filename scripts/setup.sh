#!/usr/bin/env bash
# Sets up everything the server needs on a Debian machine; safe to run again.
#   - Debian packages: firejail, openssl (the TLS tests make certificates), python3-venv
#   - a virtual environment outside /root (the jail hides /root), with the package and
#     the extras in $TOOLSERVER_EXTRAS (default: dev,http,mcp: every front the quick start
#     serves; the tests add dense, trainer, hf and the engines)
#   - the calls' runtime: an environment of its own ($TOOLSERVER_RUNTIME, default
#     /opt/toolserver/runtime, the server's default python.interpreter) from
#     sandbox/runtime/requirements.txt, and torch.txt unless TOOLSERVER_RUNTIME_TORCH=0
#   - the program tool's toolchains (Java, Go, Rust, Node.js, TypeScript): the Debian and
#     npm packages its language files name (toolserver/program/languages/*.toml), for the
#     languages whose toolchain does not run yet; TOOLSERVER_LANGUAGES=0 skips them
#   - the sandbox slot users (root only) and the default search index
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TOOLSERVER_VENV:-/opt/toolserver/venv}"
EXTRAS="${TOOLSERVER_EXTRAS:-dev,http,mcp}"
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

if ! command -v firejail >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1 \
   || ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "setup: installing firejail, openssl, python3-venv and g++ (the cpp tool's compiler)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq firejail openssl python3-venv python3-dev g++ >/dev/null
fi

# make_venv DIR WHAT: a virtual environment of the system Python at DIR, unless there is one.
make_venv() {
  if [ ! -x "$1/bin/python" ]; then
    echo "setup: creating $2 $1"
    $SUDO mkdir -p "$(dirname "$1")"
    if [ -n "$SUDO" ]; then $SUDO chown "$(id -u):$(id -g)" "$(dirname "$1")"; fi
    /usr/bin/python3 -m venv "$1"
    "$1/bin/pip" install -q --upgrade pip
  fi
}

make_venv "$VENV" "the server's environment"

STAMP="$VENV/.toolserver-install"
WANT="$(cd "$ROOT" && sha256sum pyproject.toml | cut -d' ' -f1) $ROOT [$EXTRAS]"
if [ ! -x "$VENV/bin/toolserver" ] || [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "setup: installing the package into $VENV"
  "$VENV/bin/pip" install -q -e "$ROOT[$EXTRAS]"
  echo "$WANT" > "$STAMP"
fi

RUNTIME="${TOOLSERVER_RUNTIME:-/opt/toolserver/runtime}"
REQUIREMENTS=("$ROOT/sandbox/runtime/requirements.txt")
if [ "${TOOLSERVER_RUNTIME_TORCH:-1}" != 0 ]; then REQUIREMENTS+=("$ROOT/sandbox/runtime/torch.txt"); fi
make_venv "$RUNTIME" "the calls' runtime"
RUNTIME_STAMP="$RUNTIME/.toolserver-runtime"
RUNTIME_WANT="$(cat "${REQUIREMENTS[@]}" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$RUNTIME_STAMP" ] || [ "$(cat "$RUNTIME_STAMP")" != "$RUNTIME_WANT" ]; then
  echo "setup: installing the calls' runtime into $RUNTIME"
  "$RUNTIME/bin/pip" install -q "${REQUIREMENTS[@]/#/-r}"
  echo "$RUNTIME_WANT" > "$RUNTIME_STAMP"
fi

if [ "${TOOLSERVER_LANGUAGES:-1}" != 0 ]; then
  "$VENV/bin/python" -m toolserver.program.toolchains
fi

if [ "$(id -u)" -eq 0 ]; then
  "$VENV/bin/toolserver" setup-sandbox
  "$VENV/bin/toolserver" index default
fi
echo "setup: ready ($VENV)"
