"""systems — the readers being compared: start fresh, expose a root, stop.

Every system shows the bucket's keys under `root` (a FUSE mount, or a local
directory the copy lands in). Lifecycle, driven by peer_bench.py:

    sys.start(work)      fresh state in the empty directory `work` (cold:
                         new cache, new mount); returns setup seconds
    sys.stage(needs)     copy-then-read only: fetch what the shape reads
                         (timed as part of the cold cell); others do nothing
    sys.pids()           client processes whose peak RSS is measured
    sys.staged_rss_mib   peak RSS of finished helper processes (aws cli)
    sys.abort()          make a hung cell fail (abort the FUSE connection)
    sys.stop()           unmount, end every process, leave nothing behind;
                         safe to call after a failed or partial start

Options are the peers' defaults plus a cache, so the warm rerun can be
served locally (each cold start gets a new, empty cache directory):
  lith     lith cached (fresh cache dir) + lith mount --cache-socket
  s3fs     -o ro,use_cache=DIR (path-style, passwd file)
  rclone   mount --read-only --vfs-cache-mode full --cache-dir DIR
           (S3 remote, provider Ceph, from RCLONE_CONFIG_* variables)
  copy     /usr/bin/aws s3 cp [--recursive] to local disk, defaults
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e"))

import lithcli  # noqa: E402
from cachedd import Cached  # noqa: E402
from lithmount import Mount, mounted, pids_with, wait_for  # noqa: E402

import dataset  # noqa: E402
import procstat  # noqa: E402


def _unmount(mp):
    """Unmount a FUSE mount; lazily if it is busy or its server is stuck."""
    if not mounted(mp):
        return
    subprocess.run(["fusermount3", "-u", mp], capture_output=True, timeout=30)
    if mounted(mp):
        procstat.abort_fuse(mp)
        subprocess.run(["umount", "-l", mp], capture_output=True, timeout=30)


def _end(pids, timeout=15):
    """SIGTERM, wait, then SIGKILL whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if wait_for(lambda: not any(os.path.exists(f"/proc/{p}") and
                                    _state(p) not in "ZX" for p in pids), timeout):
            return


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def _exe_pids(arg, exe):
    """Processes with arg on their command line whose argv[0] ends in exe."""
    out = []
    for pid in pids_with(arg):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(exe.encode()):
                    out.append(pid)
    return out


class System:
    name = "?"
    staged_rss_mib = 0.0

    def __init__(self, bed, endpoint, sizes):
        self.bed, self.endpoint, self.sizes = bed, endpoint, sizes
        self.work = self.root = None

    def stage(self, needs):
        return 0.0

    def pids(self):
        return []

    def abort(self):
        if self.root:
            procstat.abort_fuse(self.root)

    def _fresh(self, work):
        self.work = work
        self.staged_rss_mib = 0.0
        os.makedirs(work, exist_ok=True)


class Lith(System):
    name = "lith"
    cached_args = []          # extra `lith cached` / `lith mount` arguments
    mount_args = []           # (peer_bench.py --lith-cached-arg/--lith-mount-arg)

    def start(self, work):
        self._fresh(work)
        s = self.sizes
        cache = max(s.big, s.batch_n * s.batch_size, s.stream) + (512 << 20)
        self.cached = Cached(os.path.join(work, "cached"), cache_size=str(cache),
                             extra=self.cached_args)
        self.mount = Mount(self.bed, dataset.BUCKET, os.path.join(work, "mnt"),
                           socket=self.cached.socket, endpoint=self.endpoint,
                           extra=["--log-file", os.path.join(work, "mount.log"),
                                  *self.mount_args])
        self.cached.start()
        t0 = time.monotonic()
        self.mount.mount()
        self.root = self.mount.mountpoint
        return time.monotonic() - t0

    def pids(self):
        own = [self.cached.proc.pid] if self.cached.proc else []
        return self.mount.mounter_pids() + own

    def stop(self):
        if getattr(self, "mount", None):
            with contextlib.suppress(Exception):
                if mounted(self.mount.mountpoint):
                    self.mount.umount(check=False)
            self.mount.cleanup()                 # lazy unmount + SIGKILL leftovers
        if getattr(self, "cached", None):
            self.cached.stop()


