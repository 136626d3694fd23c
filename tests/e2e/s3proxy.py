#!/usr/bin/python3
"""s3proxy — an HTTP/1.1 proxy in front of radosgw that adds latency,
bandwidth caps and S3-style faults (this kernel has no netem).

This file owns:
  * the proxy process:  s3proxy.py --listen 127.0.0.1:0 --upstream 127.0.0.1:PORT
        --port-file F --control-port-file G [--profile in-region] [--log L]
        [--fault 503:0.1:match=GET] [--seed 1] [--config JSON]
  * its control endpoint (JSON over HTTP on another port): GET/POST /config,
    GET /counters, POST /counters/reset
  * S3Proxy: a Python wrapper that runs the process for tests.

Each client connection gets its own upstream connection. Requests and
responses are framed (Content-Length, chunked, HEAD/1xx/204/304 without a
body), so every fault applies to exactly one request on a keep-alive
connection. Bodies move in large chunks; no per-byte Python work.

Latency model, per request: the response head is released no earlier than
  (request head received) + rtt + ttfb + uniform(0, jitter)
and a new connection waits one more rtt before its first request is read
(the TCP handshake). Bandwidth caps are token buckets per connection and in
total, each direction separately.

Faults (each with its own rate, optional match on the request kind and
a limit on how many to inject; the first fault that fires wins):
  500 / 503  answered by the proxy, never forwarded (InternalError / SlowDown)
  reset      RST (SO_LINGER 0); at=head: before any response byte, request
             not forwarded; at=body: after the head and `fraction` of the body
  truncate   forwarded; head with the full Content-Length, then `fraction`
             of the body, then a normal close
  stall      forwarded; hold the response `seconds` at the head (at=head) or
             after `fraction` of the body (at=body), then continue or close
Request kinds for `match`: GET (object data), HEAD, LIST, PUT, OTHER.
"""

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.sax.saxutils

CHUNK = 1 << 20                  # body relay read size
SOCK_BUF = 4 << 20               # SO_RCVBUF / SO_SNDBUF
MAX_HEAD = 64 << 10

PROFILES = {
    "none": {"rtt_ms": 0.0, "ttfb_ms": 0.0, "jitter_ms": 0.0,
             "conn_rate": None, "total_rate": None},
    "in-region": {"rtt_ms": 1.0, "ttfb_ms": 20.0, "jitter_ms": 0.0,
                  "conn_rate": 90e6, "total_rate": None},
    "cross-region": {"rtt_ms": 61.0, "ttfb_ms": 20.0, "jitter_ms": 0.0,
                     "conn_rate": 90e6, "total_rate": None},
}
FAULT_KINDS = ("500", "503", "reset", "truncate", "stall")
FAULT_DEFAULTS = {
    "500": {},
    "503": {},
    "reset": {"at": "body", "fraction": 0.5},
    "truncate": {"fraction": 0.5},
    "stall": {"seconds": 5.0, "then": "continue", "at": "head", "fraction": 0.5},
}
REQUEST_KINDS = ("GET", "HEAD", "LIST", "PUT", "OTHER")
VHOST_DOMAINS = ("ceph.localhost", "localhost")   # longest first
LIST_PARAMS = {"list-type", "prefix", "delimiter", "marker", "max-keys",
               "continuation-token", "start-after", "encoding-type",
               "fetch-owner", "versions", "key-marker", "version-id-marker"}
OBJECT_GET_PARAMS = {"versionId", "partNumber", "x-id"}
ERROR_BODIES = {
    "500": (500, "Internal Server Error", "InternalError",
            "We encountered an internal error. Please try again."),
    "503": (503, "Slow Down", "SlowDown",
            "Please reduce your request rate."),
}


class Closed(Exception):
    """A peer closed its connection (or a fault closed it)."""


class UpstreamGone(Closed):
    """Upstream closed its connection before any byte of a response."""


# --------------------------------------------------------------------------
# configuration

def default_config():
    return {"profile": "none", **PROFILES["none"], "seed": None, "faults": {}}


