"""The package version, in a module of its own so any module can import it without cycles."""

__version__ = "0.1.0"
