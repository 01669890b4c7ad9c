"""One module per resource; api.main registers their routers."""
