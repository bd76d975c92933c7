#!/usr/bin/env python3
"""Measures wsrelay against the bundled platform simulator on 127.0.0.1.

Five benchmarks, each reported as the median of several runs: parallel
login IDs (one run's wall time with 1, 10 and 50 login IDs, the simulator
holding each reply a while), one run's cost with a large state (1048
devices on 201 login IDs, a run every simulated minute), quiet runs (48
and 2000 devices on one login ID, nothing due; against a naive Python
relay), the delivery
of 1000 queued events to a file receiver, and `wsrelay check` on
configurations of up to 1 MiB built to be expensive (deep nesting, long
lists, many rules, an alias bomb). Prints Markdown tables and
whether the targets of docs/PERFORMANCE.md were met. Started by
bench/run.sh, which builds wsrelay first; Python's standard library only.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

T0 = 1795000000  # the scenarios' clock at the first run
API_KEY = "BENCH-API-KEY-000000000000000000000000000000"
BENCHMARKS = ("parallel", "size", "quiet", "outbox", "config")

# Alert texts in the platform's wording (see "What an alert says" in
# wsrelay.yaml(5), RULE FILES).
ALARM = "CH1 Upper Limit Exceeded 9.1°C (limit 8.0°C)"
RECOVERY = "CH1 Measurement Recovery 7.4°C"
ALARM_CH2 = "CH2 Upper Limit Exceeded 81.0%RH (limit 80.0%RH)"
BATTERY = "Low Battery Warning"

# Calls to the simulator's control endpoints never go through a proxy.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BenchError(Exception):
    pass


class Sim:
    """One wsrelay-sim process serving `scenario` on 127.0.0.1."""

    def __init__(self, bindir, work, scenario, latency_ms=0):
        os.makedirs(work, exist_ok=True)
        scen_path = os.path.join(work, "scenario.json")
        port_path = os.path.join(work, "sim.port")
        with open(scen_path, "w", encoding="utf-8") as f:
            json.dump(scenario, f, ensure_ascii=False)
        self.log = open(os.path.join(work, "sim.log"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(bindir, "wsrelay-sim"), "--scenario", scen_path, "--port", "0",
             "--port-file", port_path, "--latency", str(latency_ms)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.exists(port_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError("the simulator did not start; see " + self.log.name)
            time.sleep(0.02)
        with open(port_path, encoding="ascii") as f:
            self.url = "http://127.0.0.1:%d" % int(f.read())

    def _call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        with _OPENER.open(urllib.request.Request(self.url + path, data=data), timeout=30) as r:
            return json.load(r)

    def set_clock(self, now):
        self._call("/_sim/clock", {"now": now})

    def stats(self):
        return self._call("/_sim/stats")

    def calls(self):
        """The number of platform calls so far: (current, alert)."""
        totals = self.stats()["totals"].values()
        return sum(t["current"] for t in totals), sum(t["alert"] for t in totals)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Sample:
    """One wsrelay process: wall time, CPU time, peak memory, bytes written."""

    def __init__(self, wall, cpu, rss_kib, written=-1):
        self.wall = wall          # seconds, from start to exit
        self.cpu = cpu            # seconds, user + system
        self.rss_kib = rss_kib    # the largest resident set, KiB
        self.written = written    # bytes passed to write calls (not sockets); -1: unknown


def run_wsrelay(bindir, config, args, log_path, expect=(0,)):
    """Runs `wsrelay -c config ARGS`, its output appended to log_path, and
    measures it with wsrelay-rusage (bench/rusage.c says why not from here)."""
    cmd = [os.path.join(bindir, "wsrelay"), "-c", config] + args
    return run_measured(bindir, cmd, log_path, expect)


def run_measured(bindir, cmd, log_path, expect=(0,)):
    """Runs `cmd` under wsrelay-rusage, its output appended to log_path."""
    usage = log_path + ".rusage"
    with open(log_path, "ab") as log:
        subprocess.run([os.path.join(bindir, "wsrelay-rusage"), usage] + cmd, stdout=log,
                       stderr=log, check=True)
    with open(usage, encoding="ascii") as f:
        wall, cpu, rss_kib, status, written = f.read().split()
    if int(status) not in expect:
        raise BenchError("%s ended with exit status %s; see %s" %
                         (" ".join(cmd), status, log_path))
    return Sample(float(wall), float(cpu), int(rss_kib), int(written))


def device(serial, alerts):
    return {"serial": serial, "model": "TR-72A2", "name": "Bench " + serial,
            "group": {"num": 1, "name": "Bench"},
            "channels": [{"name": "Temperature", "unit": "°C", "value": "4.0"}],
            "alerts": alerts}


def login_id(i):
    return "bench%03d" % i


def scenario(logins):
    """A scenario of login IDs: `logins` is a list of device lists."""
    return {"now": T0, "accounts": [
        {"api_key": API_KEY, "login_id": login_id(i), "login_pass": "pass-%d" % i,
         "devices": devs} for i, devs in enumerate(logins)]}


SIGNALS = False  # --signals: the accounts read current readings every run


def write_config(path, work, sim, n_logins, receiver_path, rules):
    accounts = "".join(
        "  - name: site%03d\n"
        "    base_url: %s\n"
        "    api_key: %s\n"
        "    login_id: %s\n"
        "    login_pass: pass-%d\n"
        "    devices: auto\n"
        "    signals: %s\n" % (i, sim.url, API_KEY, login_id(i), i,
                               "true" if SIGNALS else "false")
        for i in range(n_logins))
    rules_path = os.path.join(work, "rules.yaml")
    with open(rules_path, "w", encoding="utf-8") as f:
        f.write(rules)
    with open(path, "w", encoding="utf-8") as f:
        f.write("state_file: %s\n"
                "catch_up: 1h\n"
                "rules: %s\n"
                "accounts:\n%s"
                "receivers:\n"
                "  - name: sink\n"
                "    file: {path: %s}\n" %
                (os.path.join(work, "state.json"), rules_path, accounts, receiver_path))


CATCH_ALL = "- name: everything\n  receivers: [sink]\n"


def count_events(path):
    """Events in a file receiver's output (one line per event names its kind)."""
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if re.search(r"\) - (ch\d|battery-level|gap)\b", line))


