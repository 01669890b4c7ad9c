"""The HTTP API: create_app() in api.main; routes in api.routes, one file per resource."""
