"""The Toxiproxy-compatible API server against the clients it must survive, and the status
codes upstream's api.go gives.

- An idle TCP connection (a port scanner, a half-open client) and a slow client (a byte now
  and then, headers never finished; or an answer never read) are each closed on their own
  at the bound net/http would apply (ReadTimeout, IdleTimeout, WriteTimeout; shortened here
  to keep the tests quick), and the server keeps answering everyone else — before this, one
  idle connection ended the whole server after 60 s with an UnboundLocalError.
- A request handler that raises costs its connection, never the server.
- Bodies decode as Go's encoding/json does: numbers out of int64 or float32 range, NaN and
  Infinity, and nesting beyond 10,000 levels are 400 (were 200 and 500); nesting Python's
  own parser cannot take but Go can is decoded, not a 500; what follows the first JSON
  value is ignored, as json.Decoder.Decode ignores it.
- A malformed or busy listen address is 500 (Toxiproxy does not classify net.Listen's
  errors); an upstream address is not checked when a proxy is created (Toxiproxy dials it
  per client).
"""

from __future__ import annotations

import json
import random
import socket
import time
from collections.abc import Iterator

import pytest
import requests

import chaoskube.faults.toxiproxy.server as server_module
from chaoskube.faults.toxiproxy import ToxiproxyServer
from chaoskube.faults.toxiproxy.server import decode_go_json


@pytest.fixture
def quick_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "REQUEST_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(server_module, "IDLE_TIMEOUT_S", 0.8)
    monkeypatch.setattr(server_module, "WRITE_TIMEOUT_S", 0.5)


@pytest.fixture
def api(quick_timeouts: None) -> Iterator[str]:
    with ToxiproxyServer(rng=random.Random(0)) as server:
        host, port = server.api_address
        yield f"http://{host}:{port}"


def _connect(api: str) -> socket.socket:
    host, port = api.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _closed_by_server(sock: socket.socket, within_s: float) -> bool:
    """Whether the server closes ``sock`` within ``within_s`` (reads EOF or a reset)."""
    sock.settimeout(within_s)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (TimeoutError, socket.timeout):
        return False


def test_an_idle_connection_is_closed_and_the_server_keeps_serving(api):
    idle = [_connect(api) for _ in range(20)]
    assert requests.get(f"{api}/version", timeout=5).status_code == 200  # served beside them
    time.sleep(1.0)
    assert all(_closed_by_server(sock, 2.0) for sock in idle), "ReadTimeout closes a connection that never sends a request"
    for sock in idle:
        sock.close()
    assert requests.get(f"{api}/version", timeout=5).json()["version"].startswith("2.")


def test_a_slow_client_is_closed_after_the_read_timeout_whatever_it_trickles(api):
    sock = _connect(api)
    sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    closed = False
    while time.monotonic() - started < 3.0:
        try:
            sock.sendall(b"X-Slow: a\r\n")  # a header line every 0.1 s, never the blank line
        except OSError:
            closed = True
            break
        if _closed_by_server(sock, 0.1):
            closed = True
            break
    assert closed and time.monotonic() - started < 2.0, "the whole request must arrive within ReadTimeout"
    sock.close()
    assert requests.get(f"{api}/proxies", timeout=5).status_code == 200


def test_a_keep_alive_connection_waits_idle_timeout_then_is_closed(api):
    sock = _connect(api)
    sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(5)
    assert b"200 OK" in sock.recv(4096)
    assert not _closed_by_server(sock, 0.5), "still open within IdleTimeout"
    assert _closed_by_server(sock, 2.0), "closed after IdleTimeout"
    sock.close()


def test_a_client_that_never_reads_its_answer_is_dropped(api):
    requests.post(f"{api}/populate", json=[{"name": f"p{index}", "upstream": "127.0.0.1:9", "listen": "127.0.0.1:0", "enabled": False} for index in range(300)], timeout=5)
    sock = _connect(api)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    request = b"GET /proxies HTTP/1.1\r\nHost: x\r\n\r\n" * 200  # pipelined: answers pile up unread
    sock.settimeout(5)
    try:
        sock.sendall(request)
    except OSError:
        pass
    time.sleep(2.0)
    assert requests.get(f"{api}/version", timeout=5).status_code == 200
    sock.close()


def test_a_handler_that_raises_costs_its_request_not_the_server(api, monkeypatch):
    def broken(self, body):
        raise RuntimeError("a bug")

    monkeypatch.setattr(server_module.ToxiproxyApi, "version", broken)
    answer = requests.get(f"{api}/version", timeout=5)
    assert answer.status_code == 500 and answer.json() == {"error": "a bug", "status": 500}
    assert requests.get(f"{api}/proxies", timeout=5).status_code == 200


def _post(api: str, path: str, body: bytes | str) -> tuple[int, dict]:
    answer = requests.post(f"{api}{path}", data=body if isinstance(body, bytes) else body.encode(), timeout=10)
    return answer.status_code, answer.json() if answer.content else {}


