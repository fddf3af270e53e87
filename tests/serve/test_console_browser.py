"""The live console in a real browser: headless Chromium driven by Selenium with Debian's chromium-driver.

The service runs in the test's event loop (uvicorn on a free loopback port); the browser is
driven from a worker thread, so the server keeps answering while the test waits on the page.
The browser is closed and the server stopped at the end, whatever happened.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from _serve_support import TOKEN

POWER_OFF = [{"kind": "memory_search", "query": "phone charger habit"},
             {"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
             {"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
             {"kind": "finish", "summary": "phone is off"}]


def _browser(profile: Path) -> Any:
    webdriver = pytest.importorskip("selenium.webdriver")
    driver_path = shutil.which("chromedriver")
    browser = next((b for b in (shutil.which("chromium"), shutil.which("chromium-browser")) if b), None)
    if driver_path is None or browser is None:
        pytest.skip("chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--user-data-dir={profile}", "--window-size=1100,900", "--no-first-run"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def _deny_in_the_console(driver: Any, url: str, shot: Path) -> dict[str, Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 20)
    driver.get(url + "/")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "owner").clear()
    driver.find_element(By.ID, "owner").send_keys("alice")
    driver.find_element(By.ID, "apps").send_keys("power,notes")
    driver.find_element(By.ID, "open").click()
    wait.until(lambda d: d.find_element(By.ID, "state").text == "idle")
    driver.find_element(By.ID, "request").send_keys("check the phone, then turn it off")
    driver.find_element(By.ID, "send").click()
    wait.until(lambda d: any("get_device_info" in li.text for li in d.find_elements(By.CSS_SELECTOR, "#log li.step")))
    deny = wait.until(ec.element_to_be_clickable((By.ID, "deny")))
    question = driver.find_element(By.ID, "question").text
    driver.save_screenshot(str(shot))
    deny.click()
    end = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#log li.end")))
    wait.until(lambda d: d.find_element(By.ID, "state").text == "idle")
    memories = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#log .memory")]
    console = driver.current_window_handle
    end.find_element(By.CSS_SELECTOR, "button.replay").click()  # the finished run's HTML replay
    wait.until(lambda d: len(d.window_handles) == 2)
    driver.switch_to.window(next(h for h in driver.window_handles if h != console))
    wait.until(lambda d: "power_off" in d.find_element(By.TAG_NAME, "body").text)
    replay = driver.find_element(By.TAG_NAME, "body").text
    driver.close()
    driver.switch_to.window(console)
    return {"question": question, "stop": end.get_attribute("data-stop"), "end": end.text, "memories": memories,
            "replay": replay,
            "steps": [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li.step")],
            "dialog_open": driver.execute_script("return document.getElementById('dialog').open"),
            "request": driver.find_element(By.CSS_SELECTOR, "#log li.request").text,
            "injected": len(driver.find_elements(By.ID, "injected"))}


@pytest.mark.slow
async def test_the_console_denies_a_destructive_call_and_the_phone_stays_on(make_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory
    from pocketpilot.serve import MemoryBinding

    service = "svc-token-0123456789"
    store = SqliteMemory(tmp_path / "memory.db", AccessPolicy(service, "admin-token-0123456789"))
    store.write(Caller.service(service, acting_for="alice"),
                MemoryCandidate(content="Alice charges her phone overnight <img id=injected src=x>", tier="long_term",
                                provenance=Provenance(source="user_statement")))
    try:
        async with make_server(memory=MemoryBinding(store, service)) as served:
            served.scripts.scripts["default"] = POWER_OFF  # the console asks for the service's default model
            driver = await asyncio.to_thread(_browser, tmp_path / "profile")
            shot = Path(os.environ.get("POCKETPILOT_CONSOLE_SHOT", tmp_path / "console.png"))
            try:
                seen = await asyncio.to_thread(_deny_in_the_console, driver, served.url, shot)
            finally:
                await asyncio.to_thread(driver.quit)
            (sid,) = served.app.state.registry._sessions
            assert served.phone(sid).state.device.powered_on
    finally:
        store.close()
    assert seen["question"] == "power_off is destructive: allow?"
    assert seen["stop"] == "denied" and "not confirmed" in seen["end"]
    assert any("get_device_info" in s for s in seen["steps"])
    assert any("power_off" in s and "confirmation_denied" in s for s in seen["steps"])
    assert not seen["dialog_open"]
    assert seen["request"] == "you: check the phone, then turn it off"
    assert seen["injected"] == 0 and "<img id=injected src=x>" in seen["memories"][0]  # data is text, never markup
    assert shot.stat().st_size > 10_000
    assert len(seen["memories"]) == 1 and "charges her phone" in seen["memories"][0]
    assert "user_statement" in seen["memories"][0]  # shown with its provenance
    notices = [line for s in seen["steps"] for line in s.splitlines() if line.startswith("notice: ")]
    assert notices and not any("[object Object]" in n for n in notices)  # a trace's notice is {policy, code, text}
    assert "power_off" in seen["replay"] and "denied" in seen["replay"]


ASK = [{"kind": "ask_user", "question": "Which Anna: Anna Berg or Anna Lind?"},
       {"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
       {"kind": "finish", "summary": "told Anna Lind"}]


def _answer_in_the_console(driver: Any, url: str) -> dict[str, Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 20)
    driver.get(url + "/")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "apps").send_keys("power,notes")
    driver.find_element(By.ID, "open").click()
    wait.until(lambda d: d.find_element(By.ID, "state").text == "idle")
    driver.find_element(By.ID, "request").send_keys("tell Anna I am late")
    driver.find_element(By.ID, "send").click()
    box = wait.until(ec.visibility_of_element_located((By.ID, "answer")))
    asked = {"question": driver.find_element(By.ID, "question").text,
             "confirm_buttons": driver.find_element(By.ID, "allow").is_displayed(),
             "state": driver.find_element(By.ID, "state").text}
    box.send_keys("Anna Lind")
    driver.find_element(By.ID, "answer-send").click()
    wait.until(lambda d: [li.get_attribute("data-stop") for li in d.find_elements(By.CSS_SELECTOR, "#log li.end")]
               == ["ask_user", "finish"])
    wait.until(lambda d: d.find_element(By.ID, "state").text == "idle")
    return {**asked, "requests": [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li.request")],
            "steps": [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li.step")],
            "answers": [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li.answer")],
            "runs": len(driver.find_elements(By.CSS_SELECTOR, "#log li.run")),
            "dialog_open": driver.execute_script("return document.getElementById('dialog').open")}


@pytest.mark.slow
async def test_the_console_answers_a_question_and_the_run_goes_on(make_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    async with make_server() as served:
        served.scripts.scripts["default"] = ASK
        driver = await asyncio.to_thread(_browser, tmp_path / "profile")
        try:
            seen = await asyncio.to_thread(_answer_in_the_console, driver, served.url)
        finally:
            await asyncio.to_thread(driver.quit)
        (sid,) = served.app.state.registry._sessions
        session = served.app.state.registry._sessions[sid]
        assert session.turns == 2 and session.last_stop == "finish" and not session.board.pending()
    assert seen["question"] == "The agent asks: Which Anna: Anna Berg or Anna Lind?"
    assert not seen["confirm_buttons"] and seen["state"] == "waiting"  # a question, not a confirmation
    assert seen["requests"] == ["you: tell Anna I am late", "you: Anna Lind"]  # the answer is the next turn
    assert seen["answers"] and "Anna Lind" in seen["answers"][0]
    assert seen["runs"] == 2 and any("get_device_info" in s for s in seen["steps"])
    assert not seen["dialog_open"]
