"""A real Redis for tests: Debian's ``redis-server``, installed when absent, run on a spare
loopback port without persistence, and stopped (or killed and restarted) by the test."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.debian import debian_binary


def redis_server_binary() -> str:
    """The path of ``redis-server``, installing Debian's package when it is missing."""
    return debian_binary("redis-server", "redis-server")


def spare_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            # A server with a password answers -NOAUTH: it is up all the same.
            return s.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1:``port`` with its files under ``workdir``."""

    def __init__(self, workdir: Path, port: int | None = None, password: str | None = None):
        self.binary = redis_server_binary()
        self.workdir = workdir
        self.port = port or spare_port()
        self.password = password
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``redis://`` URL of this server (with its password, when it has one)."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (on the same port as before, after a kill) and wait until it
        answers PING."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "redis.log").open("ab")
        self._proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--daemonize",
                "no",
                *(["--requirepass", self.password] if self.password else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not _answers(self.port):
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited; see {self.workdir / 'redis.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not answer PING within 30 s")
            time.sleep(0.05)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open and nothing answers."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


@contextlib.contextmanager
def running(workdir: Path, password: str | None = None) -> Iterator[RedisServer]:
    """A started :class:`RedisServer` under ``workdir``, stopped on leaving."""
    server = RedisServer(workdir, password=password)
    server.start()
    try:
        yield server
    finally:
        server.stop()
