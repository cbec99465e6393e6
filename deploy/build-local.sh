#!/usr/bin/env bash
# Builds the server image (deploy/Dockerfile) with podman on a Debian machine where no
# image registry is reachable, only Debian's mirrors and a Python package index (this
# project's own machines: root, 2 cores). Safe to run again: each step is skipped when done.
#
#   deploy/build-local.sh           podman, runc and debootstrap (apt), a private containers.conf,
#                                   the base image (debootstrap, once per machine), then the image
#   deploy/build-local.sh --tools   only podman and its containers.conf (tests/container needs them)
#   deploy/build-local.sh --lean    says why the Lean image cannot be built here
#
# Then run podman with CONTAINERS_CONF="$TOOLSERVER_BUILD_STATE/containers.conf", e.g.
#   CONTAINERS_CONF=/var/lib/toolserver-build/containers.conf podman run --rm -p 127.0.0.1:50051:50051 \
#     --cap-drop ALL --cap-add SYS_ADMIN,NET_ADMIN,... (compose.yaml's list) localhost/toolserver:local \
#     /opt/toolserver/venv/bin/toolserver serve --config /etc/toolserver/toolserver.toml --allow-open-bind
#
# Environment:
#   TOOLSERVER_IMAGE        the image to build (localhost/toolserver:local)
#   BASE_IMAGE              its base (default: localhost/debian-bookworm-minbase, made here by
#                           debootstrap; name debian:12-slim where a registry is reachable)
#   TOOLSERVER_EXTRAS       extras of the package, as the Dockerfile's build argument ("")
#   TOOLSERVER_IMAGE_LANGUAGES  the program tool's toolchains, the Dockerfile's LANGUAGES ("": none;
#                           "all"; or names: "java go")
#   TOOLSERVER_BUILD_STATE  containers.conf and the build's lock (/var/lib/toolserver-build)
#   DEBIAN_MIRROR           what debootstrap and the base's apt use (http://deb.debian.org/debian)
#
# pip inside the build reaches this machine's package index with this machine's
# settings: its http(s) index URLs and its CA bundle are handed to the build as build
# secrets (podman build --secret), which never enter a layer or the image's history.
# Build arguments would: `podman history` shows them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${TOOLSERVER_BUILD_STATE:-/var/lib/toolserver-build}"
IMAGE="${TOOLSERVER_IMAGE:-localhost/toolserver:local}"
DEBOOTSTRAP_BASE="localhost/debian-bookworm-minbase:latest"
BASE="${BASE_IMAGE:-$DEBOOTSTRAP_BASE}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
VENV="${TOOLSERVER_VENV:-/opt/toolserver/venv}"
export CONTAINERS_CONF="$STATE/containers.conf"

CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT

say() { echo "build-local: $*" >&2; }

if [ "${1:-}" = "--lean" ]; then
  say "deploy/lean/Dockerfile cannot be built on this kind of machine: it downloads elan from"
  say "raw.githubusercontent.com, the Lean toolchain through elan (GitHub releases), and clones the"
  say "Lean REPL and Mathlib from github.com and Mathlib's .olean cache (lake exe cache get); none of"
  say "these is reachable here, and no Debian or PyPI package ships them. Build it where GitHub is."
  exit 2
fi

if [ "$(id -u)" -ne 0 ]; then
  say "run as root (podman rootful: the image's slot users need uids 61000.. unmapped)"
  exit 1
fi

install_tools() {
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
    say "installing podman, runc and debootstrap"
    local try
    for try in 1 2 3; do  # a mirror's hiccup should not fail a CI run
      if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           podman runc debootstrap iptables >/dev/null; then
        break
      fi
      [ "$try" -lt 3 ] || return 1
      sleep 10
    done
  fi
  mkdir -p "$STATE"
  # Containers' default ulimits at or below this host's hard limits (podman's own defaults
  # ask for more, and setrlimit fails: "Operation not permitted"); runc, as crun refuses
  # this host's hybrid cgroup v1 layout; no systemd here: cgroupfs, events to a file.
  local nofile nproc
  nofile="$(ulimit -Hn)"; nproc="$(ulimit -Hu)"
  if [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ]; then nofile=1048576; fi
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  cat > "$CONTAINERS_CONF.new" <<EOF
# Written by deploy/build-local.sh; podman reads it through CONTAINERS_CONF.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  mv "$CONTAINERS_CONF.new" "$CONTAINERS_CONF"
}

