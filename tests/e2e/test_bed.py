"""Tests of the S3 test bed itself: the RGW bed (users, TLS, addressing), the
request ledger (exact counts from radosgw's own log), and the fault/latency
proxy (each fault as a boto3 client without retries sees it, framing on
keep-alive connections, determinism, runtime reconfiguration).
"""

import concurrent.futures
import http.client
import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

import botocore.exceptions
import pytest

from rgwbed import RgwBed, classify
from s3proxy import S3Proxy

OBJ = b"0123456789" * 100_000            # 1,000,000 bytes


@pytest.fixture
def objects(rgw, bucket):
    rgw.put(bucket, "k", b"hello")
    rgw.put(bucket, "dir/big", OBJ)
    return bucket


def client_error(excinfo):
    err = excinfo.value.response
    return err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]


# --------------------------------------------------------------------------
# the bed

def test_env_and_attach(rgw):
    env = rgw.env()
    assert env["LITH_S3_ENDPOINT"] == rgw.endpoint
    assert env["LITH_S3_REGION"] == "us-east-1"
    again = RgwBed.attach(rgw.dir)
    assert again.endpoint == rgw.endpoint and again.https_port == rgw.https_port


def test_wrong_secret_is_signature_mismatch(rgw, objects):
    bad = rgw.client(secret_key="not-the-secret", max_attempts=1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        bad.get_object(Bucket=objects, Key="k")
    assert client_error(e) == ("SignatureDoesNotMatch", 403)


def test_second_user_is_denied(rgw, objects):
    other = rgw.client(rgw.user2_access_key, rgw.user2_secret_key, max_attempts=1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        other.get_object(Bucket=objects, Key="k")
    assert client_error(e) == ("AccessDenied", 403)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        other.list_objects_v2(Bucket=objects)
    assert client_error(e) == ("AccessDenied", 403)
    assert objects not in [b["Name"] for b in other.list_buckets()["Buckets"]]


def test_https_with_generated_ca(rgw, objects, vhost):
    s3 = rgw.client(endpoint=rgw.https_endpoint)          # verify=rgw.ca_file
    assert s3.get_object(Bucket=objects, Key="k")["Body"].read() == b"hello"
    vs = rgw.client(endpoint=rgw.https_vhost_endpoint, addressing_style="virtual")
    assert vs.get_object(Bucket=objects, Key="k")["Body"].read() == b"hello"
    ctx = ssl.create_default_context(cafile=rgw.ca_file)
    with urllib.request.urlopen(f"https://127.0.0.1:{rgw.https_port}/", context=ctx) as r:
        assert r.status == 200
    with pytest.raises(ssl.SSLError):                     # system CAs: untrusted
        ssl.create_default_context().wrap_socket(
            socket.create_connection(("127.0.0.1", rgw.https_port)),
            server_hostname="localhost")


def test_multipart_upload_etag(rgw, bucket):
    etag = rgw.put_multipart(bucket, "mp", OBJ * 10, part_size=5 << 20)
    assert etag.strip('"').endswith("-2")
    got = rgw.s3.get_object(Bucket=bucket, Key="mp", Range="bytes=9999990-9999999")
    assert got["Body"].read() == OBJ[-10:]


# --------------------------------------------------------------------------
# the ledger

def test_ledger_path_style(rgw, objects):
    s3 = rgw.s3
    with rgw.ledger.window() as w:
        s3.get_object(Bucket=objects, Key="k")["Body"].read()
        s3.get_object(Bucket=objects, Key="dir/big", Range="bytes=0-99")["Body"].read()
        s3.head_object(Bucket=objects, Key="k")
        s3.list_objects_v2(Bucket=objects)
        s3.list_objects_v2(Bucket=objects, Prefix="dir/", Delimiter="/")
        s3.list_objects(Bucket=objects)
        s3.put_object(Bucket=objects, Key="new", Body=b"x")
    c = w.counts
    assert dict(c) == {"GET": 2, "HEAD": 1, "LIST": 3, "OTHER": 1}
    assert c.total == 7
    assert c.statuses == {200: 6, 206: 1}
    gets = c.of("GET")
    assert [(e.path, e.bytes) for e in gets] == [(f"/{objects}/k", 5),
                                                 (f"/{objects}/dir/big", 100)]
    assert all(e.op for e in c.entries), "every entry paired with its op"
    assert [e.query.split("&")[0] for e in c.of("LIST")][:1] == ["list-type=2"]


def test_ledger_virtual_hosted(rgw, objects, vhost):
    vs = rgw.client(endpoint=rgw.vhost_endpoint, addressing_style="virtual")
    with rgw.ledger.window() as w:
        vs.get_object(Bucket=objects, Key="k")["Body"].read()
        vs.get_object(Bucket=objects, Key="dir/big")["Body"].read()
        vs.head_object(Bucket=objects, Key="dir/big")
        vs.list_objects_v2(Bucket=objects)
        vs.list_objects(Bucket=objects, Prefix="dir/")
    c = w.counts
    assert dict(c) == {"GET": 2, "HEAD": 1, "LIST": 2, "OTHER": 0}
    # the access line alone cannot tell "/k" (object) from "/" (bucket) kinds
    assert [e.path for e in c.of("GET")] == ["/k", "/dir/big"]
    assert {e.path for e in c.of("LIST")} == {"/"}
    assert c.of("GET")[1].bytes == len(OBJ)


def test_ledger_counts_errors_and_other(rgw, objects):
    s3 = rgw.client(max_attempts=1)
    bad = rgw.client(secret_key="wrong", max_attempts=1)
    with rgw.ledger.window() as w:
        with pytest.raises(botocore.exceptions.ClientError):
            s3.get_object(Bucket=objects, Key="missing")
        with pytest.raises(botocore.exceptions.ClientError):
            bad.get_object(Bucket=objects, Key="k")
        with pytest.raises(botocore.exceptions.ClientError):
            s3.head_object(Bucket=objects, Key="missing")
        s3.list_buckets()
        s3.get_object_acl(Bucket=objects, Key="k")
        s3.delete_object(Bucket=objects, Key="k")
    c = w.counts
    assert dict(c) == {"GET": 2, "HEAD": 1, "LIST": 0, "OTHER": 3}
    assert c.statuses == {404: 2, 403: 1, 200: 2, 204: 1}
    assert [e.status for e in c.of("GET")] == [404, 403]
    assert {e.op for e in c.of("OTHER")} == {"list_buckets", "get_acls", "delete_obj"}


def test_ledger_concurrent_requests_all_counted(rgw, objects):
    s3 = rgw.s3

    def one(i):
        if i % 3 == 0:
            s3.head_object(Bucket=objects, Key="k")
        else:
            s3.get_object(Bucket=objects, Key="k")["Body"].read()
    with rgw.ledger.window() as w:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(one, range(300)))
    assert dict(w.counts) == {"GET": 200, "HEAD": 100, "LIST": 0, "OTHER": 0}
    assert all(e.op == "get_obj" for e in w.counts.entries)


def test_ledger_marks_are_independent(rgw, objects):
    ledger = rgw.ledger
    outer = ledger.mark()
    rgw.s3.head_object(Bucket=objects, Key="k")
    inner = ledger.mark()
    rgw.s3.get_object(Bucket=objects, Key="k")["Body"].read()
    assert dict(ledger.since(inner)) == {"GET": 1, "HEAD": 0, "LIST": 0, "OTHER": 0}
    assert dict(ledger.since(outer)) == {"GET": 1, "HEAD": 1, "LIST": 0, "OTHER": 0}
    assert ledger.since(ledger.mark()).total == 0


def test_classify_without_op_uses_path_style():
    assert classify("GET", "/b/k", "") == "GET"
    assert classify("GET", "/b", "") == "LIST"
    assert classify("GET", "/", "") == "OTHER"
    assert classify("GET", "/k", "list_bucket") == "LIST"
    assert classify("HEAD", "/b", "stat_bucket") == "HEAD"
    assert classify("PUT", "/b/k", "put_obj") == "OTHER"


# --------------------------------------------------------------------------
# the proxy: pass-through and framing

def test_proxy_passes_everything_through(rgw, objects, proxy):
    px = proxy()
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    big = os.urandom(3 << 20)
    with rgw.ledger.window() as w:
        s3.put_object(Bucket=objects, Key="up", Body=big)                 # 100-continue
        assert s3.get_object(Bucket=objects, Key="up")["Body"].read() == big
        assert s3.head_object(Bucket=objects, Key="up")["ContentLength"] == len(big)
        assert len(s3.list_objects_v2(Bucket=objects)["Contents"]) == 3  # chunked
        s3.delete_object(Bucket=objects, Key="up")                        # 204
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.get_object(Bucket=objects, Key="up")
        assert client_error(e) == ("NoSuchKey", 404)
        r = s3.get_object(Bucket=objects, Key="dir/big", Range="bytes=10-19")
        assert r["Body"].read() == OBJ[10:20]
    c = px.counters()
    assert c["requests"] == 7 and c["connections"] == 1      # one keep-alive conn
    assert c["by_kind"] == {"GET": 3, "HEAD": 1, "LIST": 1, "PUT": 1, "OTHER": 1}
    assert c["bytes_up"] == len(big)
    assert dict(w.counts) == {"GET": 3, "HEAD": 1, "LIST": 1, "OTHER": 2}
    assert sum(c["faults"].values()) == 0


def test_proxy_virtual_hosted(rgw, objects, proxy, vhost):
    px = proxy()
    vs = rgw.client(endpoint=px.vhost_endpoint, addressing_style="virtual")
    with rgw.ledger.window() as w:
        assert vs.get_object(Bucket=objects, Key="k")["Body"].read() == b"hello"
        vs.list_objects_v2(Bucket=objects)
    assert px.counters()["by_kind"]["GET"] == 1
    assert px.counters()["by_kind"]["LIST"] == 1
    assert dict(w.counts) == {"GET": 1, "HEAD": 0, "LIST": 1, "OTHER": 0}


def test_proxy_ttfb_and_rtt(rgw, objects, proxy):
    px = proxy(ttfb_ms=150, rtt_ms=50)
    s3 = rgw.client(endpoint=px.endpoint)
    s3.head_object(Bucket=objects, Key="k")                 # connection set up
    with rgw.ledger.window() as w:
        t = time.monotonic()
        s3.get_object(Bucket=objects, Key="k")["Body"].read()
        elapsed = time.monotonic() - t
    assert elapsed >= 0.2                                   # ttfb + one rtt
    assert w.counts["GET"] == 1 and w.counts.total == 1
    assert px.counters()["requests"] == 2
    px.configure(profile="none")
    assert px.config()["ttfb_ms"] == 0 and px.config()["rtt_ms"] == 0


def test_proxy_profiles(rgw, proxy):
    px = proxy("in-region")
    cfg = px.config()
    assert (cfg["rtt_ms"], cfg["ttfb_ms"], cfg["conn_rate"]) == (1.0, 20.0, 90e6)
    cfg = px.configure(profile="cross-region")
    assert (cfg["rtt_ms"], cfg["ttfb_ms"], cfg["conn_rate"]) == (61.0, 20.0, 90e6)
    cfg = px.configure(profile="in-region", conn_rate=None, ttfb_ms=5)
    assert (cfg["rtt_ms"], cfg["ttfb_ms"], cfg["conn_rate"]) == (1.0, 5.0, None)
    with pytest.raises(ValueError):
        px.configure(profile="moon")


def test_proxy_bandwidth_cap(rgw, objects, proxy):
    px = proxy(conn_rate=4e6)
    s3 = rgw.client(endpoint=px.endpoint)
    t = time.monotonic()
    assert s3.get_object(Bucket=objects, Key="dir/big")["Body"].read() == OBJ
    assert time.monotonic() - t >= 0.2                      # 1 MB at 4 MB/s
    px.configure(conn_rate=None, total_rate=2e6)            # existing connection
    t = time.monotonic()
    s3.get_object(Bucket=objects, Key="dir/big")["Body"].read()
    assert time.monotonic() - t >= 0.4                      # 1 MB at 2 MB/s


# --------------------------------------------------------------------------
# the proxy: faults, each as a boto3 client without retries sees it

GET_ONCE = {"rate": 1.0, "match": ["GET"], "limit": 1}


@pytest.mark.parametrize("kind,code,status", [("500", "InternalError", 500),
                                              ("503", "SlowDown", 503)])
def test_fault_error_responses(rgw, objects, proxy, kind, code, status):
    px = proxy(faults={kind: GET_ONCE})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with rgw.ledger.window() as w:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.get_object(Bucket=objects, Key="k")
        assert client_error(e) == (code, status)
        # same keep-alive connection, next request is fine (limit 1)
        assert s3.get_object(Bucket=objects, Key="k")["Body"].read() == b"hello"
    c = px.counters()
    assert c["faults"][kind] == 1 and c["connections"] == 1
    assert w.counts["GET"] == 1                  # the injected one never reached RGW
    faults = [r for r in px.log_records() if r["event"] == "fault"]
    assert [(f["fault"], f["kind"]) for f in faults] == [(kind, "GET")]


def test_fault_reset_before_response(rgw, objects, proxy):
    px = proxy(faults={"reset": {**GET_ONCE, "at": "head"}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with pytest.raises(botocore.exceptions.ConnectionClosedError):
        s3.get_object(Bucket=objects, Key="k")
    assert px.counters()["faults"]["reset"] == 1
    assert s3.get_object(Bucket=objects, Key="k")["Body"].read() == b"hello"


def test_fault_reset_is_an_rst(rgw, objects, proxy):
    px = proxy(faults={"reset": {"rate": 1.0, "at": "head"}})
    sock = socket.create_connection(("127.0.0.1", px.port))
    sock.sendall(f"GET /{objects}/k HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    with pytest.raises(ConnectionResetError):
        sock.recv(100)
    sock.close()


def test_fault_reset_mid_body(rgw, objects, proxy):
    px = proxy(faults={"reset": {**GET_ONCE, "at": "body", "fraction": 0.5}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with rgw.ledger.window() as w:
        body = s3.get_object(Bucket=objects, Key="dir/big")["Body"]
        with pytest.raises(botocore.exceptions.ResponseStreamingError) as e:
            body.read()
    assert "reset" in str(e.value).lower()
    assert px.counters()["faults"]["reset"] == 1
    assert w.counts["GET"] == 1                  # forwarded: RGW served it


def test_fault_truncate_is_incomplete_read(rgw, objects, proxy):
    px = proxy(faults={"truncate": {**GET_ONCE, "fraction": 0.25}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    r = s3.get_object(Bucket=objects, Key="dir/big")
    assert r["ContentLength"] == len(OBJ)        # full length announced
    with pytest.raises(botocore.exceptions.ResponseStreamingError) as e:
        r["Body"].read()
    assert "IncompleteRead(250000 bytes read, 750000 more expected)" in str(e.value)
    assert px.counters()["faults"]["truncate"] == 1


def test_fault_stall_then_continue(rgw, objects, proxy):
    px = proxy(faults={"stall": {**GET_ONCE, "seconds": 0.5, "then": "continue"}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    t = time.monotonic()
    assert s3.get_object(Bucket=objects, Key="dir/big")["Body"].read() == OBJ
    assert time.monotonic() - t >= 0.5
    assert px.counters()["faults"]["stall"] == 1


def test_fault_stall_hits_read_timeout(rgw, objects, proxy):
    px = proxy(faults={"stall": {**GET_ONCE, "seconds": 3, "then": "close"}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1, read_timeout=1)
    with pytest.raises(botocore.exceptions.ReadTimeoutError):
        s3.get_object(Bucket=objects, Key="k")
    assert px.counters()["faults"]["stall"] == 1


def test_fault_stall_mid_body_then_close(rgw, objects, proxy):
    px = proxy(faults={"stall": {**GET_ONCE, "seconds": 0.3, "then": "close",
                                 "at": "body"}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with pytest.raises(botocore.exceptions.ResponseStreamingError) as e:
        s3.get_object(Bucket=objects, Key="dir/big")["Body"].read()
    assert "IncompleteRead(500000 bytes read" in str(e.value)


def test_fault_match_only_selected_kinds(rgw, objects, proxy):
    px = proxy(faults={"503": {"rate": 1.0, "match": ["GET"]}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    s3.head_object(Bucket=objects, Key="k")
    s3.list_objects_v2(Bucket=objects)
    s3.put_object(Bucket=objects, Key="p", Body=b"p")
    for _ in range(3):
        with pytest.raises(botocore.exceptions.ClientError):
            s3.get_object(Bucket=objects, Key="k")
    assert px.counters()["faults"]["503"] == 3


def test_fault_on_put_with_body(rgw, bucket, proxy):
    """An injected error on a PUT (Expect: 100-continue) leaves the client
    and the next request fine."""
    px = proxy(faults={"503": {"rate": 1.0, "match": ["PUT"], "limit": 1}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="p", Body=OBJ)
    assert client_error(e) == ("SlowDown", 503)
    s3.put_object(Bucket=bucket, Key="p", Body=OBJ)
    assert rgw.s3.get_object(Bucket=bucket, Key="p")["Body"].read() == OBJ


def fault_sequence(px):
    return [r["seq"] for r in px.log_records() if r["event"] == "fault"]


def test_fault_seed_is_deterministic(rgw, objects, proxy):
    spec = {"503": {"rate": 0.3}, "500": {"rate": 0.2}}
    runs = []
    for _ in range(2):
        px = proxy(faults=spec, seed=42)
        s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
        for _ in range(40):
            try:
                s3.head_object(Bucket=objects, Key="k")
            except botocore.exceptions.ClientError:
                pass
        runs.append((fault_sequence(px), px.counters()["faults"]))
    assert runs[0] == runs[1]
    assert 0 < len(runs[0][0]) < 40


def test_runtime_reconfiguration_and_counters(rgw, objects, proxy):
    px = proxy()
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    s3.get_object(Bucket=objects, Key="k")
    px.configure(faults={"500": {"rate": 1.0}})
    with pytest.raises(botocore.exceptions.ClientError):
        s3.get_object(Bucket=objects, Key="k")
    px.configure(faults={})
    s3.get_object(Bucket=objects, Key="k")
    c = px.counters()
    assert c["requests"] == 3 and c["faults"]["500"] == 1
    assert c["statuses"] == {"200": 2, "500": 1}
    assert px.reset_counters()["requests"] == 0
    with pytest.raises(ValueError):
        px.configure(faults={"teleport": {"rate": 1}})
    # the control endpoint is plain JSON over HTTP
    url = f"http://127.0.0.1:{px.control_port}/counters"
    with urllib.request.urlopen(url) as r:
        assert json.loads(r.read())["requests"] == 0


def test_proxy_process_cli(rgw, objects, tmp_path):
    """The standalone process with CLI flags and port files."""
    here = os.path.dirname(os.path.abspath(__file__))
    pf, cf = tmp_path / "port", tmp_path / "cport"
    proc = subprocess.Popen([sys.executable, os.path.join(here, "s3proxy.py"),
                             "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{rgw.port}",
                             "--port-file", str(pf), "--control-port-file", str(cf),
                             "--profile", "in-region", "--fault", "503:1:match=HEAD:limit=1",
                             "--seed", "3", "--log", str(tmp_path / "log")])
    try:
        deadline = time.monotonic() + 10
        while not pf.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        s3 = rgw.client(endpoint=f"http://127.0.0.1:{int(pf.read_text())}", max_attempts=1)
        with pytest.raises(botocore.exceptions.ClientError):
            s3.head_object(Bucket=objects, Key="k")
        s3.head_object(Bucket=objects, Key="k")
        with urllib.request.urlopen(f"http://127.0.0.1:{int(cf.read_text())}/config") as r:
            cfg = json.loads(r.read())
        assert cfg["profile"] == "in-region" and cfg["faults"]["503"]["limit"] == 1
    finally:
        proc.terminate()
        proc.wait(10)
    lines = [json.loads(x) for x in (tmp_path / "log").read_text().splitlines()]
    assert [r["fault"] for r in lines if r["event"] == "fault"] == ["503"]



def test_proxy_survives_upstream_closing_idle_connections(tmp_path):
    """An upstream that silently closes kept-alive connections after each
    response (as radosgw does after its idle timeout): the proxy notices
    and reconnects instead of failing the next request."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            self.close_connection = True          # no "Connection: close"

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with S3Proxy(server.server_address[1], workdir=str(tmp_path)) as px:
            conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
            for _ in range(3):
                conn.request("GET", "/b/k")
                resp = conn.getresponse()
                assert (resp.status, resp.read()) == (200, b"ok")
                time.sleep(0.05)                      # let the FIN arrive
            assert px.counters()["connections"] == 1
    finally:
        server.shutdown()



def test_fault_on_head_and_list_keeps_framing(rgw, objects, proxy):
    """Injected errors on HEAD carry no body, and error XML for a LIST
    (query with '&') parses: the keep-alive connection stays in sync."""
    px = proxy(faults={"503": {"rate": 1.0, "match": ["HEAD", "LIST"], "limit": 2}})
    s3 = rgw.client(endpoint=px.endpoint, max_attempts=1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket=objects, Prefix="d")
    assert client_error(e) == ("SlowDown", 503)
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
    conn.request("HEAD", f"/{objects}/k")
    resp = conn.getresponse()
    assert resp.status == 503 and resp.read() == b""
    conn.request("GET", f"/{objects}/k")           # anonymous: 403 from radosgw
    resp = conn.getresponse()
    assert resp.status == 403 and b"AccessDenied" in resp.read()
    assert px.counters()["faults"]["503"] == 2
