"""The Grafana dashboards (deploy/grafana) against a real Prometheus, no lith:
both files are well-formed Grafana 9/10 dashboards; a synthetic exposition
with every metric of the catalogue (two volumes: one streaming, one
fault-bound) is served by a tiny HTTP server and scraped by prombed; every
dashboard query, every template variable and the three diagnosis queries of
the reference doc ("Telling this regime apart from a slow mount") evaluate
to data, and the diagnosis reads as the doc says; promtool accepts the
exposition. Runs in ~10 s (Prometheus applies new targets ~5 s after start)."""

import http.server
import math
import re
import threading

import pytest

import dashboards
import prombed

# The metric catalogue the C side exports: family -> (type, labels).
VOL = ("volume_id", "namespace", "pod")
CATALOGUE = {
    # lith cached
    "lith_fill_seconds": ("histogram", VOL + ("kind",)),
    "lith_ttfb_floor_seconds": ("gauge", VOL),
    "lith_fill_bytes_total": ("counter", VOL + ("kind",)),
    "lith_fills_in_flight": ("gauge", ()),
    "lith_fill_inflight_bytes": ("gauge", ()),
    "lith_fill_budget_bytes": ("gauge", ()),
    "lith_prefetch_dropped_total": ("counter", ()),
    "lith_s3_requests_total": ("counter", ("op", "status")),
    "lith_s3_retries_total": ("counter", ()),
    "lith_s3_fetched_bytes_total": ("counter", ()),
    "lith_cache_hits_total": ("counter", VOL),
    "lith_cache_misses_total": ("counter", VOL),
    "lith_cache_evictions_total": ("counter", ()),
    "lith_cache_used_bytes": ("gauge", ()),
    "lith_cache_capacity_bytes": ("gauge", ()),
    "lith_cache_device_info": ("gauge", ("device", "model", "kind", "network_attached", "rotational")),
    "lith_index_entries": ("gauge", VOL),
    "lith_index_dataset_bytes": ("gauge", VOL),
    "lith_index_build_seconds": ("gauge", VOL),
    "lith_index_age_seconds": ("gauge", VOL),
    "lith_index_skipped_keys": ("gauge", VOL + ("reason",)),
    # lith mount (exported by lith csi)
    "lith_fuse_op_seconds": ("histogram", VOL + ("op",)),
    "lith_fuse_errors_total": ("counter", VOL + ("op",)),
    "lith_fuse_read_bytes_total": ("counter", VOL),
    "lith_fuse_read_size_bytes": ("histogram", VOL),
    "lith_fuse_open_handles": ("gauge", VOL),
    "lith_readahead_window_bytes": ("gauge", VOL),
    # lith csi
    "lith_csi_calls_total": ("counter", ("method", "code")),
    "lith_csi_call_seconds": ("histogram", ("method",)),
    "lith_mounter_restarts_total": ("counter", VOL),
    "lith_volume_condition_abnormal": ("gauge", VOL),
    "lith_volumes_published": ("gauge", ()),
    "lith_cached_up": ("gauge", ()),
    # every process
    "lith_process_resident_memory_bytes": ("gauge", ("process",) + VOL),
    "lith_process_cpu_seconds_total": ("counter", ("process",) + VOL),
    "lith_build_info": ("gauge", ("version",)),
}

FILL_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
FUSE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                0.1, 0.25, 0.5, 1, 2.5, 5, 10)
SIZE_BUCKETS = tuple(4096 << i for i in range(9))          # 4 KiB .. 1 MiB
CSI_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)
FUSE_OPS = ("lookup", "getattr", "open", "opendir", "read", "readdir", "release",
            "releasedir", "statfs", "readlink", "getxattr", "listxattr")
FLOOR = 0.02        # both volumes' endpoint costs 20 ms at best

# vol-a streams (prefetch covers it: few demand fills); vol-b is the
# fault-bound regime (every read a demand fill, each ~ the floor).
# namespace/pod may be empty: vol-b has none.
VOLUMES = {
    "vol-a": {"labels": {"volume_id": "vol-a", "namespace": "team-a", "pod": "reader-0"},
              "fills": {"demand": 2, "whole": 40, "prefetch-range": 8},
              "read_size": 1048576, "reads": 200, "window": 8 << 20},
    "vol-b": {"labels": {"volume_id": "vol-b", "namespace": "", "pod": ""},
              "fills": {"demand": 50, "whole": 0, "prefetch-range": 0},
              "read_size": 4096, "reads": 50, "window": 131072},
}
FILL_TTFB = {"demand": 0.022, "whole": 0.03, "prefetch-range": 0.024}


# --------------------------------------------------------------------------
# the synthetic exposition

