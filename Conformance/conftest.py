"""Starts `storekeeper simulator` and hands the tests what an outside client would have.

The simulator binary comes from STOREKEEPER_BINARY. It runs on a free port at an accelerated
clock (STOREKEEPER_CONFORMANCE_RATE simulated seconds per real second, 60 by default), and the
tests reach it over HTTP only: its control API to set up apps, products and purchases and to move
time, and the stores' APIs through Apple's and Google's own client libraries.
"""

import base64
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests


class Simulator:
    """A running `storekeeper simulator`: its announced URLs and files, and its control API."""

    def __init__(self, announced, directory):
        self.base_url = announced["simulator"]
        self.control_url = announced["control"]
        self.ocsp_url = announced["ocsp"]
        self.root_certificate_path = announced["root certificate"]
        self.service_account_path = announced["google service account"]
        self.jwks_url = announced["google jwks"]
        self.directory = directory

    def control(self, method, path, body=None):
        """Calls the control API; fails the test with the simulator's explanation on an error."""
        response = requests.request(
            method, self.control_url + path, json=body if body is not None else ({} if method == "POST" else None),
            timeout=60)
        if response.status_code >= 400:
            pytest.fail(f"control {method} {path}: HTTP {response.status_code}: {response.text}")
        return response.json() if response.content else None

    def post(self, path, body=None):
        return self.control("POST", path, body)

    def get(self, path):
        return self.control("GET", path)

    def now_ms(self):
        """The simulated now, in milliseconds since 1970."""
        return self.get("/clock")["now"]

    def advance(self, seconds):
        """Moves the shared clock; both stores fire what became due and deliver it."""
        self.post("/appstore/advance", {"seconds": seconds})
        self.post("/googleplay/advance", {"seconds": 0})
        self.post("/appstore/settle")
        self.post("/googleplay/settle")


_ANNOUNCED = {"simulator", "control", "ocsp", "root certificate", "google service account", "google jwks"}


def _read_announcement(process, deadline):
    """The simulator's `name: value` lines on standard output, until every one the suite needs."""
    announced = {}
    while not _ANNOUNCED <= announced.keys():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the simulator announced only {announced}")
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the simulator exited ({process.poll()}) after announcing {announced}")
        name, _, value = line.decode().partition(": ")
        announced[name.strip()] = value.strip()
    return announced


@pytest.fixture(scope="session")
def simulator():
    binary = os.environ.get("STOREKEEPER_BINARY")
    if not binary:
        pytest.exit("STOREKEEPER_BINARY must name the built storekeeper executable", returncode=2)
    rate = os.environ.get("STOREKEEPER_CONFORMANCE_RATE", "60")
    with tempfile.TemporaryDirectory(prefix="storekeeper-conformance-") as directory:
        process = subprocess.Popen(
            [binary, "simulator", "--port", "0", "--rate", rate, "--directory", directory],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            announced = _read_announcement(process, time.monotonic() + 60)
            yield Simulator(announced, directory)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Receiver:
    """An HTTP endpoint on loopback that records every POST (App Store notifications, Pub/Sub pushes)."""

    def __init__(self):
        received = self.received = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                received.put((self.path, dict(self.headers), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def drain(self, path):
        """Everything received at `path` so far, oldest first (others are kept)."""
        kept, taken = [], []
        while True:
            try:
                item = self.received.get_nowait()
            except queue.Empty:
                break
            (taken if item[0] == path else kept).append(item)
        for item in kept:
            self.received.put(item)
        return taken

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def receiver():
    endpoint = Receiver()
    yield endpoint
    endpoint.close()


# Whole milliseconds: what a strict int64 decoder (Go, Java, Swift Int64) needs.

class _Fractional(float):
    """A JSON number written with a fraction or an exponent."""


def load_json_keeping_fractions(text):
    """json.loads, except that numbers with a fraction or exponent stay recognisable."""
    return json.loads(text, parse_float=lambda literal: _Fractional(literal))


def jws_payload(compact):
    part = compact.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def fractional_dates(value, path="$"):
    """Every member named like a date or time in milliseconds whose value is not an integer,
    looking into compact JWS strings (signed payloads hold signed transactions) as well."""
    found = []
    if isinstance(value, dict):
        for key, member in value.items():
            here = f"{path}.{key}"
            if (key.endswith("Date") or key.endswith("Millis")) and isinstance(member, float):
                found.append((here, member))
            found += fractional_dates(member, here)
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += fractional_dates(member, f"{path}[{index}]")
    elif isinstance(value, str) and value.startswith("eyJ") and value.count(".") == 2:
        found += fractional_dates(load_json_keeping_fractions(jws_payload(value)), path + "<jws>")
    return found


def date_members(value):
    """The names of every member named like a date, JWS payloads included."""
    names = set()
    if isinstance(value, dict):
        for key, member in value.items():
            if key.endswith("Date"):
                names.add(key)
            names |= date_members(member)
    elif isinstance(value, list):
        for member in value:
            names |= date_members(member)
    elif isinstance(value, str) and value.startswith("eyJ") and value.count(".") == 2:
        names |= date_members(load_json_keeping_fractions(jws_payload(value)))
    return names
