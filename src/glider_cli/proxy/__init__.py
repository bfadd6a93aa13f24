"""The request engine of `glider serve`: a model request read, routed, sent (with fallback), relayed and
recorded. No Starlette or uvicorn here: `server/` is the HTTP edge that hands requests to it."""
