#!/usr/bin/python3
"""peer_bench — lith against s3fs, rclone mount and copy-then-read, access
shape by access shape, side by side in one run (issue 7).

Starts the RGW bed (or reuses LITH_RGW_DIR / --bed-dir), puts the in-region
latency proxy in front of it (~1 ms RTT, 20 ms to first byte, 90 MB/s per
connection), uploads the dataset once, then for each shape and each system:
start the system fresh (empty cache, new mount), run the shape cold, run it
again warm, stop the system (always, even after a failure). The raw S3
ceiling (`lith s3 bench`) is measured next to the stream shape.

Per cell: wall seconds, MB/s (and reads/s), the requests RGW received by
kind and the bytes it sent (from its own log), peak RSS of the client
processes. Writes tests/bench/results/peers[-quick].{csv,md,png} and prints
the goals as PASS/MISS lines. Not part of the test suite: asserts nothing
about time. Needs root (FUSE mounts, drop_caches).

usage: /usr/bin/python3 tests/bench/peer_bench.py [--quick]
           [--systems lith,s3fs,rclone,copy] [--shapes stream-cat,...]
           [--budget-min 20] [--cell-timeout S] [--no-drop-caches]
           [--bed-dir D] [--out DIR] [--lith-cached-arg=--block-size=64K]
           [--lith-mount-arg=--readahead-max=128M]
"""

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import dataset  # noqa: E402
import lithcli  # noqa: E402
import procstat  # noqa: E402
import report  # noqa: E402
import shapes as shapes_mod  # noqa: E402
import systems as systems_mod  # noqa: E402
import cpusplit  # noqa: E402
from rgwbed import RgwBed  # noqa: E402
from s3proxy import S3Proxy  # noqa: E402

RAW = "raw: lith s3 bench"


def log(msg):
    print(msg, flush=True)