def normalize_faults(faults):
    """Fill defaults; validate kinds, rates and match lists."""
    out = {}
    for kind, spec in (faults or {}).items():
        kind = str(kind)
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r} (known: {FAULT_KINDS})")
        spec = {**FAULT_DEFAULTS[kind], "rate": 0.0, "match": None,
                "limit": None, **(spec or {})}
        spec["rate"] = float(spec["rate"])
        if spec["match"] is not None:
            if isinstance(spec["match"], str):
                spec["match"] = spec["match"].split(",")
            bad = set(spec["match"]) - set(REQUEST_KINDS)
            if bad:
                raise ValueError(f"unknown request kinds {bad} in match")
        out[kind] = spec
    return out


def merge_config(current, update):
    """New config = current, then the profile's values (if a profile is
    named), then the explicit keys of update. 'faults' replaces all faults."""
    cfg = dict(current)
    update = dict(update or {})
    if "profile" in update:
        name = update["profile"]
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r} (known: {list(PROFILES)})")
        cfg.update(PROFILES[name], profile=name)
    for key, value in update.items():
        if key == "faults":
            cfg["faults"] = normalize_faults(value)
        elif key in ("rtt_ms", "ttfb_ms", "jitter_ms"):
            cfg[key] = float(value or 0)
        elif key in ("conn_rate", "total_rate"):
            cfg[key] = float(value) if value else None
        elif key in ("seed", "profile"):
            cfg[key] = value
        else:
            raise ValueError(f"unknown config key {key!r}")
    return cfg


# --------------------------------------------------------------------------
# HTTP framing helpers

