"""The Lean 4 tool: proofs checked on pooled, jailed leanprover-community/repl processes.

`executor.LeanExecutor` is the entry point; `pool` holds the pool policy, `repl` one
REPL process, `header` the header/body split, `guard` the anti-cheat checks, `settings`
the [lean] settings.
"""