def ms(seconds):
    return "%.0f ms" % (seconds * 1000)


def mib(kib):
    return "%.1f MiB" % (kib / 1024)


def spread(values, fmt):
    return "%s (%s to %s)" % (fmt(statistics.median(values)), fmt(min(values)), fmt(max(values)))


# --- parallel login IDs ---------------------------------------------------------------------

def bench_parallel(bindir, work, repeat, sizes=(1, 10, 50), latencies=(0, 200)):
    """One `wsrelay run` with a fresh state: each login ID lists its devices
    (Get Current Readings), polls one (Get Alert Logs) and reads the latest
    readings of that device for its alarm's trend (Get Latest Data)."""
    print("## Parallel login IDs\n")
    print("One `wsrelay run --now T` with a new state: each login ID makes a discovery "
          "call, one alert call, then one latest-data call for its alarm's trend. "
          "Median of %d runs (lowest to highest).\n" % repeat)
    print("| latency | login IDs | platform calls | wall time | CPU (user+sys) | max in flight |")
    print("|---:|---:|---:|---|---|---:|")
    results = {}
    for latency in latencies:
        for n in sizes:
            samples, in_flight = [], []
            for r in range(repeat):
                d = os.path.join(work, "parallel-%d-%d-%d" % (latency, n, r))
                logins = [[device("%04d%04d" % (i, k),
                                  [{"unixtime": T0 - 100 - k, "ch1": ALARM}])
                           for k in range(2)] for i in range(n)]
                with Sim(bindir, d, scenario(logins), latency) as sim:
                    config = os.path.join(d, "wsrelay.yaml")
                    sink = os.path.join(d, "sink.txt")
                    write_config(config, d, sim, n, sink, CATCH_ALL)
                    samples.append(run_wsrelay(bindir, config, ["run", "--now", str(T0)],
                                               os.path.join(d, "wsrelay.log")))
                    current, alert = sim.calls()
                    stats = sim.stats()
                    latest = sum(t["latest-data"] for t in stats["totals"].values())
                    in_flight.append(stats["max_in_flight"])
                if (current, alert, latest) != (n, n, n) or count_events(sink) != n:
                    raise BenchError("%s: expected %d discovery, %d alert and %d latest-data "
                                     "calls and %d events, got %d, %d, %d and %d" %
                                     (d, n, n, n, n, current, alert, latest,
                                      count_events(sink)))
            results[(latency, n)] = (statistics.median(s.wall for s in samples),
                                     statistics.median(in_flight))
            print("| %d ms | %d | %d | %s | %s | %g |" %
                  (latency, n, 3 * n, spread([s.wall for s in samples], ms),
                   ms(statistics.median(s.cpu for s in samples)),
                   statistics.median(in_flight)))
    print()
    return results


# --- one run's cost at size ----------------------------------------------------------------

BIG_DEVICES = 48     # on the first login ID
SMALL_LOGINS = 200   # further login IDs ...
SMALL_DEVICES = 5    # ... of this many devices each

WARM_STEP = 5        # simulated minutes between the runs that fill the state

SIZE_RULES = """\
- name: alarms
  match: {event: alarm}
  receivers: [sink]
  severity: critical
  throttle: 30m
- name: everything-else
  receivers: [sink]
"""


def full_log(serial):
    """A device's full log: 20 entries, one every 5 minutes up to T0,
    alarms and recoveries in turn, a battery warning in every fourth."""
    alerts = []
    for j in range(20):
        a = {"unixtime": T0 - 300 * j, "ch1": ALARM if j % 2 == 0 else RECOVERY}
        if j % 4 == 0:
            a["battery-level"] = BATTERY
        alerts.append(a)
    return device(serial, alerts)


def fleet_files(path):
    """The fleet files beside the state file at `path` (src/state/fleetfile.c)."""
    folder, base = os.path.split(path)
    return [os.path.join(folder, name) for name in os.listdir(folder or ".")
            if name.startswith(base + ".fleet-") and name[len(base) + 7:].isdigit()]