class S3fs(System):
    name = "s3fs"

    def start(self, work):
        self._fresh(work)
        self.mp = self.root = os.path.join(work, "mnt")
        cache = os.path.join(work, "cache")
        os.makedirs(self.mp)
        os.makedirs(cache)
        pw = os.path.join(work, "passwd")
        with open(os.open(pw, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f"{self.bed.access_key}:{self.bed.secret_key}\n")
        t0 = time.monotonic()
        subprocess.run(["s3fs", dataset.BUCKET, self.mp, "-o", f"url={self.endpoint}",
                        "-o", "use_path_request_style", "-o", f"passwd_file={pw}",
                        "-o", "endpoint=us-east-1", "-o", "ro", "-o", f"use_cache={cache}",
                        "-o", f"logfile={os.path.join(work, 's3fs.log')}"],
                       check=True, capture_output=True, timeout=60,
                       env=lithcli.bed_env(self.bed))
        if not wait_for(lambda: mounted(self.mp), timeout=30):
            raise RuntimeError("s3fs did not mount")
        return time.monotonic() - t0

    def pids(self):
        return _exe_pids(self.mp, "s3fs")

    def stop(self):
        if not getattr(self, "mp", None):
            return
        pids = self.pids()
        _unmount(self.mp)
        _end(pids)


class Rclone(System):
    name = "rclone"
    proc = None

    def env(self):
        env = lithcli.bed_env(self.bed)
        env.pop("AWS_CA_BUNDLE", None)
        env.update({
            "RCLONE_CONFIG_PEER_TYPE": "s3",
            "RCLONE_CONFIG_PEER_PROVIDER": "Ceph",
            "RCLONE_CONFIG_PEER_ENDPOINT": self.endpoint,
            "RCLONE_CONFIG_PEER_ACCESS_KEY_ID": self.bed.access_key,
            "RCLONE_CONFIG_PEER_SECRET_ACCESS_KEY": self.bed.secret_key,
            "RCLONE_CONFIG_PEER_REGION": "us-east-1",
        })
        return env

    def start(self, work):
        self._fresh(work)
        self.mp = self.root = os.path.join(work, "mnt")
        os.makedirs(self.mp)
        conf = os.path.join(work, "rclone.conf")
        open(conf, "w").close()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            ["rclone", "mount", f"peer:{dataset.BUCKET}", self.mp, "--read-only",
             "--config", conf, "--vfs-cache-mode", "full",
             "--cache-dir", os.path.join(work, "cache"),
             "--log-file", os.path.join(work, "rclone.log")],
            env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        if not wait_for(lambda: mounted(self.mp) or self.proc.poll() is not None, 30) \
                or not mounted(self.mp):
            raise RuntimeError("rclone did not mount (see rclone.log)")
        return time.monotonic() - t0

    def pids(self):
        return [self.proc.pid] if self.proc and self.proc.poll() is None else []

    def stop(self):
        if not getattr(self, "mp", None):
            return
        _unmount(self.mp)
        if self.proc:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None


class Copy(System):
    """copy-then-read: `aws s3 cp` to local disk, then the same read there."""
    name = "copy-then-read"
    proc = None

    def start(self, work):
        self._fresh(work)
        self.root = os.path.join(work, "copy")
        os.makedirs(self.root)
        self.config = os.path.join(work, "aws-config")
        with open(self.config, "w") as f:
            f.write("[default]\nregion = us-east-1\n")
        return 0.0

    def stage(self, needs):
        """Copy the shape's objects (keys) and prefixes; returns seconds."""
        t0 = time.monotonic()
        for key in needs.get("keys", ()):
            self._aws("cp", f"s3://{dataset.BUCKET}/{key}", os.path.join(self.root, key))
        for prefix in needs.get("prefixes", ()):
            self._aws("cp", "--recursive", f"s3://{dataset.BUCKET}/{prefix}",
                      os.path.join(self.root, prefix))
        return time.monotonic() - t0

    def _aws(self, *args):
        env = lithcli.bed_env(self.bed, extra={"AWS_CONFIG_FILE": self.config})
        errpath = os.path.join(self.work, "aws.err")
        with open(errpath, "wb") as err:
            self.proc = subprocess.Popen(
                ["/usr/bin/aws", "s3", *args, "--endpoint-url", self.endpoint,
                 "--only-show-errors"], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err)
        rc, rss = procstat.wait_rss(self.proc)
        self.proc = None
        self.staged_rss_mib = max(self.staged_rss_mib, rss)
        if rc != 0:
            with open(errpath, errors="replace") as f:
                raise RuntimeError(f"aws s3 {args[0]} failed ({rc}): {f.read()[-500:]}")

    def abort(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()

    def stop(self):
        self.abort()
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)


ALL = {"lith": Lith, "s3fs": S3fs, "rclone": Rclone, "copy": Copy}
