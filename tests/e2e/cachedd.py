"""cachedd — start and stop `lith cached` for tests and benchmarks.

Owns: the daemon process (started in its own temp dir, stopped with
SIGTERM and waited for), waiting until its socket answers, and running
`lith cached cat` against it with the bed's credentials.
"""

import os
import signal
import subprocess
import time

import lithcli


class Cached:
    def __init__(self, workdir, cache_size="256M", extra=(), socket=None):
        self.workdir = str(workdir)
        self.socket = socket or os.path.join(self.workdir, "cached.sock")
        self.cache_dir = os.path.join(self.workdir, "cache")
        self.log_path = os.path.join(self.workdir, "cached.log")
        self.cache_size = cache_size
        self.extra = list(extra)
        self.proc = None

    def start(self, timeout=30):
        os.makedirs(self.workdir, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [lithcli.lith_bin(), "cached", "--socket", self.socket, "--cache-dir",
             self.cache_dir, "--cache-size", self.cache_size, "--probe-bytes", "0",
             *self.extra], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("lith cached exited: " + self.log())
            if os.path.exists(self.socket) and self.stats_text() is not None:
                return self
            time.sleep(0.05)
        raise RuntimeError("lith cached did not come up: " + self.log())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc, self.proc = (self.proc.returncode if self.proc else None), None
        return rc

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def stats_text(self):
        res = lithcli.run(["cached", "stats", "--socket", self.socket], timeout=10)
        return res.text if res.rc == 0 else None

    def stats(self):
        out = {}
        for line in (self.stats_text() or "").splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = int(parts[1])
        return out

    def cat_args(self, bed, bucket, path, out=None, endpoint=None, chunk="8M", prefix=""):
        args = ["cached", "cat", "--socket", self.socket, "--endpoint",
                endpoint or bed.endpoint, "--chunk", chunk,
                f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}", path]
        if out:
            args += ["-o", str(out)]
        return args

    def cat(self, bed, bucket, path, env=None, **kw):
        return lithcli.run(self.cat_args(bed, bucket, path, **kw),
                           env=env or lithcli.bed_env(bed), timeout=300)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
