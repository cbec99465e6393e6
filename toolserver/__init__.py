"""Tool-integrated reasoning sandbox server."""

__version__ = "0.1.0"