class Head:
    """A parsed request or response head."""

    def __init__(self, raw):
        self.raw = raw
        lines = raw.decode("latin-1").split("\r\n")
        self.first = lines[0]
        self.headers = []
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                self.headers.append((name.strip(), value.strip()))

    def get(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def tokens(self, name):
        return {t.strip().lower() for t in (self.get(name) or "").split(",") if t}

    def content_length(self):
        value = self.get("content-length")
        return int(value) if value is not None else None

    def chunked(self):
        return "chunked" in self.tokens("transfer-encoding")


async def read_head(reader):
    """Read one head from a StreamReader (control endpoint); None on EOF."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise Closed("connection closed inside a head")
    except asyncio.LimitOverrunError:
        raise Closed("head too large")
    except (ConnectionError, OSError):
        return None
    if len(raw) > MAX_HEAD:
        raise Closed("head too large")
    return Head(raw)


def head_has_body(head):
    return head.chunked() or (head.content_length() or 0) > 0


def classify_request(method, target, host):
    """GET (object data), HEAD, LIST, PUT or OTHER — from method, path, Host."""
    if method == "HEAD":
        return "HEAD"
    if method == "PUT":
        return "PUT"
    if method != "GET":
        return "OTHER"
    path, _, query = target.partition("?")
    params = {p.split("=", 1)[0] for p in query.split("&") if p}
    hostname = (host or "").rsplit(":", 1)[0].lower()
    vhost = hostname not in VHOST_DOMAINS and \
        any(hostname.endswith("." + d) for d in VHOST_DOMAINS)
    parts = urllib.parse.unquote(path).lstrip("/")
    key = parts if vhost else (parts.split("/", 1) + [""])[1]
    bucket = True if vhost else bool(parts.split("/", 1)[0])
    if not bucket:
        return "OTHER"                       # ListBuckets
    params = {p for p in params if not p.lower().startswith("x-amz-")
              and p not in ("AWSAccessKeyId", "Signature", "Expires")}  # presigned
    if key:
        plain = all(p in OBJECT_GET_PARAMS or p.startswith("response-") for p in params)
        return "GET" if plain else "OTHER"
    return "LIST" if params <= LIST_PARAMS else "OTHER"


# --------------------------------------------------------------------------
# token buckets

class TokenBucket:
    """Rate limiter in bytes/s; takers may go into debt and sleep it off."""

    def __init__(self, rate):
        self.rate = float(rate)
        self.burst = max(64 << 10, self.rate * 0.01)
        self.tokens = self.burst
        self.stamp = time.monotonic()

    async def take(self, n):
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= n
        if self.tokens < 0:
            await asyncio.sleep(-self.tokens / self.rate)


class Limiter:
    """The buckets one direction of one connection must pass (conn + total)."""

    def __init__(self, buckets):
        self.buckets = [b for b in buckets if b is not None]

    def __bool__(self):
        return bool(self.buckets)

    def chunk(self):
        if not self.buckets:
            return CHUNK
        rate = min(b.rate for b in self.buckets)
        return int(min(CHUNK, max(16 << 10, rate / 100)))

    async def take(self, n):
        for b in self.buckets:
            await b.take(n)


# --------------------------------------------------------------------------
# the proxy

class Proxy:
    def __init__(self, upstream, config, log_path=None):
        self.upstream = upstream
        self.config = default_config()
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.counters = self.zero_counters()
        self.next_conn = 0
        self.configure(config)

    # -- configuration and counters

    @staticmethod
    def zero_counters():
        return {"connections": 0, "active_connections": 0, "requests": 0,
                "by_kind": {k: 0 for k in REQUEST_KINDS},
                "statuses": {}, "faults": {k: 0 for k in FAULT_KINDS},
                "bytes_down": 0, "bytes_up": 0, "upstream_errors": 0}

    def configure(self, update):
        cfg = merge_config(self.config, update)
        reseed = "seed" in (update or {}) or "faults" in (update or {})
        if cfg["total_rate"] != self.config.get("total_rate") or not hasattr(self, "rng"):
            rate = cfg["total_rate"]
            self.total_down = TokenBucket(rate) if rate else None
            self.total_up = TokenBucket(rate) if rate else None
        self.config = cfg
        if reseed or not hasattr(self, "rng"):
            self.rng = random.Random(cfg["seed"])
            self.jitter_rng = random.Random(f"jitter-{cfg['seed']}")
            self.injected = {k: 0 for k in FAULT_KINDS}
        self.emit({"event": "config", "config": cfg})
        return cfg

    def reset_counters(self):
        active = self.counters["active_connections"]
        self.counters = self.zero_counters()
        self.counters["active_connections"] = active

    def emit(self, record):
        if self.log:
            record = {"t": round(time.time(), 6), **record}
            self.log.write(json.dumps(record, separators=(",", ":")) + "\n")

    def choose_fault(self, kind):
        """The fault for a request of this kind, or None (deterministic for a
        seed and a sequence of requests: one draw per matching fault)."""
        for name in FAULT_KINDS:
            spec = self.config["faults"].get(name)
            if not spec or spec["rate"] <= 0:
                continue
            if spec["match"] is not None and kind not in spec["match"]:
                continue
            if spec["limit"] is not None and self.injected[name] >= spec["limit"]:
                continue
            if self.rng.random() < spec["rate"]:
                self.injected[name] += 1
                self.counters["faults"][name] += 1
                return name, spec
        return None, None

    def delay(self):
        """rtt + ttfb + jitter for one request, in seconds."""
        cfg = self.config
        jitter = self.jitter_rng.uniform(0, cfg["jitter_ms"]) if cfg["jitter_ms"] else 0
        return (cfg["rtt_ms"] + cfg["ttfb_ms"] + jitter) / 1000.0

    # -- connections

    async def serve_forever(self, listener):
        loop = asyncio.get_running_loop()
        tasks = set()
        while True:
            sock, _ = await loop.sock_accept(listener)
            task = asyncio.ensure_future(self.handle(sock))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def handle(self, sock):
        conn = Connection(self, Peer(sock))
        self.counters["connections"] += 1
        self.counters["active_connections"] += 1
        try:
            await conn.run()
        except Exception as e:                      # never kill the accept loop
            self.emit({"event": "error", "conn": conn.id, "error": repr(e)})
        finally:
            self.counters["active_connections"] -= 1
            conn.close()


class Peer:
    """A non-blocking socket with a small read-ahead buffer for heads.

    Bodies are moved with recv_into/sendall on caller-owned buffers: no
    per-chunk allocation and no buffer shuffling."""

    def __init__(self, sock):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCK_BUF)
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.pending = bytearray()
        self.closed = False

    @classmethod
    async def connect(cls, host, port):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, (host, port))
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    async def _fill(self):
        data = await self.loop.sock_recv(self.sock, 1 << 16)
        self.pending += data
        return len(data)

    async def read_until(self, sep, limit=MAX_HEAD):
        """Bytes up to and including sep; None on EOF before any byte."""
        start = 0
        while True:
            i = self.pending.find(sep, start)
            if i >= 0:
                raw = bytes(self.pending[:i + len(sep)])
                del self.pending[:i + len(sep)]
                return raw
            if len(self.pending) > limit:
                raise Closed("head too large")
            start = max(0, len(self.pending) - len(sep) + 1)
            if not await self._fill():
                if not self.pending:
                    return None
                raise Closed("connection closed inside a head")

    async def read_head(self):
        try:
            raw = await self.read_until(b"\r\n\r\n")
        except (ConnectionError, OSError):
            return None
        return Head(raw) if raw is not None else None

    async def read_line(self):
        line = await self.read_until(b"\r\n", limit=1 << 16)
        if line is None:
            raise Closed("connection closed inside a chunked body")
        return line

    async def recv_into(self, view):
        """Up to len(view) bytes into view; 0 on EOF."""
        if self.pending:
            n = min(len(view), len(self.pending))
            view[:n] = self.pending[:n]
            del self.pending[:n]
            return n
        return await self.loop.sock_recv_into(self.sock, view)

    async def send(self, data):
        await self.loop.sock_sendall(self.sock, data)

    async def wait_sent(self, timeout=2.0):
        """Wait until the kernel's send queue is empty, so an RST that
        follows does not discard bytes we meant the client to get."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                queued = struct.unpack("i", fcntl.ioctl(
                    self.sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
            except OSError:
                return
            if queued == 0:
                return
            await asyncio.sleep(0.002)

    def alive(self):
        """False if the peer has closed (or sent unexpected bytes)."""
        if self.closed or self.pending:
            return False
        try:
            self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return False
        except BlockingIOError:
            return True
        except OSError:
            return False

    def reset(self):
        """Close with an RST (SO_LINGER 0)."""
        if not self.closed:
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
            self.close()

    def close(self):
        """Close normally (FIN after queued bytes)."""
        if not self.closed:
            self.closed = True
            self.sock.close()


class Connection:
    """One client connection and its upstream connection."""

    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.upstream = None
        proxy.next_conn += 1
        self.id = proxy.next_conn
        self.seq = 0
        self.rate = self.down = self.up = None
        self.down_buf = memoryview(bytearray(CHUNK))
        self.up_buf = memoryview(bytearray(CHUNK))
        self.update_limiters()

    def update_limiters(self):
        """Per-connection buckets follow the current config (new rate, new
        buckets); the total buckets are the proxy's."""
        p, rate = self.proxy, self.proxy.config["conn_rate"]
        if rate != self.rate or self.down is None:
            self.rate = rate
            self.conn_down = TokenBucket(rate) if rate else None
            self.conn_up = TokenBucket(rate) if rate else None
        self.down = Limiter([self.conn_down, p.total_down])
        self.up = Limiter([self.conn_up, p.total_up])

    async def run(self):
        setup = self.proxy.config["rtt_ms"] / 1000.0
        if setup:
            await asyncio.sleep(setup)          # the TCP handshake's round trip
        while True:
            head = await self.client.read_head()
            if head is None:
                return
            self.seq += 1
            try:
                keep = await self.request(head)
            except (Closed, ConnectionError, OSError):
                return
            if not keep:
                return

    def close(self):
        self.client.close()
        self.drop_upstream()

    def reset(self):
        """Close the client socket with an RST."""
        self.client.reset()
        self.drop_upstream()

    def drop_upstream(self):
        if self.upstream is not None:
            self.upstream.close()
        self.upstream = None

    # -- one request

    async def request(self, head):
        t0 = time.monotonic()
        self.update_limiters()
        method, target = (head.first.split(" ") + ["", ""])[:2]
        kind = classify_request(method, target, head.get("host"))
        p = self.proxy
        p.counters["requests"] += 1
        p.counters["by_kind"][kind] += 1
        fault, spec = p.choose_fault(kind)
        record = {"event": "request", "conn": self.id, "seq": self.seq,
                  "method": method, "target": target, "host": head.get("host"),
                  "kind": kind, "fault": fault}
        if fault:
            p.emit({"event": "fault", "conn": self.id, "seq": self.seq,
                    "fault": fault, "method": method, "target": target,
                    "kind": kind})
        ready_at = t0 + p.delay()
        try:
            if fault in ("500", "503"):
                keep = await self.answer_error(head, fault, ready_at, record)
            elif fault == "reset" and spec["at"] == "head":
                await sleep_until(ready_at)
                self.reset()
                record["status"] = "reset"
                keep = False
            else:
                keep = await self.forward(head, method, ready_at, fault, spec, record)
        finally:
            record["ms"] = round((time.monotonic() - t0) * 1000, 3)
            p.emit(record)
        return keep

    async def answer_error(self, head, fault, ready_at, record):
        """Reply with an S3 error XML without asking upstream."""
        status, reason, code, message = ERROR_BODIES[fault]
        has_body = head_has_body(head)
        expect = "100-continue" in head.tokens("expect")
        keep = not (has_body and expect) and "close" not in head.tokens("connection")
        if has_body and not expect:
            await self.copy_request_body(head, None)
        resource = xml.sax.saxutils.escape(head.first.split(" ")[1])
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>{message}</Message><Resource>{resource}</Resource>"
                f"<RequestId>lith-s3proxy-{self.id}-{self.seq}</RequestId>"
                "</Error>").encode()
        out = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
               f"Content-Length: {len(body)}\r\nx-amz-request-id: lith-s3proxy\r\n"
               f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n").encode()
        if head.first.startswith("HEAD "):
            body = b""                     # a HEAD response never has a body
        await sleep_until(ready_at)
        await self.client.send(out + body)
        record["status"] = status
        self.count_status(status)
        return keep

    async def copy_request_body(self, head, dst):
        """Relay (dst is the upstream) or discard (dst None) a request body."""
        if head.chunked():
            n = await copy_chunked(self.client, dst, self.up, self.up_buf)
        else:
            n = await copy_exact(self.client, dst, head.content_length() or 0,
                                 self.up, self.up_buf)
        self.proxy.counters["bytes_up"] += n

    async def forward(self, head, method, ready_at, fault, spec, record):
        """Send the request upstream and relay the response (with faults)."""
        if not head_has_body(head):
            resp = await self.exchange_bodyless(head)
            if resp is None:
                return await self.answer_bad_gateway(record)
            keep = await self.relay_response(resp, method, ready_at, fault, spec,
                                             record)
            return keep and "close" not in head.tokens("connection")
        if await self.send_upstream(head) is None:
            return await self.answer_bad_gateway(record)
        body_task = asyncio.ensure_future(self.copy_request_body(head, self.upstream))
        try:
            resp = await self.read_response_head()
            keep = await self.relay_response(resp, method, ready_at, fault, spec,
                                             record)
            # radosgw reads a whole request body before it answers; a body
            # still pending means the client never sent it (an early error
            # answer to Expect: 100-continue): the connection is unusable.
            done, _ = await asyncio.wait({body_task}, timeout=0.5)
            if not done:
                return False
            body_task.result()
        finally:
            if not body_task.done():
                body_task.cancel()
                with contextlib.suppress(BaseException):
                    await body_task
        return keep and "close" not in head.tokens("connection")

    async def exchange_bodyless(self, head):
        """Send a request without a body and read its response head. If a
        kept-alive upstream connection turns out dead (radosgw closes idle
        ones), try once more on a fresh one. None if upstream fails."""
        for attempt in range(2):
            reused = await self.send_upstream(head)
            if reused is None:
                return None
            try:
                return await self.read_response_head()
            except UpstreamGone:
                self.drop_upstream()
                if not reused or attempt:
                    raise

    async def send_upstream(self, head):
        """Send a request head upstream (connecting if needed). Returns
        whether a kept-alive connection was reused, None if upstream fails."""
        for reuse in (True, False):
            reused = reuse and self.upstream is not None and self.upstream.alive()
            try:
                if not reused:
                    self.drop_upstream()
                    self.upstream = await Peer.connect(*self.proxy.upstream)
                await self.upstream.send(head.raw)
                return reused
            except OSError:
                self.drop_upstream()
                if not reused:
                    break
        self.proxy.counters["upstream_errors"] += 1
        return None

    async def answer_bad_gateway(self, record):
        body = b"<Error><Code>BadGateway</Code></Error>"
        await self.client.send(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: "
                               + str(len(body)).encode()
                               + b"\r\nConnection: close\r\n\r\n" + body)
        record["status"] = 502
        return False

    async def read_response_head(self):
        """The final response head; 1xx interim heads are relayed at once."""
        while True:
            resp = await self.upstream.read_head()
            if resp is None:
                self.proxy.counters["upstream_errors"] += 1
                raise UpstreamGone("upstream closed before a response")
            status = int(resp.first.split(" ")[1])
            if status >= 200 or status == 101:
                return resp
            await self.client.send(resp.raw)

    async def relay_response(self, resp, method, ready_at, fault, spec, record):
        """Relay one final response; returns whether both sides stay usable."""
        status = int(resp.first.split(" ")[1])
        record["status"] = status
        self.count_status(status)
        length, framing = self.body_framing(method, status, resp)
        stall = spec if fault == "stall" else None
        if stall and stall["at"] == "head":
            if not await self.stall(stall):
                return False
        await sleep_until(ready_at)
        await self.client.send(resp.raw)
        if stall and stall["at"] == "body" and framing != "length":
            if not await self.stall(stall):        # no known length: stall
                return False                       # right after the head
            stall = fault = None
        cut = None
        if fault in ("truncate", "reset") or (stall and stall["at"] == "body"):
            # chunked bodies have no known length: the cut is right after the head
            cut = int((length or 0) * float(spec["fraction"]))
        n = await self.copy_body(framing, length, cut)
        record["bytes"] = n
        if cut is not None:
            if fault == "truncate":
                self.drop_upstream()
                self.client.close()
                return False
            if fault == "reset":
                await self.client.wait_sent()
                self.reset()
                return False
            if not await self.stall(stall):
                return False
            n += await self.copy_body(framing, length, None, resume=n)
            record["bytes"] = n
        keep = framing != "eof" and "close" not in resp.tokens("connection")
        if not keep:
            self.drop_upstream()
        return keep

    async def copy_body(self, framing, length, cut, resume=0):
        """Relay (the rest of) a response body; returns data bytes relayed.
        resume: bytes of a Content-Length body already relayed."""
        src, dst, lim, buf = self.upstream, self.client, self.down, self.down_buf
        if framing == "chunked":
            n = await copy_chunked(src, dst, lim, buf, cut)
        elif framing == "length":
            n = await copy_exact(src, dst, length - resume, lim, buf, cut)
        elif framing == "eof":
            n = await copy_to_eof(src, dst, lim, buf)
        else:
            n = 0
        self.proxy.counters["bytes_down"] += n
        return n

    async def stall(self, spec):
        """Hold the response; False if the fault then closes the connection."""
        await asyncio.sleep(float(spec["seconds"]))
        if spec["then"] == "close":
            self.drop_upstream()
            self.client.close()
            return False
        return True

    @staticmethod
    def body_framing(method, status, resp):
        """(length, 'none'|'length'|'chunked'|'eof') of a response body."""
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return 0, "none"
        if resp.chunked():
            return None, "chunked"
        length = resp.content_length()
        if length is not None:
            return length, "length"
        return None, "eof"

    def count_status(self, status):
        statuses = self.proxy.counters["statuses"]
        statuses[str(status)] = statuses.get(str(status), 0) + 1


