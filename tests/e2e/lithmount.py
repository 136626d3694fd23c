"""lithmount — run `lith mount` / `lith umount` from tests and benchmarks.

Owns: one mount of a bucket on a directory (started with the bed's
credentials, through a given `lith cached` socket or with a private daemon
in a given cache dir), finding the processes that belong to it by their
command lines, and cleaning up after a failed test (lazy unmount, then
SIGKILL) so no mount or process outlives the test.
"""

import os
import signal
import subprocess
import time

import lithcli


def mounted(path):
    """True when path is a mount point in this namespace (/proc/self/mounts)."""
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        for line in f:
            target = line.split()[1].encode().decode("unicode_escape")
            if target == path:
                return True
    return False


def pids_with(arg):
    """Live (non-zombie) processes whose command line contains arg."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and any(arg.encode() in c for c in cmd):
            found.append(int(d))
    return found


def wait_for(pred, timeout=20.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


class Mount:
    def __init__(self, bed, bucket, mountpoint, socket=None, cache_dir=None, prefix="",
                 extra=(), env=None, endpoint=None):
        self.bed, self.bucket, self.prefix = bed, bucket, prefix
        self.mountpoint = os.path.realpath(str(mountpoint))
        self.socket, self.cache_dir = socket, (str(cache_dir) if cache_dir else None)
        self.extra = list(extra)
        self.env = env or lithcli.bed_env(bed)
        self.endpoint = endpoint or bed.endpoint

    def args(self):
        src = f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
        a = ["mount", "--endpoint", self.endpoint, src, self.mountpoint]
        if self.socket:
            a += ["--cache-socket", str(self.socket)]
        if self.cache_dir:
            a += ["--cache-dir", self.cache_dir]
            if not self.socket:
                a += ["--private-cache", "--cache-size", "512M"]
        return a + self.extra

    def mount(self, check=True):
        os.makedirs(self.mountpoint, exist_ok=True)
        res = lithcli.run(self.args(), env=self.env, timeout=120)
        if check and res.rc != 0:
            raise AssertionError(f"lith mount failed ({res.rc}): {res.err}")
        return res

    def umount(self, *flags, check=True):
        res = lithcli.run(["umount", *flags, self.mountpoint], timeout=60)
        if check and res.rc != 0:
            raise AssertionError(f"lith umount failed ({res.rc}): {res.err}")
        return res

    def mounter_pids(self):
        return [p for p in pids_with(self.mountpoint) if self._is_mounter(p)]

    def daemon_pids(self):
        """The private `lith cached` of this mount (by its cache dir)."""
        return pids_with(self.cache_dir + "/cached.sock") if self.cache_dir else []

    @staticmethod
    def _is_mounter(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return b"mount" in f.read().split(b"\0")[1:2]
        except OSError:
            return False

    def cleanup(self):
        """Whatever happened: no mount, no process left."""
        if mounted(self.mountpoint):
            lithcli.run(["umount", "--lazy", self.mountpoint], timeout=60)
        if mounted(self.mountpoint):
            subprocess.run(["umount", "-l", self.mountpoint], check=False)
        for pid in self.mounter_pids() + self.daemon_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self):
        self.mount()
        return self

    def __exit__(self, *exc):
        self.cleanup()
