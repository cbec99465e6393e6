"""What runs outside the server's process: the jailed zygote (`zygote.py`) and the session
zygote (`session_zygote.py`), with the library they share, one module a job.

None of it is imported by the server. The host sends the sources over stdin
(`sandbox.worker.BOOTSTRAP`, `sandbox.worker.LIBRARY`), so that a jail never needs to see the
project tree: each module imports only the standard library and the modules before it in
`LIBRARY`, at its top, and the zygotes drop the library from `sys.modules` before they run a
program (`warm.forget_library`), so that a program's `import` finds what python3's would.
The host imports them only in tests, to read the facts they share with it.
"""
