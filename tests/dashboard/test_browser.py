"""The dashboard in a real headless Chromium, against a whole live system.

Every service runs as a process (plus the dashboard), two scenario files are
applied through the CLI as a user would, and the browser clicks queue → job
→ why. Screenshots land in tests/artifacts/dashboard/ for people (and CI) to
look at.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import SERVICES, running_system
from muster.store import connect

from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

HERE = Path(__file__).parent
SCENARIOS = HERE / "scenarios"
ARTIFACTS = HERE.parent / "artifacts" / "dashboard"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")

if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip(
        "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
        allow_module_level=True,
    )

webdriver = pytest.importorskip("selenium.webdriver", reason="needs the selenium package (test extra)")
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def muster_cli(home: Path, *args: str) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_PREFIX")
    }
    env["MUSTER_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (
        f"muster {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def jobs_now(endpoints: Endpoints) -> dict[str, tuple[str, str | None]]:
    async def read():
        conn = await connect(endpoints.pg_dsn, endpoints.prefix)
        try:
            return await conn.fetch("SELECT name, status, reason FROM jobs")
        finally:
            await conn.close()

    return {r["name"]: (r["status"], r["reason"]) for r in asyncio.run(read())}


@pytest.fixture
def live_dashboard(tmp_path: Path, servers: Endpoints, prefix: str):
    """Every service plus the dashboard on a free port; yields (system, url)."""
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    env = {"MUSTER_CYCLE_INTERVAL": "0.05", "MUSTER_DASHBOARD_PORT": "0"}
    with running_system(settings, services=(*SERVICES, "dashboard"), service_env=env) as system:
        url_file = settings.home / "dashboard.json"
        wait_for(lambda: url_file.exists() or system.check(), what="the dashboard to listen", timeout=30)
        assert not system.check(), f"services exited: {system.check()}; logs in {settings.home / 'logs'}"
        yield system, json.loads(url_file.read_text())["url"]


@pytest.fixture
def browser(tmp_path: Path):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp_path)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1600,1300",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def shoot(driver, name: str, height: int | None = None) -> Path:
    """Save a screenshot; with ``height``, of the page that tall (the whole dashboard in one picture)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    ignore = ARTIFACTS.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    if height:
        driver.set_window_size(driver.get_window_size()["width"], height)
        time.sleep(0.3)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


# The page re-renders a region when its data changes: look elements up again rather than hold them.
FLEETING = (NoSuchElementException, StaleElementReferenceException)


def click(wait: WebDriverWait, css: str) -> None:
    """Click the element ``css`` names, looking it up afresh if a refresh replaced it."""

    def attempt(driver):
        driver.find_element(By.CSS_SELECTOR, css).click()
        return True

    wait.until(attempt, message=f"could not click {css}")


def rows(driver) -> list[str]:
    return [
        r.get_attribute("data-job") for r in driver.find_elements(By.CSS_SELECTOR, "#job-rows tr[data-job]")
    ]


