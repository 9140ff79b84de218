"""Servers an operations team can watch: ``/metrics`` on ``serve`` and ``play`` (every worker
added up), ``/v1/health`` live and ready apart, ``--log-format json``; and nothing secret in
any of them (no code, VIRN, player, token or key)."""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from collections import Counter

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from printpipe.service.logs import JsonFormatter, uvicorn_log_config
from printpipe.service.problems import REQUEST_ID
from tests.play_helpers import make_block, make_world
from tests.service_helpers import build_world, server_log, start_server, stop_server

TIMEOUT = 60.0
"""The machine is shared: a slow answer is not what these tests are about."""
WORKERS = ("--workers", "2", "--log-format", "json", "--access-log")


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``url``/metrics, by name and labels."""
    response = httpx.get(url + "/metrics", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def total(samples: dict, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def fresh_connection_get(url: str) -> httpx.Response:
    # a connection each: the workers share the requests
    with httpx.Client(timeout=TIMEOUT) as client:
        return client.get(url)


@pytest.fixture(scope="module")
def serve_world(game, keys_dir, ledgers, tmp_path_factory):
    world = build_world(game, keys_dir, ledgers.new(), tmp_path_factory.mktemp("metrics"))
    start_server(world, options=WORKERS)
    yield world
    stop_server(world)


def test_serve_counts_each_workers_validations_by_route_and_status(serve_world):
    world = serve_world
    before = scrape(world.url)
    tickets = world.of_pack(4)[:40]
    statuses: Counter[int] = Counter()
    for ticket in tickets:
        body = json.dumps({"code": ticket.code}).encode()
        path = "/v1/validations"
        headers = world.signers["till-1"].headers("POST", world.url + path, body)
        with httpx.Client(timeout=TIMEOUT) as client:
            statuses[client.post(world.url + path, content=body, headers=headers).status_code] += 1
    for _ in range(6):
        assert fresh_connection_get(world.url + "/v1/health/live").status_code == 200
    after = scrape(world.url)
    route = {"server": "serve", "route": "/v1/validations", "method": "POST"}
    for status, count in statuses.items():
        name = "printpipe_http_requests_total"
        counted = total(after, name, **route, status=str(status))
        assert counted - total(before, name, **route, status=str(status)) == count
    timed = "printpipe_http_request_duration_seconds_count"
    assert total(after, timed, route="/v1/validations") - total(
        before, timed, route="/v1/validations"
    ) == len(tickets)
    sizes = "printpipe_batch_size_sum"
    assert total(after, sizes, kind="validations") - total(before, sizes, kind="validations") == (
        len(tickets)
    )
    live = total(after, "printpipe_http_requests_total", route="/v1/health/live")
    assert live - total(before, "printpipe_http_requests_total", route="/v1/health/live") == 6
    assert 0 <= total(after, "printpipe_seal_lag_seconds") < 5
    text = httpx.get(world.url + "/metrics", timeout=TIMEOUT).text + server_log(world)
    for ticket in tickets:  # no code, VIRN, nor serial in the metrics or the log
        assert ticket.code not in text and ticket.code[13:23] not in text
        assert ticket.ticket.serial not in text


def test_serve_logs_json_lines_with_request_ids(serve_world):
    response = fresh_connection_get(serve_world.url + "/v1/health")
    lines = [line for line in server_log(serve_world).splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]  # every line is JSON
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert access and all(r["request_id"] for r in access)
    mine = [r for r in access if r["request_id"] == response.headers["x-request-id"]]
    assert mine and mine[0]["path"] == "/v1/health" and mine[0]["status"] == 200


def test_health_says_live_and_ready_apart(serve_world):
    from tests.test_service import in_process

    assert httpx.get(serve_world.url + "/v1/health", timeout=TIMEOUT).json()["ready"] is True
    with in_process(serve_world) as (client, service):

        def down(**_: object) -> None:
            raise sqlite3.OperationalError("unable to open database file")

        service.ledger.query = down  # type: ignore[method-assign,assignment]
        live = client.get("/v1/health/live")
        assert live.status_code == 200 and live.json()["live"] is True
        ready = client.get("/v1/health/ready")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        both = client.get("/v1/health")
        assert both.status_code == 503
        assert (both.json()["live"], both.json()["ready"]) == (True, False)


@pytest.fixture(scope="module")
def play_world(ledgers, tmp_path_factory):
    block = make_block(tmp_path_factory.mktemp("metrics-block"), packs=1)
    world = make_world(block, ledgers.new(), tmp_path_factory.mktemp("metrics-play"), players=4,
                       balance_eur=10)  # fmt: skip
    world.start(workers=2)
    yield world
    world.stop()


def test_play_counts_plays_lots_and_stakes_over_its_workers(play_world):
    world = play_world
    before = scrape(world.url)
    answers = []
    for name in world.players:
        for n in range(3):
            path = f"/v1/players/{name}/plays"
            key = {"Idempotency-Key": f"metrics-{name}-{n}"}
            fields = world.platform.headers("POST", world.url + path, b"", fields=key)
            with httpx.Client(timeout=TIMEOUT) as client:
                answers.append(
                    client.post(world.url + path, content=b"", headers={**fields, **key})
                )
    assert [a.status_code for a in answers] == [201] * len(answers)
    after = scrape(world.url)
    dealt = total(after, "printpipe_plays_total", outcome="dealt") - total(
        before, "printpipe_plays_total", outcome="dealt"
    )
    assert dealt == len(answers)
    stakes = total(after, "printpipe_play_stakes_cents_total") - total(
        before, "printpipe_play_stakes_cents_total"
    )
    assert stakes == sum(a.json()["stake_cents"] for a in answers)
    lots = total(after, "printpipe_play_lots_cents_total") - total(
        before, "printpipe_play_lots_cents_total"
    )
    assert lots == sum(a.json()["lot_eur"] * 100 for a in answers)
    template = "/v1/players/{player}/plays"
    counted = total(after, "printpipe_http_requests_total", route=template, status="201")
    assert counted - total(
        before, "printpipe_http_requests_total", route=template, status="201"
    ) == len(answers)
    text = httpx.get(world.url + "/metrics", timeout=TIMEOUT).text
    text += (world.folder / "play.log").read_text()
    for name in world.players:  # no player's name, nor any login token
        assert name not in text
    for token in world.logins.values():
        assert token not in text


def test_the_json_formatter_writes_one_line_with_the_request_id():
    formatter = JsonFormatter()
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1,
                               '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/v1/game", "1.1", 200), None)  # fmt: skip
    token = REQUEST_ID.set("ab" * 16)
    try:
        line = formatter.format(record)
    finally:
        REQUEST_ID.reset(token)
    data = json.loads(line)
    assert (data["method"], data["path"], data["status"], data["request_id"]) == (
        "GET", "/v1/game", 200, "ab" * 16,
    )  # fmt: skip
    try:
        raise ValueError("first line\nsecond line")
    except ValueError:
        failed = logging.LogRecord("printpipe.service", logging.ERROR, __file__, 1, "boom", (),
                                   sys.exc_info())  # fmt: skip
    assert "\n" not in formatter.format(failed)
    config = uvicorn_log_config("json")
    assert config["formatters"]["access"] == {"()": "printpipe.service.logs.JsonFormatter"}
    assert config["loggers"]["uvicorn.access"]["level"] == "INFO"  # --access-log is heard


def test_a_clients_methods_and_paths_never_make_new_series():
    from printpipe.service.metrics import HttpMetrics

    observed = HttpMetrics("test")
    for n in range(200):
        observed.observe("unmatched", f"M{n}", 405, 0.001)
    observed.observe("unmatched", "GET", 404, 0.001)
    assert {key[1] for key in observed._series} == {"other", "GET"}
