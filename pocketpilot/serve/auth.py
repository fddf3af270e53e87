"""Who may talk to the service, from where, and which files it may hand out.

- A bearer token guards every API route. It is generated at first start and kept in the
  user's config folder with mode 0600, so a companion app on the same machine (or the user,
  with ``cat``) can read it and nobody else can.
- The service listens on loopback unless told otherwise; another address needs TLS, or the
  user's explicit ``--insecure-lan``: a token sent in clear on a café's Wi-Fi is anybody's.
- A trace is served only from inside the trace folder, whatever the path asked for.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import re
import secrets
import stat
from pathlib import Path

from ..errors import UsageError
from .errors import NotFound, Unauthorized

__all__ = [
    "TOKEN_FILE",
    "check_bind",
    "check_bearer",
    "default_token_path",
    "is_loopback",
    "load_or_create_token",
    "trace_file",
]

logger = logging.getLogger(__name__)

TOKEN_FILE = "serve-token"
_TRACE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def default_token_path() -> Path:
    """``<user config dir>/pocketpilot/serve-token``."""
    import platformdirs

    return Path(platformdirs.user_config_dir("pocketpilot")) / TOKEN_FILE


def load_or_create_token(path: Path | None = None) -> tuple[str, Path]:
    """The service token from ``path``, generated (mode 0600) when the file does not exist.

    A file that others may read is tightened to 0600 (and the fact logged): a token someone
    else could have read is still refused by nothing, but it is no longer left open.

    Raises:
        UsageError: the file exists but is empty, or cannot be read or written.
    """
    path = Path(path) if path is not None else default_token_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077:
                logger.warning("%s was readable by others (mode %o): set to 0600", path, mode)
                path.chmod(0o600)
            token = path.read_text(encoding="utf-8").strip()
            if not token:
                raise UsageError(f"{path} is empty: delete it and a new token is generated") from None
            return token, path
        token = secrets.token_urlsafe(32)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token + "\n")
        return token, path
    except OSError as exc:
        raise UsageError(f"{path}: cannot keep the service token there: {exc.strerror}") from exc


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) stays on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, tls: bool, insecure_lan: bool) -> None:
    """Refuse a non-loopback address without TLS, unless the user said ``--insecure-lan``.

    Raises:
        UsageError: with what to pass instead.
    """
    if is_loopback(host) or tls or insecure_lan:
        return
    raise UsageError(
        f"--host {host} is reachable from other machines: give --ssl-certfile and --ssl-keyfile, "
        "or --insecure-lan to send the token in clear on a network you trust"
    )


def check_bearer(header: str | None, token: str) -> None:
    """Accept ``Authorization: Bearer <token>`` (compared in constant time).

    Raises:
        Unauthorized: no header, another scheme, or another token.
    """
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise Unauthorized("a bearer token is required (Authorization: Bearer <token from the serve-token file>)")
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("wrong bearer token")


def trace_file(folder: Path, name: str) -> Path:
    """The trace ``name`` (an episode id, no path) inside ``folder``; nothing outside it.

    The name is checked against the episode-id alphabet *and* the resolved path against the
    folder (a symlink planted inside the folder does not lead out of it either).

    Raises:
        NotFound: a name with a path in it, or no such trace.
    """
    stem = name.removesuffix(".jsonl")
    if not _TRACE_NAME.match(stem):
        raise NotFound(f"no trace {name!r}", "unknown_trace")
    root = folder.resolve()
    path = (root / f"{stem}.jsonl").resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise NotFound(f"no trace {name!r}", "unknown_trace")
    return path
