"""cpusplit — run a benchmark with the S3 side and the client side on
different cores.

On this 2-core bed RGW (and the latency proxy) share the CPU with the
client under test, so a client that does more work per byte (a mount
writes a cache, copies into FUSE) also takes CPU away from the server it
is measured against, while the raw ceiling (`lith s3 bench`) does almost
none. On a real node S3's CPU is not the node's. --split-cpus emulates
that: the bed's ceph/radosgw processes and the proxy get CPU 0, the
benchmark and every client it starts get the other cores. Both the ceiling
and the systems measured run under the same split.
"""

import os
import subprocess

SERVER_CPUS = {0}


def client_cpus():
    return set(range(os.cpu_count() or 1)) - SERVER_CPUS or SERVER_CPUS


def pin(pid, cpus):
    """Pins every thread of pid (threads made later inherit)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass


def split(bed_dir, proxy_pids=()):
    """Server side (the bed at bed_dir, the proxies) to SERVER_CPUS, this
    process (and what it starts from now on) to the rest."""
    out = subprocess.run(["pgrep", "-f", f"{bed_dir}/ceph.conf"], capture_output=True,
                         text=True).stdout.split()
    for pid in [*map(int, out), *proxy_pids]:
        pin(pid, SERVER_CPUS)
    os.sched_setaffinity(0, client_cpus())
    return len(out)
