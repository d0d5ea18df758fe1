"""Anonymous, stable names for machines, so a published dataset does not name its hosts; and
whether a process of this machine lives (:func:`process_alive`).

A machine's anonymous id is a keyed hash (HMAC-SHA256) of its host name. The key is a secret
of this machine that never leaves it: the systemd machine id (``/etc/machine-id``, which its
documentation says must not be exposed, and asks applications to hash with a key of their own,
as done here) or, where there is none, a random secret kept in the user's cache directory.
Without the key the id cannot be traced back to the host name, even by guessing host names;
with it the id is stable across harvests on the same machine. Containers of one image that
share a machine id still get distinct ids when their host names differ.

:func:`anonymize_host` applies the same function to any host name, so ``python -m schemas
scrub`` run on the harvesting machine replaces an old ``runs.hostname`` by exactly the id a
new harvest there records.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
from pathlib import Path

ANONYMOUS_PREFIX = "anon-"
"""Every anonymous machine id starts with this, so readers (and ``check``) can tell an
anonymous id from a recorded host name."""

_APP_KEY = b"kernel-corpus machine id v1"
_MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
_SECRET_NAME = "machine-secret"


def host_name() -> str:
    """This machine's host name as the OS reports it."""
    return socket.gethostname()


def is_anonymous(value: str) -> bool:
    """True when ``value`` is an id made by :func:`anonymize_host`."""
    return value.startswith(ANONYMOUS_PREFIX)


def anonymize_host(host: str, *, state_dir: Path | None = None) -> str:
    """The anonymous id of ``host`` under this machine's secret: ``anon-`` + 16 hex digits.

    ``state_dir``: where the fallback secret lives when the machine has no machine id
    (default: the user's cache directory, see :func:`default_state_dir`). Ids that are
    already anonymous are returned unchanged, so anonymizing twice changes nothing.
    """
    if is_anonymous(host):
        return host
    key = hmac.new(_machine_secret(state_dir), _APP_KEY, hashlib.sha256).digest()
    digest = hmac.new(key, host.encode(), hashlib.sha256).hexdigest()
    return ANONYMOUS_PREFIX + digest[:16]


def machine_label(*, record_host: bool, state_dir: Path | None = None) -> str:
    """What a row records as its host: the host name when the user asked for it
    (``--record-host``), else this machine's anonymous id."""
    name = host_name()
    return name if record_host else anonymize_host(name, state_dir=state_dir)


def default_state_dir() -> Path:
    """``$XDG_CACHE_HOME/kernel-corpus`` (``~/.cache/kernel-corpus`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-corpus"


def _machine_secret(state_dir: Path | None) -> bytes:
    for path in _MACHINE_ID_FILES:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text and set(text) != {"0"}:  # an all-zero id is a placeholder, not an identity
            return text.encode()
    return _persisted_secret(state_dir or default_state_dir())


_process_secret = secrets.token_bytes(32)


def _persisted_secret(state_dir: Path) -> bytes:
    """A random secret created once in ``state_dir``; a per-process one when that directory
    cannot be written (ids are then anonymous but not stable across processes)."""
    path = state_dir / _SECRET_NAME
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        temporary = state_dir / f".{_SECRET_NAME}-{os.getpid()}-{secrets.token_hex(4)}"
        temporary.write_text(secrets.token_hex(32))
        os.chmod(temporary, 0o600)
        try:
            os.link(temporary, path)  # the first process to link wins; others read its secret
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        return _process_secret


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
