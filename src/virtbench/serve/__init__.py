"""`virtbench serve`: a read-only local web app over the result store (docs/serve.md)."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from virtbench.serve.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # The app (reports, charts, statistics) loads when it is built, so that `serve` refuses a
    # bad option, a missing store or a busy port at once.
    if name == "create_app":
        from virtbench.serve.app import create_app
        return create_app
    raise AttributeError(f"module 'virtbench.serve' has no attribute {name!r}")
