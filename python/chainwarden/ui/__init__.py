"""``chainwarden serve``: a local, read-only dashboard over ledgers, DAG stores and run files (docs/ui.md).

Needs the ``ui`` extra (``pip install 'chainwarden[ui]'``: Starlette and uvicorn); ``chainwarden.ui.app``
imports them, this package itself does not.
"""
