"""Fronts: the doors callers reach the tools through.

Each front translates its wire format into the contract's messages and calls
`toolserver.dispatch.Dispatcher`; it authenticates with `toolserver.policy.Policies`
and maps `toolserver.errors.RequestError` to its own statuses. A front knows no tool
by name and nothing of a tool's internals.
"""
