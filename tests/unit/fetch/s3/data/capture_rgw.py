#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Re-records the RGW responses test_s3xml.c replays.

Usage: /usr/bin/python3 capture_rgw.py --bed /tmp/lithbed [--out DIR]

Creates a fresh bucket xmltest-<random>, uploads keys with spaces, '+', '%',
control characters and non-ASCII, and saves the exact response bodies of
ListObjectsV2 (with and without encoding-type=url) and of a few failing
requests. boto3 normally forces encoding-type=url and decodes the answer;
here that handler is unregistered and the raw body is taken from the
after-call event, so the files are byte-for-byte what radosgw sent. The
bucket name differs per run, so re-recording means updating the expected
values in test_s3xml.c.
"""

import argparse
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials
import botocore.handlers

HOSTILE = [
    "hostile/a b.txt",
    "hostile/a+b.txt",
    "hostile/a%20b.txt",
    "hostile/100%.csv",
    "hostile/\u00fcn\u00efc\u00f8d\u00e9 \u20ac.txt",
    "hostile/\u65e5\u672c\u8a9e/\u30d5\u30a1\u30a4\u30eb",
    "hostile/tab\there",
    "hostile/ctl\x01\x1f",
    "hostile/amp&lt<gt>\"q'",
    "hostile/sp ace/+plus/",
]
PLAIN = ["page/%02d.bin" % i for i in range(5)]
TREE = ["top.txt", "dir/one", "dir/two", "dir sp/x", "dir+plus/y",
        "\u65e5\u672c/z", "pct%/w"]


def bed_env(bed):
    out = subprocess.run(["/usr/bin/python3",
                          os.path.join(os.path.dirname(__file__),
                                       "../../../../e2e/rgwbed.py"),
                          "env", "--dir", bed],
                         check=True, capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        m = re.match(r"(?:export\s+)?(\w+)=(.*)$", line.strip())
        if m:
            env[m.group(1)] = m.group(2).strip("'\"")
    return env


def client(env, secret=None):
    c = boto3.client(
        "s3", endpoint_url=env["LITH_S3_ENDPOINT"],
        region_name=env["LITH_S3_REGION"],
        aws_access_key_id=env["LITH_S3_ACCESS_KEY"],
        aws_secret_access_key=secret or env["LITH_S3_SECRET_KEY"],
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    for op in ("ListObjects", "ListObjectsV2", "ListObjectVersions"):
        c.meta.events.unregister("before-parameter-build.s3." + op,
                                 botocore.handlers.set_list_objects_encoding_type_url)
    c.last_body = None

    def grab(http_response, **kw):
        c.last_body = http_response.content
    c.meta.events.register("after-call.s3.*", grab)
    return c


def raw_list(env, bucket, **params):
    """A signed ListObjectsV2 GET without boto3's parser, for bodies that
    are not well-formed XML (boto3 would raise before handing them over)."""
    q = urllib.parse.urlencode(dict(params, **{"list-type": "2"}))
    url = "%s/%s?%s" % (env["LITH_S3_ENDPOINT"], bucket, q)
    req = botocore.awsrequest.AWSRequest(method="GET", url=url)
    creds = botocore.credentials.Credentials(env["LITH_S3_ACCESS_KEY"],
                                             env["LITH_S3_SECRET_KEY"])
    botocore.auth.S3SigV4Auth(creds, "s3", env["LITH_S3_REGION"]).add_auth(req)
    r = urllib.request.Request(url, headers=dict(req.headers.items()))
    with urllib.request.urlopen(r) as resp:
        return resp.read()


def save(out, name, body):
    with open(os.path.join(out, name), "wb") as f:
        f.write(body)
    print("%-36s %6d bytes" % (name, len(body)))


def call(c, fn, **kw):
    try:
        getattr(c, fn)(**kw)
    except c.exceptions.ClientError:
        pass
    return c.last_body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bed", default="/tmp/lithbed")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    env = bed_env(a.bed)
    c = client(env)
    bucket = "xmltest-" + uuid.uuid4().hex[:8]
    c.create_bucket(Bucket=bucket)
    for k in HOSTILE + PLAIN + TREE:
        c.put_object(Bucket=bucket, Key=k, Body=k.encode()[:7])
    print("bucket", bucket)

    page1 = call(c, "list_objects_v2", Bucket=bucket, Prefix="page/", MaxKeys=2)
    save(a.out, "rgw-list-page1.xml", page1)
    token = re.search(rb"<NextContinuationToken>(.*?)</", page1).group(1)
    save(a.out, "rgw-list-page2.xml",
         call(c, "list_objects_v2", Bucket=bucket, Prefix="page/", MaxKeys=2,
              ContinuationToken=token.decode()))
    save(a.out, "rgw-list-delim.xml",
         call(c, "list_objects_v2", Bucket=bucket, Delimiter="/",
              Prefix="", FetchOwner=True))
    save(a.out, "rgw-list-url-hostile.xml",
         call(c, "list_objects_v2", Bucket=bucket, Prefix="hostile/",
              EncodingType="url"))
    save(a.out, "rgw-list-url-delim.xml",
         call(c, "list_objects_v2", Bucket=bucket, Delimiter="/",
              EncodingType="url"))
    save(a.out, "rgw-list-url-echo.xml",
         call(c, "list_objects_v2", Bucket=bucket, Prefix="hostile/a+b",
              StartAfter="hostile/100%", EncodingType="url", MaxKeys=1))
    save(a.out, "rgw-list-url-echo-pct.xml",
         call(c, "list_objects_v2", Bucket=bucket, Prefix="pct%/",
              EncodingType="url", Delimiter="%"))
    # The page ends on "hostile/ctl\x01\x1f": RGW's NextContinuationToken is
    # that raw key, written as &#x01;&#x1f; -- not well-formed XML 1.0.
    save(a.out, "rgw-list-url-ctl-token.xml",
         raw_list(env, bucket, prefix="hostile/", **{"encoding-type": "url",
                                                      "max-keys": "6"}))
    save(a.out, "rgw-error-nosuchbucket.xml",
         call(c, "list_objects_v2", Bucket=bucket + "-missing"))
    save(a.out, "rgw-error-nosuchkey.xml",
         call(c, "get_object", Bucket=bucket, Key="no/such key"))
    bad = client(env, secret="wrong-secret-key-0000000000000000000000")
    save(a.out, "rgw-error-signature.xml",
         call(bad, "list_objects_v2", Bucket=bucket))
    return 0


if __name__ == "__main__":
    sys.exit(main())