def fleet_ref(path):
    """The fleet file the state file at `path` names and its committed length,
    or (None, 0) for a state kept in one file."""
    with open(path, encoding="utf-8") as f:
        ref = json.load(f).get("fleet")
    return ("%s.fleet-%d" % (path, ref["generation"]), ref["length"]) if ref else (None, 0)


def whole_state(path):
    """The state as one document, as version 1 kept it in one file: the state
    file with the fleet file's base and records applied, entry by entry."""
    with open(path, encoding="utf-8") as f:
        st = json.load(f)
    fleet, length = fleet_ref(path)
    st.pop("fleet", None)
    if fleet:
        with open(fleet, "rb") as f:
            for line in f.read(length).decode("utf-8").splitlines():
                for name, entries in json.loads(line).items():
                    st.setdefault(name, {}).update(entries)
    for name, at in st.pop("discovered", {}).items():
        if name in st.get("accounts", {}):
            st["accounts"][name]["discovered_at"] = at
    return st


def state_bytes(path):
    """The bytes of the state: its file and the committed part of its fleet file."""
    return os.path.getsize(path) + fleet_ref(path)[1]


def copy_state(src, dst):
    """Copies the state at `src` (its file, its fleet files, its directory of
    device files) to `dst`, replacing what was there, without the quiet file."""
    for extra in [dst + ".quiet", dst + ".d"] + fleet_files(dst):
        if os.path.isdir(extra):
            shutil.rmtree(extra)
        elif os.path.exists(extra):
            os.unlink(extra)
    shutil.copyfile(src, dst)
    for fleet in fleet_files(src):
        shutil.copyfile(fleet, dst + fleet[len(src):])
    if os.path.isdir(src + ".d"):
        shutil.copytree(src + ".d", dst + ".d")


def state_summary(path):
    """The state file's size and what it holds (see src/state/section.h for its form);
    seen keys are counted in the journal and in the devices' files of PATH.d, once each."""
    st = whole_state(path)
    keys = {serial: set(k) for serial, k in st.get("seen", {}).items()}
    files = path + ".d"
    for name in os.listdir(files) if os.path.isdir(files) else []:
        if name.endswith(".json"):
            with open(os.path.join(files, name), encoding="utf-8") as f:
                doc = json.load(f)
            keys.setdefault(doc["serial"], set()).update(doc.get("seen", {}))
    seen = sum(len(k) for k in keys.values())
    ledger = sum(len(login.get(op, {}).get("calls", []))
                 for login in st.get("logins", {}).values() for op in ("alert", "current"))
    return {"bytes": state_bytes(path), "seen": seen,
            "throttles": len(st.get("throttles", [])), "outbox": len(st.get("outbox", [])),
            "ledger": ledger}


def unpolled(bindir, config, now):
    """The number of devices that `wsrelay status` says were never polled."""
    status = subprocess.run([os.path.join(bindir, "wsrelay"), "-c", config, "status",
                             "--json", "--now", str(now)], capture_output=True, check=False)
    report = json.loads(status.stdout)
    return sum(1 for lg in report["logins"] for dev in lg["devices"] if not dev["last_poll"])


