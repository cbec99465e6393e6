#!/usr/bin/env bash
# A throwaway Debian 12 virtual machine with cgroup v2, for running a command against the
# unified cgroup hierarchy on hosts that only have cgroup v1 (or no cgroups at all).
#
#   scripts/cgroup2-vm.sh build
#       Builds the guest once into the cache directory and does nothing when the cache is up to
#       date. The cache keeps three files: vmlinuz (Debian's cloud kernel), root.img (an ext4
#       image of a debootstrapped bookworm) and key (what they were built from). The key is a
#       sha256 of VM_IMAGE_VERSION, the suite, the package lists, the kernel package's name
#       and the source of the functions below that make the image, so editing those rebuilds.
#
#   scripts/cgroup2-vm.sh run DIR COMMAND
#       Boots the cached guest (building it first when the cache is missing or stale) with DIR
#       at /mnt/share (read-write) and the host's /opt/toolserver at /opt/toolserver
#       (read-only), runs COMMAND there with `bash -c` as root, streams the guest's serial
#       console to stdout and exits with COMMAND's status. Other exits: 124 when the job has not
#       finished within VM_TIMEOUT_S, 125 when the VM ended without reporting a status (a
#       failed boot, a mount that failed in the guest), 2 for a usage error. COMMAND travels
#       in base64 on the guest kernel's command line, which holds 2047 bytes in all: a longer
#       job belongs in a script in DIR. Several runs may share the cache at once; a build
#       that has to replace it waits until they have ended.
#
# In the guest, the job runs in the delegated cgroup of vmrun.service (Delegate=yes), so it
# may create child cgroups and enable the memory, pids, cpu and io controllers for them. As
# everywhere in cgroup v2, a cgroup that has processes cannot enable controllers for its
# children: a job that wants per-child limits first moves itself into a leaf of its own.
# The guest reads /opt/toolserver through a read-only mount; the guest runs everything as
# root, so that is a guard against mistakes, not a security boundary. The virtual
# environments there work in the guest because their python is a symlink to /usr/bin/python3,
# the same Debian 3.11 in the host and the guest. DIR is also bind-mounted at its host path
# in the guest (where that path is free), so editable installs that point into DIR resolve.
#
# The environment:
#   TOOLSERVER_VM_CACHE  the cache directory (default /var/cache/toolserver/cgroup2-vm)
#   VM_ACCEL             tcg (default) or kvm. TCG is qemu's emulator: slow but it runs
#                        anywhere. KVM needs a /dev/kvm that can run a stock kernel; a host
#                        whose KVM is kvm_pvm (nested, pagetable-based) can't, and the guest
#                        dies in early boot with "KVM internal error".
#   VM_MEM_MB            guest memory in MiB (default 4096)
#   VM_TIMEOUT_S         seconds from qemu's start until the job must have finished (default 1200)
#   VM_NET=1             give the guest a user-mode (slirp) network: 10.0.2.15, gateway
#                        10.0.2.2, DNS 10.0.2.3; default no network at all
#   VM_VERBOSE=1         show the kernel's and systemd's boot messages on the console
#   VM_APPEND            extra words for the guest kernel's command line
#   VM_OPT_DIR           what the guest sees at /opt/toolserver (default /opt/toolserver;
#                        skipped when it does not exist)
#   VM_EXTRA_PACKAGES    more Debian packages for the image, comma-separated (part of the key)
#   VM_ROOT_FREE_MB      free space left in the root image, in MiB (default 1024; part of the key)
#   VM_MIRROR            the Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   VM_KERNEL_PKG        the kernel package (default: what linux-image-cloud-amd64 depends on)
#
# Needs root (debootstrap, chroot and virtiofsd do) and a Debian 12 host; qemu-system-x86
# and debootstrap are installed with apt-get when they are missing. Phase timings go to
# stderr, prefixed with "cgroup2-vm:".
set -euo pipefail

