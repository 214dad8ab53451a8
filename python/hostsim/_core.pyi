"""Typed stub of the compiled core (crates/hostsim-py): JSON in, JSON out."""

__version__: str

def simulate(config_json: str) -> str:
    """Runs one simulation from the resolved config (JSON); returns the result as JSON.

    Raises ValueError for a bad config, OSError for a capture file it cannot
    write, RuntimeError for an internal error in the core.
    """

def validate(config_json: str) -> None:
    """Checks a resolved config without running it; raises ValueError."""

def version() -> str:
    """The core's version string."""
