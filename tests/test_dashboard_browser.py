"""The dashboard in a real headless Chromium (Debian's package, driven by playwright with the
system binary): with live traffic and a firing alert, every plot renders and the alert shows.
With ``REWARDSVC_UPDATE_SCREENSHOT=1`` it also saves the screenshot the docs show
(docs/dashboard.png); otherwise the checkout is left as it was."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from test_monitor import batch, item

from rewardsvc.core.results import CriterionOutcome, ItemReward, JudgeOutcome
from rewardsvc.monitor import Monitor, MonitorConfig
from rewardsvc.monitor.golden_set import GoldenSet
from rewardsvc.server.dashboard import router

ROOT = Path(__file__).resolve().parent.parent
PANELS = [
    "reward",
    "length",
    "corr",
    "flags",
    "judges",
    "drift",
    "status",
    "criteria",
    "health",
    "canaries",
]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_binary() -> str:
    """Debian's chromium, installed when absent (registries' browser downloads are not used)."""
    found = shutil.which("chromium")
    if found:
        return found
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "chromium"]
    if subprocess.run(install, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, check=True)
        subprocess.run(install, capture_output=True, check=True)
    found = shutil.which("chromium")
    if not found:
        raise RuntimeError("chromium is not on PATH after installing the package")
    return found


class Traffic:
    """A policy that starts padding its answers (which the judge likes) after a clean start."""

    def __init__(self) -> None:
        self.rng = random.Random(5)
        self.n = 0

    def next(self) -> ItemReward:
        self.n += 1
        rng = self.rng
        hacking = self.n > 300 and rng.random() < min(0.5, (self.n - 300) / 256)
        length = rng.randint(1500, 3000) if hacking else rng.randint(200, 800)
        quality = 0.92 if hacking else rng.uniform(0.3, 0.8)
        scores = (min(1.0, quality + rng.uniform(0, 0.05)), quality - rng.uniform(0, 0.3))
        criteria = {
            "answers-the-question": CriterionOutcome(0.9 if rng.random() < 0.8 else 0.1),
            "concise": CriterionOutcome(0.1 if hacking or rng.random() < 0.4 else 0.9),
            "padding": CriterionOutcome(0.9 if hacking and rng.random() < 0.3 else 0.1),
        }
        flags = ("fake_score",) if hacking and rng.random() < 0.3 else ()
        if rng.random() < 0.01:
            flags += ("zero_width",)
        base = item(quality, length, flags=flags)
        base.judges = {f"j{i}": JudgeOutcome(s, criteria=criteria) for i, s in enumerate(scores)}
        base.uncertainty = abs(scores[0] - scores[1]) / 2
        return base


class Clock:
    """Real time, shifted into the past while history is pre-filled."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() - self.shift


def golden_checks(monitor: Monitor, clock: Clock) -> None:
    """Two golden re-scores per judge; at the second the secondary judge answers otherwise
    and its endpoint reports other weights."""
    golden = GoldenSet(
        rubric="helpful-answer",
        items=[{"id": "a", "prompt": "p", "completion": "c", "labels": {"concise": True}}],
    )
    for check, shift in enumerate((300.0, 100.0)):
        clock.shift = shift
        for judge in ("primary", "secondary"):
            p = 0.2 if judge == "secondary" and check else 0.9
            outcome = JudgeOutcome(p, criteria={"concise": CriterionOutcome(p)})
            result = batch([ItemReward("a", p, "ok", judges={judge: outcome})])
            monitor.golden.record(golden, judge, result)
            root = "org/other" if judge == "secondary" and check else "org/model"
            monitor.golden.identify(judge, {"model": judge, "root": root}, ["helpful-answer"])


def build_app() -> FastAPI:
    """A small app: the monitor's routes, 500 samples of history, and live traffic."""
    clock = Clock()
    config = MonitorConfig(window=128, baseline=256, eval_every=8, for_evals=3)
    monitor = Monitor(lambda _: config, clock=clock)
    traffic = Traffic()
    clock.shift = 500.0
    for _ in range(0, 496, 8):
        monitor.observe(
            "helpful-answer", "sha256:1f0c", "grpo-7b", batch([traffic.next() for _ in range(8)])
        )
        clock.shift -= 8.0
    # Canary checks every 100 s; the last one finds the secondary judge rewarding a master key.
    for check in range(5):
        clock.shift = 400.0 - 100.0 * check
        for judge, master_key in (("primary", 0.12), ("secondary", 0.83 if check == 4 else 0.1)):
            monitor.record_canary("helpful-answer", judge, "master-key", master_key, 0.1, 0.9)
            monitor.record_canary("helpful-answer", judge, "fake-score", 0.15, 0.1, 0.9)
    golden_checks(monitor, clock)
    clock.shift = 0.0

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async def feed() -> None:
            while True:
                monitor.observe(
                    "helpful-answer",
                    "sha256:1f0c",
                    "grpo-7b",
                    batch([traffic.next() for _ in range(8)]),
                )
                await asyncio.sleep(0.25)

        task = asyncio.create_task(feed())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app = FastAPI(lifespan=lifespan)
    app.include_router(router)
    app.state.monitor = monitor
    return app


@pytest.fixture
def live_url() -> Iterator[str]:
    """The small app served by uvicorn on a spare loopback port."""
    server = uvicorn.Server(
        uvicorn.Config(build_app(), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the dashboard app did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_dashboard_renders_every_plot_and_the_firing_alert(live_url: str) -> None:
    from playwright.sync_api import sync_playwright

    binary = chromium_binary()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{live_url}/dashboard")
            page.wait_for_function("document.body.dataset.plots === '10'", timeout=20_000)
            for panel in PANELS:
                assert page.locator(f"#plot-{panel} .uplot canvas").count() == 1, panel
                assert page.locator(f"#plot-{panel} .none").count() == 0, panel
            legend = page.locator("#plot-flags .u-legend").inner_text()
            assert "flag_rate:fake_score" in legend
            assert "criterion_pass_rate:concise" in page.locator("#plot-criteria").inner_text()
            assert "concise" in page.locator("#health tbody").inner_text()
            assert "groups with zero spread" in page.locator("#health-summary").inner_text()
            firing = page.locator("#alerts tr.firing").all_inner_texts()
            assert any("reward_length_corr" in row for row in firing), firing
            assert any("canary:secondary:master-key" in row for row in firing), firing
            assert not any("canary:primary" in row for row in firing), firing
            assert any("golden:secondary" in row for row in firing), firing
            golden = page.locator("#golden tbody").inner_text()
            assert "FIRING" in golden and "CHANGED" in golden and "org/model" in golden
            # Live traffic: the next poll shows more samples than the first.
            first = page.locator("#summary").inner_text()
            page.wait_for_function(
                "t => document.getElementById('summary').textContent !== t",
                arg=first,
                timeout=15_000,
            )
            assert int(page.locator("#summary").inner_text().split()[0]) > int(first.split()[0])
            page.wait_for_function("document.body.dataset.plots === '10'")
            assert errors == []
            if os.environ.get("REWARDSVC_UPDATE_SCREENSHOT") == "1":
                page.screenshot(path=str(ROOT / "docs" / "dashboard.png"), full_page=True)
        finally:
            browser.close()
