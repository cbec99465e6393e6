"""Slot users made in one locked pass over the account files."""

from __future__ import annotations

from sandbox.slots import append_accounts


def test_slot_users_are_appended_to_the_account_files_in_one_pass(tmp_path):
    for name, text in {"passwd": "root:x:0:0:root:/root:/bin/bash\n", "group": "root:x:0:\n",
                       "shadow": "root:*:19000:0:99999:7:::", "gshadow": "root:*::\n"}.items():
        (tmp_path / name).write_text(text)
    append_accounts([("tsbox0", 200000, "/var/lib/toolserver/scratch/tsbox0"),
                     ("tsbox1", 200001, "/var/lib/toolserver/scratch/tsbox1")], etc=tmp_path)
    passwd = (tmp_path / "passwd").read_text().splitlines()
    assert passwd[1:] == ["tsbox0:x:200000:200000::/var/lib/toolserver/scratch/tsbox0:/usr/sbin/nologin",
                          "tsbox1:x:200001:200001::/var/lib/toolserver/scratch/tsbox1:/usr/sbin/nologin"]
    assert (tmp_path / "group").read_text().splitlines()[1:] == ["tsbox0:x:200000:", "tsbox1:x:200001:"]
    shadow = (tmp_path / "shadow").read_text().splitlines()
    assert shadow[0] == "root:*:19000:0:99999:7:::" and [line.split(":")[:2] for line in shadow[1:]] == \
        [["tsbox0", "!"], ["tsbox1", "!"]]  # a file without a final newline gets one first; no password
    assert (tmp_path / "gshadow").read_text().splitlines()[1:] == ["tsbox0:!::", "tsbox1:!::"]
