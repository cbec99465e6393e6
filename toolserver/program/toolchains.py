"""What installs the program tool's toolchains, read from the language files, for
scripts/setup.sh and the image: `python -m toolserver.program.toolchains debian` prints
the Debian packages of the languages whose toolchain does not run here (all of them with
--all), `... npm` one line per npm prefix to install into, then its packages."""

from __future__ import annotations

import argparse

from toolserver.program.languages import Language, load_languages, toolchain_version


def missing(languages: list[Language], every: bool) -> list[Language]:
    return [language for language in languages if every or not toolchain_version(language.version)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolserver.program.toolchains", description=__doc__)
    parser.add_argument("kind", choices=("debian", "npm"))
    parser.add_argument("--all", action="store_true", help="every language's, installed or not")
    args = parser.parse_args(argv)
    wanted = missing(list(load_languages().values()), args.all)
    if args.kind == "debian":
        print(" ".join(sorted({package for language in wanted for package in language.packages})))
        return
    prefixes: dict[str, list[str]] = {}
    for language in wanted:
        if language.npm:
            prefixes.setdefault(language.npm_prefix, []).extend(language.npm)
    for prefix, packages in prefixes.items():
        print(prefix, *dict.fromkeys(packages))


if __name__ == "__main__":
    main()
