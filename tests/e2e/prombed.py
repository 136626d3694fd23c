#!/usr/bin/python3
"""prombed — a real Prometheus (Debian's 2.42) scraping lith, for tests.

This file owns:
  * Prometheus: one `prometheus` process in its own directory (config, TSDB,
    log), listening on 127.0.0.1:<free port>, scraping one job `lith` at a
    given host:port every second (evaluation every second too). No systemd,
    no other target. stop() always kills it and removes the directory it
    created; the log's tail is kept (.last_log) and goes into every error.
  * The HTTP API client (urllib, bounded timeouts): query(), query_range(),
    targets(), wait_ready(), wait_target_up(), wait_scraped(), wait_for().
    A PromQL error (status != "success") raises PromQLError with
    Prometheus's errorType and message and the expression.
  * promtool_check_metrics(text) -> (ok, output): `promtool check metrics`.
  * The CLI: prombed.py run --target HOST:PORT | query --url URL EXPR |
    check-metrics FILE|-

Results are lists of series: {"metric": {labels}, "value": (t, float)} for
instant vectors (a scalar is one series with no labels) and
{"metric": ..., "values": [(t, float), ...]} for range results; NaN and
+Inf come back as Python floats. Nothing here listens on anything but
127.0.0.1. Run with Debian's /usr/bin/python3.
"""

import argparse
import atexit
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from rgwbed import free_port, tail  # noqa: F401  (free_port is used by tests too)

PROMETHEUS = os.environ.get("LITH_PROMETHEUS", "/usr/bin/prometheus")
PROMTOOL = os.environ.get("LITH_PROMTOOL", "/usr/bin/promtool")
JOB = "lith"
START_TIMEOUT = 30.0
HTTP_TIMEOUT = 10.0

_running = set()        # started, not yet stopped: killed at interpreter exit


class PromError(RuntimeError):
    """Prometheus could not be started, reached, or did not get there in time."""


class PromQLError(PromError):
    """The API answered status != success (bad expression, execution error)."""

    def __init__(self, expr, error_type, error):
        super().__init__(f"PromQL {error_type}: {error}\n  expr: {expr}")
        self.expr, self.error_type, self.error = expr, error_type, error


# --------------------------------------------------------------------------
# small helpers

def _float(v):
    return float(v)     # "NaN", "+Inf", "-Inf" parse as floats


def _parse(data):
    """API `data` -> list of series with float samples; .type is the resultType."""
    kind, result = data["resultType"], data["result"]
    if kind in ("scalar", "string"):
        t, v = result
        out = Result([{"metric": {}, "value": (t, _float(v) if kind == "scalar" else v)}])
    elif kind == "vector":
        out = Result({"metric": s["metric"], "value": (s["value"][0], _float(s["value"][1]))}
                     for s in result)
    else:
        out = Result({"metric": s["metric"], "values": [(t, _float(v)) for t, v in s["values"]]}
                     for s in result)
    out.type = kind
    return out


class Result(list):
    """A list of series (dicts) with .type = vector | matrix | scalar | string."""
    type = "vector"

    def values(self):
        """The latest float of every series (instant results)."""
        return [s["value"][1] if "value" in s else s["values"][-1][1] for s in self]

    def by(self, label):
        """{value of label: latest float} (instant results)."""
        return {s["metric"].get(label, ""): v for s, v in zip(self, self.values())}

    def finite(self):
        """True when some series has a finite latest value."""
        return any(isinstance(v, float) and math.isfinite(v) for v in self.values())


# --------------------------------------------------------------------------
# the server

