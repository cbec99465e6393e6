"""Stand-ins for external programs the tests cannot install here (clearly not the real thing)."""