def bench_size(bindir, work, minutes, warm_hours):
    """Runs every WARM_STEP simulated minutes for `warm_hours` fill the
    state (every device polled, seen keys, throttles, the budget ledger of
    those hours); then a run every simulated minute is measured, grouped by
    the platform calls it made."""
    logins = [[full_log("%04d%04d" % (0, k)) for k in range(BIG_DEVICES)]]
    logins += [[full_log("%04d%04d" % (i, k)) for k in range(SMALL_DEVICES)]
               for i in range(1, SMALL_LOGINS + 1)]
    n_logins = len(logins)
    n_devices = BIG_DEVICES + SMALL_LOGINS * SMALL_DEVICES
    d = os.path.join(work, "size")
    print("## One run's cost at size\n")
    with Sim(bindir, d, scenario(logins)) as sim:
        config = os.path.join(d, "wsrelay.yaml")
        sink = os.path.join(d, "sink.txt")
        log = os.path.join(d, "wsrelay.log")
        state = os.path.join(d, "state.json")
        write_config(config, d, sim, n_logins, sink, SIZE_RULES)
        warm = []
        now = T0 - WARM_STEP * 60
        # The runs of `warm_hours`, then more until every device was polled
        # (with signals, the 48 devices' first polls take 6 calls an hour).
        while len(warm) < warm_hours * 60 // WARM_STEP or unpolled(bindir, config, now):
            if len(warm) > (warm_hours + 8) * 60 // WARM_STEP:
                raise BenchError("devices still not polled after %d runs" % len(warm))
            now += WARM_STEP * 60
            sim.set_clock(now)
            warm.append(run_wsrelay(bindir, config, ["run", "--now", str(now)], log))
        kinds = {}  # (discovery calls, alert calls) -> samples
        every = []
        for _ in range(minutes):
            now += 60
            sim.set_clock(now)
            before = sim.calls()
            s = run_wsrelay(bindir, config, ["run", "--now", str(now)], log)
            calls = tuple(a - b for a, b in zip(sim.calls(), before))
            kinds.setdefault(calls, []).append(s)
            every.append(s)
        summary = state_summary(state)
        stats = sim.stats()
    if stats["rejected_429"]:
        raise BenchError("the simulator refused %d calls (429)" % stats["rejected_429"])
    print("%d login IDs: one with %d devices, %d with %d each (%d devices), each device with "
          "a full log of 20 entries; a rule with a throttle. %d runs, one every %d simulated "
          "minutes (%g hours), filled the state and polled every device; then a run every "
          "simulated minute for %d minutes was measured, grouped by the platform calls it "
          "made. No latency.\n" %
          (n_logins, BIG_DEVICES, SMALL_LOGINS, SMALL_DEVICES, n_devices, len(warm),
           WARM_STEP, len(warm) * WARM_STEP / 60, minutes))
    print("| discovery calls | alert calls | runs | wall time | CPU (user+sys) | max RSS |")
    print("|---:|---:|---:|---|---|---|")
    for (current, alert), samples in sorted(kinds.items()):
        print("| %d | %d | %d | %s | %s | %s |" %
              (current, alert, len(samples), spread([s.wall for s in samples], ms),
               spread([s.cpu for s in samples], ms),
               mib(statistics.median(s.rss_kib for s in samples))))
    total_cpu = sum(s.cpu for s in every)
    current = sum(c * len(v) for (c, _), v in kinds.items()) / n_logins
    alert = sum(a * len(v) for (_, a), v in kinds.items()) / n_logins
    print()
    print("- Every minute for %d minutes (%g discovery and %g alert calls per login ID): %s "
          "CPU in all, %s per run on average; the largest RSS %s." %
          (minutes, current, alert, ms(total_cpu), ms(total_cpu / len(every)),
           mib(max(s.rss_kib for s in every))))
    print("- The state file: %d bytes (%d seen keys, %d throttle entries, %d calls in the "
          "budget ledger, %d outbox items)." %
          (summary["bytes"], summary["seen"], summary["throttles"], summary["ledger"],
           summary["outbox"]))
    print("- The %d runs that filled it: wall time %s, CPU %s (median).\n" %
          (len(warm), ms(statistics.median(s.wall for s in warm)),
           ms(statistics.median(s.cpu for s in warm))))
    return {"cpu_per_run": total_cpu / len(every), "cpu_max": max(s.cpu for s in every),
            "rss_kib": max(s.rss_kib for s in every), "state_bytes": summary["bytes"]}


# --- the runs that make no call, or only the readings call ---------------------------------

QUIET_SIZES = (48, 2000)  # devices on one login ID


