"""Pools of warm jailed zygotes, for every tool that runs calls in the sandbox.

`pool.WorkerPool` holds one class of zygotes (a spec and its slots), runs a call on one
and replaces a worker that is lost, hung or due; `scheduler.Scheduler` decides which
free worker takes which call across a tool's classes, when pools grow onto spare slots
and shrink back; `cpu_shares` lowers the CPU weight of calls that run long. A tool says
which classes it has and which may run another's calls (`runs_on`).
"""
