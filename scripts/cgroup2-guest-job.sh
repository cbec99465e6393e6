#!/usr/bin/env bash
# What runs inside the cgroup v2 guest (scripts/cgroup2-vm.sh run "$PWD" 'bash scripts/cgroup2-guest-job.sh'):
# the slot users, then the memory cgroup tests on a real cgroup v2 kernel, each named, none skipped.
# The guest's cgroup is vmrun.service's, delegated (Delegate=yes): the server's own cgroup as
# systemd hands it to a service.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=/opt/toolserver/venv/bin/python
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$PWD" COLUMNS=200
echo "guest: kernel $(uname -r), /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup), this job in $(cut -d: -f3 /proc/self/cgroup)"
"$PY" -m toolserver setup-sandbox --slots 12 >/dev/null
dmesg -n 1  # the kernel's OOM reports stay in its log, off the console the tests report on
# -p no:cacheprovider: nothing written into the checkout; -rs: a skip says why (the host test fails on any).
status=0
"$PY" -m pytest -v -rs --color=no -p no:cacheprovider \
  tests/unit/test_cgroups.py \
  tests/integration/test_memory_caps.py \
  "tests/unit/test_lean_pool.py::test_a_repl_and_what_its_proofs_start_are_capped_together" \
  "tests/unit/test_lean_pool.py::test_memory_limit_is_reported" || status=$?
echo "guest: the kernel's memory cgroup OOM kills: $(dmesg | grep -c 'Memory cgroup out of memory')"
if [ "$status" -ne 0 ]; then  # what the kernel killed, and where, for a failure's report
  echo "guest: memory $(free -m | awk '/Mem:/ {print $3 " MB used of " $2}'); the kernel's kills:"
  dmesg | grep -E 'Killed process|oom-kill:' | tail -20 | cut -c1-400
fi
exit "$status"
