"""The search tool: offline retrieval (BM25, dense, hybrid) over allow-listed local indexes.

`executor.SearchExecutor` answers SearchCalls in the server process;
`executor.ensure_default_index` builds the default index (the documentation of the
sandbox's Python modules); `cli` is the `toolserver index` command; `settings` holds
[search] and `rules` a caller's indexes. The executor loads when a server builds the
tool, so that reading the settings does not load bm25s.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from toolserver.registry import BuildContext, Tool, ToolPackage
from toolserver.search.rules import SearchRules
from toolserver.search.settings import SearchSettings


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.search.executor import build_search

    return await build_search(context, stack)


def add_commands(subparsers: Any) -> None:
    from toolserver.search.cli import add_index_parser

    add_index_parser(subparsers)


TOOL = ToolPackage(name="search", build=build, sections={"search": SearchSettings}, rules=SearchRules, commands=add_commands)
