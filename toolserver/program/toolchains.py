"""What installs the program tool's toolchains, read from the language files, for
scripts/setup.sh: `python -m toolserver.program.toolchains debian` prints the Debian
packages of the languages whose toolchain does not run here that dpkg does not have yet
(every language's with --all), `... npm` one line per npm prefix to install into, then its
packages."""

from __future__ import annotations

import argparse
import subprocess

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolserver.program.toolchains", description=__doc__)
    parser.add_argument("kind", choices=("debian", "npm"))
    parser.add_argument("--all", action="store_true", help="every language's, installed or not")
    args = parser.parse_args(argv)
    wanted = missing(list(load_languages().values()), args.all)
    if args.kind == "debian":
        packages = sorted({package for language in wanted for package in language.packages})
        print(" ".join(package for package in packages if args.all or not installed(package)))
        return
    prefixes: dict[str, list[str]] = {}
    for language in wanted:
        if language.npm:
            prefixes.setdefault(language.npm_prefix, []).extend(language.npm)
    for prefix, packages in prefixes.items():
        print(prefix, *dict.fromkeys(packages))


if __name__ == "__main__":
    main()
