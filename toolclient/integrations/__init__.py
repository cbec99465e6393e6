"""Adapters for the RL engines users already run: verl, TRL, SkyRL-Gym and OpenRLHF.

Each adapter is a client of a tool server fleet (it imports `toolclient.client` and the
stubs, never the server) and lives behind its own extra: `.[verl]`, `.[trl]`, `.[skyrl]`,
`.[openrlhf]`. `toolclient.integrations.calls` is what they share.
"""
