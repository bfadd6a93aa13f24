"""The bounded place where Starlark runs: a small supervised worker process.

Nothing in Glider's own process evaluates a user's rule script. The scripts that ship with the
bundled profiles are Glider's own code: evaluated as Python by `sandbox.native` when they are in the
subset of Starlark that means the same in Python (both of today's are), else in-process by
`sandbox.inprocess`, under the same deadlines and call-stack limit. `Sandbox` (sandbox.supervisor) starts
`python -m glider_cli.sandbox.worker`, which caps its own address space (RLIMIT_AS, 256 MiB over its
start-up footprint) and evaluates scripts with starlark-pyo3 (sandbox.starlark_eval); the two speak small
frames over a pipe (sandbox.wire). Scripts are compiled once in the worker; a call sends only the
script ids and the request payload.

What holds, whatever a script does (a memory bomb, a panic, an endless loop, a 2 GB string repeat):
- a call returns within the scripts' deadlines plus `GRACE_S`; a script that does not finish in
  time is stopped by the interpreter's cancel hook, and a worker that does not answer in time is
  killed;
- a panic, an out-of-memory abort, a deadline or a dead worker is a `ScriptOutcome` with `error`
  set (the router counts it as no match and puts the reason in the trace), never an exception;
- a dead or killed worker is replaced at once and reloads every live script; calls made while it
  starts say so in their outcome instead of waiting past their deadline.

`routing_sandbox()` serves the router, `checking_sandbox()` serves `glider lint` and the
playground, so a slow check cannot delay a routing decision.

This package module imports nothing: the worker imports it on its way to sandbox.worker, and should
pay only for what it uses. Import from the submodules (sandbox.supervisor, sandbox.results).
"""