def test_a_person_clicks_from_a_queue_to_a_job_to_its_why_timeline(live_dashboard, browser):
    system, url = live_dashboard
    home = system.settings.home
    muster_cli(home, "apply", "-f", str(SCENARIOS / "busy-cluster.yaml"))
    wait_for(
        lambda: (
            (j := jobs_now(system.endpoints)).get("vision-train", ("",))[0] == "running"
            and j.get("nlp-eval", ("",))[0] == "completed"
            and (j.get("vision-pretrain-xl") or ("", None))[1]
        ),
        what="the first wave to settle",
        timeout=60,
    )

    browser.get(url)
    wait = WebDriverWait(browser, 20, ignored_exceptions=FLEETING)
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-queue="vision"]')))
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".activity .ico.bind")))
    fractions = wait.until(
        lambda d: (
            sorted(e.text for e in d.find_elements(By.CSS_SELECTOR, ".device .seg .frac") if e.text) or None
        )
    )
    assert fractions == ["¼", "½"], "the shared GPU shows each notebook's fraction"
    shoot(browser, "01-overview", height=1750)
    browser.set_window_size(1600, 1300)

    # A second wave while the page is open: it must appear without a reload.
    muster_cli(home, "apply", "-f", str(SCENARIOS / "second-wave.yaml"))
    wait.until(
        lambda d: "running" in d.find_element(By.CSS_SELECTOR, 'tr[data-job="nlp-finetune"]').text,
        message="nlp-finetune shown running without a reload",
    )

    click(wait, '[data-queue="vision"]')
    wait.until(lambda d: d.find_element(By.ID, "queue-filter").is_displayed())
    wait.until(lambda d: sorted(rows(d)) == ["vision-ablation", "vision-pretrain-xl", "vision-train"])
    assert "#queue=vision" in browser.current_url
    shoot(browser, "02-queue-vision")

    click(wait, 'tr[data-job="vision-train"]')
    wait.until(EC.visibility_of_element_located((By.ID, "job-detail")))
    kinds, texts = wait.until(
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "#why li.entry")
            and (
                [
                    e.get_attribute("class").split("k-")[1]
                    for e in d.find_elements(By.CSS_SELECTOR, "#why li.entry")
                ],
                [e.text for e in d.find_elements(By.CSS_SELECTOR, "#why li.entry")],
            )
        )
    )
    assert kinds[-1] == "created" and "bind_requested" in kinds and kinds[0] == "bound", kinds
    assert "submitted to queue vision" in texts[-1] and "pods 0-1 started on gpu-a" in texts[0], texts
    shoot(browser, "03-job-why")

    click(wait, "#close-job")
    wait.until(EC.invisibility_of_element_located((By.ID, "job-detail")))
    click(wait, "#queue-filter")
    browser.find_element(By.ID, "search").send_keys("pretrain")
    wait.until(lambda d: rows(d) == ["vision-pretrain-xl"])
    click(wait, 'tr[data-job="vision-pretrain-xl"]')
    wait.until(lambda d: "does not fit" in d.find_element(By.ID, "job-reason").text)
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#why li.k-waiting").is_displayed())
    shoot(browser, "04-pending-job-why")

    click(wait, "#close-job")
    browser.execute_script("document.getElementById('nodes-title').scrollIntoView()")
    click(wait, '.seg[data-job="nlp-notebook-ana"]')
    wait.until(lambda d: "nlp-notebook-ana" in d.find_element(By.ID, "job-title").text)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".device .cell.hl"))
    click(wait, "#close-job")
    wait.until(EC.invisibility_of_element_located((By.ID, "job-detail")))
    shoot(browser, "05-gpu-map")


def allocated_bar(driver, queue: str) -> tuple[float, float]:
    """The width in pixels of ``queue``'s allocated-GPU bar, and the GPUs its figure says, read together."""
    row = driver.find_element(By.CSS_SELECTOR, f'[data-queue="{queue}"] .bar-row')
    bar = row.find_element(By.CSS_SELECTOR, ".alloc")
    width = driver.execute_script("return arguments[0].getBoundingClientRect().width", bar)  # to the subpixel
    return width, float(row.find_element(By.CSS_SELECTOR, ".fig b").text)


def delete_queue(endpoints: Endpoints, name: str) -> None:
    from muster.sdk import Client

    async def run():
        async with await Client.connect(endpoints) as client:
            answer = await client.delete_queue(name)
            assert type(answer).__name__ == "QueueDeleted", answer

    asyncio.run(run())


@pytest.mark.parametrize("width", [1400, 1920])
def test_the_page_reads_at_common_screen_widths(live_dashboard, browser, width):
    system, url = live_dashboard
    muster_cli(system.settings.home, "apply", "-f", str(SCENARIOS / "busy-cluster.yaml"))
    wait_for(
        lambda: (
            (j := jobs_now(system.endpoints)).get("vision-train", ("",))[0] == "running"
            and j.get("serve-llm", ("",))[0] == "running"
            and j.get("nlp-eval", ("",))[0] == "completed"
            and (j.get("vision-pretrain-xl") or ("", None))[1]
        ),
        what="the cluster to settle",
        timeout=60,
    )
    # A queue deleted under its running job: the job must still be on the page, under a missing queue.
    delete_queue(system.endpoints, "inference")
    browser.set_window_size(width, 1300)
    browser.get(url)
    wait = WebDriverWait(browser, 20, ignored_exceptions=FLEETING)
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-queue="inference"].missing')))
    wait.until(
        EC.presence_of_element_located((By.CSS_SELECTOR, '[data-history-queue="vision"] svg path.alloc'))
    )
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-job="serve-llm"]')))

    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    reason = browser.find_element(By.CSS_SELECTOR, 'tr[data-job="vision-pretrain-xl"] td.why')
    assert "does not fit" in reason.text or "no node" in reason.text, reason.text
    assert reason.rect["width"] >= 240, f"the reason column is {reason.rect['width']} px wide at {width} px"
    assert browser.execute_script("const c = arguments[0]; return c.scrollWidth <= c.clientWidth + 1", reason)
    # One GPU axis for every queue: vision's bar and nlp's are drawn to the same scale.
    (vision_alloc, vision_gpus), (nlp_alloc, nlp_gpus) = (
        allocated_bar(browser, "vision"),
        allocated_bar(browser, "nlp"),
    )
    assert vision_alloc / nlp_alloc == pytest.approx(vision_gpus / nlp_gpus, rel=0.05)
    shoot(browser, f"06-width-{width}", height=2200)
