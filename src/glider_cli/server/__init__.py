"""`glider serve`: the HTTP door to the request engine (`glider_cli.proxy`): its app and lifespan."""
