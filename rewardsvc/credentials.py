"""The secrets the settings name, read: API keys (given and from a file), scoped API keys
(a JSON list, checked without ever showing a key) and the Redis password file.

``rewardsvc.settings`` holds where they come from (``REWARDSVC_API_KEYS``,
``REWARDSVC_API_KEYS_FILE``, ``REWARDSVC_API_KEY_SCOPES``,
``REWARDSVC_REDIS_PASSWORD_FILE``); this module reads them, at start.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr, TypeAdapter, ValidationError

from rewardsvc.core.access import KeyScope

_SCOPES = TypeAdapter(list[KeyScope])


def parse_scopes(text: str) -> list[KeyScope]:
    """The scoped keys of a JSON list; ValueError naming the entry and field at fault (never
    the keys themselves), or a repeated name or key."""
    try:
        scopes = _SCOPES.validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"[{']['.join(str(p) for p in e['loc'])}]: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"not a JSON list of scoped keys: {problems}") from None
    names = [s.name for s in scopes]
    keys = [s.key.get_secret_value() for s in scopes]
    if len(set(names)) < len(names) or len(set(keys)) < len(keys):
        raise ValueError("each scoped key needs its own name and its own key")
    return scopes


def read_api_keys(given: SecretStr | None, file: Path | None) -> list[str]:
    """The API keys of ``given`` (comma-separated) and of ``file`` (one a line, lines
    starting with # ignored); empty means no authentication."""
    keys: list[str] = []
    if given is not None:
        keys += [k.strip() for k in given.get_secret_value().split(",")]
    if file is not None:
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.strip().startswith("#"):
                keys.append(line.strip())
    return [k for k in keys if k]


def read_password(file: Path | None) -> str | None:
    """The password in ``file`` (surrounding whitespace dropped), or None."""
    if file is None:
        return None
    return file.read_text(encoding="utf-8").strip() or None
