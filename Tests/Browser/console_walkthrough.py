"""An operator's walk through the console in a real headless Chromium (Debian's, through its
chromedriver), against a server the Swift test started with the store simulator.

Reads its plan as JSON from the path in argv[1]: the console's URL, a sign-in, the ids to search
by, the failed notification to retry, the App Store subscription to extend, and where to save
screenshots. Prints one line per step and, last, "N passed, M failed". Exits non-zero on a failure.
"""

import json
import sys
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait


def main():
    with open(sys.argv[1]) as plan_file:
        plan = json.load(plan_file)
    options = Options()
    options.binary_location = plan["chromium"]
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=plan["chromedriver"]), options=options)
    driver.set_page_load_timeout(60)
    base = plan["baseURL"]
    shots = plan["screenshots"]
    passed, failed = 0, 0
    console_errors = []

    def collect_console_errors():
        for entry in driver.get_log("browser"):
            if entry.get("level") == "SEVERE":
                console_errors.append(f'{driver.current_url}: {entry.get("message")}')

    def shot(name):
        driver.save_screenshot(f"{shots}/{name}.png")

    def step(name, action):
        nonlocal passed, failed
        try:
            action()
            collect_console_errors()
            passed += 1
            print(f"ok   {name}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
            try:
                shot(f"failed-{name.replace(' ', '-')}")
            except Exception:
                pass

    def page_left(old_page):
        """Whether the browser has left the page `old_page` is the root of. Selenium's
        `staleness_of` knows only a stale element; Chromium, asked in the middle of the navigation,
        may instead answer that the node no longer belongs to the document, which says the same."""
        try:
            old_page.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise

    def text(selector):
        return driver.find_element(By.CSS_SELECTOR, selector).text

    def submit_and_wait(button, selector):
        """Clicks a submit button and waits for the next page to show `selector`: a click returns
        before the browser has necessarily left the page it was on."""
        old_page = driver.find_element(By.TAG_NAME, "html")
        button.click()
        WebDriverWait(driver, 20).until(lambda _: page_left(old_page))
        WebDriverWait(driver, 20).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, selector)))

    def sign_in():
        driver.get(base + "/console")
        assert driver.current_url.endswith("/console/sign-in"), driver.current_url
        shot("sign-in")
        driver.find_element(By.ID, "name").send_keys(plan["operator"])
        driver.find_element(By.ID, "password").send_keys(plan["password"])
        submit_and_wait(driver.find_element(By.ID, "sign-in"), "nav .who")
        assert driver.current_url.endswith("/console/overview"), driver.current_url
        assert plan["operator"] in text("nav .who")

    def overview():
        driver.get(base + "/console/overview")
        bars = driver.find_elements(By.CSS_SELECTOR, "#states-chart rect")
        assert len(bars) >= 5, "no bars in the states chart"
        lines = driver.find_elements(By.CSS_SELECTOR, "#activity-chart polyline")
        assert len(lines) == 4, f"{len(lines)} activity lines"
        values = [int(v.text) for v in driver.find_elements(By.CSS_SELECTOR, "#states-chart text.value")]
        labels = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#states-chart > text:not(.value)")]
        states = dict(zip(labels, values))
        assert states.get("active", 0) >= 2, f"states: {states}"
        assert states.get("trial", 0) >= 1, f"no trial among the states: {states}"
        assert int(text(".total-new")) >= 3, text("#activity-totals")
        revenue = driver.find_elements(By.CSS_SELECTOR, "#revenue-chart polyline")
        assert len(revenue) >= 1, "no line in the revenue chart"
        usd = float(text(".revenue-USD"))
        assert usd >= 9.99, f"USD revenue: {usd}"
        shot("overview")

    def trial():
        driver.get(base + "/console/customer?id=" + plan["trialCustomer"])
        trials = driver.find_elements(By.CSS_SELECTOR, "#purchases .trial")
        assert trials, text("#purchases")
        billing = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#timeline tr.billing-event")]
        assert any("free trial" in b and "USD 0.00" in b for b in billing), billing
        shot("trial-customer")

    def search(kind, value, expected):
        def run():
            driver.get(base + "/console/customers")
            field = driver.find_element(By.ID, "q")
            field.clear()
            field.send_keys(value)
            Select(driver.find_element(By.ID, "kind")).select_by_value(kind)
            submit_and_wait(driver.find_element(By.CSS_SELECTOR, "#search button"), "h1")
            found = driver.find_elements(By.CSS_SELECTOR, "#customer-id")
            assert found and found[0].text == expected, f"{kind} {value}: {driver.current_url}\n{text('main')}"
        return run

    def timeline():
        rows = driver.find_elements(By.CSS_SELECTOR, "#timeline tbody tr")
        kinds = {row.get_attribute("class") for row in rows}
        assert {"state-change", "billing-event"} <= kinds, kinds
        assert len(driver.find_elements(By.CSS_SELECTOR, "#entitlements tbody tr")) >= 1
        shot("customer")
        submit_and_wait(driver.find_element(By.CSS_SELECTOR, "#timeline a.notification"), "#payload pre")
        payload = text("#payload pre")
        assert "notificationType" in payload or "subscriptionNotification" in payload, payload[:400]
        shot("notification-payload")

    def retry():
        driver.get(base + "/console/notifications?status=failed")
        assert text(".tabs a.current") == "failed", text(".tabs")
        shot("notifications-failed")
        row = [r for r in driver.find_elements(By.CSS_SELECTOR, "#notifications tbody tr")
               if plan["failedNotification"] in r.text]
        assert row, "the failed notification is not listed"
        assert "store-unavailable" in row[0].text, row[0].text
        submit_and_wait(row[0].find_element(By.CSS_SELECTOR, "button"), "#status")
        assert plan["failedNotification"] in driver.current_url
        deadline = time.time() + 30
        while text("#status") != "processed" and time.time() < deadline:
            time.sleep(0.3)
            driver.refresh()
        assert text("#status") == "processed", text("#status")
        assert "retry-notification" in driver.page_source
        shot("notification-retried")

    def extend():
        driver.get(base + "/console/customer?id=" + plan["customer"])
        form = [f for f in driver.find_elements(By.CSS_SELECTOR, "form.extend")
                if plan["extend"] in f.get_attribute("action")][0]
        days = form.find_element(By.NAME, "days")
        days.clear()
        days.send_keys("5")
        submit_and_wait(form.find_element(By.CSS_SELECTOR, "button"), "#confirm")
        assert "Extend the renewal date" in driver.page_source
        shot("extend-confirm")
        submit_and_wait(driver.find_element(By.ID, "confirm"), "#customer-id")
        assert text("#customer-id") == plan["customer"]
        actions = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#timeline tr.operator-action")]
        assert any("extend-renewal-date" in a and "extended" in a for a in actions), actions
        shot("extended")

    step("sign in", sign_in)
    step("overview chart", overview)
    for kind, value in plan["searches"]:
        step(f"search by {kind}", search(kind, value, plan["customer"]))
    step("timeline and payload", timeline)
    step("a trial on the customer page", trial)
    step("retry a failed notification", retry)
    step("extend a renewal date", extend)
    if console_errors:
        failed += 1
        print("FAIL browser console errors:\n" + "\n".join(console_errors), flush=True)
    else:
        passed += 1
        print("ok   no errors in the browser console", flush=True)
    driver.quit()
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
