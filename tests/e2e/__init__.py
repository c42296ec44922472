"""End-to-end tests: the real service (uvicorn subprocess) over HTTP and WebSocket."""