# Bump this to force a rebuild of every cache when something the key doesn't see changes.
VM_IMAGE_VERSION=1
VM_SUITE=bookworm
# The guest's packages. systemd-sysv/udev/kmod/dbus: a systemd boot that loads modules;
# procps, util-linux, passwd: the usual tools; iproute2: the network for VM_NET=1;
# python3 and firejail: what the project's sandbox uses.
VM_PACKAGES=systemd-sysv,udev,kmod,dbus,procps,python3,firejail,util-linux,passwd,iproute2
VM_EXTRA_PACKAGES="${VM_EXTRA_PACKAGES:-}"
VM_ROOT_FREE_MB="${VM_ROOT_FREE_MB:-1024}"
VM_MIRROR="${VM_MIRROR:-http://deb.debian.org/debian}"
CACHE="${TOOLSERVER_VM_CACHE:-/var/cache/toolserver/cgroup2-vm}"
VIRTIOFSD=/usr/lib/qemu/virtiofsd
# x86's COMMAND_LINE_SIZE is 2048 bytes, the terminating NUL included.
MAX_CMDLINE=2047

PROG="cgroup2-vm"
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  cat >&2 <<EOF
usage: $0 build
       $0 run DIR COMMAND

  build            build the guest into \$TOOLSERVER_VM_CACHE (default
                   /var/cache/toolserver/cgroup2-vm), unless it is up to date
  run DIR COMMAND  boot the guest (building it first if needed) with DIR at /mnt/share and
                   /opt/toolserver read-only, run COMMAND with bash -c in /mnt/share, and exit
                   with its status (124: timed out, 125: the VM gave no status)

See the comments at the top of the script for the environment variables.
EOF
  exit 2
}

# Time keeping: microseconds since the epoch, and "12.3 s" since a start.
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
span() {
  local d=$(( $2 - $1 ))
  printf '%d.%d s' $(( d / 1000000 )) $(( d % 1000000 / 100000 ))
}
since() { span "$1" "$(now_us)"; }

# --- cleanup ----------------------------------------------------------------------------------
# Everything the script starts or creates is recorded here and undone on exit, whatever the exit.
QEMU_PID=""
VIRTIOFSD_PIDS=()
RUN_TMP=""
BUILD_SCRATCH=""

stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  set +e
  local pid
  if [ -n "$QEMU_PID" ]; then stop_pid "$QEMU_PID"; fi
  for pid in "${VIRTIOFSD_PIDS[@]}"; do stop_pid "$pid"; done
  if [ -n "$RUN_TMP" ]; then rm -rf "$RUN_TMP"; fi
  if [ -n "$BUILD_SCRATCH" ] && [ -d "$BUILD_SCRATCH" ]; then
    # An interrupted debootstrap can leave /proc or /sys mounted in the scratch rootfs:
    # unmount those before removing anything, and never let rm cross a mount point.
    findmnt -rn -o TARGET | grep -F -- "$BUILD_SCRATCH/" | sort -r | while read -r m; do
      umount -l "$m"
    done
    rm -rf --one-file-system "$BUILD_SCRATCH"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# --- host tools -------------------------------------------------------------------------------
apt_install() {
  log "installing $* with apt-get"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2; then
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2
  fi
}

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and virtiofsd need it)"
}

ensure_qemu() {
  if ! command -v qemu-system-x86_64 >/dev/null 2>&1 || [ ! -x "$VIRTIOFSD" ]; then
    apt_install qemu-system-x86
  fi
  [ -x "$VIRTIOFSD" ] || die "$VIRTIOFSD is missing (Debian 12's qemu-system-x86 ships it)"
}

ensure_build_tools() {
  local missing=()
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# The kernel package: Debian's cloud kernel, as named by the linux-image-cloud-amd64
# metapackage in the host's apt lists (so the key changes when Debian moves to a new ABI).
# The cloud kernel has NVMe and ext4 built in, so it boots from the root image with
# -kernel and no initramfs; it has virtiofs (as a module) but no 9p.
kernel_package() {
  if [ -n "${VM_KERNEL_PKG:-}" ]; then echo "$VM_KERNEL_PKG"; return; fi
  local pkg
  pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null \
        | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
  if [ -z "$pkg" ]; then
    apt-get update >&2
    pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null \
          | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
  fi
  [ -n "$pkg" ] || die "cannot tell which kernel linux-image-cloud-amd64 depends on"
  echo "$pkg"
}

# --- what goes into the guest -----------------------------------------------------------------
# The functions that make the image (guest_vmrun_script, guest_vmrun_unit, configure_rootfs,
# make_image and build_guest) are hashed into the cache key by their source text (declare -f),
# so editing any of them makes the next build or run rebuild the guest.

# /usr/local/sbin/vmrun in the guest: vmrun.service's program.
guest_vmrun_script() {
  cat <<'GUEST'
#!/bin/bash
# Runs the job that scripts/cgroup2-vm.sh put on the kernel command line (vmrun.cmd=, in
# base64), in /mnt/share, then prints VMRUN-RC=<status>. vmrun.service powers the VM off
# when this exits. Lines starting with VMRUN-ERROR: mean the job never ran.
set -u
fail() { echo "VMRUN-ERROR: $*"; exit 1; }

cmd_b64="" dir_b64="" net=0 opt=0
read -r -a words </proc/cmdline
for word in "${words[@]}"; do
  case "$word" in
    vmrun.cmd=*) cmd_b64=${word#vmrun.cmd=} ;;
    vmrun.dir=*) dir_b64=${word#vmrun.dir=} ;;
    vmrun.net=1) net=1 ;;
    vmrun.opt=1) opt=1 ;;
  esac
