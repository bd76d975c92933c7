#!/usr/bin/env python3
"""Realistic days: how late an alarm reaches a person, measured honestly.

The days of bench/signals.py are kind to a relay: steps, one channel's
noise, every device standalone. This script makes days like the ones
users have (issue 23), serves them with wsrelay-sim, runs `wsrelay run
--now T` every simulated minute with a file receiver, and measures what a
person gets and what it cost. Python's standard library only; it reuses
signals.py's driver pieces.

The day (seeded: the same options play the same day; see gen_day):
- N devices on one login ID. A third are standalone (TR-7 style: they
  measure every minute, upload every 1 to 10 minutes, and the platform logs
  their alarm 5 to 40 s after the measurement). Two thirds are remote
  units (RTR501B/RTR503B style) behind base units of 2 to 5: a base unit
  uploads the latest reading of all its remote units together every 10
  minutes, and checks them for warnings at its own monitoring interval (1,
  2 or 5 minutes, a setting apart from the upload): the platform logs a
  remote unit's alarm at that monitoring tick, often before any upload
  shows it; a short alarm (a 4-minute humidity excursion) may never be in
  an upload at all.
- Channels with their own limits: freezers (-80 °C, -90/-70), fridges
  (5 °C, 2/8), rooms (22 °C, 15/28) and a humidity channel on most rooms
  (45 %RH, 25/70).
- Noise, one shape per channel: normal, uniform (a fridge's 5 °C ± 1),
  quantised (0.5 °C or 1 %RH steps) or drifting (a slow swing of hours).
- Excursions that ramp at 0.05 to 0.5 °C a minute (0.3 to 3 %RH; short
  humidity ones faster) from the level to a peak 0.3 to 4 beyond the
  limit, stay 0 to 60 minutes and ramp back; the platform's monitoring
  logs an alarm at the first sample beyond the limit and a recovery at the
  first one back inside (a noisy crossing logs more pairs, as the platform
  would). Rates: `realistic` one excursion per device every two days,
  `heavy` three a device a day (Poisson, so some get none, some more).
- Sensor errors (5 to 60 minutes of "Sensor Error"), low batteries, a
  standalone device's uploads stopping, a base unit losing its link (its
  remote units' uploads and warnings stop; a communication error on each
  about 20 minutes after the last upload, a recovery at the next upload).
- Each device's past in its log: for most channels an alarm and its
  recovery one to six days before, whose text states the limit, so that a
  first poll learns it (older than catch_up: never delivered, not measured).

Usage:
  bench/realistic.py [--devices N] [--seed S] [--rate realistic|heavy]
                     [--limits] [--hours H] [--noise SHAPE] [--json] [--keep DIR]
                     [--build DIR]
  bench/realistic.py --matrix [--sizes 12,48] [--configs none,limits]
                     [--rates realistic,heavy] [--seeds 1,2] [--jobs 2]
  bench/realistic.py --self-test [--build DIR]
"""

import argparse
import bisect
import concurrent.futures
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import signals  # noqa: E402  (the simulator, the config, the receiver's lines)
from signals import D0, LOGIN, EN, JA, Entry, BenchError, fmt  # noqa: E402

DRAIN_MAX_MIN = 8 * 60   # runs after the day until every entry is delivered, at most
HISTORY_MIN = 120        # minutes of readings before the day
TUNING_SEEDS = (1, 2)
REPORT_SEEDS = (11, 12, 13, 14, 15)
RATES = {"realistic": 0.5, "heavy": 3.0}   # excursions per device per day
WARN_WINDOW = 15 * 60    # an early warning this close to an excursion is about it

# Channel profiles: level, limits, noise sizes per shape (normal: one
# standard deviation; uniform: half the width; drift: the swing's
# amplitude; quantised: the step), how far beyond the limit an excursion
# peaks, and its ramp rate, per minute.
PROFILES = {
    "freezer": {"level": -80.0, "upper": -70.0, "lower": -90.0, "sd": 0.15, "uni": 1.5,
                "drift": 2.5, "step": 0.5, "over": (0.5, 4.0), "rate": (0.05, 0.5),
                "dirs": ("upper",)},
    "fridge": {"level": 5.0, "upper": 8.0, "lower": 2.0, "sd": 0.2, "uni": 1.0,
               "drift": 1.0, "step": 0.5, "over": (0.3, 2.5), "rate": (0.05, 0.5),
               "dirs": ("upper", "upper", "upper", "lower")},
    "room": {"level": 22.0, "upper": 28.0, "lower": 15.0, "sd": 0.25, "uni": 1.0,
             "drift": 2.0, "step": 0.5, "over": (0.3, 2.5), "rate": (0.05, 0.5),
             "dirs": ("upper", "upper", "lower")},
    "humidity": {"level": 45.0, "upper": 70.0, "lower": 25.0, "sd": 1.0, "uni": 4.0,
                 "drift": 6.0, "step": 1.0, "over": (1.0, 6.0), "rate": (0.3, 3.0),
                 "dirs": ("upper", "lower")},
}
NOISES = ("normal", "uniform", "quantised", "drifting")
FORCE_NOISE = None       # --noise: every channel of this shape
NAMES = {"freezer": ("Freezer", "冷凍庫"), "fridge": ("Fridge", "冷蔵庫"),
         "room": ("Room", "保管室")}


def poisson(rng, lam):
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def place(rng, taken, lo, hi, length, gap=20):
    """A start minute in [lo, hi - length] whose span keeps `gap` minutes
    from the spans in `taken` (and is added to it), or None."""
    for _ in range(60):
        if hi - length <= lo:
            return None
        s = rng.randint(lo, hi - length)
        if all(s + length + gap <= a or b + gap <= s for a, b in taken):
            taken.append((s, s + length))
            return s
    return None


