"""Installs the program tool's toolchains, read from the language files, for
scripts/setup.sh and the image (deploy/Dockerfile):

    python -m toolserver.program.toolchains [--all] [--dry-run] [LANGUAGE ...]

installs the Debian packages that dpkg lacks of the languages named (every language
described, without names) whose toolchain does not run here (every one named, with --all),
then their npm packages into each language's npm prefix (npm from Debian first, where
the host has none). --dry-run prints the commands instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from toolserver.program.languages import Language, load_languages, toolchain_version


def missing(languages: list[Language], every: bool) -> list[Language]:
    return [language for language in languages if every or not toolchain_version(language.version)]


def installed(package: str) -> bool:
    """Whether dpkg has package installed (a host's own build of it counts: NodeSource's
    nodejs is Debian's name)."""
    try:
        found = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True,
                               timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0 and found.stdout.endswith(" installed")


def install_commands(wanted: list[Language], has_npm: bool) -> list[list[str]]:
    """The commands that install wanted's toolchains: apt-get for the Debian packages dpkg
    lacks (and npm, where an npm package is wanted and the host has no npm), then npm per
    prefix. Debian's npm is not installed beside a host's own (NodeSource's) nodejs, which
    brings its npm and which Debian's npm cannot be installed beside."""
    packages = [package for package in dict.fromkeys(package for language in wanted for package in language.packages)
                if not installed(package)]
    prefixes: dict[str, list[str]] = {}
    for language in wanted:
        if language.npm:
            prefixes.setdefault(language.npm_prefix, []).extend(language.npm)
    if prefixes and not has_npm:
        packages.append("npm")
    commands = []
    if packages:
        commands += [["apt-get", "update", "-qq"],
                     ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq",
                      "--no-install-recommends", *packages]]
    for prefix, npm_packages in prefixes.items():
        commands += [["mkdir", "-p", prefix],
                     ["npm", "install", "-q", "--no-audit", "--no-fund", "--prefix", prefix,
                      *dict.fromkeys(npm_packages)]]
    return commands


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolserver.program.toolchains", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("languages", nargs="*", metavar="LANGUAGE", help="languages by name (default: every one)")
    parser.add_argument("--all", action="store_true", help="install theirs whether or not they run here")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    args = parser.parse_args(argv)
    described = load_languages()
    unknown = [name for name in args.languages if name not in described]
    if unknown:
        parser.error(f"unknown language {', '.join(unknown)}; described: {', '.join(sorted(described))}")
    chosen = [described[name] for name in args.languages] if args.languages else list(described.values())
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    for command in install_commands(missing(chosen, args.all), shutil.which("npm") is not None):
        print("toolchains:", " ".join(command), flush=True)
        if not args.dry_run:
            done = subprocess.run(sudo + command, stdout=subprocess.DEVNULL)
            if done.returncode:
                sys.exit(f"toolchains: `{' '.join(command)}` failed with exit status {done.returncode}")


if __name__ == "__main__":
    main()
