"""The python tool: jailed warm zygotes for stateless calls, Jupyter kernels for sessions."""
