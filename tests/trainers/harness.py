"""A fault proxy in front of the CPU judges, a service behind it, and trainer subprocesses.

``FaultProxy`` relays TCP to one judge; ``down()`` closes every relayed connection and makes
new ones close at once (the judge is unreachable), ``up()`` relays again; ``failed`` counts
the calls the outage broke. ``proxied_service`` starts ``rewardsvc serve`` on the shipped
rubrics with a judge pool whose URLs point at two proxies. ``run_trainer`` runs a trainer
script in its own venv: the script scores a first batch, prints ``OUTAGE?`` and waits for a
line on stdin; the harness makes the judges unreachable, answers, and holds them so for
``outage_s`` seconds while the second batch is scored.
``judges_back`` waits until the service scores with every judge again, so that one test's
outage (a breaker it left open) does not degrade the next test's healthy batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conftest import CPU_POOL, Service, free_port, start_service, stop_service

from rewardsvc_client import Client
from trainers import venvs

OUTAGE_S = 20.0
SCRIPTS = Path(__file__).resolve().parent
RUBRIC = "short-answer-correctness"
JUDGE_PORTS = {"8101": "primary", "8102": "secondary"}


class FaultProxy:
    """TCP relay to ``127.0.0.1:target`` that can be made unreachable."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.reachable = True
        self.refused = 0
        """Connections closed at once because the judge was unreachable."""
        self.cut = 0
        """Connections cut by ``down()`` while a call on them waited for its answer."""
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self.reachable:
                self.refused += 1
                client.close()
                continue
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
        except OSError:
            client.close()
            return
        with self._lock:
            self._open.update((client, upstream))
        pair = {client: upstream, upstream: client}
        selector = selectors.DefaultSelector()
        for sock in pair:
            selector.register(sock, selectors.EVENT_READ)
        # A call is waiting from the moment the service sends until the judge answers: HTTP
        # keep-alive connections sit idle between calls, and cutting an idle one breaks nothing.
        waiting = False
        try:
            while True:
                for key, _ in selector.select(timeout=1.0):
                    if not self.reachable:
                        # A connection accepted just before down() may have been registered
                        # after its sweep: nothing passes while the judge is down.
                        waiting = waiting or key.fileobj is client
                        return
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    waiting = key.fileobj is client
                    pair[key.fileobj].sendall(data)  # type: ignore[index]
        except OSError:
            return
        finally:
            selector.close()
            if waiting and not self.reachable:
                with self._lock:
                    self.cut += 1
            for sock in pair:
                with self._lock:
                    self._open.discard(sock)
                sock.close()

    def down(self) -> None:
        """Make the judge unreachable: cut every relayed connection, refuse new ones."""
        self.reachable = False
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    @property
    def failed(self) -> int:
        """Calls the outage broke: connections refused and calls cut mid-answer. The service
        met the outage when this grows (a breaker opened by cut calls refuses no connection)."""
        return self.refused + self.cut

    def up(self) -> None:
        """Relay again."""
        self.reachable = True

    def close(self) -> None:
        """Stop accepting."""
        self._closed = True
        self.down()
        self._server.close()


def judges_back(service: Service, timeout_s: float = 120.0) -> None:
    """Wait until a fresh item scores with status ok: a breaker an outage opened lets one
    probe call through at a time and closes only once one passes; until then items score
    degraded (fewer judges) or judge_error."""
    deadline = time.monotonic() + timeout_s
    with Client(service.url) as client:
        while True:
            item = {"prompt": "What is 1 + 1?", "completion": f"2 (#{uuid.uuid4().hex[:6]})"}
            scored = client.rewards(RUBRIC, [{**item, "reference": "2"}], run="judges-back")
            (result,) = scored.results
            if result.status == "ok":
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the judges are not back after {timeout_s:.0f} s: {result}")
            time.sleep(1.0)


@contextlib.contextmanager
def outage(proxies: list[FaultProxy], seconds: float = OUTAGE_S) -> Iterator[None]:
    """The judges unreachable from the block's start for ``seconds`` (the block's exit waits
    for their return), and the service met the outage: the block fails unless calls broke.
    Down before the block's calls are sent: calls the judges answer within a moment would
    otherwise finish before a later outage begins."""
    before = sum(p.failed for p in proxies)
    for proxy in proxies:
        proxy.down()

    def back() -> None:
        for proxy in proxies:
            proxy.up()

    timer = threading.Timer(seconds, back)
    timer.start()
    try:
        yield
    finally:
        timer.join()
    if sum(p.failed for p in proxies) == before:
        raise AssertionError("no call met the outage: the block never reached the judges")


def proxied_pool(folder: Path) -> tuple[Path, list[FaultProxy]]:
    """The CPU judge pool written to ``folder/judges.yaml`` with each judge's URL pointing at
    a fault proxy in front of it; the file and the proxies (closed by the caller)."""
    pool = CPU_POOL.read_text()
    proxies = []
    for port in JUDGE_PORTS:
        proxy = FaultProxy(int(port))
        proxies.append(proxy)
        pool = pool.replace(f"127.0.0.1:{port}", f"127.0.0.1:{proxy.port}")
    pool_file = folder / "judges.yaml"
    pool_file.write_text(pool)
    return pool_file, proxies


@contextlib.contextmanager
def proxied_service(folder: Path) -> Iterator[tuple[Service, list[FaultProxy]]]:
    """A service whose judges are reached through fault proxies."""
    pool_file, proxies = proxied_pool(folder)
    service = start_service(
        {
            "REWARDSVC_JUDGE_POOL": str(pool_file),
            "REWARDSVC_REWARD_LOG": str(folder / "rewards.jsonl"),
        },
        folder / "service.log",
    )
    try:
        yield service, proxies
    finally:
        stop_service(service)
        for proxy in proxies:
            proxy.close()


def run_trainer(
    venv: str,
    script: str,
    args: list[str],
    proxies: list[FaultProxy],
    folder: Path,
    outage_s: float = OUTAGE_S,
    timeout_s: float = 600,
) -> dict[str, Any]:
    """Run tests/trainers/``script`` in the trainer venv ``venv`` (:mod:`trainers.venvs`)
    with ``args`` and an output file in ``folder`` (beside its stderr, ``trainer.log``);
    judges down for ``outage_s`` from the moment its second batch is sent (:func:`outage`).
    Returns the JSON the script wrote."""
    python = venvs.ensure(venv)
    out, log = folder / "out.json", folder / "trainer.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    env["PYTHONUNBUFFERED"] = "1"
    with log.open("w") as err:
        process = subprocess.Popen(
            [str(python), str(SCRIPTS / script), *args, str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        deadline = time.monotonic() + timeout_s
        asked = False
        try:
            for line in process.stdout:
                if line.strip() == "OUTAGE?":
                    asked = True
                    with outage(proxies, outage_s):
                        process.stdin.write("go\n")
                        process.stdin.flush()
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if process.poll() is None:
                process.kill()
    if process.returncode != 0:
        raise AssertionError(f"{script} exited {process.returncode}:\n{log.read_text()[-4000:]}")
    if not asked:
        raise AssertionError(f"{script} never asked for the outage (OUTAGE?)")
    result: dict[str, Any] = json.loads(out.read_text())
    return result
