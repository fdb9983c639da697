"""Library code coverage: the lines of each library's Python modules that memo's models reach (issue 32).

``measured`` says which package folders a backend's library is measured in (stdlib only: backend specs declare
it); ``statements`` counts their executable statements with coverage.py's own parser (cached per library
version); ``tracer`` runs coverage.py's C tracer around one model's stages in a worker; ``merge`` folds the
lines each model reached into a campaign's running totals. Importing this package imports nothing.
"""
