"""End-to-end test of the node's metrics: a real Prometheus (Debian 2.42)
scrapes `lith csi --metrics-addr` while a sequential workload runs on one
published volume and a random 4 KiB workload on a second, both through the
in-region latency profile (20 ms to first byte), then:

  * the reference's three queries, verbatim, return data for both volumes
    and read as the reference says they should: on the sequential volume
    `whole` dominates and `demand` is a small share; on the random one
    `demand` is nearly all fills and its median is close to the floor;
  * every panel query of both Grafana dashboards evaluates and returns data;
  * lith_s3_requests_total equals RGW's own ledger for the whole run;
  * `promtool check metrics` accepts the exposition; /healthz, /readyz and
    404/405 behave.

Owns: the node fixture (lith cached + lith csi with a metrics endpoint +
Prometheus) and the two workloads.
"""

import os
import random
import re
import urllib.error
import urllib.request

import pytest

import dashboards
import prombed
from cachedd import Cached
from test_csi import Csi, pb, pod_target, publish_req  # noqa: F401  (pb is a fixture)

MIB = 1 << 20
SEQ_SIZE = 128 * MIB
RAND_SIZE = 256 * MIB
RAND_READS = 120

# The demand median may sit this far above the floor and still read as "one
# round trip per fault": the floor is a 10th percentile of the endpoint's
# own first-byte time while the median adds the connection's request write
# and lith's dispatch, and histogram_quantile interpolates inside buckets
# whose bounds grow by ~1.5x around 20 ms. A queueing regime shows several
# times the floor.
MEDIAN_OVER_FLOOR_MAX = 2.0

Q_DEMAND_MEDIAN = 'histogram_quantile(0.5, rate(lith_fill_seconds_bucket{kind="demand"}[1m]))'
Q_FLOOR = 'lith_ttfb_floor_seconds'
Q_DEMAND_SHARE = ('rate(lith_fill_seconds_count{kind="demand"}[1m])\n'
                  '  / ignoring(kind) sum without(kind)(rate(lith_fill_seconds_count[1m]))')


def scrape(port, path="/metrics", method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def samples(text, name):
    """{frozenset(labels): value} of one metric in an exposition."""
    out = {}
    for m in re.finditer(r'^' + re.escape(name) + r'(?:\{(.*)\})? (\S+)$', text, re.M):
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1) or ""))
        out[labels] = float(m.group(2))
    return out


@pytest.fixture
def node(rgw, tmp_path, pb, proxy):  # noqa: F811
    px = proxy("in-region")
    port = prombed.free_port()
    cached = Cached(tmp_path / "cached", cache_size="2G").start()  # no S3 request yet
    csi = Csi(tmp_path, cached, pb, extra=["--metrics-addr", f"127.0.0.1:{port}"]).start()
    csi.targets, csi.port, csi.endpoint = [], port, px.endpoint
    try:
        with prombed.Prometheus(f"127.0.0.1:{port}", tmp_path / "prom") as prom:
            csi.prom = prom
            yield csi
    finally:
        for t in csi.targets:
            csi.node.NodeUnpublishVolume(csi.pb.NodeUnpublishVolumeRequest(
                volume_id="x", target_path=t), timeout=60)
        csi.stop()
        cached.stop()


def publish(node, rgw, bucket, vol, pod, tmp_path):
    target = pod_target(tmp_path, pod)
    node.node.NodePublishVolume(publish_req(node, rgw, bucket, target, vol=vol, ctx={
        "endpoint": node.endpoint, "csi.storage.k8s.io/pod.name": pod,
        "csi.storage.k8s.io/pod.namespace": "batch"}), timeout=120)
    return target


def sequential(path):
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(4 * MIB):
            n += len(chunk)
    return n


def random_4k(path, size, reads, seed=7):
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # what a random reader does
        for _ in range(reads):
            assert len(os.pread(fd, 4096, rng.randrange(0, size - 4096) & ~4095)) == 4096
    finally:
        os.close(fd)


def by_volume(result):
    return {s["metric"].get("volume_id"): s["value"][1] for s in result}


