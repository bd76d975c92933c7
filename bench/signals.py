#!/usr/bin/env python3
"""How late an alert reaches a person: wsrelay on a simulated day.

Generates a day of readings and alert-log entries for N devices on one login
ID (seeded, so every run of the same options plays the same day), serves it
with wsrelay-sim, runs `wsrelay run --now T` every simulated minute with a
file receiver that writes one line per event, and measures, per alert-log
entry, delivery minus the time the entry says it happened; per alarm and
recovery, the first notification (the entry, or an early warning made from
the readings) minus the crossing; and what it cost in platform calls.
Prints one Markdown row per run (docs/PERFORMANCE.md, "Signals: how late an
alert reaches a person"). Python's standard library only.

The day, per device (one measurement a minute; see gen_device):
- a level and noise by type: freezer -80 +- 0.3, fridge 5 +- 0.4, room
  22 +- 0.5 (some rooms with a humidity channel, 45 +- 2), with upper and
  lower limits;
- an upload every 1 to 10 minutes (its own interval) carrying the latest
  measurement: the simulator's readings, `at` the upload, `unixtime` the
  measurement;
- a few excursions (door left open, compressor failure): the value ramps
  beyond a limit for 10 to 90 minutes and comes back; the platform's
  monitoring of the minute measurements logs an alarm at the first one
  beyond and a recovery at the first one back inside;
- now and then a sensor error (the value reads "Sensor Error" for a while),
  a battery falling to 2 with a low-battery entry, or uploads that stop for
  30 to 90 minutes (a communication error about 20 minutes after the last
  upload, a recovery when they resume);
- every entry is logged (logged_at) at the first upload that shows it, plus
  0 to 60 s; a quarter of the devices speak Japanese.

Usage: bench/signals.py [--devices N] [--seed S] [--hours H] [--limits]
       [--signals on|off] [--keep DIR] [--json] [--build DIR] [--no-header]
"""

import argparse
import bisect
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

D0 = 1795000000          # the simulated day starts here (the first run)
HISTORY_MIN = 120        # minutes of readings before the day
DRAIN_MAX_MIN = 8 * 60   # runs after the day until every entry is delivered, at most
LOGIN = "bench001"
PASS = "bench-pass"
API_KEY = "BENCH-API-KEY-000000000000000000000000000000"

# Device types: level, noise (the "+-": two standard deviations), limits,
# and how far an excursion goes beyond its limit.
TYPES = {
    "freezer": {"level": -80.0, "noise": 0.3, "upper": -70.0, "lower": -90.0, "over": 4.0,
                "name": "Freezer", "jname": "冷凍庫"},
    "fridge": {"level": 5.0, "noise": 0.4, "upper": 8.0, "lower": 2.0, "over": 1.5,
               "name": "Fridge", "jname": "冷蔵庫"},
    "room": {"level": 22.0, "noise": 0.5, "upper": 28.0, "lower": 15.0, "over": 1.5,
             "name": "Room", "jname": "保管室"},
}
HUMIDITY = {"level": 45.0, "noise": 2.0, "upper": 70.0, "lower": 20.0, "over": 5.0}

# What the platform writes (the phrases src/alerttext.c reads).
EN = {"upper": "CH{ch} Upper Limit Exceeded {v}{u} (limit {lim}{u})",
      "lower": "CH{ch} Lower Limit Exceeded {v}{u} (limit {lim}{u})",
      "recovery": "CH{ch} Measurement Recovery {v}{u}",
      "sensor": "CH{ch} Sensor Error",
      "battery": "Low Battery Warning",
      "comm": "Communication Error",
      "comm-back": "Communication Recovery"}
JA = {"upper": "CH{ch} 上限値警報 {v}{u} (上限 {lim}{u})",
      "lower": "CH{ch} 下限値警報 {v}{u} (下限 {lim}{u})",
      "recovery": "CH{ch} 正常復帰 {v}{u}",
      "sensor": "CH{ch} センサエラー",
      "battery": "電池残量低下",
      "comm": "通信エラー",
      "comm-back": "通信復帰"}

# The categories of log entries that the results are broken down by.
CATEGORIES = ("alarm", "recovery", "sensor-error", "sensor-recovery", "battery",
              "comm-error", "comm-recovery")