def json_floor(bindir, sim, work, state, now):
    """json-c's own cost on the login's Get Current Readings reply (fetched
    once more at `now`, a time whose window has room) and on the state
    file: [(label, (bytes, parse, serialise, free ms))]."""
    reply = os.path.join(work, "current-reply.json")
    sim.set_clock(now)
    body = json.dumps({"api-key": API_KEY, "login-id": login_id(0),
                       "login-pass": "pass-0"}).encode()
    request = urllib.request.Request(sim.url + "/v1/devices/current", data=body, headers={
        "Content-Type": "application/json", "X-HTTP-Method-Override": "GET"})
    with _OPENER.open(request, timeout=30) as r, open(reply, "wb") as f:
        f.write(r.read())
    out = subprocess.run([os.path.join(bindir, "wsrelay-jsonfloor"), reply, state],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    rows = []
    for label, line in zip(("Get Current Readings reply", "state file"), out):
        size, parse, serialise, free = line.split()
        rows.append((label, (int(size), float(parse), float(serialise), float(free))))
    return rows


def restore(saved, state):
    """Puts the state saved as `saved` back at `state` (copy_state)."""
    copy_state(saved, state)


def bench_quiet(bindir, work, repeat):
    """The runs wsrelay makes most: one login ID of N devices whose state
    knows every device (each polled once, its 20 entries seen), then runs
    with nothing due. Without signals such a run makes no platform call;
    with signals it makes its one Get Current Readings call and finds
    nothing new. The state is filled by runs an hour apart (each makes the
    hour's calls), so 2000 devices take about 190 runs. Then a run that
    polls one device (--look on the reserve) from that same state each
    time. The baseline is bench/naive_relay.py: Python reading the same
    state as one file, deciding that nothing is due and saving it again."""
    print("## Quiet runs\n")
    print("One login ID of N devices, each polled once (a full log of 20 entries seen), "
          "then runs with nothing due: without signals they make no platform call, with "
          "signals one Get Current Readings call that finds nothing new; and a run that "
          "polls one device (`--look`) and finds nothing new. The naive Python relay "
          "(`bench/naive_relay.py`) reads the same state as one JSON file, decides that no "
          "call is due and saves it. *Written*: the bytes the run passed to write calls "
          "(files and pipes, not sockets; `bench/rusage.c`); *state*: the bytes of the state "
          "file and of the fleet file it names. Median of %d runs (min to max).\n" % repeat)
    print("| devices | run | platform calls | wall time | CPU (user+sys) | max RSS | written | "
          "state |")
    print("|---:|---|---|---|---|---|---:|---:|")
    result = {}
    floors = []
    global SIGNALS
    for n in QUIET_SIZES:
        d = os.path.join(work, "quiet-%d" % n)
        logins = [[full_log("5%03d%04d" % (n % 1000, k)) for k in range(n)]]
        with Sim(bindir, d, scenario(logins)) as sim:
            sink = os.path.join(d, "sink.txt")
            log = os.path.join(d, "wsrelay.log")
            state = os.path.join(d, "state.json")
            configs = {}
            for signals in (False, True):
                SIGNALS = signals
                configs[signals] = os.path.join(d, "wsrelay-%s.yaml" % signals)
                write_config(configs[signals], d, sim, 1, sink, CATCH_ALL)
            SIGNALS = False
            now = T0
            runs = 0
            while True:
                sim.set_clock(now)
                run_wsrelay(bindir, configs[False], ["run", "--now", str(now)], log)
                runs += 1
                if runs % 10 == 0 and not unpolled(bindir, configs[False], now):
                    break
                if runs > n // 8 + 40:
                    raise BenchError("%d devices still not all polled after %d runs" % (n, runs))
                now += 3700  # the previous run's calls have left the window
            last = now
            rows = []
            for signals, label in ((False, "no call due"),
                                   (True, "readings, every device uploaded since the last run")):
                samples, calls = [], set()
                for k in range(repeat):
                    # Before the routine's next slot (0.9 spacing after the last
                    # alert call: 294 s, 540 s with signals); readings runs a
                    # minute apart, as readings are read at most once a minute.
                    now = last + 200 + 60 * k if signals else last + 30 + 40 * k
                    sim.set_clock(now)
                    before = sim.calls()
                    samples.append(run_wsrelay(bindir, configs[signals],
                                               ["run", "--now", str(now)], log))
                    calls.add(tuple(a - b for a, b in zip(sim.calls(), before)))
                rows.append((label, calls, samples))
            # A readings run that finds nothing new at all: no device has
            # uploaded since the run before (the simulator's readings carry
            # its clock, so the clock stays at that run's time), and the run
            # comes a minute later, well before a device could be silent.
            # From the same state each time.
            read = os.path.join(d, "read-state.json")
            copy_state(state, read)
            seen_at = max(w["t"] for w in whole_state(state)["watch"].values())
            samples, calls = [], set()
            for k in range(repeat):
                restore(read, state)
                sim.set_clock(seen_at)
                before = sim.calls()
                samples.append(run_wsrelay(bindir, configs[True],
                                           ["run", "--now", str(seen_at + 60)], log))
                calls.add(tuple(a - b for a, b in zip(sim.calls(), before)))
            restore(read, state)
            rows.append(("readings, nothing new", calls, samples))
            # A run that polls one device and finds nothing new: `--look`
            # on the call the budget keeps in reserve, from the same state
            # each time (restored before each run), a minute after the
            # state's last run (an earlier time would be a clock that went
            # back, which the state corrects). The simulator's clock
            # moves an hour on between them so that its own limit has room.
            polled = os.path.join(d, "polled-state.json")
            copy_state(state, polled)
            samples, calls = [], set()
            for k in range(repeat):
                restore(polled, state)
                sim.set_clock(seen_at + 60 + 3700 * (k + 1))
                before = sim.calls()
                samples.append(run_wsrelay(bindir, configs[False], [
                    "run", "--now", str(seen_at + 60), "--look", "5%03d%04d" % (n % 1000, n - 1)],
                    log))
                calls.add(tuple(a - b for a, b in zip(sim.calls(), before)))
            copy_state(polled, state)
            rows.append(("one device polled (--look), nothing new", calls, samples))
            size = state_bytes(state)
            # The naive relay, and json-c alone, read the state as one
            # document, as a relay written the obvious way would keep it.
            whole = os.path.join(d, "whole-state.json")
            with open(whole, "w", encoding="utf-8") as f:
                json.dump(whole_state(state), f, separators=(",", ":"), ensure_ascii=False)
            floors.append((n, json_floor(bindir, sim, d, whole, last + 3700 * (repeat + 2))))
            naive = [run_measured(bindir, [sys.executable, os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "naive_relay.py"), whole,
                os.path.join(d, "naive-state.json"), str(last + 60)], log)
                for _ in range(repeat)]
            rows.append(("naive Python relay, no call due", {(0, 0)}, naive))
        for label, calls, samples in rows:
            shown = ", ".join("%d readings + %d alert" % c for c in sorted(calls))
            print("| %d | %s | %s | %s | %s | %s | %d | %d |" %
                  (n, label, shown, spread([x.wall for x in samples], ms),
                   spread([x.cpu for x in samples], ms),
                   mib(statistics.median(x.rss_kib for x in samples)),
                   statistics.median(x.written for x in samples), size))
            result[(n, label)] = samples
    print()
    print("What json-c alone costs on the same inputs (`wsrelay-jsonfloor`: one document "
          "parsed, serialised again and freed in a fresh process, CPU):\n")
    print("| devices | document | bytes | parse | serialise | free |")
    print("|---:|---|---:|---|---|---|")
    for n, rows in floors:
        for label, (size, parse, serialise, free) in rows:
            print("| %d | %s | %d | %.1f ms | %.1f ms | %.1f ms |" %
                  (n, label, size, parse, serialise, free))
    print()
    return result