done
[ -n "$cmd_b64" ] || fail "no vmrun.cmd= on the kernel command line"
cmd=$(printf '%s' "$cmd_b64" | base64 -d) || fail "vmrun.cmd= is not valid base64"

mkdir -p /mnt/share
mount -t virtiofs share /mnt/share || fail "cannot mount the virtiofs share 'share' at /mnt/share"
if [ "$opt" = 1 ]; then
  mkdir -p /opt/toolserver
  mount -t virtiofs -o ro opt /opt/toolserver \
    || fail "cannot mount the virtiofs share 'opt' at /opt/toolserver"
fi

# The share also appears at the host's path for it, where that path does not exist in the
# guest (never over a directory of the guest's own, such as /tmp), so that paths recorded
# on the host (editable installs, for one) resolve in the guest too.
if [ -n "$dir_b64" ]; then
  hostdir=$(printf '%s' "$dir_b64" | base64 -d 2>/dev/null || true)
  case "$hostdir" in
    /?*)
      if [ ! -e "$hostdir" ]; then
        { mkdir -p "$hostdir" && mount --bind /mnt/share "$hostdir"; } 2>/dev/null \
          || echo "vmrun: note: the share is not also at $hostdir"
      fi
      ;;
  esac
fi

if [ "$net" = 1 ]; then
  # qemu's user-mode network has fixed addresses; no DHCP client needed.
  udevadm settle --timeout=30 || true
  dev=""
  for path in /sys/class/net/*; do
    name=${path##*/}
    if [ "$name" != lo ]; then dev=$name; break; fi
  done
  [ -n "$dev" ] || fail "VM_NET=1 but the guest has no network interface"
  ip link set "$dev" up
  ip addr add 10.0.2.15/24 dev "$dev"
  ip route add default via 10.0.2.2
  echo "nameserver 10.0.2.3" >/etc/resolv.conf
fi

cd /mnt/share || fail "cannot enter /mnt/share"
export PATH=/opt/toolserver/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
echo "VMRUN-START"
rc=0
bash -c "$cmd" </dev/null || rc=$?
# The share's writes reach the host before the status line does.
sync
echo "VMRUN-RC=$rc"
GUEST
}

# /etc/systemd/system/vmrun.service in the guest.
guest_vmrun_unit() {
  cat <<'GUEST'
[Unit]
Description=Run the job from the kernel command line (scripts/cgroup2-vm.sh), then power off
# Whatever happens to the job, the VM ends. poweroff-force still unmounts the file systems.
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vmrun
# The job gets a cgroup v2 subtree of its own, with every controller available to it.
Delegate=yes
TimeoutStartSec=infinity
# The job's output goes to the serial console, which the host streams.
StandardInput=null
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
TTYReset=no
TTYVHangup=no

[Install]
WantedBy=multi-user.target
GUEST
}