class Channel:
    def __init__(self, rng, kind, japanese):
        self.kind = kind
        self.p = PROFILES["humidity" if kind == "humidity" else kind]
        self.noise = rng.choice(NOISES)
        if FORCE_NOISE:
            self.noise = FORCE_NOISE
        self.drift_period = rng.randint(180, 720)
        self.drift_phase = rng.uniform(0, 2 * math.pi)
        if kind == "humidity":
            self.name, self.unit, self.tunit = ("湿度" if japanese else "Humidity"), "%RH", "%RH"
        else:
            self.name, self.unit = ("温度" if japanese else "Temperature"), "°C"
            self.tunit = "℃" if japanese else "°C"
        self.shapes = []     # (start, t_in, hold, t_out, offset): an excursion's trapezoid

    def base(self, rng, m):
        """The channel's value at minute m without excursions."""
        p = self.p
        if self.noise == "uniform":
            return p["level"] + rng.uniform(-p["uni"], p["uni"])
        if self.noise == "drifting":
            return (p["level"] + p["drift"] * math.sin(2 * math.pi * m / self.drift_period +
                                                       self.drift_phase) +
                    rng.gauss(0, p["sd"]))
        return p["level"] + rng.gauss(0, p["sd"])

    def offset(self, m):
        for s, t_in, hold, t_out, off in self.shapes:
            if s < m < s + t_in:
                return off * (m - s) / t_in
            if s + t_in <= m <= s + t_in + hold:
                return off
            if s + t_in + hold < m < s + t_in + hold + t_out:
                return off * (s + t_in + hold + t_out - m) / t_out
        return None

    def value(self, rng, m):
        off = self.offset(m)
        if off is None:
            v = self.base(rng, m)
        else:
            # a physical change dominates the sensor's own scatter
            v = self.p["level"] + off + rng.gauss(0, self.p["sd"] / 2)
        if self.noise == "quantised":
            return round(round(v / self.p["step"]) * self.p["step"], 1)
        return round(v, 1)


def excursion(rng, ch, short):
    """A trapezoid (t_in, hold, t_out, offset, direction) for channel ch."""
    p = ch.p
    d = rng.choice(p["dirs"])
    sign = 1 if d == "upper" else -1
    if short:
        over, r_in, r_out, hold = rng.uniform(1.0, 3.0), rng.uniform(3.0, 6.0), \
            rng.uniform(3.0, 6.0), rng.randint(0, 1)
    else:
        over = rng.uniform(*p["over"])
        r_in, r_out = rng.uniform(*p["rate"]), rng.uniform(*p["rate"])
        hold = rng.randint(0, 60)
    off = p[d] + sign * over - p["level"]
    t_in = max(1, int(math.ceil(abs(off) / r_in)))
    t_out = max(1, int(math.ceil(abs(off) / r_out)))
    return t_in, hold, t_out, off, d


class Device:
    pass