class Run:
    """One benchmark run: the bed, the proxy, the budget, the cells so far."""

    def __init__(self, args, bed, proxy, sizes, digests):
        self.args, self.bed, self.proxy = args, bed, proxy
        self.sizes, self.digests = sizes, digests
        self.rows = []
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.budget_min * 60

    def over_budget(self):
        return time.monotonic() > self.deadline

    # -- one cell

    def measure(self, system, shape, phase):
        row = {"shape": shape.name, "system": system.name, "phase": phase,
               "touched_bytes": shape.touched, "status": "ok"}
        if phase == "cold" and self.args.drop_caches:
            procstat.drop_caches()
        procstat.reset_hwm(system.pids())
        system.staged_rss_mib = 0.0
        fired = []
        watchdog = threading.Timer(self.args.cell_timeout,
                                   lambda: (fired.append(1), system.abort()))
        watchdog.start()
        mark = self.bed.ledger.mark()
        t0 = time.monotonic()
        try:
            row["setup_s"] = system.stage(shape.needs) if phase == "cold" else None
            got = shape.run(system.root)
            row["seconds"] = time.monotonic() - t0
        except Exception as e:                                   # noqa: BLE001
            why = f"aborted after {self.args.cell_timeout:.0f} s; " if fired else ""
            row.update(status="error", error=f"{why}{type(e).__name__}: {e}",
                       seconds=time.monotonic() - t0)
            got = None
        finally:
            watchdog.cancel()
            counts = self.bed.ledger.since(mark)
        row.update(GET=counts["GET"], HEAD=counts["HEAD"], LIST=counts["LIST"],
                   OTHER=counts["OTHER"], bytes_moved=sum(e.bytes for e in counts.entries),
                   peak_rss_mib=max(procstat.peak_rss_mib(system.pids()),
                                    system.staged_rss_mib))
        if got is not None:
            row["mb_s"] = got["bytes"] / 1e6 / row["seconds"] if got["bytes"] else None
            row["ops_s"] = got["ops"] / row["seconds"]
        self.rows.append(row)
        self._print(row)
        return row["status"] == "ok"

    def _print(self, r):
        if r["status"] != "ok":
            log(f"  {r['system']:16s} {r['phase']:4s} {r['status'].upper()}: {r['error']}")
            return
        rate = f"{r['mb_s']:8.1f} MB/s" if r.get("mb_s") else f"{r['ops_s']:8.0f} op/s"
        log(f"  {r['system']:16s} {r['phase']:4s} {r['seconds']:7.2f} s {rate}  "
            f"GET/HEAD/LIST/other {r['GET']}/{r['HEAD']}/{r['LIST']}/{r['OTHER']}  "
            f"{r['bytes_moved'] / 1e6:8.1f} MB  rss {r['peak_rss_mib']:6.0f} MiB")

    def skip(self, system_name, shape, why):
        for phase in ("cold", "warm"):
            self.rows.append({"shape": shape.name, "system": system_name, "phase": phase,
                              "status": "skipped", "error": why,
                              "touched_bytes": shape.touched})
        log(f"  {system_name:16s} skipped: {why}")

    # -- one system on one shape: fresh start, cold, warm, stop

    def system_cells(self, cls, shape):
        system = cls(self.bed, self.proxy.endpoint, self.sizes)
        if self.over_budget():
            return self.skip(system.name, shape, "over the run's time budget")
        work = tempfile.mkdtemp(prefix=f"bench-{system.name}-", dir="/tmp")
        try:
            try:
                setup = system.start(work)
            except Exception as e:                               # noqa: BLE001
                return self.skip(system.name, shape, f"start failed: {e}")
            if self.measure(system, shape, "cold"):
                self.rows[-1]["setup_s"] = self.rows[-1]["setup_s"] or setup
                self.measure(system, shape, "warm")
        finally:
            try:
                system.stop()
            finally:
                shutil.rmtree(work, ignore_errors=True)

    # -- the raw ceiling, next to the stream shape

    def raw_ceiling(self, shape):
        row = {"shape": shape.name, "system": RAW, "phase": "cold", "status": "ok",
               "touched_bytes": shape.touched}
        mark = self.bed.ledger.mark()
        args = [lithcli.lith_bin(), "s3", "bench", f"s3://{dataset.BUCKET}/{dataset.STREAM_KEY}",
                "--concurrency", "16", "--part-size", "8M", "--endpoint", self.proxy.endpoint]
        proc = subprocess.Popen(args, env=lithcli.bed_env(self.bed), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        rc, rss = procstat.wait_rss(proc)
        secs = time.monotonic() - t0
        out = proc.stdout.read().decode()
        err = proc.stderr.read().decode(errors="replace")
        proc.stdout.close()
        proc.stderr.close()
        counts = self.bed.ledger.since(mark)
        if rc != 0:
            row.update(status="error", error=f"lith s3 bench failed ({rc}): {err[-300:]}",
                       seconds=secs)
        else:
            fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
            row.update(seconds=float(fields["seconds"]), mb_s=float(fields["MB/s"]),
                       ops_s=1 / float(fields["seconds"]))
        row.update(GET=counts["GET"], HEAD=counts["HEAD"], LIST=counts["LIST"],
                   OTHER=counts["OTHER"], bytes_moved=sum(e.bytes for e in counts.entries),
                   peak_rss_mib=rss, setup_s=None)
        self.rows.append(row)
        self._print(row)

    def shape(self, shape_cls, system_classes):
        shape = shape_cls(self.sizes, self.digests)
        log(f"\n== {shape.name}  (touches {shape.touched / 1e6:.1f} MB in {shape.ops} "
            f"reads)  t+{time.monotonic() - self.t0:.0f}s ==")
        if shape.name == "stream-cat":
            self.raw_ceiling(shape)
        for cls in system_classes:
            self.system_cells(cls, shape)


# --------------------------------------------------------------------------

def versions():
    def first(cmd):
        with contextlib.suppress(Exception):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (p.stdout or p.stderr).splitlines()[0].strip()
        return "?"
    return {"lith": first([lithcli.lith_bin(), "--version"]),
            "s3fs": first(["s3fs", "--version"]), "rclone": first(["rclone", "version"]),
            "aws": first(["/usr/bin/aws", "--version"])}


def machine_notes(args, sizes, run_seconds, load_before, load_after):
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    v = versions()
    return {
        "mode": "quick (scaled-down sizes)" if args.quick else "full",
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": f"{os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux "
                   f"{platform.release()}; load average {load_before} before, "
                   f"{load_after} after (the machine was shared with other work)",
        "commit": commit,
        "versions": "; ".join(f"{k}: {val}" for k, val in v.items()),
        "bed": "Ceph RGW (memstore OSD) on 127.0.0.1 behind tests/e2e/s3proxy.py, "
               "profile in-region: 1 ms RTT, 20 ms to first byte, 90 MB/s per "
               "connection, no aggregate cap",
        "sizes": f"stream {sizes.stream >> 20} MiB; selective "
                 f"{sizes.selective_frac:.0%} of {sizes.big >> 20} MiB in "
                 f"{sizes.selective_piece >> 10} KiB pieces; batch {sizes.batch_n} x "
                 f"{sizes.batch_size >> 20} MiB; random 4 KiB: {sizes.random_qd1} at QD1, "
                 f"{sizes.random_qd64} at QD64; tree {sizes.files} x "
                 f"{sizes.file_size >> 10} KiB in 20 directories",
        "page cache": "dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before every "
                      "cold cell" if args.drop_caches else "not dropped",
        "lith options": " ".join(args.lith_cached_arg + args.lith_mount_arg) or "defaults",
        "cpus": "split: RGW and the proxy on CPU 0, every client and the workloads on "
                "the other core (--split-cpus, tests/bench/cpusplit.py)" if args.split_cpus
                else "shared: RGW, the proxy, the clients and the workloads on all cores",
        "run time": f"{run_seconds / 60:.1f} min (bed start and dataset upload "
                    "included; the budget counts from the first cell)",
    }


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="scaled-down sizes")
    ap.add_argument("--systems", default=",".join(systems_mod.ALL))
    ap.add_argument("--shapes", default=",".join(s.name for s in shapes_mod.ALL))
    ap.add_argument("--budget-min", type=float, default=20.0,
                    help="cells not started by then are skipped (default 20)")
    ap.add_argument("--cell-timeout", type=float, default=None,
                    help="seconds before a cell is aborted (default 300, quick 60)")
    ap.add_argument("--no-drop-caches", dest="drop_caches", action="store_false")
    ap.add_argument("--bed-dir", default=os.environ.get("LITH_RGW_DIR"),
                    help="reuse a running bed (default: start one, stop it after)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--split-cpus", action="store_true",
                    help="RGW and the proxy on CPU 0, clients and workloads on the "
                         "others: S3's CPU is not the node's (see cpusplit.py)")
    ap.add_argument("--lith-cached-arg", action="append", default=[],
                    help="extra `lith cached` argument (repeatable)")
    ap.add_argument("--lith-mount-arg", action="append", default=[],
                    help="extra `lith mount` argument (repeatable)")
    args = ap.parse_args()
    if args.cell_timeout is None:
        args.cell_timeout = 60.0 if args.quick else 300.0
    return args


def main():
    args = parse_args()
    sizes = dataset.QUICK if args.quick else dataset.FULL
    systems_mod.Lith.cached_args = args.lith_cached_arg
    systems_mod.Lith.mount_args = args.lith_mount_arg
    system_classes = [systems_mod.ALL[s] for s in args.systems.split(",")]
    by_name = {s.name: s for s in shapes_mod.ALL}
    shape_classes = [by_name[s] for s in args.shapes.split(",")]
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    t0 = time.monotonic()
    own_bed = args.bed_dir is None
    if own_bed:
        bed = RgwBed(tempfile.mkdtemp(prefix="bench-bed-", dir="/tmp"),
                     memstore_bytes=(10 << 30) if not args.quick else (4 << 30))
        log(f"starting the RGW bed in {bed.dir}")
        bed.start()
    else:
        bed = RgwBed.attach(args.bed_dir)
    try:
        log("dataset:")
        digests = dataset.ensure(bed, sizes, log=lambda m: log(m))
        with S3Proxy(bed.port, profile="in-region") as proxy:
            if args.split_cpus:
                cpusplit.split(bed.dir, [proxy.proc.pid])
            run = Run(args, bed, proxy, sizes, digests)
            try:
                for shape_cls in shape_classes:
                    run.shape(shape_cls, system_classes)
            finally:
                load_after = " ".join(open("/proc/loadavg").read().split()[:3])
                notes = machine_notes(args, sizes, time.monotonic() - t0, load_before,
                                      load_after)
                prefix = "peers-quick" if args.quick else "peers"
                results, files = report.write_all(args.out, prefix, run.rows, notes,
                                                  sizes.files, [s.name for s in shape_classes])
    finally:
        if own_bed:
            bed.stop()
            shutil.rmtree(bed.dir, ignore_errors=True)
    log("\n== goals (lith) ==")
    for line in report.goal_lines(results):
        log("  " + line)
    log(f"\nwrote {', '.join(files)}  ({(time.monotonic() - t0) / 60:.1f} min)")


if __name__ == "__main__":
    main()