# configure_rootfs ROOTFS KERNEL_TREE KERNEL_VERSION: everything after debootstrap.
configure_rootfs() {
  local r=$1 ktree=$2 kver=$3 unit modules
  echo cgroup2-vm >"$r/etc/hostname"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\tcgroup2-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    >"$r/etc/hosts"
  printf '/dev/nvme0n1\t/\text4\trw,noatime\t0\t0\n' >"$r/etc/fstab"
  # A fixed machine id: without one, systemd treats every boot as a first boot.
  tr -d '-' </proc/sys/kernel/random/uuid >"$r/etc/machine-id"
  # No host resolver in the image; VM_NET=1 writes the guest's own.
  echo "# written by vmrun when VM_NET=1" >"$r/etc/resolv.conf"

  mkdir -p "$r/usr/local/sbin" "$r/etc/systemd/system/multi-user.target.wants"
  guest_vmrun_script >"$r/usr/local/sbin/vmrun"
  chmod 0755 "$r/usr/local/sbin/vmrun"
  guest_vmrun_unit >"$r/etc/systemd/system/vmrun.service"
  ln -sf ../vmrun.service "$r/etc/systemd/system/multi-user.target.wants/vmrun.service"
  # What a one-job VM has no use for, and what would slow its boot under TCG: the login
  # prompts (a getty on the serial console would also write over the job's output),
  # logind, and the periodic jobs.
  for unit in getty.target serial-getty@ttyS0.service systemd-logind.service \
              apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
              fstrim.timer systemd-timesyncd.service; do
    ln -sf /dev/null "$r/etc/systemd/system/$unit"
  done
  # The journal lives in memory: the root image is opened with snapshot=on anyway.
  mkdir -p "$r/etc/systemd/journald.conf.d"
  printf '[Journal]\nStorage=volatile\n' >"$r/etc/systemd/journald.conf.d/vmrun.conf"

  # The kernel's modules (virtiofs, virtio_net, ...), found by modprobe through depmod.
  # bookworm's root has /lib -> usr/lib; write through usr/lib so no link is followed.
  modules="$r/usr/lib/modules"
  mkdir -p "$modules"
  cp -a "$ktree/lib/modules/$kver" "$modules/"
  chroot "$r" depmod -a "$kver"

  # Nothing the image needs: downloaded packages and the apt lists.
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin "$r"/var/lib/apt/lists/*
}

# make_image ROOTFS IMAGE: an ext4 image of ROOTFS with VM_ROOT_FREE_MB to spare, made with
# mkfs.ext4 -d (no loop mount). The file is sparse; no journal, since the VM never keeps
# its writes (qemu opens the image with snapshot=on).
make_image() {
  local r=$1 img=$2 used_mb
  used_mb=$(du -sm "$r" | cut -f1)
  truncate -s "$(( used_mb * 5 / 4 + VM_ROOT_FREE_MB ))M" "$img"
  mkfs.ext4 -q -F -L cgroup2-vm -O ^has_journal -d "$r" "$img"
}

# The cache key: a hash of everything that decides what build produces. The settings are
# also written, readable, into the cache's key file.
image_settings() {
  printf 'version=%s\nsuite=%s\npackages=%s\nextra=%s\nfree_mb=%s\nkernel=%s\n' \
    "$VM_IMAGE_VERSION" "$VM_SUITE" "$VM_PACKAGES" "$VM_EXTRA_PACKAGES" "$VM_ROOT_FREE_MB" "$1"
}
image_recipe() {
  image_settings "$1"
  declare -f guest_vmrun_script guest_vmrun_unit configure_rootfs make_image build_guest
}
cache_key() { image_recipe "$1" | sha256sum | cut -d' ' -f1; }

cache_is_current() {
  local key=$1
  [ -f "$CACHE/key" ] && [ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/root.img" ] \
    && [ "$(head -n1 "$CACHE/key")" = "$key" ]
}

# --- build ------------------------------------------------------------------------------------
# build_guest KERNEL_PACKAGE KEY: builds in a scratch directory next to the cache, then moves
# the results in. The caller holds the cache's lock.
build_guest() {
  local kpkg=$1 key=$2 t0 t kdeb kver packages
  t0=$(now_us)
  ensure_qemu
  ensure_build_tools
  BUILD_SCRATCH=$(mktemp -d "$(dirname "$CACHE")/.cgroup2-vm-build.XXXXXX")
  log "building the guest in $BUILD_SCRATCH (kernel $kpkg)"

  # The kernel: downloaded and unpacked, never installed on the host.
  t=$(now_us)
  if ! (cd "$BUILD_SCRATCH" && apt-get download -o APT::Sandbox::User=root "$kpkg" >&2); then
    # Stale apt lists name a file the mirror no longer has.
    apt-get update >&2
    (cd "$BUILD_SCRATCH" && apt-get download -o APT::Sandbox::User=root "$kpkg" >&2)
  fi
  kdeb=$(find "$BUILD_SCRATCH" -maxdepth 1 -name "${kpkg}_*.deb" -print -quit)
  [ -n "$kdeb" ] || die "apt-get download $kpkg left no .deb"
  dpkg-deb -x "$kdeb" "$BUILD_SCRATCH/kernel"
  kver=$(find "$BUILD_SCRATCH/kernel/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n1)
  [ -n "$kver" ] && [ -f "$BUILD_SCRATCH/kernel/boot/vmlinuz-$kver" ] \
    || die "$kpkg has no vmlinuz or modules where expected"
  log "kernel $kver: $(since "$t")"

  # The root file system.
  t=$(now_us)
  packages=$VM_PACKAGES
  if [ -n "$VM_EXTRA_PACKAGES" ]; then packages="$packages,$VM_EXTRA_PACKAGES"; fi
  debootstrap --variant=minbase --include="$packages" "$VM_SUITE" "$BUILD_SCRATCH/rootfs" \
    "$VM_MIRROR" >&2
  log "debootstrap: $(since "$t")"

  t=$(now_us)
  configure_rootfs "$BUILD_SCRATCH/rootfs" "$BUILD_SCRATCH/kernel" "$kver"
  mkdir -p "$BUILD_SCRATCH/out"
  make_image "$BUILD_SCRATCH/rootfs" "$BUILD_SCRATCH/out/root.img"
  cp "$BUILD_SCRATCH/kernel/boot/vmlinuz-$kver" "$BUILD_SCRATCH/out/vmlinuz"
  {
    echo "$key"
    image_settings "$kpkg"
    echo "kernel_version=$kver"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$BUILD_SCRATCH/out/key"
  log "configure + image: $(since "$t")"

  # Into the cache. Each rename is atomic; the key goes first and comes back last, so a
  # cache whose key matches always has a matching vmlinuz and root.img.
  rm -f "$CACHE/key"
  mv -f "$BUILD_SCRATCH/out/vmlinuz" "$CACHE/vmlinuz"
  mv -f "$BUILD_SCRATCH/out/root.img" "$CACHE/root.img"
  mv -f "$BUILD_SCRATCH/out/key" "$CACHE/key"
  rm -rf --one-file-system "$BUILD_SCRATCH"
  BUILD_SCRATCH=""
  log "build: $(since "$t0") (cache: $CACHE)"
}

# ensure_cache: builds when the cache is missing or stale, and leaves a shared lock on the
# cache directory itself (fd 9, held until exit). Runs share the cache; a build takes the
# lock exclusively, so two builds never race, and no build replaces the files while a run
# holds them (it waits for running VMs to end).
ensure_cache() {
  local kpkg key
  [[ "$VM_ROOT_FREE_MB" =~ ^[0-9]+$ ]] || die "VM_ROOT_FREE_MB must be a number of MiB"
  kpkg=$(kernel_package)
  key=$(cache_key "$kpkg")
  mkdir -p "$CACHE"
  exec 9<"$CACHE"
  flock -s 9
  if cache_is_current "$key"; then
    log "the cache is up to date ($CACHE, key ${key:0:12})"
    return
  fi
  flock -x 9
  # Someone else may have built it while this waited.
  if cache_is_current "$key"; then
    log "the cache is up to date ($CACHE, key ${key:0:12})"
  else
    build_guest "$kpkg" "$key"
  fi
  flock -s 9
}

cmd_build() {
  [ "$#" -eq 0 ] || usage
  need_root
  ensure_qemu
  ensure_cache
}

# --- run --------------------------------------------------------------------------------------
# start_virtiofsd TAG DIR CACHE_MODE: serves DIR on $RUN_TMP/TAG.sock, waits for the socket.
# Its messages go to $RUN_TMP/virtiofsd-TAG.log (it chatters when the VM disconnects); they
# are shown when something fails, or with VM_VERBOSE=1.
start_virtiofsd() {
  local tag=$1 dir=$2 cache_mode=$3 sock="$RUN_TMP/$1.sock" i
  "$VIRTIOFSD" --socket-path="$sock" -o source="$dir" -o cache="$cache_mode" \
    -o log_level=warn </dev/null >"$RUN_TMP/virtiofsd-$tag.log" 2>&1 9<&- &
  VIRTIOFSD_PIDS+=("$!")
  for i in $(seq 100); do
    [ -S "$sock" ] && return 0
    if ! kill -0 "$!" 2>/dev/null; then
      show_virtiofsd_logs
      die "virtiofsd for $tag ($dir) exited"
    fi
    sleep 0.1
  done
  show_virtiofsd_logs
  die "virtiofsd for $tag ($dir) made no socket in 10 s"
}

show_virtiofsd_logs() {
  local f
  for f in "$RUN_TMP"/virtiofsd-*.log; do
    if [ -s "$f" ]; then sed "s|^|$PROG: ${f##*/}: |" "$f" >&2; fi
  done
}

