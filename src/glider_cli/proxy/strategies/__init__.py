"""Strategies that operate: `fan_out`, `pipeline` and `ensemble` between the decision and the backends.

`router.plan` (pure: a decision and `orchestration.*` -> the Plan of member calls), `judge` (pure: the judges
and the member request bodies), `members` (one member call through the proxy's own upstream client)
and `orchestrator` (a Plan run for one request; the chosen answer as the client's reply, whole or streamed).
`proxy.engine` hands a request to `orchestrator.Orchestrator` when its decision's strategy is not `single`
and that strategy's `orchestration.<strategy>.enabled` is true.
"""
