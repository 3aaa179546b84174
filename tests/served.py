"""Where the tests' HTTP clients send requests to `virtbench serve`'s app: it answers only a Host
header that names an address it serves (loopback by default), not starlette's `testserver`."""

from virtbench.cli.options import DEFAULT_SERVE_PORT

BASE_URL = f"http://127.0.0.1:{DEFAULT_SERVE_PORT}"