cmd_run() {
  [ "$#" -eq 2 ] || usage
  local dir=$1 command=$2
  local mem="${VM_MEM_MB:-4096}" timeout_s="${VM_TIMEOUT_S:-1200}"
  local opt_dir="${VM_OPT_DIR:-/opt/toolserver}" accel="${VM_ACCEL:-tcg}"
  [ -d "$dir" ] || die "$dir is not a directory"
  dir=$(realpath "$dir")
  if [ -d "$opt_dir" ]; then opt_dir=$(realpath "$opt_dir"); fi
  # qemu's and virtiofsd's options are comma-separated lists.
  case "$dir$CACHE$opt_dir" in *,*) die "paths with commas are not supported: $dir, $CACHE, $opt_dir" ;; esac
  [[ "$mem" =~ ^[0-9]+$ ]] || die "VM_MEM_MB must be a number of MiB"
  [[ "$timeout_s" =~ ^[0-9]+$ ]] || die "VM_TIMEOUT_S must be a number of seconds"
  need_root
  ensure_qemu
  ensure_cache

  local accel_args
  case "$accel" in
    # Nehalem: x86-64-v2, numpy's baseline, and no AVX. Under `-cpu max` numpy takes its AVX2
    # paths, which QEMU 7.2's TCG (Debian 12's) emulates with faults: the guest's server died of
    # SIGSEGV while indexing in 2 of about 8 runs.
    tcg) accel_args=(-accel tcg,thread=multi -cpu Nehalem) ;;
    kvm)
      [ -w /dev/kvm ] || die "VM_ACCEL=kvm but /dev/kvm is not writable"
      if [ -d /sys/module/kvm_pvm ]; then
        log "warning: this host's KVM is kvm_pvm, which fails to boot a stock kernel; VM_ACCEL=tcg works"
      fi
      accel_args=(-accel kvm -cpu host)
      ;;
    *) die "VM_ACCEL must be tcg or kvm" ;;
  esac

  # The kernel's command line: the job travels in base64 (no spaces or quotes to escape).
  local append
  append="console=ttyS0 root=/dev/nvme0n1 rootfstype=ext4 rw rootwait fsck.mode=skip panic=1"
  append+=" mitigations=off systemd.unified_cgroup_hierarchy=1"
  if [ "${VM_VERBOSE:-0}" != 1 ]; then append+=" quiet"; fi
  if [ -n "${VM_APPEND:-}" ]; then append+=" $VM_APPEND"; fi
  append+=" vmrun.dir=$(printf '%s' "$dir" | base64 -w0)"
  if [ "${VM_NET:-0}" = 1 ]; then append+=" vmrun.net=1"; fi
  if [ -d "$opt_dir" ]; then append+=" vmrun.opt=1"; else log "note: $opt_dir does not exist; not shared"; fi
  append+=" vmrun.cmd=$(printf '%s' "$command" | base64 -w0)"
  if [ "${#append}" -gt "$MAX_CMDLINE" ]; then
    die "the command is too long for the kernel command line (${#append} > $MAX_CMDLINE bytes); put it in a script in DIR"
  fi

  RUN_TMP=$(mktemp -d /tmp/cgroup2-vm.XXXXXX)
  start_virtiofsd share "$dir" auto
  local fs_args=(-chardev "socket,id=fs_share,path=$RUN_TMP/share.sock"
                 -device vhost-user-fs-pci,chardev=fs_share,tag=share)
  if [ -d "$opt_dir" ]; then
    # The guest mounts this one read-only (qemu 7.2's virtiofsd has no read-only option).
    start_virtiofsd opt "$opt_dir" always
    fs_args+=(-chardev "socket,id=fs_opt,path=$RUN_TMP/opt.sock"
              -device vhost-user-fs-pci,chardev=fs_opt,tag=opt)
  fi
  local net_args=()
  if [ "${VM_NET:-0}" = 1 ]; then
    net_args=(-netdev user,id=net0 -device virtio-net-pci,netdev=net0)
  fi

  # The serial console comes through a FIFO, so this shell can read it line by line (to
  # stream it, time the phases and pick out the status) while it knows qemu's pid.
  mkfifo "$RUN_TMP/console"
  local t_qemu
  t_qemu=$(now_us)
  qemu-system-x86_64 -name cgroup2-vm -nodefaults -no-user-config -display none -no-reboot \
    -machine q35,memory-backend=mem "${accel_args[@]}" -smp 2 -m "${mem}M" \
    -object "memory-backend-memfd,id=mem,size=${mem}M,share=on" \
    -chardev stdio,id=con,signal=off -serial chardev:con \
    -kernel "$CACHE/vmlinuz" -append "$append" \
    -drive "file=$CACHE/root.img,if=none,id=root,format=raw,snapshot=on" \
    -device nvme,drive=root,serial=cgroup2vm-root \
    "${fs_args[@]}" "${net_args[@]}" \
    </dev/null >"$RUN_TMP/console" 9<&- &
  QEMU_PID=$!
  exec 8<"$RUN_TMP/console"

  local deadline=$(( SECONDS + timeout_s )) remaining line rc="" t_start="" t_rc="" timed_out=0
  local grace=30 read_status
  while :; do
    remaining=$(( deadline - SECONDS ))
    if [ "$remaining" -le 0 ]; then timed_out=1; break; fi
    read_status=0
    IFS= read -r -t "$remaining" line <&8 || read_status=$?
    if [ "$read_status" -gt 128 ]; then
      # Timed out: show what came of a partial line, then stop.
      if [ -n "$line" ]; then printf '%s\n' "${line%$'\r'}"; fi
      timed_out=1
      break
    fi
    line=${line%$'\r'}
    if [ "$read_status" -ne 0 ]; then
      # End of the console: qemu has exited. A last line may lack its newline.
      if [ -n "$line" ]; then printf '%s\n' "$line"; fi
      break
    fi
    printf '%s\n' "$line"
    if [ -z "$t_start" ] && [[ "$line" == *VMRUN-START* ]]; then
      t_start=$(now_us)
      log "boot (qemu start to VMRUN-START): $(since "$t_qemu")"
    elif [[ "$line" =~ VMRUN-RC=([0-9]+)$ ]]; then
      rc=${BASH_REMATCH[1]}
      t_rc=$(now_us)
      # The job is over; the VM gets a little longer to power off by itself.
      if [ $(( SECONDS + grace )) -lt "$deadline" ]; then deadline=$(( SECONDS + grace )); fi
    elif [[ "$line" == *VMRUN-ERROR:* ]]; then
      log "the guest reported: ${line#*VMRUN-ERROR: }"
    fi
  done
  exec 8<&-
  local qemu_rc=0
  if [ "$timed_out" = 0 ]; then
    # The console's end: qemu is exiting. Reap it, so the cleanup has no pid left to signal.
    wait "$QEMU_PID" || qemu_rc=$?
    QEMU_PID=""
  fi

  if [ "${VM_VERBOSE:-0}" = 1 ]; then show_virtiofsd_logs; fi
  if [ -n "$rc" ]; then
    if [ -n "$t_start" ]; then log "job (VMRUN-START to VMRUN-RC): $(span "$t_start" "$t_rc")"; fi
    if [ "$timed_out" = 1 ]; then log "note: the guest did not power off within ${grace} s of the job's end; stopping qemu"; fi
    log "VM total (qemu start to end): $(since "$t_qemu"); the job's status: $rc"
    exit "$rc"
  fi
  if [ "${VM_VERBOSE:-0}" != 1 ]; then show_virtiofsd_logs; fi
  if [ "$timed_out" = 1 ]; then
    log "timed out: no job status within VM_TIMEOUT_S=${timeout_s} s of qemu's start"
    exit 124
  fi
  log "the VM ended without a VMRUN-RC line (qemu's status: $qemu_rc) after $(since "$t_qemu")"
  exit 125
}

# --- main -------------------------------------------------------------------------------------
[ "$#" -ge 1 ] || usage
case "$1" in
  build) shift; cmd_build "$@" ;;
  run) shift; cmd_run "$@" ;;
  *) usage ;;
esac
