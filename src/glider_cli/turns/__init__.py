"""The turn lifecycle: families, sticky binding, the records of who answered, usage calibration.

Stateful and free of I/O: the clock and id generator are injected, events are returned to the
caller, which writes them. `turns.sticky.Stickiness` is the object the proxy, count_tokens and
`glider route replay` call per request (see its module contract).
"""