# One line per event; fields separated by tabs (the template's own text,
# which escaping leaves alone). `channel` is the early warnings' channel
# when wsrelay gives one; the other members are in every event.
TEMPLATE = ("{{#events}}\n"
            "EV\t{{id}}\t{{kind}}\t{{state}}\t{{unixtime}}\t{{serial}}\t{{channel}}\t"
            "{{channel_name}}\n"
            "{{/events}}\n")

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BenchError(Exception):
    pass


# --- the day ---------------------------------------------------------------------------

class Entry:
    """One kind of one alert-log entry, as the platform logs it."""

    def __init__(self, serial, kind, cat, unixtime, text, channel=0, episode=None):
        self.serial, self.kind, self.cat = serial, kind, cat
        self.unixtime, self.text, self.channel = unixtime, text, channel
        self.episode = episode  # (start, end) of the excursion for alarm and recovery
        self.logged_at = None

    @property
    def id(self):
        return "%s/%d/%s" % (self.serial, self.unixtime, self.kind)


def fmt(v):
    return "%.1f" % v


def place(rng, taken, lo, hi, length, gap=20):
    """A start minute in [lo, hi - length] whose span keeps `gap` minutes
    from the spans in `taken`, or None."""
    for _ in range(50):
        if hi - length <= lo:
            return None
        s = rng.randint(lo, hi - length)
        if all(s + length + gap <= a or b + gap <= s for a, b in taken):
            taken.append((s, s + length))
            return s
    return None


