"""The router: pure functions from a ChatRequest and a profile to a RouteDecision."""
