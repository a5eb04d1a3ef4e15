"""REST API routers (FastAPI); ``app.server.create_app`` assembles them."""