def test_regimes_dashboards_and_ledger(node, rgw, make_bucket, tmp_path):
    seq_b, rand_b = make_bucket("mseq"), make_bucket("mrnd")
    rgw.put(seq_b, "stream.bin", os.urandom(SEQ_SIZE))
    rgw.put(rand_b, "index.bin", os.urandom(RAND_SIZE))
    rgw.put(rand_b, "notes/readme.txt", b"random access lives here\n")
    prom = node.prom
    prom.wait_target_up(timeout=60)

    with rgw.ledger.window() as w:  # every S3 request the node makes
        seq_t = publish(node, rgw, seq_b, "vol-seq", "reader-seq", tmp_path)
        rand_t = publish(node, rgw, rand_b, "vol-rand", "reader-rand", tmp_path)
        # rate() sees what happens after a series' first sample: let the
        # volumes' (zero) series be scraped before the workloads start
        prom.wait_for('lith_fill_seconds_count{kind="demand"}',
                      lambda r: {"vol-seq", "vol-rand"} <= set(by_volume(r)), timeout=60)
        assert sequential(os.path.join(seq_t, "stream.bin")) == SEQ_SIZE
        random_4k(os.path.join(rand_t, "index.bin"), RAND_SIZE, RAND_READS)
        os.listdir(os.path.join(rand_t, "notes"))
    prom.wait_scraped(3, timeout=60)

    # The reference's three queries, verbatim.
    share = prom.wait_for(Q_DEMAND_SHARE, lambda r: {"vol-seq", "vol-rand"} <= set(by_volume(r)),
                          timeout=60)
    share = by_volume(share)
    median = by_volume(prom.query(Q_DEMAND_MEDIAN))
    floor = by_volume(prom.query(Q_FLOOR))
    assert {"vol-seq", "vol-rand"} <= set(median) and {"vol-seq", "vol-rand"} <= set(floor)
    whole = by_volume(prom.query(Q_DEMAND_SHARE.replace('"demand"', '"whole"')))
    # Sequential: prefetch covers the stream; demand is its cold start.
    assert share["vol-seq"] < 0.25, share
    assert whole["vol-seq"] > 0.5, whole
    # Random: every read is a fault paying one round trip.
    assert share["vol-rand"] > 0.9, share
    assert 0.015 < floor["vol-rand"] < 0.2, floor  # the proxy's 20 ms
    assert median["vol-rand"] <= MEDIAN_OVER_FLOOR_MAX * floor["vol-rand"], (median, floor)

    # Every panel of both dashboards evaluates and returns data.
    bad = []
    for vol in ("vol-seq", "vol-rand"):
        for q, res in dashboards.evaluate(prom, volume=vol, rate_interval="1m", interval="15s",
                                          range_="5m"):
            if isinstance(res, Exception) or not res:
                bad.append(f"{vol}: {q}: {res or 'no data'}\n  {q.expr}")
    assert not bad, "\n".join(bad)

    status, ctype, text = scrape(node.port)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    ok, out = prombed.promtool_check_metrics(text)
    assert ok, out
    fuse = samples(text, "lith_fuse_read_bytes_total")
    key = frozenset({("volume_id", "vol-seq"), ("namespace", "batch"), ("pod", "reader-seq")})
    assert fuse[key] >= SEQ_SIZE
    assert samples(text, "lith_cached_up") == {frozenset(): 1.0}
    procs = {dict(k)["process"] for k in samples(text, "lith_process_resident_memory_bytes")}
    assert procs == {"csi", "cached", "mounter"}

    # lith_s3_requests_total equals the server's ledger, op by op and
    # status by status.
    kinds = {"get": "GET", "head": "HEAD", "list": "LIST"}
    ours = {(kinds[dict(k)["op"]], int(dict(k)["status"])): int(v)
            for k, v in samples(text, "lith_s3_requests_total").items()}
    theirs = {}
    for e in w.counts.entries:
        theirs[(e.kind, e.status)] = theirs.get((e.kind, e.status), 0) + 1
    assert ours == theirs
    assert theirs.get(("GET", 206), 0) > 0
    # and the bytes: what RGW sent is what lith counts as fetched
    fetched = samples(text, "lith_s3_fetched_bytes_total")[frozenset()]
    assert fetched == sum(e.bytes for e in w.counts.of("GET"))


def test_health_endpoints(node):
    assert scrape(node.port, "/healthz")[0] == 200
    assert scrape(node.port, "/readyz")[0] == 200
    assert scrape(node.port, "/nope")[0] == 404
    assert scrape(node.port, "/metrics", method="POST")[0] == 405
    node.cached.stop()
    assert scrape(node.port, "/readyz")[0] == 503
    status, _, text = scrape(node.port)
    assert status == 200 and samples(text, "lith_cached_up") == {frozenset(): 0.0}
    ok, out = prombed.promtool_check_metrics(text)
    assert ok, out
