"""Generates the gRPC stubs in toolcontract/v1/ from proto/toolserver/v1/toolserver.proto.

Run `python -m toolserver.codegen` after editing the proto; `--check` exits 1 when
the committed stubs differ from what the proto generates (tests call the same check).
The proto is compiled as `toolcontract/v1/toolserver.proto` (its package stays
`toolserver.v1`, the API's names), so that the stubs import each other from the neutral
package that server and client share.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto" / "toolserver" / "v1" / "toolserver.proto"
STUBS = Path("toolcontract") / "v1"  # under the repository's root
GENERATED = ("toolserver_pb2.py", "toolserver_pb2.pyi", "toolserver_pb2_grpc.py")


def generate(out_root: Path) -> list[Path]:
    """Writes the stubs under out_root/toolcontract/v1/ and returns their paths."""
    from grpc_tools import protoc

    out_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as include:
        staged = Path(include) / STUBS / PROTO.name
        staged.parent.mkdir(parents=True)
        shutil.copyfile(PROTO, staged)
        args = [
            "grpc_tools.protoc",
            f"-I{include}",
            f"--python_out={out_root}",
            f"--pyi_out={out_root}",
            f"--grpc_python_out={out_root}",
            (STUBS / PROTO.name).as_posix(),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {PROTO}")
    return [out_root / STUBS / name for name in GENERATED]


def stale_files() -> list[str]:
    """Names of committed stubs that differ from a fresh generation."""
    committed = ROOT / STUBS
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        return [
            path.name
            for path in fresh
            if not (committed / path.name).exists()
            or (committed / path.name).read_bytes() != path.read_bytes()
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report stale stubs")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        if stale:
            print("stale generated stubs: " + ", ".join(stale), file=sys.stderr)
            return 1
        print("generated stubs are up to date")
        return 0
    for path in generate(ROOT):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