class Exposition:
    """Text format 0.0.4 with HELP and TYPE for every family."""

    def __init__(self):
        self.families = {}        # name -> (type, [lines])

    def _fam(self, name):
        if name not in self.families:
            self.families[name] = (CATALOGUE[name][0], [])
        return self.families[name][1]

    @staticmethod
    def _labels(labels):
        inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
        return "{" + inner + "}" if inner else ""

    def sample(self, name, labels, value):
        self._fam(name).append(f"{name}{self._labels(labels)} {value:g}")

    def histogram(self, name, labels, buckets, observations):
        """observations: [(value, count)], cumulative since start."""
        lines = self._fam(name)
        for le in buckets + (math.inf,):
            n = sum(c for v, c in observations if v <= le)
            le_text = "+Inf" if le == math.inf else repr(le)     # 1048576, 0.0005, 5e-05
            lines.append(f"{name}_bucket{self._labels(dict(labels, le=le_text))} {n}")
        lines.append(f"{name}_sum{self._labels(labels)} {sum(v * c for v, c in observations):g}")
        lines.append(f"{name}_count{self._labels(labels)} {sum(c for _, c in observations)}")

    def text(self):
        out = []
        for name, (kind, lines) in self.families.items():
            out += [f"# HELP {name} lith synthetic test data.", f"# TYPE {name} {kind}", *lines]
        return "\n".join(out) + "\n"


