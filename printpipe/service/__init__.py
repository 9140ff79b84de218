"""The validation service: retailers' terminals over HTTP (``docs/validation-service.md``).

``app.py`` is the ASGI application, ``signatures.py`` the RFC 9421 request-signature profile,
``openapi.py`` the API's OpenAPI document, ``server.py`` ``printpipe serve`` on uvicorn.  The
reference client is ``printpipe.service.terminal``.
"""