# --------------------------------------------------------------------------
# body copying (src/dst are Peers; dst None discards)

async def copy_exact(src, dst, n, limiter, buf, cut=None):
    """Copy n bytes (or stop after cut bytes); returns bytes copied.
    (splice(2) through a pipe was tried: slower here than recv_into.)"""
    todo = n if cut is None else min(n, cut)
    done = 0
    if src.pending and todo:                      # read-ahead from the head
        take = min(todo, len(src.pending))
        chunk = bytes(src.pending[:take])
        del src.pending[:take]
        if limiter:
            await limiter.take(take)
        if dst is not None:
            await dst.send(chunk)
        done += take
    size = min(limiter.chunk(), len(buf))
    while done < todo:
        got = await src.recv_into(buf[:min(size, todo - done)])
        if not got:
            raise Closed("peer closed inside a body")
        if limiter:
            await limiter.take(got)
        if dst is not None:
            await dst.send(buf[:got])
        done += got
    return done


async def copy_chunked(src, dst, limiter, buf, cut=None):
    """Copy a chunked body verbatim (sizes, data, trailers); stop after about
    cut data bytes if cut is given. Returns data bytes copied."""
    done = 0
    while True:
        line = await src.read_line()
        if dst is not None:
            await dst.send(line)
        size = int(line.split(b";")[0].strip(), 16)
        if size == 0:
            while True:                              # trailers up to a blank line
                trailer = await src.read_line()
                if dst is not None:
                    await dst.send(trailer)
                if trailer == b"\r\n":
                    return done
        left = None if cut is None else cut - done
        if left is not None and left <= size:
            return done + await copy_exact(src, dst, size, limiter, buf, max(left, 0))
        done += await copy_exact(src, dst, size, limiter, buf)
        crlf = await src.read_line()
        if dst is not None:
            await dst.send(crlf)


