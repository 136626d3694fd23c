#!/usr/bin/python3
"""mount_bench — `lith mount` against its ceilings and a peer.

Starts the RGW bed (or reuses LITH_RGW_DIR) and measures, in one run:

 1. Cold sequential read of one object (default 1 GiB) through a lith mount
    (`dd bs=1M` of a freshly mounted file over a `lith cached` with an empty
    cache) against `lith s3 bench --concurrency 16 --part-size 8M` on the same
    object, alternating, directly against RGW and through the latency proxy's
    in-region profile (~1 ms RTT, ~20 ms TTFB, 90 MB/s per connection).
    Also `lith cached cat` with 128 MiB requests over an empty cache: the
    cache daemon's own cold ceiling (S3 to the block file, no FUSE), which
    tells the mount's overhead apart from the daemon's.
    Prints MB/s (median of --runs) and the ratios.
 2. `ls -lR` of a 2,000-file tree (20 directories) through lith and through
    s3fs (Debian's s3fs-fuse), both behind the in-region proxy: seconds and
    the requests RGW received (GET/HEAD/LIST, from its own log), for the
    mount itself (lith builds its index there) and for the listing.

Not part of the test suite; prints figures, asserts nothing.

usage: /usr/bin/python3 tests/bench/mount_bench.py [--size-mib 1024] [--runs 3]
           [--files 2000] [--skip-read] [--skip-ls] [--mount-arg=--readahead-max=128M]
"""

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import cpusplit  # noqa: E402
import lithcli  # noqa: E402
from cachedd import Cached  # noqa: E402
from lithmount import Mount, mounted, wait_for  # noqa: E402
from rgwbed import RgwBed  # noqa: E402
from s3proxy import S3Proxy  # noqa: E402

BIG_BUCKET, BIG_KEY = "lith-mount-bench", "bench/object.bin"
LS_BUCKET = "lith-mount-bench-ls"


def ensure_big(bed, size):
    s3 = bed.client()
    try:
        if s3.head_object(Bucket=BIG_BUCKET, Key=BIG_KEY)["ContentLength"] == size:
            return
    except Exception:
        pass
    try:
        bed.make_bucket(BIG_BUCKET)
    except Exception:
        pass
    chunk = os.urandom(64 << 20)
    data = (chunk * (size // len(chunk) + 1))[:size]
    bed.put_multipart(BIG_BUCKET, BIG_KEY, data, part_size=64 << 20)


def ensure_tree(bed, nfiles):
    s3 = bed.client()
    try:
        bed.make_bucket(LS_BUCKET)
    except Exception:
        pass
    have = sum(p.get("KeyCount", 0) for p in
               s3.get_paginator("list_objects_v2").paginate(Bucket=LS_BUCKET))
    if have == nfiles:
        return
    body = os.urandom(1024)
    keys = [f"d{i % 20:02d}/file-{i:05d}.dat" for i in range(nfiles)]
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=LS_BUCKET, Key=k, Body=body), keys))


# ---- 1. sequential read -------------------------------------------------------

def s3_bench_once(bed, endpoint):
    res = lithcli.s3(bed, "bench", f"s3://{BIG_BUCKET}/{BIG_KEY}", "--concurrency", "16",
                     "--part-size", "8M", endpoint=endpoint, check=True, timeout=900)
    fields = dict(f.split("=", 1) for f in res.text.split()[3:] if "=" in f)
    return float(fields["MB/s"])


def cat_once(bed, endpoint, size, work):
    """MB/s of `lith cached cat` (128 MiB requests, no FUSE) over an empty
    cache: the cache daemon's own cold ceiling."""
    with Cached(os.path.join(work, "cached"), cache_size=str(size + (512 << 20))) as d:
        t0 = time.monotonic()
        res = d.cat(bed, BIG_BUCKET, BIG_KEY, out="/dev/null", endpoint=endpoint, chunk="128M")
        secs = time.monotonic() - t0
        assert res.rc == 0, res.err
    subprocess.run(["rm", "-rf", os.path.join(work, "cached")], check=True)
    return size / 1e6 / secs


def mount_once(bed, endpoint, size, work, extra):
    """MB/s of a cold `dd` through a fresh mount over an empty cache."""
    with Cached(os.path.join(work, "cached"), cache_size=str(size + (512 << 20))) as d:
        with Mount(bed, BIG_BUCKET, os.path.join(work, "mnt"), socket=d.socket,
                   endpoint=endpoint, extra=extra) as m:
            t0 = time.monotonic()
            subprocess.run(["dd", f"if={os.path.join(m.mountpoint, BIG_KEY)}",
                            "of=/dev/null", "bs=1M"], check=True, capture_output=True)
            secs = time.monotonic() - t0
            m.umount()
    subprocess.run(["rm", "-rf", os.path.join(work, "cached")], check=True)
    return size / 1e6 / secs