@pytest.fixture
def proxy(api: str) -> str:
    status, _ = _post(api, "/proxies", json.dumps({"name": "p", "upstream": "127.0.0.1:9", "listen": "127.0.0.1:0"}))
    assert status == 201
    return "p"


@pytest.mark.parametrize(
    ("body", "wanted"),
    [
        ('{"type": "latency", "attributes": {"latency": 9223372036854775808}}', "cannot unmarshal number 9223372036854775808 into Go struct field LatencyToxic.attributes.latency of type int64"),
        ('{"type": "latency", "attributes": {"latency": -9223372036854775809}}', "of type int64"),
        ('{"type": "latency", "attributes": {"latency": 1.5}}', "cannot unmarshal number 1.5 into Go struct field LatencyToxic.attributes.latency of type int64"),
        ('{"type": "latency", "attributes": {"latency": 1e3}}', "cannot unmarshal number 1e3 into Go struct field"),
        ('{"type": "slicer", "attributes": {"delay": 2.0}}', "SlicerToxic.attributes.delay of type int"),
        ('{"type": "bandwidth", "attributes": {"rate": "fast"}}', "cannot unmarshal string into Go struct field BandwidthToxic.attributes.rate of type int64"),
        ('{"type": "latency", "toxicity": 1e39}', "cannot unmarshal number 1e39 into Go struct field ToxicWrapper.toxicity of type float32"),
        ('{"type": "latency", "toxicity": NaN}', "bad request body"),
        ('{"type": "latency", "toxicity": Infinity}', "bad request body"),
        ('{"type": "latency", "toxicity": -Infinity}', "bad request body"),
        ('{"type": "latency", "toxicity": "high"}', "cannot unmarshal string into Go struct field ToxicWrapper.toxicity of type float32"),
        ('{"type": "latency", "name": 7}', "cannot unmarshal number into Go struct field ToxicWrapper.name of type string"),
        ("[" * 10_001 + "]" * 10_001, "bad request body: invalid character '[' exceeded max depth"),
        ('{"type": "latency", "attributes": ' + "[" * 20_000, "exceeded max depth"),
    ],
)
def test_bodies_go_refuses_are_400(api, proxy, body, wanted):
    status, answer = _post(api, f"/proxies/{proxy}/toxics", body)
    assert (status, answer["status"]) == (400, 400), answer
    assert wanted in answer["error"], answer


def test_what_go_accepts_is_accepted(api, proxy):
    deep = '{"type": "latency", "name": "deep", "junk": ' + "[" * 5000 + "]" * 5000 + "}"
    assert _post(api, f"/proxies/{proxy}/toxics", deep)[0] == 200, "Go decodes 5,000 levels into an unknown field and ignores it"
    status, answer = _post(api, f"/proxies/{proxy}/toxics", '{"type": "latency", "name": "trailing", "attributes": {"latency": 9223372036854775807}} and then garbage')
    assert status == 200 and answer["attributes"]["latency"] == 2**63 - 1, "Decode reads the first value only"
    status, answer = _post(api, f"/proxies/{proxy}/toxics", b'{"type": "latency", "name": "\xff\xfe"}')
    assert status == 200 and answer["name"] == "\ufffd\ufffd", "invalid UTF-8 is replaced, as Go does"
    status, answer = _post(api, f"/proxies/{proxy}/toxics", '{"type": "latency", "name": "negative", "toxicity": -3.4e38, "attributes": {"latency": -5}}')
    assert status == 200 and answer["attributes"]["latency"] == -5


def test_listen_errors_are_500_and_upstreams_are_not_checked(api):
    status, answer = _post(api, "/proxies", json.dumps({"name": "a", "upstream": "127.0.0.1:9", "listen": "nonsense"}))
    assert (status, answer["status"]) == (500, 500) and answer["error"].startswith("listen tcp"), answer
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        status, answer = _post(api, "/proxies", json.dumps({"name": "b", "upstream": "127.0.0.1:9", "listen": f"127.0.0.1:{busy.getsockname()[1]}"}))
        assert (status, answer["status"]) == (500, 500), answer
    finally:
        busy.close()
    status, answer = _post(api, "/proxies", json.dumps({"name": "c", "upstream": "no port here", "listen": "127.0.0.1:0"}))
    assert status == 201 and answer["upstream"] == "no port here", "Toxiproxy dials the upstream per client"
    host, port = answer["listen"].rsplit(":", 1)
    client = socket.create_connection((host, int(port)), timeout=5)
    assert _closed_by_server(client, 5.0), "a client of an unreachable upstream is dropped"
    client.close()
    status, answer = requests.patch(f"{api}/proxies/c", json={"listen": "nonsense"}, timeout=5).status_code, None
    assert status == 500
    assert requests.get(f"{api}/proxies/c", timeout=5).json()["enabled"] is True, "a refused update changes nothing"


def test_decode_go_json_is_total():
    """Whatever bytes come, the decoder answers a value or a 400 ApiError, nothing else."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
    def total(body: bytes) -> None:
        try:
            decode_go_json(body)
        except server_module.ApiError as error:
            assert error.status == 400

    total()
