"""API keys of judges, re-read when the file holding one changes.

A pool judge names an environment variable (``api_key_env: JUDGE_KEY``). When
``JUDGE_KEY_FILE`` is set, the key is read from that file instead (the ``*_FILE``
convention of container secrets), and read again whenever the file changes: a
Kubernetes Secret mounted as a volume is rotated in place (its ``..data`` symlink is
swapped), while a Secret passed as an environment variable only changes on restart.
Checking costs one ``stat`` per call.
"""

from __future__ import annotations

import os
from pathlib import Path

from rewardsvc.core.pool import JudgeConfig, JudgePool

FILE_SUFFIX = "_FILE"


def env_key(config: JudgeConfig) -> str:
    """The judge's API key from the environment; vLLM without --api-key accepts any value."""
    if config.api_key_env is None:
        return "EMPTY"
    key = os.environ.get(config.api_key_env)
    if not key:
        raise KeyError(f"environment variable {config.api_key_env} is not set")
    return key


def missing_keys(pool: JudgePool) -> list[str]:
    """Environment variables named by the pool's judges that are unset (and have no ``_FILE``)."""
    return sorted(
        {
            j.api_key_env
            for j in pool.judges.values()
            if j.api_key_env
            and not os.environ.get(j.api_key_env)
            and not os.environ.get(j.api_key_env + FILE_SUFFIX)
        }
    )


def key_file(config: JudgeConfig) -> Path | None:
    """The file named by ``{api_key_env}_FILE``, when the judge names a key and it is set."""
    if config.api_key_env is None:
        return None
    path = os.environ.get(config.api_key_env + FILE_SUFFIX)
    return Path(path) if path else None


class KeySource:
    """The current API key of one judge.

    Raises ``KeyError`` at construction when the judge names a key that is neither in
    the environment nor in a readable file, so that a misconfigured pool stops start-up.
    """

    def __init__(self, config: JudgeConfig):
        self._config = config
        self._file = key_file(config)
        self._stamp: tuple[int, int, int] | None = None
        self._key = ""
        self.current()

    def current(self) -> str:
        """The key now: the file's content when it changed since last read, else the last."""
        if self._file is None:
            if not self._key:
                self._key = env_key(self._config)
            return self._key
        try:
            stat = self._file.stat()
            stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            key = self._key if stamp == self._stamp else self._file.read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            if self._key:  # a rotation in progress: keep the last good key
                return self._key
            raise KeyError(f"API key file {self._file} is not readable: {exc}") from exc
        if key:
            self._key, self._stamp = key, stamp
        elif not self._key:
            raise KeyError(f"API key file {self._file} is empty")
        return self._key
