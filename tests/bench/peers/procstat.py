"""procstat — peak resident memory of the client processes, and page cache.

Owns: resetting and reading the kernel's per-process RSS high-water mark
(VmHWM; writing "5" to /proc/PID/clear_refs resets it, Linux >= 4.0), the
peak RSS of a short-lived child (its VmHWM, polled), dropping the page cache,
and aborting a FUSE connection that a timed-out cell left hanging. Needs
root (the benchmark runs as root because it mounts).
"""

import contextlib
import os
import time


def reset_hwm(pids):
    for pid in pids:
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")


def hwm_kib(pid):
    """VmHWM of pid in KiB (0 if it is gone)."""
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    return 0


def peak_rss_mib(pids):
    """Sum of the processes' peaks since reset_hwm(): an upper bound of their
    simultaneous peak (lith: mounter + cached)."""
    return sum(hwm_kib(p) for p in pids) / 1024.0


def wait_rss(proc, interval=0.02):
    """Wait for a Popen child; returns (returncode, peak RSS in MiB), the
    child's VmHWM polled until it exits (the last interval is not seen).
    Not wait4's ru_maxrss: that starts from the parent's RSS at fork (the
    kernel carries the pre-exec high-water mark over), so it would report
    this harness's own size for any small child."""
    peak = 0
    while proc.poll() is None:
        peak = max(peak, hwm_kib(proc.pid))
        time.sleep(interval)
    return proc.returncode, peak / 1024.0


def drop_caches():
    """Write back dirty pages, then drop page cache, dentries and inodes
    (machine-wide: other work on the machine loses its cache too)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def abort_fuse(mountpoint):
    """Abort the FUSE connection behind mountpoint, so reads blocked on a
    stuck server fail (ENOTCONN) instead of hanging the benchmark."""
    target = os.path.realpath(mountpoint)
    with contextlib.suppress(OSError):
        with open("/proc/self/mountinfo") as f:       # stat() could hang
            for line in f:
                fields = line.split()
                if fields[4].encode().decode("unicode_escape") == target:
                    minor = fields[2].split(":")[1]
                    with open(f"/sys/fs/fuse/connections/{minor}/abort", "w") as a:
                        a.write("1")