# --- delivery of a full outbox -------------------------------------------------------------

OUTBOX_LOGINS = 50
OUTBOX_ENTRIES = 10  # per device, each with ch1 and ch2: 1000 events in all


def bench_outbox(bindir, work, repeat):
    """A first run queues 1000 events while the receiver's directory is
    missing; each measured run starts from that state and delivers them all
    (no platform call is due a minute later)."""
    d = os.path.join(work, "outbox")
    logins = [[device("%04d%04d" % (i, 0),
                      [{"unixtime": T0 - 60 * j, "ch1": ALARM, "ch2": ALARM_CH2}
                       for j in range(OUTBOX_ENTRIES)])] for i in range(OUTBOX_LOGINS)]
    events = OUTBOX_LOGINS * OUTBOX_ENTRIES * 2
    print("## Delivery of a full outbox\n")
    print("%d events queued for one `file` receiver (in messages of 100), delivered in one "
          "run that makes no platform call. Median of %d runs (lowest to highest).\n" %
          (events, repeat))
    with Sim(bindir, d, scenario(logins)) as sim:
        config = os.path.join(d, "wsrelay.yaml")
        sink_dir = os.path.join(d, "out")
        sink = os.path.join(sink_dir, "sink.txt")
        log = os.path.join(d, "wsrelay.log")
        state = os.path.join(d, "state.json")
        write_config(config, d, sim, OUTBOX_LOGINS, sink, CATCH_ALL)
        run_wsrelay(bindir, config, ["run", "--now", str(T0)], log, expect=(1,))
        queued = state_summary(state)
        if queued["outbox"] != events:
            raise BenchError("%d events queued, not %d" % (queued["outbox"], events))
        copy_state(state, state + ".queued")
        os.makedirs(sink_dir)
        sim.set_clock(T0 + 60)
        before = sim.calls()
        samples = []
        for _ in range(repeat):
            copy_state(state + ".queued", state)
            if os.path.exists(sink):
                os.remove(sink)
            samples.append(run_wsrelay(bindir, config, ["run", "--now", str(T0 + 60)], log))
            if count_events(sink) != events or state_summary(state)["outbox"]:
                raise BenchError("the run did not deliver all %d events; see %s" % (events, log))
        if sim.calls() != before:
            raise BenchError("the delivery runs called the platform")
    print("| events | state file before | wall time | CPU (user+sys) | max RSS | events/s (CPU) |")
    print("|---:|---:|---|---|---|---:|")
    cpu = statistics.median(s.cpu for s in samples)
    print("| %d | %d bytes | %s | %s | %s | %.0f |\n" %
          (events, queued["bytes"], spread([s.wall for s in samples], ms),
           spread([s.cpu for s in samples], ms),
           mib(statistics.median(s.rss_kib for s in samples)), events / cpu))
    return cpu


# --- configurations built to be expensive ----------------------------------------------------

CONFIG_ACCOUNT = ("  - name: a\n    base_url: http://127.0.0.1:9\n    api_key: k\n"
                  "    login_id: l\n    login_pass: p\n")
CONFIG_RECEIVER = "receivers:\n  - {name: c, file: {path: \"-\"}}\n"


def config_cases():
    """(what, file name, text, extra files {name: text}, expected exit status);
    the files refused (2) are refused for what their name says (NESTED,
    REPEATED)."""
    cases = []
    for n in (1000, 10000, 100000):
        cases.append(("%d '[' nested" % n, "deep%d.yaml" % n, "[" * n, {}, 2))
    cases.append(("400,000 block lists nested ('- - - ...')", "block.yaml", "- " * 400000 + "x\n",
                  {}, 2))
    cases.append(("37,000 devices in one account", "devices.yaml",
                  CONFIG_RECEIVER + "accounts:\n" + CONFIG_ACCOUNT + "    devices:\n" +
                  "".join("    - {serial: %08d}\n" % i for i in range(37000)), {}, 0))
    cases.append(("18,000 receivers, each a default receiver", "receivers.yaml",
                  "accounts:\n" + CONFIG_ACCOUNT + "receivers:\n" +
                  "".join("  - {name: r%05d, file: {path: \"-\"}}\n" % i for i in range(18000)) +
                  "default_receivers:\n" + "".join("  - r%05d\n" % i for i in range(18000)),
                  {}, 0))
    cases.append(("30,000 rules in one rule file", "rules.yaml",
                  "rules: many.rules\naccounts:\n" + CONFIG_ACCOUNT + CONFIG_RECEIVER,
                  {"many.rules": "".join("- {name: r%05d, receivers: c}\n" % i
                                         for i in range(30000))}, 0))
    cases.append(("37,000 webhook headers", "headers.yaml",
                  "accounts:\n" + CONFIG_ACCOUNT + "receivers:\n  - name: h\n    webhook:\n"
                  "      url: https://hooks.example.org/x\n      headers:\n" +
                  "".join("        X-H%05d: v\n" % i for i in range(37000)), {}, 0))
    cases.append(("200,000 aliases of one glob", "aliases.yaml",
                  CONFIG_RECEIVER + "accounts:\n" + CONFIG_ACCOUNT + "    include: [&g \"5*\", " +
                  ", ".join(["*g"] * 200000) + "]\n", {}, 0))
    cases.append(("alias bomb: 20,000 aliases of an account of 20,000 devices", "bomb.yaml",
                  CONFIG_RECEIVER + "accounts:\n" + CONFIG_ACCOUNT.replace("- ", "- &a\n    ", 1) +
                  "    devices:\n" + "".join("    - {serial: %08d}\n" % i for i in range(20000)) +
                  "  - *a\n" * 20000, {}, 2))
    return cases


