#!/usr/bin/env bash
# Sets up, then runs the server on the embedded default config: gRPC on 127.0.0.1:50051,
# the SandboxFusion-compatible HTTP front on 127.0.0.1:8080.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
exec "${TOOLSERVER_VENV:-/opt/toolserver/venv}/bin/toolserver" serve --http-port 8080 "$@"
