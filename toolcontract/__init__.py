"""What the tool server and its clients share, and nothing of either: the contract's
generated stubs (`v1`, from proto/toolserver/v1/toolserver.proto by `python -m
toolserver.codegen`), the names read from it (`names`), what a model reads of an answer
(`answer_text`) and how a judge compares a program's output (`output_match`).

It imports neither the server (`toolserver`, `sandbox`) nor the client (`toolclient`);
tests/unit/test_import_graph.py follows every import to hold it to that.
"""