class Prometheus:
    """prom = Prometheus("127.0.0.1:9842").start(); prom.query("up"); prom.stop()
    or: with Prometheus(target) as prom: ...

    workdir=None: a fresh temp dir, removed by stop(). A given workdir is the
    caller's: config and log stay in it, only the TSDB is removed.
    """

    def __init__(self, target, workdir=None, *, scrape_interval="1s",
                 evaluation_interval="1s", scrape_timeout=None,
                 metrics_path="/metrics", job=JOB, extra_args=()):
        self.target = target
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self.scrape_timeout = scrape_timeout or scrape_interval
        self.metrics_path = metrics_path
        self.job = job
        self.extra_args = list(extra_args)
        self._own_dir = workdir is None
        self.dir = None if workdir is None else os.path.abspath(str(workdir))
        self.port = None
        self.proc = None
        self.last_log = ""
        self.start_seconds = None
        self._attached_url = None

    @classmethod
    def attach(cls, url):
        """A client for a server someone else runs (start/stop do nothing)."""
        prom = cls(None)
        prom._attached_url = url.rstrip("/")
        return prom

    # -- paths and addresses

    @property
    def config_path(self):
        return os.path.join(self.dir, "prometheus.yml")

    @property
    def data_dir(self):
        return os.path.join(self.dir, "data")

    @property
    def log_path(self):
        return os.path.join(self.dir, "prometheus.log")

    @property
    def url(self):
        return self._attached_url or f"http://127.0.0.1:{self.port}"

    def log(self, lines=30):
        """Tail of the server's log (kept in .last_log after stop())."""
        if self.dir and os.path.exists(self.log_path):
            return tail(self.log_path, lines)
        return self.last_log or "(no log)"

    def config_text(self):
        return (
            "# Generated by tests/e2e/prombed.py.\n"
            "global:\n"
            f"  scrape_interval: {self.scrape_interval}\n"
            f"  scrape_timeout: {self.scrape_timeout}\n"
            f"  evaluation_interval: {self.evaluation_interval}\n"
            "scrape_configs:\n"
            f"  - job_name: {json.dumps(self.job)}\n"
            f"    metrics_path: {json.dumps(self.metrics_path)}\n"
            "    static_configs:\n"
            f"      - targets: [{json.dumps(self.target)}]\n")

    # -- lifecycle

    def start(self, timeout=START_TIMEOUT, attempts=3):
        """Start and wait for /-/ready; a port taken meanwhile means a retry."""
        if self._attached_url:
            return self
        t0 = time.monotonic()
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="prombed-")
        os.makedirs(self.dir, exist_ok=True)
        with open(self.config_path, "w") as f:
            f.write(self.config_text())
        _running.add(self)
        try:
            for _ in range(attempts):
                self.port = free_port()
                self._spawn()
                if self._wait_ready(timeout):
                    self.start_seconds = round(time.monotonic() - t0, 2)
                    return self
            raise PromError(f"prometheus could not bind a port {attempts} times\n"
                            f"--- {self.log_path}:\n{self.log()}")
        except BaseException:
            self.stop()
            raise

    def _spawn(self):
        args = [PROMETHEUS, f"--config.file={self.config_path}",
                f"--storage.tsdb.path={self.data_dir}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=info", *self.extra_args]
        with open(self.log_path, "ab") as log:
            log.write(("$ " + " ".join(args) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(args, cwd=self.dir, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def _wait_ready(self, timeout):
        """True when ready; False when it exited because its port was taken."""
        deadline = time.monotonic() + timeout
        log_start = os.path.getsize(self.log_path)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                with open(self.log_path, "rb") as f:
                    f.seek(log_start)
                    if b"address already in use" in f.read():
                        return False
                raise PromError(f"prometheus exited ({self.proc.returncode}) during "
                                f"start\n--- {self.log_path}:\n{self.log()}")
            if self._get_status("/-/ready") == 200:
                return True
            time.sleep(0.05)
        raise PromError(f"prometheus not ready after {timeout:.0f}s\n"
                        f"--- {self.log_path}:\n{self.log()}")

    def stop(self):
        """Kill the server (SIGTERM, then SIGKILL after 5 s) and remove its
        directory (only the TSDB of a caller-given one). Idempotent."""
        _running.discard(self)
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
            self.proc = None
        if self.dir and os.path.isdir(self.dir):
            self.last_log = self.log(60)
            shutil.rmtree(self.dir if self._own_dir else self.data_dir,
                          ignore_errors=True)
            if self._own_dir:
                self.dir = None

    def __enter__(self):
        return self if self.proc else self.start()

    def __exit__(self, *exc):
        self.stop()

    def is_running(self):
        if self._attached_url:
            return True
        return self.proc is not None and self.proc.poll() is None

    # -- HTTP API

    def _get_status(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as resp:
                return resp.status
        except (urllib.error.URLError, OSError):
            return None

    def api(self, path, params=None, expr=None, timeout=HTTP_TIMEOUT):
        """GET /api/v1/<path>; returns `data`. PromQL errors raise PromQLError."""
        if not self.is_running():
            raise PromError(f"prometheus is not running\n--- log:\n{self.log()}")
        url = f"{self.url}/api/v1/{path}"
        form = urllib.parse.urlencode(params or {})
        if path in ("query", "query_range"):     # POST: expressions can be long
            req = urllib.request.Request(url, data=form.encode(), method="POST", headers={
                "Content-Type": "application/x-www-form-urlencoded"})
        else:
            req = urllib.request.Request(f"{url}?{form}" if form else url)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as e:      # 400/422/503 carry a JSON error
            try:
                doc = json.load(e)
            except ValueError:
                raise PromError(f"{url}: HTTP {e.code}") from None
        except (urllib.error.URLError, OSError) as e:
            raise PromError(f"{url}: {e}\n--- log:\n{self.log()}") from None
        if doc.get("status") != "success":
            raise PromQLError(expr if expr is not None else params,
                              doc.get("errorType", "?"), doc.get("error", "?"))
        return doc["data"]

    def query(self, expr, time=None, timeout=HTTP_TIMEOUT):
        """Instant query; time is a unix timestamp (default: now)."""
        params = {"query": expr}
        if time is not None:
            params["time"] = f"{time:.3f}"
        return _parse(self.api("query", params, expr=expr, timeout=timeout))

    def query_range(self, expr, start=None, end=None, step=1.0, timeout=HTTP_TIMEOUT):
        """Range query; start defaults to end - 60 s, end to now; step in seconds."""
        end = time.time() if end is None else end
        start = end - 60 if start is None else start
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                  "step": f"{step:g}"}
        return _parse(self.api("query_range", params, expr=expr, timeout=timeout))

    def targets(self):
        """The active targets of our job (dicts as /api/v1/targets gives them)."""
        data = self.api("targets", {"state": "active"})
        return [t for t in data["activeTargets"] if t["labels"].get("job") == self.job]

    # -- waiting

    def wait_for(self, expr, predicate=None, timeout=30.0, interval=0.2):
        """Poll `expr` until predicate(result) is true (default: non-empty);
        returns the result. A PromQL error is raised at once."""
        predicate = predicate or (lambda r: len(r) > 0)
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = self.query(expr)
            if predicate(last):
                return last
            if time.monotonic() >= deadline:
                raise PromError(f"timed out after {timeout:.0f}s waiting for "
                                f"{expr!r}; last result: {list(last)[:5]}")
            time.sleep(interval)

    def wait_target_up(self, timeout=30.0):
        """Wait until our target's last scrape succeeded; returns the target.
        The error names the target's last scrape error."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            ts = self.targets()
            last = ts[0] if ts else None
            if last and last.get("health") == "up":
                return last
            if time.monotonic() >= deadline:
                why = (last or {}).get("lastError") or (last or {}).get("health") \
                    or "no target yet"
                raise PromError(f"target {self.target} not up after {timeout:.0f}s: "
                                f"{why}\n--- log:\n{self.log()}")
            time.sleep(0.1)

    def wait_scraped(self, n=2, timeout=30.0):
        """Wait until the target has been scraped successfully n times (a rate()
        needs two samples)."""
        expr = f'sum_over_time(up{{job="{self.job}"}}[1h])'
        try:
            return self.wait_for(expr, lambda r: r.values() and max(r.values()) >= n,
                                 timeout=timeout)
        except PromError as e:
            raise PromError(f"{e}\n--- target: {self.targets()}") from None


@atexit.register
def _stop_all():
    for prom in list(_running):
        prom.stop()


# --------------------------------------------------------------------------
# promtool

def promtool_check_metrics(text, timeout=30):
    """Lint exposition text with `promtool check metrics` -> (ok, output)."""
    if isinstance(text, str):
        text = text.encode()
    proc = subprocess.run([PROMTOOL, "check", "metrics"], input=text,
                          capture_output=True, timeout=timeout)
    out = (proc.stdout + proc.stderr).decode(errors="replace").strip()
    return proc.returncode == 0, out


# --------------------------------------------------------------------------
# CLI

def _print_result(res):
    for s in res:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items()))
        if "value" in s:
            print(f"{{{labels}}} {s['value'][1]}")
        else:
            print(f"{{{labels}}} {[v for _, v in s['values']]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="scrape HOST:PORT until interrupted")
    r.add_argument("--target", required=True, help="host:port serving /metrics")
    r.add_argument("--dir", help="keep config and log here (default: temp dir)")
    r.add_argument("--scrape-interval", default="1s")
    q = sub.add_parser("query", help="evaluate an expression against a running server")
    q.add_argument("--url", required=True, help="e.g. http://127.0.0.1:9090")
    q.add_argument("expr")
    c = sub.add_parser("check-metrics", help="promtool check metrics on FILE or -")
    c.add_argument("file")
    args = ap.parse_args(argv)

    if args.cmd == "run":
        prom = Prometheus(args.target, args.dir, scrape_interval=args.scrape_interval,
                          evaluation_interval=args.scrape_interval).start()
        print(f"prombed: {prom.url} scraping {args.target} (dir {prom.dir}); "
              "Ctrl-C stops it", file=sys.stderr)
        try:
            prom.wait_target_up(timeout=60)
            print(f"prombed: target {args.target} is up", file=sys.stderr)
            while prom.is_running():
                time.sleep(1)
            print(f"prombed: prometheus exited\n{prom.log()}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0
        finally:
            prom.stop()
    if args.cmd == "query":
        _print_result(Prometheus.attach(args.url).query(args.expr))
        return 0
    text = sys.stdin.read() if args.file == "-" else open(args.file).read()
    ok, out = promtool_check_metrics(text)
    print(out or "ok")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PromError as e:
        print(f"prombed: {e}", file=sys.stderr)
        sys.exit(1)