def gen_day(n_devices, seed, hours, rate):
    """The scenario, the day's entries (what the platform logs during the
    day) and the truth the measures need."""
    rng = random.Random("realistic/%d/%d/%g/%s" % (seed, n_devices, hours, rate))
    day_min = int(hours * 60)
    n_min = day_min + DRAIN_MAX_MIN
    m0 = -HISTORY_MIN
    warm, tail = min(30, day_min // 8), min(60, day_min // 8)
    lam = RATES[rate] * hours / 24.0

    # Topology: a third standalone, the rest remote units behind base units.
    n_remote = int(round(n_devices * 2 / 3.0))
    bases = []
    left = n_remote
    while left > 0:
        k = min(left, rng.randint(2, 5))
        bases.append({"serial": "5893%04d" % (len(bases) + 1), "model": "RTR500BW",
                      "name": "Base unit %d" % (len(bases) + 1), "size": k,
                      "upload_phase": rng.randint(0, 599), "delay": rng.randint(5, 30),
                      "monitor": rng.choice((1, 2, 2, 5)) * 60,
                      "monitor_phase": rng.randint(0, 59), "link_loss": None})
        left -= k
    for b in bases:
        if rng.random() < 0.25 * max(1.0, hours / 24.0) and day_min > 240:
            dur = rng.randint(30, 120)
            s = rng.randint(warm, day_min - tail - dur - 30)
            b["link_loss"] = (s, dur)
    slots = []
    for b in bases:
        slots += [(b, k + 1) for k in range(b["size"])]
    slots += [(None, 0)] * (n_devices - n_remote)
    rng.shuffle(slots)

    devices, entries, limits, truth, devs = [], [], [], [], []
    for i, (base, num) in enumerate(slots):
        dev = gen_device(rng, i, base, num, m0, n_min, day_min, warm, tail, lam)
        devs.append(dev)
        devices.append(dev.record)
        entries += dev.entries
        limits += dev.limits
        truth.append(dev.truth)
    scenario = {"now": D0, "accounts": [{"api_key": signals.API_KEY, "login_id": LOGIN,
                                         "login_pass": signals.PASS, "devices": devices}]}
    return scenario, entries, limits, truth, devs


def gen_device(rng, i, base, num, m0, n_min, day_min, warm, tail, lam):
    japanese = rng.random() < 0.25
    texts = JA if japanese else EN
    tname = rng.choice(("freezer", "fridge", "room"))
    chans = [Channel(rng, tname, japanese)]
    if tname == "room" and rng.random() < 0.7:
        chans.append(Channel(rng, "humidity", japanese))
    remote = base is not None
    serial = ("5820%04d" if remote else "5214%04d") % (1000 + i)
    phase = rng.randint(0, 59)            # seconds past the minute it measures

    def mtime(m):
        return D0 + 60 * m + phase

    taken = []
    if remote and base["link_loss"]:
        s, dur = base["link_loss"]
        taken.append((s - 5, s + dur + 15))
    comm = None
    if not remote and rng.random() < 0.1:
        dur = rng.randint(30, 120)
        s = place(rng, taken, warm, day_min - tail, dur + 15)
        if s is not None:
            comm = (s, dur)
    excursions = []   # (channel index, direction, span start, span end, trapezoid)
    for _ in range(poisson(rng, lam)):
        ci = rng.randrange(len(chans))
        ch = chans[ci]
        short = ch.kind == "humidity" and rng.random() < 0.4
        t_in, hold, t_out, off, d = excursion(rng, ch, short)
        span = t_in + hold + t_out
        s = place(rng, taken, warm, day_min - tail, span)
        if s is None:
            continue
        ch.shapes.append((s, t_in, hold, t_out, off))
        excursions.append((ci, d, s, s + span, short))
    sensor = None
    if rng.random() < 0.15:
        dur = rng.randint(5, 60)
        s = place(rng, taken, warm, day_min - tail, dur)
        if s is not None:
            sensor = (rng.randrange(len(chans)), s, dur)
    battery_low = None
    if rng.random() < 0.08:
        battery_low = place(rng, taken, warm, day_min - tail, 1)

    # Measurements, one a minute.
    values = []
    for m in range(m0, n_min + 1):
        row = []
        for ci, ch in enumerate(chans):
            if sensor and sensor[0] == ci and sensor[1] <= m < sensor[1] + sensor[2]:
                row.append("Sensor Error")
            else:
                row.append(ch.value(rng, m))
        values.append(row)

    def battery_at(m):
        if battery_low is None or m < battery_low - 180:
            return 5
        if m < battery_low - 90:
            return 4
        return 3 if m < battery_low else 2

    def down(m):
        """Whether the device cannot reach the platform at minute m."""
        if remote and base["link_loss"]:
            s, dur = base["link_loss"]
            return s <= m < s + dur
        return bool(comm) and comm[0] <= m < comm[0] + comm[1]

    # Uploads: (at, minute measured). A base unit uploads its remote units
    # together every 10 minutes; a standalone device every `interval`.
    uploads = []
    if remote:
        t = D0 + m0 * 60 + base["upload_phase"]
        while t <= D0 + n_min * 60:
            m = (t - D0 - phase) // 60
            if m0 <= m <= n_min and not down((t - D0) // 60):
                uploads.append((t + base["delay"], m))
            t += 600
        interval = 10
    else:
        interval = rng.randint(1, 10)
        offset = rng.randrange(interval)
        delay = rng.randint(2, 20)
        for m in range(m0, n_min + 1):
            if (m - m0) % interval == offset and not down(m):
                uploads.append((mtime(m) + delay, m))
    upload_ats = [a for a, _ in uploads]
    upload_mts = [mtime(m) for _, m in uploads]
    readings = [{"at": at, "unixtime": mtime(m),
                 "values": [v if isinstance(v, str) else fmt(v) for v in values[m - m0]],
                 "battery": battery_at(m)} for at, m in uploads]

    # The platform's monitoring: samples (measurement minute, tick, logged_at).
    samples = []
    if remote:
        t = D0 + base["monitor_phase"]
        while t <= D0 + n_min * 60:
            m = (t - D0 - phase) // 60
            if 0 <= m <= n_min and not down(m):
                samples.append((m, t, t + rng.randint(3, 20)))
            t += base["monitor"]
    else:
        for m in range(0, n_min + 1):
            if not down(m):
                samples.append((m, None, mtime(m) + rng.randint(5, 40)))

    entries = []
    for ci, ch in enumerate(chans):
        p, chn = ch.p, ci + 1
        state, alarm = "normal", None
        kw = {"ch": chn, "u": ch.tunit}
        for m, tick, logged in samples:
            v = values[m - m0][ci]
            e = None
            if isinstance(v, str):
                if state != "error":
                    e = Entry(serial, "ch%d" % chn, "sensor-error", mtime(m),
                              texts["sensor"].format(**kw), chn)
                    state = "error"
            else:
                beyond = "upper" if v > p["upper"] else "lower" if v < p["lower"] else None
                if state == "error":
                    e = Entry(serial, "ch%d" % chn, "sensor-recovery", mtime(m),
                              texts["recovery"].format(v=fmt(v), **kw), chn)
                    state = "normal"
                elif state == "normal" and beyond:
                    e = Entry(serial, "ch%d" % chn, "alarm", mtime(m),
                              texts[beyond].format(v=fmt(v), lim=fmt(p[beyond]), **kw), chn)
                    e.value, e.side = v, beyond
                    state, alarm = "alarm", e
                elif state == "alarm" and not beyond:
                    e = Entry(serial, "ch%d" % chn, "recovery", mtime(m),
                              texts["recovery"].format(v=fmt(v), **kw), chn)
                    e.value = v
                    e.episode = alarm.episode = (alarm.unixtime, e.unixtime)
                    state = "normal"
            if e is not None:
                e.tick, e.logged_at = tick, logged
                entries.append(e)
    if battery_low is not None:
        e = Entry(serial, "battery-level", "battery", mtime(battery_low), texts["battery"])
        e.tick = None
        e.logged_at = e.unixtime + rng.randint(5, 40)
        if remote:
            for m, tick, logged in samples:
                if m >= battery_low:
                    e.unixtime, e.tick, e.logged_at = mtime(m), tick, logged
                    break
        entries.append(e)
    loss = base["link_loss"] if remote else comm
    if loss:
        s, dur = loss
        last = [a for a in upload_ats if a < D0 + 60 * s][-1]
        e = Entry(serial, "communication-status", "comm-error",
                  last + 20 * 60 + rng.randint(-60, 60), texts["comm"])
        e.tick, e.logged_at = None, e.unixtime + rng.randint(0, 30)
        entries.append(e)
        back = upload_ats[bisect.bisect_left(upload_ats, D0 + 60 * (s + dur))]
        e = Entry(serial, "communication-status", "comm-recovery", back, texts["comm-back"])
        e.tick, e.logged_at = None, back + rng.randint(0, 30)
        entries.append(e)

    # The floor: the later of the logging and the first upload that shows
    # the entry (the first one measured at or after it), plus half a tick.
    for e in entries:
        k = bisect.bisect_left(upload_mts, e.unixtime)
        up = upload_ats[k] if k < len(upload_ats) and e.cat != "comm-error" else e.logged_at
        e.upload_at = up
        e.floor_at = max(e.logged_at, up) + 30

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
        e.floor_at = max(e.floor_at, e.logged_at + 30)
    # The past: most channels alarmed once in the last days, and their
    # alarm's text states the limit.
    for ci, ch in enumerate(chans):
        if rng.random() < 0.25:
            continue
        kw = {"ch": ci + 1, "u": ch.tunit}
        side = rng.choice(ch.p["dirs"])
        sign = 1 if side == "upper" else -1
        t_old = D0 - rng.randint(1, 6) * 86400 - rng.randint(0, 80000) - 600 * ci
        by_time[t_old] = {"unixtime": t_old,
                          "ch%d" % (ci + 1): texts[side].format(
                              v=fmt(ch.p[side] + sign * 1.2), lim=fmt(ch.p[side]), **kw)}
        t_back = t_old + rng.randint(10, 90) * 60
        by_time[t_back] = {"unixtime": t_back,
                           "ch%d" % (ci + 1): texts["recovery"].format(v=fmt(ch.p["level"]),
                                                                       **kw)}

    jname, ename = NAMES[tname]
    name = "%s %d" % (jname if japanese else ename, i + 1)
    first = values[0]
    d = Device()
    d.record = {"serial": serial,
                "model": ("RTR503B" if len(chans) > 1 else "RTR501B") if remote else
                         ("TR-72wb" if len(chans) > 1 else "TR-71wb"),
                "name": name, "group": {"num": 1, "name": "Lab"}, "time_diff": 540,
                "battery": 5, "rssi": "",
                "channels": [{"name": c.name, "unit": c.unit,
                              "value": v if isinstance(v, str) else fmt(v)}
                             for c, v in zip(chans, first)],
                "alerts": sorted(by_time.values(), key=lambda r: r["unixtime"]),
                "readings": readings}
    if remote:
        d.record["num"] = num
        d.record["base"] = {"serial": base["serial"], "model": base["model"],
                            "name": base["name"]}
    d.entries = entries
    d.limits = [{"serial": serial, "channel": ci + 1, "upper": c.p["upper"],
                 "lower": c.p["lower"]} for ci, c in enumerate(chans)]
    d.truth = {"serial": serial, "remote": remote, "base": base["serial"] if remote else None,
               "monitor": base["monitor"] if remote else 60,
               "monitor_phase": base["monitor_phase"] if remote else None,
               "interval": interval, "japanese": japanese,
               "channels": [{"kind": c.kind, "noise": c.noise, "upper": c.p["upper"],
                             "lower": c.p["lower"]} for c in chans],
               # excursions and sensor errors in seconds: what an early warning may be about
               "excursions": [{"channel": ci + 1, "side": dd, "from": D0 + 60 * a,
                               "to": D0 + 60 * b + 60, "short": short}
                              for ci, dd, a, b, short in excursions],
               "sensor": ({"channel": sensor[0] + 1, "from": D0 + 60 * sensor[1],
                           "to": D0 + 60 * (sensor[1] + sensor[2])} if sensor else None)}
    d.values, d.m0, d.mtime, d.chans, d.samples = values, m0, mtime, chans, samples
    d.uploads = uploads
    return d


# --- driving wsrelay ---------------------------------------------------------------------

def find_key(obj, key):
    """Every value of `key` anywhere in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                yield v
            yield from find_key(v, key)
    elif isinstance(obj, list):
        for v in obj:
            yield from find_key(v, key)


def drive(bindir, work, scenario, entries, limits, hours, drain_min=DRAIN_MAX_MIN):
    """Runs wsrelay every simulated minute of the day, then on until every
    entry was delivered (at most drain_min more). Returns the delivered
    events, the simulator's stats, the runs and the bound `wsrelay status
    --json` showed at the end of the day (seconds, or None)."""
    wsrelay = os.path.join(bindir, "wsrelay")
    sim = signals.Sim(bindir, work, scenario)
    bound = None
    try:
        config = os.path.join(work, "wsrelay.yaml")
        signals.write_config(config, work, sim.url, limits, "on")
        check = subprocess.run([wsrelay, "-c", config, "check"], capture_output=True, text=True)
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
                status = subprocess.run([wsrelay, "-c", config, "run", "--now", str(now)],
                                        stdout=log, stderr=log).returncode
                runs += 1
                if status not in (0, 1):
                    raise BenchError("wsrelay run --now %d ended with %d; see %s" %
                                     (now, status, log.name))
                signals.read_events(f, now, delivered)
                if now == day_end - 60:
                    st = subprocess.run([wsrelay, "-c", config, "status", "--json", "--now",
                                         str(now)], capture_output=True, text=True)
                    try:
                        found = [int(v) for v in find_key(json.loads(st.stdout),
                                                          "round_robin_bound") if v]
                        bound = max(found) if found else None
                    except ValueError:
                        bound = None
                now += 60
                if now >= day_end:
                    wanted -= {d["id"] for d in delivered}
                    if not wanted or now >= day_end + drain_min * 60:
                        break
        log.close()
        stats = sim.call("/_sim/stats")
    finally:
        sim.stop()
    return delivered, stats, runs, bound


# --- measuring ---------------------------------------------------------------------------

SIM_LIMITS = {"current": (10, 120), "alert": (12, 3600), "latest-data": (60, 60),
              "latest-data-rtr500": (60, 60), "data": (20, 60), "data-rtr500": (20, 60)}


def limit_excess(calls):
    """Per operation, the calls accepted beyond the platform's limit in a
    sliding window, counted afresh from the simulator's call log."""
    out = {}
    for op, (limit, span) in SIM_LIMITS.items():
        ts = [c["t"] for c in calls if c["op"] == op and c["status"] != 429]
        worst = 0
        lo = 0
        for hi, t in enumerate(ts):
            while ts[lo] <= t - span:
                lo += 1
            worst = max(worst, hi - lo + 1)
        out[op] = max(0, worst - limit)
    return out


def measure(entries, delivered, stats, truth, hours, bound):
    day_end = D0 + int(hours * 60) * 60
    first_at, count = {}, {}
    for d in delivered:
        count[d["id"]] = count.get(d["id"], 0) + 1
        first_at.setdefault(d["id"], d["at"])
    lat, dist = [], []
    by_kind, by_unit = {}, {}
    undelivered = []
    for e in entries:
        if e.id in first_at:
            lat.append((first_at[e.id] - e.unixtime) / 60.0)
            dist.append((first_at[e.id] - e.floor_at) / 60.0)
            by_kind.setdefault(e.cat, []).append(lat[-1])
            unit = "remote" if e.serial.startswith("5820") else "standalone"
            by_unit.setdefault(unit, []).append(dist[-1])
        else:
            undelivered.append(e.id)
    ids = {e.id for e in entries}
    duplicates = sum(n - 1 for i, n in count.items() if n > 1 and i in ids)

    # First notice: the entry, or an early warning (kind `reading`) of that
    # device and channel, state alarm during the excursion (recovered
    # after the alarm), whichever reached the receiver first.
    exc = {t["serial"]: t["excursions"] for t in truth}
    warnings = [d for d in delivered if d["kind"] == "reading"]
    by_serial = {}
    for w in warnings:
        by_serial.setdefault(w["serial"], []).append(w)
    notice, notice_alarm, notice_recovery, slow = [], [], [], []
    for e in entries:
        if e.cat not in ("alarm", "recovery"):
            continue
        best = first_at.get(e.id)
        lo, hi = e.episode if e.episode else (e.unixtime, e.unixtime + 3600)
        win = (lo - 600, hi) if e.cat == "alarm" else (hi - 600, hi + 3600)
        for x in exc.get(e.serial, []):
            if x["channel"] == e.channel and x["from"] <= e.unixtime <= x["to"] + 60:
                if e.cat == "alarm":
                    win = (x["from"], hi)
        want = "alarm" if e.cat == "alarm" else "recovered"
        by = "entry"
        for w in by_serial.get(e.serial, []):
            ch = signals.reading_channel(w)
            if (w["state"] == want and (ch is None or ch == e.channel) and
                    win[0] <= w["unixtime"] <= win[1] and (best is None or w["at"] < best)):
                best, by = w["at"], "warning"
        if best is not None:
            n = (best - e.unixtime) / 60.0
            notice.append(n)
            slow.append((n, e, by))
            (notice_alarm if e.cat == "alarm" else notice_recovery).append(n)
    # Early warnings of an alarm with no excursion (or sensor error) of that
    # device and channel within WARN_WINDOW.
    spans = {}
    for t in truth:
        sp = [(x["channel"], x["from"], x["to"]) for x in t["excursions"]]
        if t["sensor"]:
            sp.append((t["sensor"]["channel"], t["sensor"]["from"], t["sensor"]["to"]))
        spans[t["serial"]] = sp
    false_warnings = 0
    for w in warnings:
        if w["state"] != "alarm":
            continue
        ch = signals.reading_channel(w)
        if not any((ch is None or ch == c) and a - WARN_WINDOW <= w["unixtime"] <= b + WARN_WINDOW
                   for c, a, b in spans.get(w["serial"], [])):
            false_warnings += 1

    # Alert calls: per hour of the day, and per device the longest wait
    # between two of its calls (from the day's start, to its end).
    calls = stats["calls"]
    alert = [c for c in calls if c["op"] == "alert" and c["status"] != 429 and
             c.get("login_id") == LOGIN]
    n_hours = int(hours)
    per_hour = [0] * n_hours
    for c in alert:
        h = (c["t"] - D0) // 3600
        if 0 <= h < n_hours:
            per_hour[h] += 1
    # An hour in which, at some run, an entry was logged on the platform and
    # not yet delivered: a device was owed a look.
    owed = [False] * n_hours
    for e in entries:
        got = first_at.get(e.id, 1 << 62)
        # runs at minute boundaries t with logged_at < t < got
        t = (e.logged_at - D0) // 60 * 60 + D0 + 60
        if t < got:
            h0 = (t - D0) // 3600
            h1 = min(n_hours - 1, (min(got - 60, day_end - 60) - D0) // 3600)
            for h in range(max(0, h0), h1 + 1):
                owed[h] = True
    owed_hours = [per_hour[h] for h in range(n_hours) if owed[h]]
    longest, longest_serial = 0, None
    for t in truth:
        ts = [D0] + sorted(c["t"] for c in alert if c["serial"] == t["serial"] and
                           c["t"] < day_end) + [day_end]
        gap = max(b - a for a, b in zip(ts, ts[1:]))
        if gap > longest:
            longest, longest_serial = gap, t["serial"]
    past_bound = 0
    if bound:
        for t in truth:
            ts = [D0] + sorted(c["t"] for c in alert if c["serial"] == t["serial"] and
                               c["t"] < day_end) + [day_end]
            if max(b - a for a, b in zip(ts, ts[1:])) > bound:
                past_bound += 1
    excess = limit_excess(calls)
    remote = {t["serial"]: t["remote"] for t in truth}
    slow.sort(key=lambda x: -x[0])
    return {
        "entries": len(entries),
        "alarms": sum(1 for e in entries if e.cat == "alarm"),
        "first_notice_min": signals.summary(notice),
        "first_notice_alarm_min": signals.summary(notice_alarm),
        "first_notice_recovery_min": signals.summary(notice_recovery),
        "log_entry_min": signals.summary(lat),
        "log_entry_by_category": {k: signals.summary(v) for k, v in sorted(by_kind.items())},
        "above_floor_by_unit": {k: signals.summary(v) for k, v in sorted(by_unit.items())},
        "floor_min": signals.summary([(e.floor_at - e.unixtime) / 60.0 for e in entries]),
        "floor_distance_min": statistics.mean(dist) if dist else None,
        "alert_calls_per_hour": statistics.mean(per_hour) if per_hour else 0,
        "alert_calls_by_hour": per_hour,
        "owed_hours": len(owed_hours),
        "owed_hours_under_10": sum(1 for n in owed_hours if n < 10),
        "longest_wait_min": longest / 60.0,
        "longest_wait_serial": longest_serial,
        "bound_min": bound / 60.0 if bound else None,
        "devices_past_bound": past_bound,
        "undelivered": len(undelivered),
        "undelivered_ids": undelivered,
        "duplicates": duplicates,
        "early_warnings": len(warnings),
        "false_early_warnings": false_warnings,
        "rejected_429": stats["rejected_429"],
        "max_alert_calls_per_hour": stats["max_alert_calls_per_hour"].get(LOGIN, 0),
        "over_limit_calls": sum(excess.values()),
        # the five slowest first notices, with what explains them
        "slowest_first_notice": [
            {"minutes": round(n, 1), "id": e.id, "category": e.cat,
             "remote": remote.get(e.serial), "logged_after_s": e.logged_at - e.unixtime,
             "upload_after_s": e.upload_at - e.unixtime, "by": by} for n, e, by in slow[:5]],
        # every first notice of 10 minutes or more, the same way
        "slow_first_notices": [
            {"minutes": round(n, 1), "id": e.id, "category": e.cat,
             "remote": remote.get(e.serial), "logged_after_s": e.logged_at - e.unixtime,
             "upload_after_s": e.upload_at - e.unixtime, "by": by}
            for n, e, by in slow if n >= 10],
        "raw": {"first_notice": notice, "log_entry": lat, "floor_distance": dist},
    }


# --- one day, the matrix, the self-test ----------------------------------------------------

def run_day(bindir, devices, seed, rate, limits, hours, keep=None, drain_min=DRAIN_MAX_MIN):
    started = time.monotonic()
    scenario, entries, lims, truth, _ = gen_day(devices, seed, hours, rate)
    work = keep or tempfile.mkdtemp(prefix="wsrelay-realistic-")
    os.makedirs(work, exist_ok=True)
    ok = False
    try:
        with open(os.path.join(work, "truth.json"), "w", encoding="utf-8") as f:
            json.dump({"devices": truth, "entries": [
                {"id": e.id, "category": e.cat, "unixtime": e.unixtime, "logged_at": e.logged_at,
                 "upload_at": e.upload_at, "floor_at": e.floor_at, "text": e.text}
                for e in entries]}, f, ensure_ascii=False, indent=1)
        delivered, stats, runs, bound = drive(bindir, work, scenario, entries,
                                              lims if limits else None, hours, drain_min)
        result = measure(entries, delivered, stats, truth, hours, bound)
        result.update({"devices": devices, "seed": seed, "rate": rate, "limits": limits,
                       "noise": FORCE_NOISE or "mixed",
                       "hours": hours, "runs": runs,
                       "wall_s": round(time.monotonic() - started, 1)})
        if keep:
            with open(os.path.join(work, "delivered.json"), "w", encoding="utf-8") as f:
                json.dump(delivered, f, indent=0)
        ok = True
        return result
    finally:
        if not keep:
            if ok:
                shutil.rmtree(work, ignore_errors=True)
            else:
                print("realistic.py: kept %s for a look" % work, file=sys.stderr)


def pooled(results):
    """One row of the matrix from the days of one cell (several seeds)."""
    def pool(key):
        out = []
        for r in results:
            out += r["raw"][key]
        return out

    fn, le, fd = pool("first_notice"), pool("log_entry"), pool("floor_distance")
    bounds = [r["bound_min"] for r in results if r["bound_min"]]
    return {
        "first_notice": signals.summary(fn), "log_entry": signals.summary(le),
        "floor_distance": statistics.mean(fd) if fd else None,
        "floor": statistics.mean(r["floor_min"]["mean"] for r in results if r["floor_min"])
        if any(r["floor_min"] for r in results) else None,
        "calls_per_hour": statistics.mean(r["alert_calls_per_hour"] for r in results),
        "owed_hours": sum(r["owed_hours"] for r in results),
        "owed_hours_under_10": sum(r["owed_hours_under_10"] for r in results),
        "longest_wait": max(r["longest_wait_min"] for r in results),
        "bound": min(bounds) if bounds else None,
        "past_bound": sum(r["devices_past_bound"] for r in results),
        "undelivered": sum(r["undelivered"] for r in results),
        "duplicates": sum(r["duplicates"] for r in results),
        "false_warnings": sum(r["false_early_warnings"] for r in results),
        "limits_ok": all(r["rejected_429"] == 0 and r["over_limit_calls"] == 0
                         for r in results),
        "alarms": sum(r["alarms"] for r in results),
        "entries": sum(r["entries"] for r in results),
        "wall_s": max(r["wall_s"] for r in results),
    }


TABLE_HEADER = (
    "| devices | limits | rate | seeds | alarms / entries | first notice mean / p95 | "
    "log entry mean / p95 | floor / above it | alert calls/h (owed hours under 10) | "
    "longest wait / bound | undelivered | duplicates | false warnings | limits kept |\n"
    "|---:|---|---|---|---:|---|---|---|---|---|---:|---:|---:|---|")


def f1(v):
    return "-" if v is None else "%.1f" % v


def table_row(devices, limits, rate, seeds, p):
    fn, le = p["first_notice"], p["log_entry"]

    def ms(s):
        return "-" if s is None else "%.1f / %.1f" % (s["mean"], s["p95"])

    wait = "%s / %s" % (f1(p["longest_wait"]), f1(p["bound"]))
    if p["past_bound"]:
        wait += " (%d past)" % p["past_bound"]
    return ("| %d | %s | %s | %s | %d / %d | %s | %s | %s | %.1f (%d of %d) | %s | %d | %d | %d "
            "| %s |") % (
        devices, "configured" if limits else "none", rate, ",".join(str(s) for s in seeds),
        p["alarms"], p["entries"], ms(fn), ms(le),
        "%s / %s" % (f1(p["floor"]), f1(p["floor_distance"])),
        p["calls_per_hour"], p["owed_hours_under_10"], p["owed_hours"], wait,
        p["undelivered"], p["duplicates"], p["false_warnings"],
        "yes" if p["limits_ok"] else "**no**")


def day_row(r):
    return table_row(r["devices"], r["limits"], r["rate"], [r["seed"]], pooled([r]))


def targets(cells):
    """Issue 23's targets, each with what the matrix measured and whether
    it was met; only those whose days the matrix ran. cells maps
    (devices, limits, rate) to pooled()."""
    out = []

    def fn(p, key):
        s = p["first_notice"]
        return s[key] if s else None

    def add(what, measured, ok):
        out.append("| %s | %s | %s |" % (what, measured, "met" if ok else "**not met**"))

    for n, lim, fmean, fp95, lmean in ((12, False, 5, 15, 6), (48, False, 15, 60, None),
                                      (48, True, 4, 10, None)):
        p = cells.get((n, lim, "realistic"))
        if not p:
            continue
        m, q = fn(p, "mean"), fn(p, "p95")
        what = "%d devices, %s: first notice mean <= %d min, p95 <= %d" % (
            n, "limits configured" if lim else "nothing configured", fmean, fp95)
        ok = m is not None and m <= fmean and q <= fp95
        if lmean is not None:
            le = p["log_entry"]["mean"] if p["log_entry"] else None
            what += "; log entries mean <= %d" % lmean
            ok = ok and le is not None and le <= lmean
            add(what, "%s / %s; %s" % (f1(m), f1(q), f1(le)), ok)
        elif not lim:
            what += "; every entry delivered"
            add(what, "%s / %s; %d undelivered" % (f1(m), f1(q), p["undelivered"]),
                ok and p["undelivered"] == 0)
        else:
            add(what, "%s / %s" % (f1(m), f1(q)), ok)
    unsat = [(k, p) for k, p in sorted(cells.items())
             if k[2] == "realistic" and p["floor_distance"] is not None]
    if unsat:
        worst = max(p["floor_distance"] for _, p in unsat)
        add("unsaturated days (the realistic rate): log entries within 1 min of the floor on "
            "average", "%s at worst (%s)" % (f1(worst), ", ".join(
                "%d %s: %s" % (k[0], "limits" if k[1] else "none", f1(p["floor_distance"]))
                for k, p in unsat)), worst <= 1.0)
    everything = list(cells.values())
    if everything:
        under = sum(p["owed_hours_under_10"] for p in everything)
        owed = sum(p["owed_hours"] for p in everything)
        add("everywhere: >= 10 alert calls an hour while any device is owed a look",
            "%d of %d owed hours under 10" % (under, owed), under == 0)
        past = sum(p["past_bound"] for p in everything)
        add("everywhere: no device past its bound", "%d device-days past it; longest wait %s "
            "min" % (past, f1(max(p["longest_wait"] for p in everything))), past == 0)
        dup = sum(p["duplicates"] for p in everything)
        add("everywhere: no duplicate", str(dup), dup == 0)
        fw = sum(p["false_warnings"] for p in everything)
        add("everywhere: no early warning without an excursion", str(fw), fw == 0)
        kept = all(p["limits_ok"] for p in everything)
        add("everywhere: never above the platform's limits",
            "no 429, no window over" if kept else "over", kept)
    if not out:
        return ""
    return "| target (issue 23) | measured | |\n|---|---|---|\n" + "\n".join(out)


def matrix(args, bindir):
    started = time.monotonic()
    cells = [(n, c == "limits", rate) for n in args.sizes for c in args.configs
             for rate in args.rates]
    days = [(n, lim, rate, s) for n, lim, rate in cells for s in args.seeds]
    me = os.path.abspath(__file__)

    def one(day):
        n, lim, rate, s = day
        cmd = [sys.executable, me, "--devices", str(n), "--seed", str(s), "--rate", rate,
               "--hours", str(args.hours), "--json", "--build", bindir]
        if lim:
            cmd.append("--limits")
        if FORCE_NOISE:
            cmd += ["--noise", FORCE_NOISE]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise BenchError("day %s failed:\n%s" % (day, out.stderr))
        r = json.loads(out.stdout)
        print("realistic.py: %d devices, %s, %s, seed %d: first notice %s, %.0f s" %
              (n, "limits" if lim else "none", rate, s,
               f1(r["first_notice_min"]["mean"]) if r["first_notice_min"] else "-",
               r["wall_s"]), file=sys.stderr)
        return day, r

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(2, args.jobs))) as ex:
        for day, r in ex.map(one, days):
            results[day] = r
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump([{"day": list(k), "result": v} for k, v in results.items()], f, indent=0)
    if FORCE_NOISE:
        print("Every channel's noise %s.\n" % FORCE_NOISE)
    print(TABLE_HEADER)
    pooled_cells = {}
    for n, lim, rate in cells:
        rs = [results[(n, lim, rate, s)] for s in args.seeds]
        pooled_cells[(n, lim, rate)] = pooled(rs)
        print(table_row(n, lim, rate, args.seeds, pooled_cells[(n, lim, rate)]))
    t = targets(pooled_cells)
    if t:
        print()
        print(t)
    if args.per_seed:
        print()
        print(TABLE_HEADER)
        for day in days:
            print(day_row(results[day]))
    walls = {}
    for (n, _, _, _), r in results.items():
        walls.setdefault(n, []).append(r["wall_s"])
    print("realistic.py: %d days in %.0f s; a day took %s" % (
        len(days), time.monotonic() - started, ", ".join(
            "%d devices %.0f to %.0f s" % (n, min(w), max(w)) for n, w in sorted(walls.items()))),
        file=sys.stderr)
    return 0


def self_test(bindir):
    """The generator's invariants on a small heavy day, then that day
    served and run for 90 minutes within the platform's limits."""
    started = time.monotonic()
    scenario, entries, lims, truth, devs = gen_day(12, 1, 12, "heavy")
    n_alarms = n_remote_early = n_short_unseen = 0
    for d in devs:
        t = d.truth
        for e in d.entries:
            m = (e.unixtime - d.mtime(0)) // 60
            if e.cat in ("alarm", "recovery", "sensor-error", "sensor-recovery"):
                assert d.mtime(m) == e.unixtime, e.id
                ch = d.chans[e.channel - 1]
                v = d.values[m - d.m0][e.channel - 1]
            if e.cat == "alarm":
                n_alarms += 1
                # a crossing: beyond the limit now, inside at the sample before
                assert not isinstance(v, str) and (v > ch.p["upper"] or v < ch.p["lower"]), e.id
                prev = [s for s in d.samples if s[0] < m]
                if prev:
                    pv = d.values[prev[-1][0] - d.m0][e.channel - 1]
                    assert isinstance(pv, str) or ch.p["lower"] <= pv <= ch.p["upper"], e.id
                # and within an excursion of that channel
                assert any(x["channel"] == e.channel and x["from"] <= e.unixtime <= x["to"]
                           for x in t["excursions"]), e.id
            assert e.logged_at >= e.unixtime, e.id
            if t["remote"] and e.cat not in ("comm-error", "comm-recovery"):
                # logged at the base unit's monitoring tick
                assert e.tick is not None, e.id
                assert (e.tick - D0 - t["monitor_phase"]) % t["monitor"] == 0, e.id
                assert e.unixtime <= e.tick < e.unixtime + 60 and e.logged_at >= e.tick, e.id
                if e.logged_at < e.upload_at:
                    n_remote_early += 1
            elif not t["remote"] and e.cat != "comm-error":
                assert e.logged_at - e.unixtime <= 60 or e.cat == "comm-recovery", e.id
            assert e.floor_at >= e.logged_at + 30 and e.floor_at >= e.upload_at + 30, e.id
        # noise alone stays inside the limits
        for ci, ch in enumerate(d.chans):
            for m in range(0, len(d.values) + d.m0):
                v = d.values[m - d.m0][ci]
                if isinstance(v, str) or ch.offset(m) is not None:
                    continue
                assert ch.p["lower"] <= v <= ch.p["upper"], (t["serial"], m, v)
            for s, t_in, hold, t_out, off in ch.shapes:
                rate = abs(off) / t_in
                hi = 6.0 if ch.kind == "humidity" else ch.p["rate"][1]
                assert rate <= hi + 1e-9, (t["serial"], rate)
        # remote units' readings: uploaded together, every 10 minutes
        if t["remote"]:
            ats = [r["at"] for r in d.record["readings"]]
            assert all((b - a) % 600 == 0 for a, b in zip(ats, ats[1:])), t["serial"]
        for x in t["excursions"]:
            if x["short"] and t["remote"]:
                if not any(x["from"] <= d.mtime(m) <= x["to"] for _, m in d.uploads):
                    n_short_unseen += 1
    assert n_alarms >= 10, n_alarms
    assert n_remote_early >= 1, "no remote unit's entry logged before its upload"
    remote = sum(1 for t in truth if t["remote"])
    assert remote == 8, remote
    # The excursion rate: Poisson with the right mean.
    rng = random.Random(7)
    mean = statistics.mean(poisson(rng, 1.5) for _ in range(20000))
    assert abs(mean - 1.5) < 0.05, mean
    # Served and run for 90 minutes: the simulator accepts the day, and
    # wsrelay stays within every limit (the limiter refused nothing, and the
    # call log recounted agrees).
    r = run_day(bindir, 6, 1, "heavy", False, 1.5, drain_min=0)
    assert r["rejected_429"] == 0 and r["over_limit_calls"] == 0, r
    assert r["max_alert_calls_per_hour"] <= 12, r
    assert r["duplicates"] == 0, r
    print("realistic.py: self-test passed (%d alarms, %d remote entries logged before their "
          "upload, %d short excursions no upload shows; %.1f s)" %
          (n_alarms, n_remote_early, n_short_unseen, time.monotonic() - started))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", choices=sorted(RATES), default="realistic")
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--limits", action="store_true",
                    help="configure each device's limits (accounts[].limits)")
    ap.add_argument("--noise", choices=NOISES + ("mixed",), default="mixed",
                    help="every channel's noise of this shape (default: drawn per channel)")
    ap.add_argument("--keep", metavar="DIR", help="keep scenario, config, state and logs here")
    ap.add_argument("--json", action="store_true", help="print everything as JSON")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "build"),
                    help="where wsrelay and wsrelay-sim are (default: build/)")
    ap.add_argument("--matrix", action="store_true", help="run the matrix and print its table")
    ap.add_argument("--sizes", default="12,48")
    ap.add_argument("--configs", default="none,limits")
    ap.add_argument("--rates", default="realistic,heavy")
    ap.add_argument("--seeds", default=",".join(str(s) for s in TUNING_SEEDS),
                    help="tuning seeds 1,2 (default); report seeds 11,12,13,14,15")
    ap.add_argument("--jobs", type=int, default=2, help="days at once (at most 2)")
    ap.add_argument("--per-seed", action="store_true", help="also a row per day")
    ap.add_argument("--out", metavar="FILE", help="write every day's JSON here")
    ap.add_argument("--self-test", action="store_true",
                    help="check the generator's invariants and a short served day")
    args = ap.parse_args()
    bindir = os.path.abspath(args.build)
    for prog in ("wsrelay", "wsrelay-sim"):
        if not os.access(os.path.join(bindir, prog), os.X_OK):
            ap.error("no %s in %s (build first, or give --build)" % (prog, bindir))
    if "accounts[].limits" not in signals.wsrelay_keys(bindir):
        ap.error("this wsrelay has no accounts[].limits key (see `wsrelay keys`)")
    if args.self_test:
        return self_test(bindir)
    global FORCE_NOISE
    FORCE_NOISE = None if args.noise == "mixed" else args.noise
    if args.matrix:
        try:
            args.sizes = [int(x) for x in args.sizes.split(",")]
            args.seeds = [int(x) for x in args.seeds.split(",")]
        except ValueError:
            ap.error("--sizes and --seeds are lists of integers, such as 12,48")
        args.configs = args.configs.split(",")
        args.rates = args.rates.split(",")
        if any(c not in ("none", "limits") for c in args.configs):
            ap.error("--configs takes none and limits")
        if any(r not in RATES for r in args.rates):
            ap.error("--rates takes realistic and heavy")
        return matrix(args, bindir)
    if args.devices < 1 or args.hours <= 0:
        ap.error("--devices must be at least 1 and --hours above 0")
    r = run_day(bindir, args.devices, args.seed, args.rate, args.limits, args.hours, args.keep)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print(TABLE_HEADER)
        print(day_row(r))
    print("realistic.py: %d devices, %d entries, %d runs, %.0f s" %
          (args.devices, r["entries"], r["runs"], r["wall_s"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print("realistic.py: %s" % exc, file=sys.stderr)
        sys.exit(1)
