"""`glider serve`: the Starlette app and the proxy pipeline."""
