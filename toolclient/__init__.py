"""The client side of the tool server: the gRPC client library (`client`), the engine
adapters (`integrations`), the MCP stdio bridge (`mcp_stdio`) and the benchmarks (`bench`).

It speaks the contract (`toolserver.v1`) and reads what a model sees of an answer
(`toolserver.answer_text`); no module of the server imports it.
"""
