"""Isolation for untrusted code: firejail command lines, the jailed zygote, slots and
the self-test. Nothing in here knows about gRPC or the tool server."""
