"""Region redirects, tested against a loopback stand-in for AWS S3.

RGW never redirects, so this module runs a tiny HTTP server that behaves the
way S3 does when a request is signed for the wrong region: HEAD gets
301 with `x-amz-bucket-region`, GET gets 400 AuthorizationHeaderMalformed
whose <Region> names the right one. The client must re-sign for that region
once and succeed, and must not loop when the server keeps refusing.
"""

import http.server
import re
import threading

import pytest

import lithcli

BODY = b"bytes from the right region"


class FakeS3(http.server.BaseHTTPRequestHandler):
    region = "eu-west-1"
    seen = []

    def log_message(self, *args):
        pass

    def scope_region(self):
        m = re.search(r"Credential=[^/]+/\d{8}/([^/]+)/s3/aws4_request",
                      self.headers.get("Authorization", ""))
        return m.group(1) if m else None

    def reply(self, status, headers, body=b""):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def wrong_region(self):
        region = self.scope_region()
        FakeS3.seen.append((self.command, region))
        if region == FakeS3.region:
            return False
        if self.command == "HEAD":
            self.reply(301, {"x-amz-bucket-region": FakeS3.region})
        else:
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error>"
                   "<Code>AuthorizationHeaderMalformed</Code><Message>the region "
                   f"'{region}' is wrong; expecting '{FakeS3.region}'</Message>"
                   f"<Region>{FakeS3.region}</Region></Error>").encode()
            self.reply(400, {"Content-Type": "application/xml"}, xml)
        return True

    def do_HEAD(self):
        if not self.wrong_region():
            self.reply(200, {"ETag": '"abc"'}, BODY)   # HEAD: length, no body

    def do_GET(self):
        if self.wrong_region():
            return
        first, last = map(int, self.headers["Range"][6:].split("-"))
        last = min(last, len(BODY) - 1)
        self.reply(206, {"ETag": '"abc"',
                         "Content-Range": f"bytes {first}-{last}/{len(BODY)}"},
                   BODY[first:last + 1])

    def send_response(self, code, message=None):
        self.send_response_only(code, message)  # no Server/Date noise


@pytest.fixture
def fake_s3():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeS3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    FakeS3.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def env():
    return {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
            "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}


def test_follows_region_redirect(fake_s3):
    res = lithcli.run(["s3", "get", "s3://bucket/key", "--endpoint", fake_s3,
                       "--region", "us-east-1"], env=env())
    assert res.rc == 0, res.err
    assert res.out == BODY
    # HEAD: once in the wrong region, once in the right one; then the GET is
    # signed for the right region straight away.
    assert FakeS3.seen == [("HEAD", "us-east-1"), ("HEAD", "eu-west-1"),
                           ("GET", "eu-west-1")]


def test_get_redirect_by_error_body(fake_s3):
    res = lithcli.run(["s3", "get", "s3://bucket/key", "--range", "0-4", "--endpoint",
                       fake_s3, "--region", "eu-west-1"], env=env())
    assert res.rc == 0 and res.out == BODY[:5]
    FakeS3.seen.clear()
    FakeS3.region = "ap-south-1"      # the bucket "moved": GET learns from the body
    try:
        res = lithcli.run(["s3", "get", "s3://bucket/key", "--range", "0-4", "--if-match",
                           "abc", "--endpoint", fake_s3, "--region", "eu-west-1"],
                          env=env())
    finally:
        FakeS3.region = "eu-west-1"
    assert res.rc == 0, res.err
    assert ("GET", "ap-south-1") in FakeS3.seen


def test_redirect_does_not_loop(fake_s3):
    FakeS3.region = "nowhere-1"
    try:
        # The server claims a region, then refuses it too: one retry, then a
        # clear error rather than a loop.
        orig = FakeS3.wrong_region
        FakeS3.wrong_region = lambda self: (FakeS3.seen.append((self.command, None)),
                                            self.reply(301, {"x-amz-bucket-region":
                                                             "nowhere-1"}))[1] or True
        res = lithcli.run(["s3", "head", "s3://bucket/key", "--endpoint", fake_s3],
                          env=env())
    finally:
        FakeS3.wrong_region = orig
        FakeS3.region = "eu-west-1"
    assert res.rc == 1
    assert "region nowhere-1" in res.err
    assert len(FakeS3.seen) == 2