make_base() {
  if podman image exists "$BASE"; then
    return
  fi
  if [ "$BASE" != "$DEBOOTSTRAP_BASE" ]; then
    podman pull "$BASE"
    return
  fi
  say "making $BASE with debootstrap from $MIRROR (once per machine, about a minute)"
  local rootfs
  rootfs="$(mktemp -d "$STATE/rootfs.XXXXXX")"
  CLEANUP+=("$rootfs")
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 \
    || { tail -20 "$STATE/debootstrap.log" >&2; return 1; }
  # As debian:12-slim: updates and security updates, and no documentation in later installs.
  cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/excludes" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
  rm -rf "$rootfs"
}

# pip's settings for the build, from this machine's: the http(s) index URLs (a file://
# index does not exist inside the build) and the CA bundle that reaches them.
write_pip_secrets() {
  local dir="$1" pip=""
  if [ -x "$VENV/bin/pip" ]; then pip="$VENV/bin/pip"; fi
  /usr/bin/python3 - "$pip" "$dir" <<'EOF'
import ast, os, subprocess, sys
pip, out = sys.argv[1], sys.argv[2]
found = {}
if pip:
    listing = subprocess.run([pip, "config", "list"], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        name, _, value = line.partition("=")
        key = name.split(".", 1)[-1]
        try:
            found[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            found[key] = value
lines = ["[global]"]
for key in ("index-url", "extra-index-url"):
    urls = [u for u in found.get(key, "").split() if u.startswith(("http://", "https://"))]
    if urls:
        lines.append(f"{key} = {' '.join(urls)}")
for key in ("trusted-host", "timeout", "default-timeout", "retries"):
    if found.get(key):
        lines.append(f"{key} = {found[key]}")
ca = found.get("cert") or os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
if os.path.isfile(ca):
    with open(ca, "rb") as src, open(os.path.join(out, "pip-ca.pem"), "wb") as dst:
        dst.write(src.read())
with open(os.path.join(out, "pip.conf"), "w") as handle:
    handle.write("\n".join(lines) + "\n")
EOF
}

build_image() {
  local secrets
  secrets="$(mktemp -d)"  # mode 0700
  CLEANUP+=("$secrets")
  write_pip_secrets "$secrets"
  local args=(--secret "id=pip.conf,src=$secrets/pip.conf")
  if [ -f "$secrets/pip-ca.pem" ]; then args+=(--secret "id=pip-ca.pem,src=$secrets/pip-ca.pem"); fi
  say "building $IMAGE from $BASE"
  local start=$SECONDS previous
  previous="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
  podman build "${args[@]}" --build-arg "BASE_IMAGE=$BASE" \
    --build-arg "TOOLSERVER_EXTRAS=${TOOLSERVER_EXTRAS:-}" \
    --build-arg "LANGUAGES=${TOOLSERVER_IMAGE_LANGUAGES:-}" \
    -f "$ROOT/deploy/Dockerfile" -t "$IMAGE" "$ROOT"
  # The image this one replaced (about 450 MB of layers of its own), unless still in use.
  if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
    podman rmi "$previous" >/dev/null 2>&1 || true
  fi
  say "built $IMAGE in $((SECONDS - start)) s: $(podman image inspect --format '{{.Size}}' "$IMAGE" \
       | awk '{printf "%.0f MB", $1 / 1e6}')"
}

install_tools
if [ "${1:-}" = "--tools" ]; then
  exit 0
fi
# One build at a time on a machine: test runs side by side share the image and its base.
exec 9>"$STATE/build.lock"
flock 9
make_base
build_image
