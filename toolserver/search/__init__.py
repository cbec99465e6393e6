"""The search tool: offline retrieval (BM25, dense, hybrid) over allow-listed local indexes.

`executor.SearchExecutor` answers SearchCalls in the server process;
`executor.ensure_default_index` builds the default index (the documentation of the
sandbox's Python modules); `cli` is the `toolserver index` command; `settings` holds
[search]. Nothing is imported here, so that reading the settings does not load bm25s.
"""