def read_bench(bed, size, runs, extra, split_cpus=False):
    print(f"\n== cold sequential read of a {size >> 20} MiB object "
          f"(median of {runs}){' [--split-cpus]' if split_cpus else ''} ==")
    with S3Proxy(bed.port, profile="in-region") as px:
        if split_cpus:
            cpusplit.pin(px.proc.pid, cpusplit.SERVER_CPUS)
        for profile, endpoint in (("direct", bed.endpoint), ("in-region proxy", px.endpoint)):
            got = {"s3 bench": [], "cat": [], "mount": []}
            for i in range(runs):
                with tempfile.TemporaryDirectory(prefix="lith-mbench-") as work:
                    got["s3 bench"].append(s3_bench_once(bed, endpoint))
                    got["cat"].append(cat_once(bed, endpoint, size, work))
                    got["mount"].append(mount_once(bed, endpoint, size, work, extra))
            med = {k: statistics.median(v) for k, v in got.items()}
            print(f"[{profile}]")
            print(f"  lith s3 bench (16 x 8 MiB) {med['s3 bench']:8.1f} MB/s  "
                  f"runs {', '.join(f'{v:.0f}' for v in got['s3 bench'])}")
            print(f"  lith cached cat (128 MiB)  {med['cat']:8.1f} MB/s  "
                  f"runs {', '.join(f'{v:.0f}' for v in got['cat'])}")
            print(f"  lith mount, dd bs=1M       {med['mount']:8.1f} MB/s  "
                  f"runs {', '.join(f'{v:.0f}' for v in got['mount'])}")
            print(f"  ratio mount / s3 bench = {med['mount'] / med['s3 bench']:.2f}   "
                  f"mount / cached cat = {med['mount'] / med['cat']:.2f}")


# ---- 2. ls -lR ------------------------------------------------------------------

def timed_ls(bed, root):
    with bed.ledger.window() as w:
        t0 = time.monotonic()
        out = subprocess.run(["ls", "-lR", root], check=True, capture_output=True).stdout
        secs = time.monotonic() - t0
    files = sum(1 for line in out.splitlines() if line.startswith(b"-"))
    return secs, w.counts, files


def lith_ls(bed, endpoint, work):
    with Cached(os.path.join(work, "cached")) as d:
        m = Mount(bed, LS_BUCKET, os.path.join(work, "lith"), socket=d.socket,
                  endpoint=endpoint)
        with bed.ledger.window() as wm:
            t0 = time.monotonic()
            m.mount()
            mount_s = time.monotonic() - t0
        try:
            return (mount_s, wm.counts) + timed_ls(bed, m.mountpoint)
        finally:
            m.cleanup()


def s3fs_ls(bed, endpoint, work):
    mp = os.path.join(work, "s3fs")
    os.makedirs(mp)
    pw = os.path.join(work, "passwd")
    with open(os.open(pw, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(f"{bed.access_key}:{bed.secret_key}\n")
    with bed.ledger.window() as wm:
        t0 = time.monotonic()
        subprocess.run(["s3fs", LS_BUCKET, mp, "-o", f"url={endpoint}",
                        "-o", "use_path_request_style", "-o", f"passwd_file={pw}",
                        "-o", "endpoint=us-east-1"], check=True)
        wait_for(lambda: mounted(mp), timeout=30)
        mount_s = time.monotonic() - t0
    try:
        return (mount_s, wm.counts) + timed_ls(bed, mp)
    finally:
        subprocess.run(["fusermount3", "-u", mp], check=False)
        wait_for(lambda: not mounted(mp), timeout=30)


def ls_bench(bed, nfiles):
    print(f"\n== ls -lR of {nfiles} files in 20 directories, in-region proxy ==")
    print(f"  {'':6s} {'mount s':>8s} {'GET/HEAD/LIST':>14s} | {'ls -lR s':>8s} "
          f"{'GET/HEAD/LIST':>14s} {'files':>6s}")
    with S3Proxy(bed.port, profile="in-region") as px:
        for name, fn in (("lith", lith_ls), ("s3fs", s3fs_ls)):
            with tempfile.TemporaryDirectory(prefix="lith-lsbench-") as work:
                ms, mc, ls_s, lc, files = fn(bed, px.endpoint, work)
            fmt = lambda c: f"{c['GET']}/{c['HEAD']}/{c['LIST']}"  # noqa: E731
            print(f"  {name:6s} {ms:8.2f} {fmt(mc):>14s} | {ls_s:8.2f} {fmt(lc):>14s} "
                  f"{files:6d}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--skip-read", action="store_true")
    ap.add_argument("--skip-ls", action="store_true")
    ap.add_argument("--split-cpus", action="store_true",
                    help="RGW and the proxy on CPU 0, lith and the readers on the "
                         "others (see cpusplit.py)")
    ap.add_argument("--mount-arg", action="append", default=[],
                    help="extra `lith mount` argument for the read benchmark")
    args = ap.parse_args()
    size = args.size_mib << 20
    reuse = os.environ.get("LITH_RGW_DIR")
    bed = RgwBed.attach(reuse) if reuse else RgwBed(tempfile.mkdtemp(prefix="lith-bench-"))
    if not reuse:
        bed.start()
    if args.split_cpus:
        cpusplit.split(bed.dir)
    try:
        if not args.skip_read:
            ensure_big(bed, size)
            read_bench(bed, size, args.runs, args.mount_arg, args.split_cpus)
        if not args.skip_ls:
            ensure_tree(bed, args.files)
            ls_bench(bed, args.files)
    finally:
        if not reuse:
            bed.stop()


if __name__ == "__main__":
    main()