def synthetic(n):
    """The node's scrape after n scrapes: counters and histograms grow by the
    same amount every scrape, gauges are constant."""
    e = Exposition()
    for vid, v in VOLUMES.items():
        L = v["labels"]
        for kind, per in v["fills"].items():
            e.histogram("lith_fill_seconds", dict(L, kind=kind), FILL_BUCKETS,
                        [(FILL_TTFB[kind], per * n)])
            e.sample("lith_fill_bytes_total", dict(L, kind=kind), per * n * (1 << 20))
        e.sample("lith_ttfb_floor_seconds", L, FLOOR)
        hits = v["reads"] - sum(v["fills"].values())
        e.sample("lith_cache_hits_total", L, max(hits, 5) * n)
        e.sample("lith_cache_misses_total", L, sum(v["fills"].values()) * n)
        e.sample("lith_index_entries", L, 1985)
        e.sample("lith_index_dataset_bytes", L, 14 << 30)
        e.sample("lith_index_build_seconds", L, 1.2)
        e.sample("lith_index_age_seconds", L, 3600 + n)
        e.sample("lith_index_skipped_keys", dict(L, reason="invalid_name"), 3)
        e.sample("lith_index_skipped_keys", dict(L, reason="file_dir_conflict"), 1)
        for i, op in enumerate(FUSE_OPS):
            typical = 0.0002 if op != "read" else (0.0008 if vid == "vol-a" else FLOOR + 0.003)
            count = v["reads"] if op == "read" else 5 + i
            e.histogram("lith_fuse_op_seconds", dict(L, op=op), FUSE_BUCKETS,
                        [(typical, count * n), (typical * 20, n)])
        e.sample("lith_fuse_errors_total", dict(L, op="read"), n)
        e.sample("lith_fuse_errors_total", dict(L, op="open"), 0)
        e.sample("lith_fuse_read_bytes_total", L, v["reads"] * v["read_size"] * n)
        e.histogram("lith_fuse_read_size_bytes", L, SIZE_BUCKETS,
                    [(v["read_size"], v["reads"] * n), (4096, n)])
        e.sample("lith_fuse_open_handles", L, 4)
        e.sample("lith_readahead_window_bytes", L, v["window"])
        e.sample("lith_mounter_restarts_total", L, n // 2)
        e.sample("lith_volume_condition_abnormal", L, 0)
        e.sample("lith_process_resident_memory_bytes", dict(L, process="mounter"), 24 << 20)
        e.sample("lith_process_cpu_seconds_total", dict(L, process="mounter"), 0.05 * n)
    e.sample("lith_fills_in_flight", {}, 6)
    e.sample("lith_fill_inflight_bytes", {}, 48 << 20)
    e.sample("lith_fill_budget_bytes", {}, 64 << 20)
    e.sample("lith_prefetch_dropped_total", {}, n)
    for op, status, per in (("get", "206", 100), ("get", "200", 4), ("get", "503", 1),
                            ("get", "0", 1), ("head", "200", 1), ("list", "200", 2)):
        e.sample("lith_s3_requests_total", {"op": op, "status": status}, per * n)
    e.sample("lith_s3_retries_total", {}, 2 * n)
    e.sample("lith_s3_fetched_bytes_total", {}, 104 * n * (1 << 20))
    e.sample("lith_cache_evictions_total", {}, 10 * n)
    e.sample("lith_cache_used_bytes", {}, 9 << 30)
    e.sample("lith_cache_capacity_bytes", {}, 10 << 30)
    e.sample("lith_cache_device_info", {"device": "nvme1n1", "model": "Amazon EC2 NVMe Instance Storage",
                                        "kind": "nvme", "network_attached": "0", "rotational": "0"}, 1)
    for method, code, per in (("NodePublishVolume", "OK", 2), ("NodeUnpublishVolume", "OK", 1),
                              ("NodeGetVolumeStats", "OK", 5), ("NodePublishVolume", "NOT_FOUND", 1)):
        e.sample("lith_csi_calls_total", {"method": method, "code": code}, per * n)
    for method, secs in (("NodePublishVolume", 0.3), ("NodeUnpublishVolume", 0.05),
                         ("NodeGetVolumeStats", 0.002)):
        e.histogram("lith_csi_call_seconds", {"method": method}, CSI_BUCKETS, [(secs, 2 * n)])
    e.sample("lith_volumes_published", {}, len(VOLUMES))
    e.sample("lith_cached_up", {}, 1)
    e.sample("lith_process_resident_memory_bytes", {"process": "csi"}, 18 << 20)
    e.sample("lith_process_resident_memory_bytes", {"process": "cached"}, 120 << 20)
    e.sample("lith_process_cpu_seconds_total", {"process": "csi"}, 0.01 * n)
    e.sample("lith_process_cpu_seconds_total", {"process": "cached"}, 0.3 * n)
    e.sample("lith_build_info", {"version": "0.1.0-test"}, 1)
    return e


# --------------------------------------------------------------------------
# fixtures

class _Handler(http.server.BaseHTTPRequestHandler):
    scrapes = 0

    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        type(self).scrapes += 1
        body = synthetic(type(self).scrapes).text().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def exporter():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{srv.server_port}"
    srv.shutdown()
    srv.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def prom(exporter, tmp_path_factory):
    with prombed.Prometheus(exporter, tmp_path_factory.mktemp("prombed")) as p:
        p.wait_target_up(timeout=20)
        p.wait_scraped(2, timeout=20)
        yield p


# --------------------------------------------------------------------------
# (a) the files

def test_dashboards_are_wellformed():
    titles = {}
    for name in dashboards.FILES:
        d = dashboards.load(name)
        titles[name] = d["title"]
        assert d["uid"] == name.removesuffix(".json") and d["schemaVersion"] >= 36
        assert d["id"] is None
        ds = [v for v in d["templating"]["list"] if v["type"] == "datasource"]
        assert [(v["name"], v["query"]) for v in ds] == [("DS_PROMETHEUS", "prometheus")]
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), name
        for p in dashboards.panels(d):
            where = f"{name}: {p['title']!r}"
            targets = p.get("targets", [])
            assert targets and all(t.get("expr", "").strip() for t in targets), where
            assert p.get("description", "").strip(), where
            refs = [t["refId"] for t in targets]
            assert len(refs) == len(set(refs)), where
            for obj in [p, *targets]:
                assert obj["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, where
            g = p["gridPos"]
            assert g["x"] + g["w"] <= 24 and g["w"] > 0 and g["h"] > 0, where
    assert titles == {"lith-node.json": "lith / Node", "lith-volume.json": "lith / Volume"}

    vol = {v["name"]: v for v in dashboards.load("lith-volume.json")["templating"]["list"]}["volume"]
    assert vol["query"]["query"] == "label_values(lith_fill_seconds_count, volume_id)"


def test_volume_latency_panel_explains_the_regimes():
    panels = {p["title"]: p for p in dashboards.panels(dashboards.load("lith-volume.json"))}
    p = panels["Demand fill median vs TTFB floor"]
    exprs = [t["expr"] for t in p["targets"]]
    assert any(e.startswith("histogram_quantile(0.5,") and 'kind="demand"' in e for e in exprs)
    assert any("lith_ttfb_floor_seconds" in e for e in exprs)
    text = p["description"]
    assert "floor" in text and "1. " in text and "2. " in text and "3. " in text
    assert "threshold" in text        # says there is deliberately none
    ratio = panels["Demand share of fills"]["targets"][0]["expr"]
    assert "ignoring(kind) sum without(kind)" in ratio


def test_cost_panels_state_the_prices():
    for p in dashboards.panels(dashboards.load("lith-node.json")):
        if "cost" in p["title"].lower():
            assert "$0.0004 per 1,000" in p["description"], p["title"]
            assert "$0.005 per 1,000" in p["description"], p["title"]
            assert "us-east-1" in p["description"], p["title"]


def test_dashboards_use_the_catalogue_and_nothing_else():
    used = dashboards.metric_names()
    assert used <= set(CATALOGUE), used - set(CATALOGUE)
    assert used == set(CATALOGUE), f"catalogue metrics no panel shows: {set(CATALOGUE) - used}"
    # every query has all its variables substituted
    for q in dashboards.queries(volume="vol-a"):
        assert "$" not in q.expr, q


def test_volume_dashboard_selects_the_volume_everywhere():
    """Every per-volume metric in lith / Volume is filtered by $volume (an
    aggregation would hide another volume's series from the live check)."""
    for q in dashboards.queries(volume="vol-a", files=("lith-volume.json",)):
        for m in re.finditer(r"\b(lith_\w+)(\{[^}]*\})?", q.raw):
            family = re.sub(r"_(bucket|sum|count)$", "", m[1])
            if "volume_id" in CATALOGUE[family][1]:
                assert 'volume_id="$volume"' in (m[2] or ""), f"{q}: {m[0]}"


def test_synthetic_exposition_is_the_catalogue():
    e = synthetic(1)
    assert set(e.families) == set(CATALOGUE)
    for name, (kind, lines) in e.families.items():
        labels = set()
        for line in lines:
            labels |= set(re.findall(r'(\w+)="', line))
        labels.discard("le")
        assert labels <= set(CATALOGUE[name][1]), (name, labels)


# --------------------------------------------------------------------------
# (d) promtool

def test_promtool_accepts_the_synthetic_exposition():
    ok, out = prombed.promtool_check_metrics(synthetic(3).text())
    assert ok, out


def test_promtool_reports_problems():
    ok, out = prombed.promtool_check_metrics("# TYPE lith_x counter\nlith_x 1\n")
    assert not ok and "_total" in out


# --------------------------------------------------------------------------
# (b) every query against a real Prometheus

@pytest.mark.parametrize("volume", sorted(VOLUMES))
def test_every_dashboard_query_returns_data(prom, volume):
    failures = []
    for q, res in dashboards.evaluate(prom, volume=volume, rate_interval="1m",
                                      interval="15s", range_="5m"):
        if isinstance(res, Exception):
            failures.append(f"{q}: {res}")
        elif not res:
            failures.append(f"{q}: no data\n  {q.expr}")
        elif not res.finite():
            failures.append(f"{q}: only NaN/Inf {res.values()}\n  {q.expr}")
        elif q.file == "lith-volume.json":
            others = {s["metric"]["volume_id"] for s in res if "volume_id" in s["metric"]}
            if others - {volume}:
                failures.append(f"{q}: series of other volumes {others}")
    assert not failures, "\n".join(failures) + "\n--- prometheus:\n" + prom.log(10)


def test_variable_queries_list_the_volumes(prom):
    vq = dashboards.variable_queries()
    vols = prom.query(vq[("lith-volume.json", "volume")]).by("volume_id")
    assert set(vols) == set(VOLUMES)
    nodes = prom.query(vq[("lith-node.json", "node")]).by("instance")
    assert list(nodes) == [prom.target]


def test_range_queries_of_the_diagnosis_panels(prom):
    # what Grafana sends for a time series panel: a range query
    for q in dashboards.queries(volume="vol-b"):
        if q.panel in ("Demand fill median vs TTFB floor", "Demand share of fills"):
            res = prom.query_range(q.expr, step=1)
            assert res.type == "matrix" and res and res[0]["values"], q


# --------------------------------------------------------------------------
# (c) the reference's three queries, verbatim

REF_DEMAND_P50 = 'histogram_quantile(0.5, rate(lith_fill_seconds_bucket{kind="demand"}[1m]))'
REF_FLOOR = 'lith_ttfb_floor_seconds'
REF_RATIO = ('rate(lith_fill_seconds_count{kind="demand"}[1m])\n'
             '  / ignoring(kind) sum without(kind)(rate(lith_fill_seconds_count[1m]))')


def test_reference_queries_tell_the_regimes_apart(prom):
    p50 = prom.query(REF_DEMAND_P50).by("volume_id")
    floor = prom.query(REF_FLOOR).by("volume_id")
    share = prom.query(REF_RATIO).by("volume_id")
    assert set(p50) == set(floor) == set(share) == set(VOLUMES)
    for vid in VOLUMES:
        # demand ~ the floor for both (within one histogram bucket)
        assert floor[vid] == FLOOR
        assert FLOOR / 2 < p50[vid] <= 0.025, (vid, p50[vid])
    # vol-a: prefetch covers it (healthy); vol-b: ~all fills are demand (fault-bound)
    assert share["vol-a"] == pytest.approx(2 / 50, rel=0.05)
    assert share["vol-b"] == pytest.approx(1.0, rel=0.01)


def test_promql_errors_are_clear(prom):
    with pytest.raises(prombed.PromQLError) as e:
        prom.query("rate(lith_fill_seconds_count)")
    assert e.value.error_type == "bad_data" and "range vector" in str(e.value)
    assert "rate(lith_fill_seconds_count)" in str(e.value)
