"""`virtbench serve`: a read-only local web app over the result store (docs/serve.md)."""

from virtbench.serve.app import create_app

__all__ = ["create_app"]
