"""tests/security/test_attacks.py, every attack, against the image run as compose.yaml
says (marker `container`): `client` is compose's service as it is, `jail_client` the same
with the Python-level guard off (tests/container/conftest.py). Host paths the attacks
name (the checkout) do not exist in the container; the image's own source tree is among
the self-test's hidden paths.
"""

from __future__ import annotations

import pytest

from tests.security import test_attacks

pytestmark = [pytest.mark.container, pytest.mark.timeout(900)]

# Judged from the host's slot users (which the image's own users are not) or through the
# guarded profile's server: tests/security runs them outside the image.
NOT_HERE = {"test_daemons_do_not_outlive_their_call", "test_no_network_through_the_guard"}
# Collected here, these use this directory's fixtures: the servers in containers.
globals().update({name: test for name, test in vars(test_attacks).items()
                  if name.startswith("test_") and name not in NOT_HERE})