async def copy_to_eof(src, dst, limiter, buf):
    done, size = 0, min(limiter.chunk(), len(buf))
    while True:
        got = await src.recv_into(buf[:size])
        if not got:
            return done
        if limiter:
            await limiter.take(got)
        await dst.send(buf[:got])
        done += got


async def sleep_until(deadline):
    wait = deadline - time.monotonic()
    if wait > 0:
        await asyncio.sleep(wait)


# --------------------------------------------------------------------------
# control endpoint

class Control:
    """GET /config, POST /config (JSON merged, see merge_config),
    GET /counters, POST /counters/reset. One request per connection."""

    def __init__(self, proxy):
        self.proxy = proxy

    async def handle(self, reader, writer):
        try:
            head = await read_head(reader)
            if head is None:
                return
            length = head.content_length() or 0
            body = await reader.readexactly(length) if length else b""
            status, payload = self.route(head, body)
            data = json.dumps(payload, indent=1).encode()
            writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
                         .encode() + data)
            await writer.drain()
        except (Closed, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def route(self, head, body):
        method, target = head.first.split(" ")[:2]
        p = self.proxy
        try:
            if target == "/config" and method == "GET":
                return 200, p.config
            if target == "/config" and method in ("POST", "PUT"):
                return 200, p.configure(json.loads(body or b"{}"))
            if target == "/counters" and method == "GET":
                return 200, p.counters
            if target == "/counters/reset" and method == "POST":
                p.reset_counters()
                return 200, p.counters
            return 404, {"error": f"no route {method} {target}"}
        except (ValueError, TypeError) as e:
            return 400, {"error": str(e)}


# --------------------------------------------------------------------------
# process entry point

def parse_hostport(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def parse_fault(text):
    """'503:0.1:match=GET,HEAD:limit=3' -> ('503', {...})."""
    kind, rate, *opts = text.split(":")
    spec = {"rate": float(rate)}
    for opt in opts:
        key, _, value = opt.partition("=")
        if key in ("seconds", "fraction"):
            spec[key] = float(value)
        elif key == "limit":
            spec[key] = int(value)
        elif key == "match":
            spec[key] = value.split(",")
        else:
            spec[key] = value
    return kind, spec


def write_port_file(path, port):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


async def serve(args):
    config = json.loads(args.config) if args.config else {}
    config.setdefault("profile", args.profile)
    for key in ("rtt_ms", "ttfb_ms", "jitter_ms", "conn_rate", "total_rate", "seed"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    if args.fault:
        config.setdefault("faults", {}).update(dict(parse_fault(f) for f in args.fault))
    proxy = Proxy(parse_hostport(args.upstream), config, args.log)
    host, port = parse_hostport(args.listen)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    accept = asyncio.ensure_future(proxy.serve_forever(listener))
    chost, cport = parse_hostport(args.control_listen)
    control = await asyncio.start_server(Control(proxy).handle, chost, cport)
    if args.control_port_file:
        write_port_file(args.control_port_file, control.sockets[0].getsockname()[1])
    if args.port_file:
        write_port_file(args.port_file, listener.getsockname()[1])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    accept.cancel()
    listener.close()
    control.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="latency/fault-injecting S3 proxy")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--upstream", required=True, help="HOST:PORT of radosgw (HTTP)")
    ap.add_argument("--port-file", help="write the listening port here when ready")
    ap.add_argument("--control-listen", default="127.0.0.1:0")
    ap.add_argument("--control-port-file")
    ap.add_argument("--profile", default="none", choices=sorted(PROFILES))
    ap.add_argument("--rtt-ms", type=float)
    ap.add_argument("--ttfb-ms", type=float)
    ap.add_argument("--jitter-ms", type=float)
    ap.add_argument("--conn-rate", type=float, help="bytes/s per connection")
    ap.add_argument("--total-rate", type=float, help="bytes/s over all connections")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--fault", action="append",
                    help="KIND:RATE[:key=value...], e.g. 503:0.1:match=GET:limit=2")
    ap.add_argument("--config", help="initial config as JSON (see /config)")
    ap.add_argument("--log", help="append a JSON line per request and fault")
    args = ap.parse_args(argv)
    asyncio.run(serve(args))
    return 0


# --------------------------------------------------------------------------
# wrapper for tests

class S3Proxy:
    """Runs s3proxy.py as a child process.

    config: initial settings as for configure() (rtt_ms, ttfb_ms, jitter_ms,
    conn_rate, total_rate, seed, faults). workdir holds the port files, the
    proxy's stderr and its log (log_path); a temporary one is removed on stop.

    with S3Proxy(bed.port, profile="in-region", faults={"503": {"rate": 1,
                 "match": ["GET"], "limit": 1}}, seed=1) as px:
        client = bed.client(endpoint=px.endpoint)
    """

    def __init__(self, upstream_port, profile="none", *, upstream_host="127.0.0.1",
                 workdir=None, log_path=None, **config):
        self.upstream = (upstream_host, int(upstream_port))
        self.initial = {"profile": profile, **config}
        self.own_workdir = workdir is None        # removed again by stop()
        self.workdir = workdir or tempfile.mkdtemp(prefix="lith-s3proxy-")
        self.log_path = log_path or os.path.join(self.workdir, "s3proxy.log")
        self.proc = None
        self.port = self.control_port = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def vhost_endpoint(self):
        return f"http://localhost:{self.port}"

    def start(self, timeout=15.0):
        os.makedirs(self.workdir, exist_ok=True)
        pf = os.path.join(self.workdir, "port")
        cf = os.path.join(self.workdir, "control-port")
        for f in (pf, cf):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        cmd = [sys.executable if sys.executable else "/usr/bin/python3",
               os.path.abspath(__file__), "--upstream", "%s:%d" % self.upstream,
               "--port-file", pf, "--control-port-file", cf, "--log", self.log_path,
               "--config", json.dumps(self.initial)]
        stderr = open(os.path.join(self.workdir, "stderr"), "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=stderr, stderr=stderr)
        stderr.close()
        deadline = time.monotonic() + timeout
        while not os.path.exists(pf):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("s3proxy did not start: " + self._stderr())
            time.sleep(0.01)
        self.port = int(open(pf).read())
        self.control_port = int(open(cf).read())
        return self

    def _stderr(self):
        with contextlib.suppress(OSError):
            return open(os.path.join(self.workdir, "stderr")).read()[-2000:]
        return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start() if self.proc is None else self

    def __exit__(self, *exc):
        self.stop()

    def _call(self, method, path, payload=None):
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.control_port}{path}", data=data, method=method,
            headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise ValueError(json.loads(e.read()).get("error", str(e)))

    def configure(self, **update):
        """Change settings at run time; returns the whole new config.
        Keys: profile, rtt_ms, ttfb_ms, jitter_ms, conn_rate, total_rate,
        seed, faults ({kind: {rate, match, limit, ...}} replaces all)."""
        return self._call("POST", "/config", update)

    def config(self):
        return self._call("GET", "/config")

    def counters(self):
        return self._call("GET", "/counters")

    def reset_counters(self):
        return self._call("POST", "/counters/reset", {})

    def log_records(self):
        """The proxy's JSON log lines (requests, faults, config changes)."""
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
