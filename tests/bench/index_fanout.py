#!/usr/bin/python3
"""index_fanout — hybrid vs fan-out vs serial `lith index build`, in-region latency.

Owns one measurement, side by side in one run: a tree of --keys keys in
--top x --sub directories is uploaded to the RGW bed (once; a bucket named
with --bucket is reused when it already holds the tree), then built through
s3proxy with ~20 ms to first byte (profile in-region: rtt 1 ms, ttfb 20 ms,
90 MB/s per connection; --ttfb-ms takes a list to sweep) with `--serial`,
and at each --concurrency with the default hybrid walk (fan out, then list
each prefix's subtree flat) and with `--fanout-all` (every prefix listed
with the delimiter), --repeat times each, interleaved. Prints per mode the
median seconds (lith's own build time), LIST requests (min-max when they
vary: the hybrid cut depends on what is in flight), prefixes listed flat,
the serial/this ratio, and the CPU seconds the build cost radosgw +
ceph-osd ("server") and the proxy: on a small machine the server's CPU,
not latency, can be what bounds a parallel listing.

Not a test: it asserts nothing. Run with Debian's python3:
  /usr/bin/python3 tests/bench/index_fanout.py [--rgw-dir /tmp/lithbed]
(without --rgw-dir / LITH_RGW_DIR it starts a bed in a temp dir and stops it).
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import lithcli  # noqa: E402
from rgwbed import RgwBed  # noqa: E402
from s3proxy import S3Proxy  # noqa: E402


def tree_keys(n, top, sub):
    dirs = [f"train/part-{t:02d}/shard-{s:02d}" for t in range(top) for s in range(sub)]
    return [f"{dirs[i % len(dirs)]}/sample-{i:06d}.jpg" for i in range(n)]


def count_keys(s3, bucket):
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sum(p.get("KeyCount", 0) for p in pages)
    except s3.exceptions.NoSuchBucket:
        return -1


def upload(bed, bucket, keys, threads=32):
    have = count_keys(bed.s3, bucket)
    if have == len(keys):
        print(f"reusing bucket {bucket} ({have} keys)")
        return
    if have < 0:
        bed.make_bucket(bucket)
    local = threading.local()

    def put(key):
        if not hasattr(local, "s3"):
            local.s3 = bed.client()
        local.s3.put_object(Bucket=bucket, Key=key, Body=b"x")

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(put, keys))
    print(f"uploaded {len(keys)} keys in {time.monotonic() - t0:.1f}s")


def cpu_seconds(pids):
    """utime + stime of the given processes, in seconds."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def bed_pids(bed):
    pids = []
    for name in ("client.rgw", "osd.0"):
        try:
            with open(bed.path("run", f"{name}.pid")) as f:
                pids.append(int(f.read().strip()))
        except (OSError, ValueError):
            pass
    return pids


def build(bed, px, bucket, out, extra):
    server, proxy = bed_pids(bed), [px.proc.pid]
    s0, p0 = cpu_seconds(server), cpu_seconds(proxy)
    res = lithcli.run(["index", "build", f"s3://{bucket}", "-o", out, "--endpoint",
                       px.endpoint, *extra], env=lithcli.bed_env(bed), check=True)
    f = dict(re.findall(r"(\w+)=(\S+)", res.text))
    return (float(f["seconds"]), int(f["requests"]), int(f["files"]), int(f["dirs"]),
            cpu_seconds(server) - s0, cpu_seconds(proxy) - p0, int(f.get("flat", 0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rgw-dir", default=os.environ.get("LITH_RGW_DIR"))
    ap.add_argument("--bucket", default="bench-index-fanout")
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--sub", type=int, default=10)
    ap.add_argument("--concurrency", default="32",
                    help="comma-separated fan-out concurrencies (default 32)")
    ap.add_argument("--modes", default="serial,hybrid,fanout-all",
                    help="comma-separated subset of serial,hybrid,fanout-all")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ttfb-ms", default="20",
                    help="comma-separated time-to-first-byte values to sweep (default 20)")
    args = ap.parse_args()

    own = args.rgw_dir is None
    bed = RgwBed(tempfile.mkdtemp(prefix="lith-bench-bed-")).start() if own \
        else RgwBed.attach(args.rgw_dir)
    try:
        run(bed, args)
    finally:
        if own:
            bed.stop()
            shutil.rmtree(bed.dir, ignore_errors=True)


def run(bed, args):
    keys = tree_keys(args.keys, args.top, args.sub)
    upload(bed, args.bucket, keys)
    concs = [int(c) for c in args.concurrency.split(",")]
    wanted = set(args.modes.split(",")) | {"serial"}      # the ratio's reference
    modes = [("serial", ["--serial"])]
    modes += [(f"hybrid c={c}", ["--concurrency", str(c)])
              for c in concs if "hybrid" in wanted]
    modes += [(f"fanout-all c={c}", ["--fanout-all", "--concurrency", str(c)])
              for c in concs if "fanout-all" in wanted]
    work = tempfile.mkdtemp(prefix="lith-bench-idx-")
    try:
        sweep(bed, args, modes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sweep(bed, args, modes, work):
    out = os.path.join(work, "i.idx")
    print(f"tree: {args.keys} keys in {args.top} x {args.sub} directories; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for ttfb in [float(t) for t in args.ttfb_ms.split(",")]:
        results = {m: [] for m, _ in modes}
        with S3Proxy(bed.port, profile="in-region", ttfb_ms=ttfb,
                     workdir=os.path.join(work, f"proxy-{ttfb:g}")) as px:
            cfg = px.config()
            build(bed, px, args.bucket, out, ["--serial"])             # warm-up
            for _ in range(args.repeat):
                for name, extra in modes:
                    results[name].append(build(bed, px, args.bucket, out, extra))
        report(cfg, modes, results)


def report(cfg, modes, results):
    first = results["serial"][0]
    print(f"\nproxy: rtt_ms={cfg['rtt_ms']} ttfb_ms={cfg['ttfb_ms']} "
          f"conn_rate={cfg['conn_rate']}; index: files={first[2]} dirs={first[3]} (with root)")
    print(f"{'mode':<16} {'median_s':>9} {'min_s':>7} {'max_s':>7} {'LISTs':>9} "
          f"{'flat':>7} {'serial/this':>11} {'server_cpu_s':>12} {'proxy_cpu_s':>11}")
    serial = statistics.median(r[0] for r in results["serial"])
    for name, _ in modes:
        rs = results[name]
        times = [r[0] for r in rs]
        med = statistics.median(times)
        print(f"{name:<16} {med:9.3f} {min(times):7.3f} {max(times):7.3f} "
              f"{spread(r[1] for r in rs):>9} {spread(r[6] for r in rs):>7} "
              f"{serial / med:10.1f}x {statistics.median(r[4] for r in rs):12.2f} "
              f"{statistics.median(r[5] for r in rs):11.2f}")


def spread(values):
    values = list(values)
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"


if __name__ == "__main__":
    main()