def excursion_shape(rng, kind, level, limit, over, start, dur):
    """Knots (minute, value) of a trapezoid that crosses `limit` at `start`
    and comes back inside at start + dur, with linear ramps from the level."""
    sign = 1 if kind == "upper" else -1
    peak = limit + sign * over * rng.uniform(0.4, 2.0)
    ramp_in = rng.randint(3, 15)     # minutes from the level to the limit
    ramp_out = rng.randint(3, 20)    # from the limit back to the level
    k1 = max(1, min(dur // 3, rng.randint(2, 10)))
    k2 = max(1, min(dur // 3, rng.randint(2, 10)))
    return [(start - ramp_in, level), (start, limit), (start + k1, peak),
            (start + dur - k2, peak), (start + dur, limit), (start + dur + ramp_out, level)]


def shape_at(knots, m):
    """The shape's offset from the level at minute m (0 outside)."""
    if m <= knots[0][0] or m >= knots[-1][0]:
        return None
    for (a, va), (b, vb) in zip(knots, knots[1:]):
        if a <= m <= b:
            return va + (vb - va) * (m - a) / (b - a) if b > a else vb
    return None


def gen_device(rng, i, n_min, ev_lo, ev_hi, hours):
    """One device: its scenario record, its log entries and its true limits.
    Minutes are counted from D0; measurements run from -HISTORY_MIN to
    n_min."""
    serial = "5214%04d" % (1000 + i)
    tname = ("freezer", "fridge", "room")[rng.randrange(3)]
    t = TYPES[tname]
    japanese = rng.random() < 0.25
    texts = JA if japanese else EN
    unit_text = "℃" if japanese else "°C"
    chans = [{"name": "温度" if japanese else "Temperature", "unit": "°C", "p": t,
              "tunit": unit_text}]
    if tname == "room" and rng.random() < 0.6:
        chans.append({"name": "湿度" if japanese else "Humidity", "unit": "%RH", "p": HUMIDITY,
                      "tunit": "%RH"})
    phase = rng.randint(0, 59)               # seconds past the minute it measures
    interval = rng.randint(1, 10)            # minutes between uploads
    offset = rng.randrange(interval)
    delay = rng.randint(2, 20)               # seconds from measurement to upload

    # Episodes: excursions, and now and then a sensor error, a battery
    # running low, or uploads that stop. They do not overlap.
    taken = []
    excursions = []  # (channel index, "upper"/"lower", start, dur)
    n_exc = max(0, round(rng.randint(1, 4) * hours / 24.0))
    for _ in range(n_exc):
        dur = rng.randint(10, 90)
        s = place(rng, taken, ev_lo + 20, ev_hi - 30, dur + 40)
        if s is None:
            continue
        ci = 1 if len(chans) > 1 and rng.random() < 0.3 else 0
        kind = "upper" if tname != "fridge" or rng.random() < 0.75 else "lower"
        excursions.append((ci, kind, s + 20, dur))
    sensor = None
    if rng.random() < 0.2 * max(1.0, hours / 24.0):
        dur = rng.randint(5, 60)
        s = place(rng, taken, ev_lo, ev_hi, dur)
        if s is not None:
            sensor = (rng.randrange(len(chans)), s, dur)
    comm = None
    if rng.random() < 0.2:
        dur = rng.randint(30, 90)
        s = place(rng, taken, ev_lo, ev_hi, dur + 10)
        if s is not None:
            comm = (s, dur)
    battery_low = rng.randint(ev_lo, ev_hi) if rng.random() < 0.15 else None

    # Measurements, one a minute.
    m0 = -HISTORY_MIN
    shapes = []
    for ci, kind, s, dur in excursions:
        p = chans[ci]["p"]
        shapes.append((ci, excursion_shape(rng, kind, p["level"], p[kind], p["over"], s, dur)))
    values = []   # per minute: list of per-channel values (float or "Sensor Error")
    for m in range(m0, n_min + 1):
        row = []
        for ci, c in enumerate(chans):
            p = c["p"]
            v = p["level"] + rng.gauss(0, p["noise"] / 2)
            for sci, knots in shapes:
                if sci == ci:
                    sv = shape_at(knots, m)
                    if sv is not None:
                        v = sv + rng.gauss(0, p["noise"] / 4)
            if sensor and sensor[0] == ci and sensor[1] <= m < sensor[1] + sensor[2]:
                v = "Sensor Error"
            row.append(v)
        values.append(row)

    def mtime(m):
        return D0 + 60 * m + phase

    def battery_at(m):
        if battery_low is None or m < battery_low - 180:
            return 5
        if m < battery_low - 90:
            return 4
        if m < battery_low:
            return 3
        return 2

    # Uploads: every `interval` minutes, the latest measurement; none
    # while communication is lost.
    uploads = []   # (at, minute measured)
    for m in range(m0, n_min + 1):
        if (m - m0) % interval != offset:
            continue
        if comm and comm[0] <= m < comm[0] + comm[1]:
            continue
        uploads.append((mtime(m) + delay, m))
    upload_ats = [a for a, _ in uploads]
    readings = []
    for at, m in uploads:
        readings.append({"at": at, "unixtime": mtime(m),
                         "values": [v if isinstance(v, str) else fmt(v) for v in values[m - m0]],
                         "battery": battery_at(m)})

    # The platform's monitoring of the measurements.
    entries = []
    for ci, c in enumerate(chans):
        p, ch = c["p"], ci + 1
        state = "normal"
        alarm_at = None
        for m in range(0, n_min + 1):
            v = values[m - m0][ci]
            t_m = mtime(m)
            kw = {"ch": ch, "u": c["tunit"]}
            if isinstance(v, str):
                if state != "error":
                    entries.append(Entry(serial, "ch%d" % ch, "sensor-error", t_m,
                                         texts["sensor"].format(**kw), ch))
                    state = "error"
                continue
            if state == "error":
                entries.append(Entry(serial, "ch%d" % ch, "sensor-recovery", t_m,
                                     texts["recovery"].format(v=fmt(v), **kw), ch))
                state = "normal"
            beyond = "upper" if v > p["upper"] else "lower" if v < p["lower"] else None
            if state == "normal" and beyond:
                entries.append(Entry(serial, "ch%d" % ch, "alarm", t_m,
                                     texts[beyond].format(v=fmt(v), lim=fmt(p[beyond]), **kw), ch))
                state, alarm_at = "alarm", entries[-1]
            elif state == "alarm" and not beyond:
                e = Entry(serial, "ch%d" % ch, "recovery", t_m,
                          texts["recovery"].format(v=fmt(v), **kw), ch)
                e.episode = alarm_at.episode = (alarm_at.unixtime, t_m)
                entries.append(e)
                state = "normal"
    if battery_low is not None:
        entries.append(Entry(serial, "battery-level", "battery", mtime(battery_low),
                             texts["battery"]))
    for e in entries:
        # logged at the first upload that shows it, plus up to a minute
        k = bisect.bisect_left(upload_ats, e.unixtime)
        e.logged_at = (upload_ats[k] if k < len(upload_ats) else D0 + 60 * (n_min + 10)) + \
            rng.randint(0, 60)
    if comm:
        last = [a for a in upload_ats if a < mtime(comm[0])][-1]
        e = Entry(serial, "communication-status", "comm-error", last + 20 * 60 + rng.randint(-60, 60),
                  texts["comm"])
        e.logged_at = e.unixtime + rng.randint(0, 60)
        entries.append(e)
        back = upload_ats[bisect.bisect_left(upload_ats, mtime(comm[0] + comm[1]))]
        e = Entry(serial, "communication-status", "comm-recovery", back, texts["comm-back"])
        e.logged_at = back + rng.randint(0, 60)
        entries.append(e)

    # One log entry per unixtime, with each kind it carries.
    by_time = {}
    for e in entries:
        rec = by_time.setdefault(e.unixtime, {"unixtime": e.unixtime, "logged_at": e.logged_at})
        if e.kind in rec:
            raise BenchError("two %s entries of %s at %d" % (e.kind, serial, e.unixtime))
        rec[e.kind] = e.text
        rec["logged_at"] = max(rec["logged_at"], e.logged_at)
    for e in entries:
        e.logged_at = by_time[e.unixtime]["logged_at"]
    # Yesterday's excursion of each channel, as the log of a device in use
    # holds: older than catch_up, so never sent (and not measured), but
    # its alarm text states the limit, as a first poll finds.
    for ci, c in enumerate(chans):
        p, ch = c["p"], ci + 1
        kw = {"ch": ch, "u": c["tunit"]}
        t_old = D0 - 20 * 3600 - 600 * ci + phase
        by_time[t_old] = {"unixtime": t_old, "logged_at": t_old,
                          "ch%d" % ch: texts["upper"].format(v=fmt(p["upper"] + p["over"]),
                                                            lim=fmt(p["upper"]), **kw)}
        by_time[t_old + 1800] = {"unixtime": t_old + 1800, "logged_at": t_old + 1800,
                                 "ch%d" % ch: texts["recovery"].format(v=fmt(p["level"]), **kw)}
    name = "%s %d" % (t["jname"] if japanese else t["name"], i + 1)
    first = values[0]  # the static fields: the first measurement
    record = {"serial": serial, "model": "TR-72wb" if len(chans) > 1 else "TR-71wb",
              "name": name, "group": {"num": 1, "name": "Lab"}, "time_diff": 540,
              "battery": 5, "rssi": "",
              "channels": [{"name": c["name"], "unit": c["unit"],
                            "value": v if isinstance(v, str) else fmt(v)}
                           for c, v in zip(chans, first)],
              "alerts": sorted(by_time.values(), key=lambda r: r["unixtime"]),
              "readings": readings}
    limits = [{"serial": serial, "channel": ci + 1, "upper": c["p"]["upper"],
               "lower": c["p"]["lower"]} for ci, c in enumerate(chans)]
    info = {"serial": serial, "type": tname, "channels": len(chans), "japanese": japanese,
            "interval": interval, "excursions": len(excursions), "sensor_error": bool(sensor),
            "comm_loss": bool(comm), "battery_low": battery_low is not None}
    return record, entries, limits, info


def gen_day(n_devices, seed, hours):
    rng = random.Random("%d/%d/%g" % (seed, n_devices, hours))
    n_min = int(hours * 60) + DRAIN_MAX_MIN
    warm = min(60, int(hours * 15))
    tail = min(100, int(hours * 15))
    devices, entries, limits, infos = [], [], [], []
    for i in range(n_devices):
        rec, ents, lims, info = gen_device(rng, i, n_min, warm, int(hours * 60) - tail, hours)
        devices.append(rec)
        entries += ents
        limits += lims
        infos.append(info)
    scenario = {"now": D0, "accounts": [{"api_key": API_KEY, "login_id": LOGIN,
                                         "login_pass": PASS, "devices": devices}]}
    return scenario, entries, limits, infos


# --- driving wsrelay ---------------------------------------------------------------------

class Sim:
    def __init__(self, bindir, work, scenario):
        scen_path = os.path.join(work, "scenario.json")
        port_path = os.path.join(work, "sim.port")
        with open(scen_path, "w", encoding="utf-8") as f:
            json.dump(scenario, f, ensure_ascii=False, separators=(",", ":"))
        self.log = open(os.path.join(work, "sim.log"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(bindir, "wsrelay-sim"), "--scenario", scen_path, "--port", "0",
             "--port-file", port_path], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError("the simulator did not start; see " + self.log.name)
            time.sleep(0.02)
        with open(port_path, encoding="ascii") as f:
            self.url = "http://127.0.0.1:%d" % int(f.read())

    def call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        with _OPENER.open(urllib.request.Request(self.url + path, data=data), timeout=30) as r:
            return json.load(r)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wsrelay_keys(bindir):
    out = subprocess.run([os.path.join(bindir, "wsrelay"), "keys"], capture_output=True,
                         text=True, check=True).stdout
    return {line.split(" ", 1)[0] for line in out.splitlines() if line and line[0] != " "}


def write_config(path, work, sim_url, limits, signals):
    template = os.path.join(work, "events.txt")
    with open(template, "w", encoding="utf-8") as f:
        f.write(TEMPLATE)
    # Incidents off: the benchmarks measure when each alert-log entry
    # reaches a person, and an entry that joins an incident pages nobody.
    lines = ["state_file: %s" % os.path.join(work, "state.json"),
             "catch_up: 2h",
             "incidents: {enabled: false}",
             "accounts:",
             "  - name: lab",
             "    base_url: %s" % sim_url,
             "    api_key: %s" % API_KEY,
             "    login_id: %s" % LOGIN,
             "    login_pass: %s" % PASS,
             "    devices: auto"]
    if signals == "off":
        lines.append("    signals: false")
    if limits:
        lines.append("    limits:")
        for lim in limits:
            lines.append("      - {serial: \"%s\", channel: %d, upper: %s, lower: %s}" %
                         (lim["serial"], lim["channel"], lim["upper"], lim["lower"]))
    lines += ["receivers:",
              "  - name: sink",
              "    file: {path: %s, template: %s}" % (os.path.join(work, "events.log"),
                                                       template)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the key
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def read_events(f, now, delivered):
    """New lines of the receiver's file: each event with its delivery time."""
    for line in f.read().splitlines():
        if not line.startswith("EV\t"):
            continue
        parts = line.split("\t")
        parts += [""] * (8 - len(parts))
        delivered.append({"id": parts[1], "kind": parts[2], "state": parts[3],
                          "unixtime": int(parts[4]) if parts[4].lstrip("-").isdigit() else 0,
                          "serial": parts[5], "channel": parts[6], "channel_name": parts[7],
                          "at": now})


def drive(bindir, work, scenario, entries, limits, signals, hours):
    sim = Sim(bindir, work, scenario)
    try:
        config = os.path.join(work, "wsrelay.yaml")
        write_config(config, work, sim.url, limits, signals)
        check = subprocess.run([os.path.join(bindir, "wsrelay"), "-c", config, "check"],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise BenchError("wsrelay check failed:\n" + check.stdout + check.stderr)
        sink = os.path.join(work, "events.log")
        open(sink, "a").close()
        log = open(os.path.join(work, "wsrelay.log"), "ab")
        delivered = []
        wanted = {e.id for e in entries}
        runs = 0
        day_end = D0 + int(hours * 60) * 60
        with open(sink, encoding="utf-8") as f:
            now = D0
            while True:
                sim.call("/_sim/clock", {"now": now})
                log.write(b"### run %d\n" % now)
                log.flush()
                status = subprocess.run([os.path.join(bindir, "wsrelay"), "-c", config, "run",
                                         "--now", str(now)], stdout=log, stderr=log).returncode
                runs += 1
                if status not in (0, 1):
                    raise BenchError("wsrelay run --now %d ended with %d; see %s" %
                                     (now, status, log.name))
                read_events(f, now, delivered)
                now += 60
                if now >= day_end:
                    wanted -= {d["id"] for d in delivered}
                    if not wanted or now >= day_end + DRAIN_MAX_MIN * 60:
                        break
        log.close()
        stats = sim.call("/_sim/stats")
    finally:
        sim.stop()
    return delivered, stats, runs


# --- measuring ---------------------------------------------------------------------------

def summary(values):
    """mean, p50, p95, max of a list of minutes (None when empty)."""
    if not values:
        return None
    v = sorted(values)

    def q(p):
        return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]

    return {"n": len(v), "mean": statistics.mean(v), "p50": q(0.5), "p95": q(0.95),
            "max": v[-1]}


def reading_channel(ev):
    """The channel of an early warning, when it says which (a `channel`
    member, or a channel number in its id); None when it does not."""
    if ev["channel"].strip().isdigit():
        return int(ev["channel"])
    tail = ev["id"].rsplit("/", 1)[-1].lower()
    for token in (tail, ev["id"].lower()):
        k = token.find("ch")
        if k >= 0 and token[k + 2:k + 3].isdigit():
            return int(token[k + 2:k + 3])
    return None


def measure(entries, delivered, stats):
    first_at = {}
    count = {}
    for d in delivered:
        count[d["id"]] = count.get(d["id"], 0) + 1
        first_at.setdefault(d["id"], d["at"])
    by_cat = {c: [] for c in CATEGORIES}
    missed = {c: 0 for c in CATEGORIES}
    latencies = []
    for e in entries:
        if e.id in first_at:
            lat = (first_at[e.id] - e.unixtime) / 60.0
            by_cat[e.cat].append(lat)
            latencies.append(lat)
        else:
            missed[e.cat] += 1
    entry_ids = {e.id for e in entries}
    duplicates = sum(n - 1 for i, n in count.items() if n > 1 and i in entry_ids)

    # Early warnings: kind "reading", matched to the crossing they announce.
    warnings = [d for d in delivered if d["kind"] == "reading"]
    alarms = [e for e in entries if e.cat == "alarm"]
    recoveries = [e for e in entries if e.cat == "recovery"]
    first_notice = {"alarm": [], "recovery": []}
    for e in alarms + recoveries:
        best = first_at.get(e.id)
        lo, hi = e.episode if e.episode else (e.unixtime, e.unixtime + 3600)
        if e.cat == "alarm":
            win = (lo - 600, hi)
        else:
            win = (hi - 600, hi + 3600)
        want = "alarm" if e.cat == "alarm" else "recovered"
        for w in warnings:
            ch = reading_channel(w)
            if (w["serial"] == e.serial and w["state"] == want and
                    (ch is None or ch == e.channel) and win[0] <= w["unixtime"] <= win[1]):
                if best is None or w["at"] < best:
                    best = w["at"]
        if best is not None:
            first_notice[e.cat].append((best - e.unixtime) / 60.0)
    unfollowed = 0
    for w in warnings:
        if w["state"] != "alarm":
            continue
        ch = reading_channel(w)
        if not any(a.serial == w["serial"] and (ch is None or ch == a.channel) and
                   abs(a.unixtime - w["unixtime"]) <= 900 for a in alarms):
            unfollowed += 1
    login = stats["totals"].get(LOGIN, {})
    return {
        "entries": len(entries),
        "log_latency_min": summary(latencies),
        "platform_logged_min": summary([(e.logged_at - e.unixtime) / 60.0 for e in entries]),
        "log_latency_by_category_min": {c: summary(by_cat[c]) for c in CATEGORIES},
        "missed": sum(missed.values()),
        "missed_by_category": missed,
        "duplicates": duplicates,
        "first_notice_min": summary(first_notice["alarm"] + first_notice["recovery"]),
        "first_notice_alarm_min": summary(first_notice["alarm"]),
        "first_notice_recovery_min": summary(first_notice["recovery"]),
        "early_warnings": len(warnings),
        "early_warnings_without_alarm": unfollowed,
        "gap_events": sum(1 for d in delivered if d["kind"] == "gap"),
        "alert_calls_per_hour_max": stats["max_alert_calls_per_hour"].get(LOGIN, 0),
        "alert_calls": login.get("alert", 0),
        "current_calls": login.get("current", 0),
        "rejected_429": stats["rejected_429"],
    }


def mm(s, key):
    return "-" if s is None else "%.0f" % s[key]


HEADER = ("| devices | signals | limits | log entry mean / p95 (min) | first notice mean / p95 "
          "(min) | duplicates | missed | alert calls/h max | 429s | warnings without alarm |\n"
          "|---:|---|---|---|---|---:|---:|---:|---:|---:|")


def row(n, signals, limits, r):
    lat, fn = r["log_latency_min"], r["first_notice_min"]
    return "| %d | %s | %s | %s / %s | %s / %s | %d | %d | %d | %d | %d |" % (
        n, signals, "configured" if limits else "none", mm(lat, "mean"), mm(lat, "p95"),
        mm(fn, "mean"), mm(fn, "p95"), r["duplicates"], r["missed"],
        r["alert_calls_per_hour_max"], r["rejected_429"], r["early_warnings_without_alarm"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--limits", action="store_true",
                    help="configure each device's limits (accounts[].limits)")
    ap.add_argument("--signals", choices=("on", "off"), default="on",
                    help="off writes accounts[].signals: false; on writes nothing")
    ap.add_argument("--keep", metavar="DIR", help="keep scenario, config, state and logs here")
    ap.add_argument("--json", action="store_true", help="print a JSON summary instead")
    ap.add_argument("--no-header", action="store_true", help="print the table row only")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "build"),
                    help="where wsrelay and wsrelay-sim are (default: build/)")
    args = ap.parse_args()
    if args.devices < 1 or args.hours <= 0:
        ap.error("--devices must be at least 1 and --hours above 0")
    bindir = os.path.abspath(args.build)
    for prog in ("wsrelay", "wsrelay-sim"):
        if not os.access(os.path.join(bindir, prog), os.X_OK):
            ap.error("no %s in %s (build first, or give --build)" % (prog, bindir))
    keys = wsrelay_keys(bindir)
    has_signals = "accounts[].signals" in keys
    if args.limits and "accounts[].limits" not in keys:
        ap.error("this wsrelay has no accounts[].limits key (see `wsrelay keys`)")
    if args.signals == "off" and not has_signals:
        ap.error("this wsrelay has no accounts[].signals key (see `wsrelay keys`)")
    signals = args.signals if has_signals else "round robin"

    started = time.monotonic()
    scenario, entries, limits, infos = gen_day(args.devices, args.seed, args.hours)
    work = args.keep or tempfile.mkdtemp(prefix="wsrelay-signals-")
    os.makedirs(work, exist_ok=True)
    ok = False
    try:
        with open(os.path.join(work, "truth.json"), "w", encoding="utf-8") as f:
            json.dump({"devices": infos, "entries": [
                {"id": e.id, "category": e.cat, "unixtime": e.unixtime,
                 "logged_at": e.logged_at, "text": e.text} for e in entries]},
                f, ensure_ascii=False, indent=1)
        delivered, stats, runs = drive(bindir, work, scenario, entries,
                                       limits if args.limits else None, args.signals,
                                       args.hours)
        result = measure(entries, delivered, stats)
        result.update({"devices": args.devices, "seed": args.seed, "hours": args.hours,
                       "signals": signals, "limits": args.limits, "runs": runs,
                       "wall_s": round(time.monotonic() - started, 1)})
        if args.keep:
            with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
            with open(os.path.join(work, "delivered.json"), "w", encoding="utf-8") as f:
                json.dump(delivered, f, indent=0)
        if args.json:
            print(json.dumps(result, indent=1))
        else:
            if not args.no_header:
                print(HEADER)
            print(row(args.devices, signals, args.limits, result))
        sys.stdout.flush()
        print("signals.py: %d devices, %d entries, %d runs, %.0f s; %s" %
              (args.devices, len(entries), runs, time.monotonic() - started,
               "kept in " + work if args.keep else "work dir removed"), file=sys.stderr)
        ok = True
    finally:
        if not args.keep:
            if ok:
                shutil.rmtree(work, ignore_errors=True)
            else:
                print("signals.py: kept %s for a look" % work, file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print("signals.py: %s" % exc, file=sys.stderr)
        sys.exit(1)
