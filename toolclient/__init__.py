"""The client side of the tool server: the gRPC client library (`client`), the engine
adapters (`integrations`) and the benchmarks (`bench`).

It speaks the contract (`toolcontract.v1`) and reads what a model sees of an answer
(`toolcontract.answer_text`); it loads no module of the server, and no module of the
server imports it but the `toolserver` command line and its MCP stdio bridge.
"""