NESTED = "nested more than 64 levels deep"
REPEATED = "the aliases repeat more than"


def bench_config(bindir, work, repeat):
    """`wsrelay check` on each configuration of config_cases."""
    d = os.path.join(work, "config")
    os.makedirs(d)
    print("## Reading hostile configurations\n")
    print("`wsrelay check` on files of up to 1 MiB built to be expensive: each is read or "
          "refused in time linear in its size. Median of %d runs (lowest to highest).\n" % repeat)
    print("| configuration | size | exit | wall time | CPU (user+sys) | max RSS |")
    print("|---|---:|---:|---|---|---|")
    worst = 0.0
    for what, name, text, extra, expect in config_cases():
        for extra_name, extra_text in extra.items():
            with open(os.path.join(d, extra_name), "w", encoding="ascii") as f:
                f.write(extra_text)
        config = os.path.join(d, name)
        with open(config, "w", encoding="ascii") as f:
            f.write(text)
        os.chmod(config, 0o600)
        log = os.path.join(d, name + ".log")
        samples = [run_wsrelay(bindir, config, ["check"], log, expect=(expect,))
                   for _ in range(repeat)]
        if expect:
            with open(log, encoding="utf-8", errors="replace") as f:
                said = f.read()
            if (REPEATED if "bomb" in name else NESTED) not in said:
                raise BenchError("%s was refused for another reason; see %s" % (name, log))
        cpu = statistics.median(s.cpu for s in samples)
        worst = max(worst, cpu)
        print("| %s | %d bytes | %d | %s | %s | %s |" %
              (what, len(text) + sum(len(t) for t in extra.values()), expect,
               spread([s.wall for s in samples], ms), spread([s.cpu for s in samples], ms),
               mib(statistics.median(s.rss_kib for s in samples))))
    print()
    return worst


# --- targets -------------------------------------------------------------------------------

def quiet_targets(quiet):
    """Issue 12's targets for the runs wsrelay makes most, from bench_quiet."""
    rows = []
    med = statistics.median
    for n in QUIET_SIZES:
        run = quiet.get((n, "no call due"))
        naive = quiet.get((n, "naive Python relay, no call due"))
        if run:
            cpu, rss = med(x.cpu for x in run), med(x.rss_kib for x in run)
            rows.append(("%d devices: a run with no call due costs at most 3 ms CPU and 4 MiB" % n,
                         "%s, %s" % (ms(cpu), mib(rss)), cpu <= 0.003 and rss <= 4 * 1024))
            if naive:
                ratio = med(x.cpu for x in naive) / max(cpu, 1e-4)
                rows.append(("%d devices: at least 20 times less CPU than the naive Python relay"
                             % n, "%.0f times" % ratio, ratio >= 20))
    readings = quiet.get((2000, "readings, nothing new"))
    if readings:
        cpu = med(x.cpu for x in readings)
        rows.append(("2000 devices on one login ID: a readings run that finds nothing new costs "
                     "at most 40 ms CPU", ms(cpu), cpu <= 0.040))
        # What it changes (the ledger, the login's health, the discovery
        # time) is a few KB of the state file; a run that rewrote the
        # devices' sections would write the whole 1 MB.
        written = med(x.written for x in readings)
        rows.append(("2000 devices on one login ID: a readings run that finds nothing new writes "
                     "at most 16 KiB", "%d bytes" % written, 0 <= written <= 16 * 1024))
    looked = quiet.get((2000, "one device polled (--look), nothing new"))
    if looked:
        written = med(x.written for x in looked)
        rows.append(("2000 devices on one login ID: a run that polls one device writes at most "
                     "16 KiB", "%d bytes" % written, 0 <= written <= 16 * 1024))
    uploaded = quiet.get((2000, "readings, every device uploaded since the last run"))
    if uploaded:
        rows.append(("2000 devices on one login ID: a readings run after every device uploaded "
                     "(no target; for comparison)", ms(med(x.cpu for x in uploaded)), None))
    return rows


