"""Docs as tests: every command block the README, tutorials and how-to pages mark runnable
runs as written, from the root of a fresh copy of the repository, against a live service.

A page marks a fenced block with an HTML comment on the line before its fence (MkDocs
renders nothing for it):

- ``<!-- runnable -->`` before a shell block: run it with bash (``-e -o pipefail``);
- ``<!-- runnable: save PATH -->`` before any block: write its text to PATH first (a file
  the page tells the reader to save, such as a tutorial's rubric);
- ``<!-- file: PATH -->`` before any block: the block shows the repository's file PATH
  whole, and must equal it (checked without a service).

The copy holds the repository's files (tracked and new, not ignored ones) and a link to
its ``.venv``; a ``rewardsvc serve`` started in it on port 8000 is what ``make serve``
runs, so the pages' ``localhost:8000`` and ``.venv/bin/...`` work unchanged. One setting
differs: the service and the commands use the tiny judges (``deploy/cpu-judge/judges.yaml``),
not make serve's Qwen pool: this proves that the commands run, on the judges the suite keeps
up; what the Qwen pool answers to the README's example is ``test_judge_kinds_qwen.py``'s.
curl reads a config that adds ``--fail-with-body`` here, so a 4xx answer fails its block.
The blocks of one page run in order (a page may build on its earlier blocks); each block that
exits non-zero is reported in its page's failure with the line of its fence and its output.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs" / "tutorial").glob("*.md")),
    *sorted((ROOT / "docs" / "how-to").glob("*.md")),
]
PORT = 8000
SHOWN = re.compile(r"^<!-- file: (?P<path>\S+) -->\s*$")
MARKER = re.compile(r"^<!-- runnable(?:: save (?P<path>\S+))? -->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<lang>[\w-]*)")
SHELLS = {"bash", "sh", "shell"}
BLOCK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    """One marked block: where it is, its text, and the file it names (if any)."""

    page: str
    line: int
    lang: str
    text: str
    path: str | None


def marked_blocks(page: Path, marker_re: re.Pattern[str] = MARKER) -> list[Block]:
    """The blocks of a page marked by marker_re (runnable by default), in page order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = page.relative_to(ROOT).as_posix()
    blocks = []
    for index, line in enumerate(lines[:-1]):
        marker = marker_re.match(line)
        if not marker:
            continue
        fence = FENCE.match(lines[index + 1])
        if not fence:
            raise AssertionError(f"{name}:{index + 1}: a runnable marker not followed by a fence")
        end = next(
            (j for j in range(index + 2, len(lines)) if lines[j].startswith(fence.group("fence"))),
            None,
        )
        if end is None:
            raise AssertionError(f"{name}:{index + 2}: unclosed fence")
        text = "\n".join(lines[index + 2 : end]) + "\n"
        blocks.append(Block(name, index + 2, fence.group("lang"), text, marker.group("path")))
    return blocks


def _env() -> dict[str, str]:
    """The environment of the service and the blocks: the caller's, without its
    ``REWARDSVC_*`` settings, on the tiny judges."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    env["REWARDSVC_JUDGE_POOL"] = "deploy/cpu-judge/judges.yaml"
    return env


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def fresh_copy(target: Path) -> Path:
    """The repository's files (tracked and untracked, not ignored) under target, its venv
    linked."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(ROOT / ".venv")
    return target


@pytest.fixture(scope="module")
def copy_root(cpu_pool: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh copy of the repository with ``rewardsvc serve`` running in it on :8000."""
    if not _port_free(PORT):
        pytest.fail(
            f"port {PORT} is in use: the docs' commands talk to localhost:{PORT}; stop what "
            "listens there (another `make serve`?) and run this test again"
        )
    root = fresh_copy(tmp_path_factory.mktemp("docs-copy"))
    env = _env()
    log = root.parent / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(root / ".venv" / "bin" / "rewardsvc"), "serve"],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_healthy(process, log)
        yield root
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_healthy(process: subprocess.Popen[bytes], log: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"rewardsvc serve exited {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{PORT}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    pytest.fail(f"rewardsvc serve did not answer on :{PORT} in {timeout_s} s:\n{log.read_text()}")


def run_block(block: Block, root: Path) -> str | None:
    """Run (or save) one block in the copy; the failure report, or None when it passed."""
    if block.path:
        path = root / block.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text, encoding="utf-8")
        return None
    if block.lang not in SHELLS:
        return f"{block.page}:{block.line}: runnable, but a `{block.lang}` block is not a shell"
    curl_home = root.parent / "curl-home"
    curl_home.mkdir(exist_ok=True)
    (curl_home / ".curlrc").write_text("--fail-with-body\n", encoding="utf-8")
    env = _env()
    env["CURL_HOME"] = str(curl_home)
    try:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.text],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"{block.page}:{block.line}: still running after {BLOCK_TIMEOUT_S} s\n{block.text}"
    if done.returncode == 0:
        return None
    output = (done.stdout + done.stderr)[-3000:]
    return (
        f"{block.page}:{block.line}: exit {done.returncode}\n{block.text}--- output ---\n{output}"
    )


def test_files_shown_whole_are_the_repository_files() -> None:
    shown = [block for page in PAGES for block in marked_blocks(page, SHOWN)]
    assert shown, "no page shows a repository file"
    for block in shown:
        assert block.path is not None
        path = ROOT / block.path
        assert path.is_file(), f"{block.page}:{block.line}: {block.path} is not in the repository"
        assert block.text == path.read_text(encoding="utf-8"), (
            f"{block.page}:{block.line}: the block differs from {block.path}: copy the file in"
        )


def test_every_marker_is_on_a_block_it_can_run() -> None:
    blocks = [block for page in PAGES for block in marked_blocks(page)]
    assert blocks, "no page marks a runnable block"
    for block in blocks:
        assert block.path or block.lang in SHELLS, f"{block.page}:{block.line}: {block.lang}"


@pytest.mark.judges
@pytest.mark.parametrize(
    "page",
    [page for page in PAGES if marked_blocks(page)],
    ids=lambda page: page.relative_to(ROOT).as_posix(),
)
def test_runnable_blocks_run_as_written(page: Path, copy_root: Path) -> None:
    failures = []
    for block in marked_blocks(page):
        failure = run_block(block, copy_root)
        if failure:
            failures.append(failure)
    assert not failures, "\n\n".join(failures)