def targets(parallel, size, outbox, config=None, quiet=None):
    """The targets of docs/PERFORMANCE.md: (statement, measured, met)."""
    rows = []
    if parallel and (200, 1) in parallel and (200, 50) in parallel:
        one, fifty = parallel[(200, 1)][0], parallel[(200, 50)][0]
        rows.append(("200 ms latency: 50 login IDs take at most 1.5 times as long as one",
                     "%.2f times (%s against %s)" % (fifty / one, ms(fifty), ms(one)),
                     fifty <= 1.5 * one))
        rows.append(("200 ms latency: the calls of all 50 login IDs are in flight at once",
                     "%g at once" % parallel[(200, 50)][1], parallel[(200, 50)][1] == 50))
    if size:
        rows.append(("1048 devices, 201 login IDs: a run every minute costs at most 400 ms CPU "
                     "on average", ms(size["cpu_per_run"]), size["cpu_per_run"] <= 0.4))
        rows.append(("1048 devices, 201 login IDs: no run takes more than 1 s CPU",
                     ms(size["cpu_max"]), size["cpu_max"] <= 1.0))
        rows.append(("1048 devices, 201 login IDs: at most 128 MiB resident",
                     mib(size["rss_kib"]), size["rss_kib"] <= 128 * 1024))
        rows.append(("1048 devices, 201 login IDs: the state file under 4 MiB",
                     "%d bytes" % size["state_bytes"], size["state_bytes"] < 4 << 20))
    if quiet:
        rows += quiet_targets(quiet)
    if outbox is not None:
        rows.append(("1000 queued events reach a file receiver in at most 500 ms CPU",
                     ms(outbox), outbox <= 0.5))
    if config is not None:
        rows.append(("any configuration of at most 1 MiB is checked or refused in at most 1 s CPU",
                     "%s at worst" % ms(config), config <= 1.0))
    print("## Targets\n")
    print("| target | measured | met |")
    print("|---|---|---|")
    for statement, measured, met in rows:
        print("| %s | %s | %s |" % (statement, measured,
                                    "—" if met is None else "yes" if met else "**no**"))
    missed = sum(1 for row in rows if row[2] is False)
    print("\n%s\n" % ("Every target met." if not missed else
                      "%d target%s missed: run again on a quiet machine before drawing "
                      "conclusions." % (missed, "" if missed == 1 else "s")))


# --- the machine -----------------------------------------------------------------------------

def machine(bindir, root, work):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    debian = "unknown"
    if os.path.exists("/etc/debian_version"):
        with open("/etc/debian_version", encoding="ascii") as f:
            debian = f.read().strip()
    version = subprocess.run([os.path.join(bindir, "wsrelay"), "--version"],
                             capture_output=True, text=True, check=False).stdout.strip()
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    print("# wsrelay benchmark\n")
    print("- %s%s, build %s" % (version, " (commit %s)" % commit if commit else "", bindir))
    fs = subprocess.run(["stat", "-f", "-c", "%T", work], capture_output=True, text=True,
                        check=False).stdout.strip()
    print("- %d CPUs (nproc), %s; Debian %s; kernel %s" %
          (len(os.sched_getaffinity(0)), cpu, debian, os.uname().release))
    print("- states and logs in %s (file system %s)" % (work, fs or "unknown"))
    print("- load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the build directory (wsrelay, wsrelay-sim)")
    ap.add_argument("--work", required=True, help="an empty directory for scenarios and states")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (default 5)")
    ap.add_argument("--signals", action="store_true",
                    help="accounts with signals (readings every run); default: round robin, "
                         "as the figures of docs/PERFORMANCE.md were measured")
    ap.add_argument("--minutes", type=int, default=60,
                    help="measured minutes of the size benchmark (default 60)")
    ap.add_argument("--warm-hours", type=int, default=4,
                    help="simulated hours of runs that fill the size benchmark's state "
                         "(default 4, enough to poll every device; 24 for a full day of "
                         "budget ledger)")
    ap.add_argument("--only", choices=BENCHMARKS, action="append",
                    help="run only this benchmark (may be repeated)")
    opt = ap.parse_args()
    global SIGNALS
    SIGNALS = opt.signals
    bindir = os.path.abspath(opt.build)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    chosen = opt.only or BENCHMARKS
    started = time.monotonic()
    parallel = size = outbox = config = quiet = None
    try:
        machine(bindir, root, opt.work)
        if "parallel" in chosen:
            parallel = bench_parallel(bindir, opt.work, opt.repeat)
        if "size" in chosen:
            size = bench_size(bindir, opt.work, opt.minutes, opt.warm_hours)
        if "quiet" in chosen:
            quiet = bench_quiet(bindir, opt.work, opt.repeat)
        if "outbox" in chosen:
            outbox = bench_outbox(bindir, opt.work, opt.repeat)
        if "config" in chosen:
            config = bench_config(bindir, opt.work, opt.repeat)
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    targets(parallel, size, outbox, config, quiet)
    print("Done in %.0f s; load average at the end: %.2f %.2f %.2f." %
          ((time.monotonic() - started,) + os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
