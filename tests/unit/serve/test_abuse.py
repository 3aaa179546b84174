"""HTTP abuse of `virtbench serve`: hostile ids and text from the store, hostile Host headers,
oversized requests and every method, on every route. Nothing may answer 500, raise, write a
file, or put stored text into a header; every answer carries the security headers."""

from __future__ import annotations

import gzip
import html
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hostile import FORMULAS, HOSTILE_TEXT, hostile_store, rename_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_fill import make_run
from served import BASE_URL
from starlette.testclient import TestClient

from virtbench.serve import create_app
from virtbench.serve.attachment import content_disposition
from virtbench.serve.guard import MAX_COMPARE, MAX_QUERY
from virtbench.store import Store

RUN_SUFFIXES = ["", "/body", "/toc", "/progress", "/download/export", "/download/csv",
                "/download/json", "/download/html", "/download/xls"]
LIST_ROUTES = {"/": 200, "/runs": 200, "/runs.csv": 200, "/runs.json": 200, "/runs.xml": 404,
               "/compare": 400, "/compare.csv": 400, "/history": 200, "/history.csv": 400,
               "/history.json": 400, "/static/live.js": 200, "/static/virtbench.css": 200,
               "/static/nothing": 404, "/nowhere": 404}
# Header values are ASCII printable text (and tab): no CR, LF, NUL or other control character.
HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
CHECKED_CASES: list[str] = []  # every request the abuse tests sent (docs/cli.md counts them)


@pytest.fixture(scope="module", autouse=True)
def _count_cases() -> Iterator[None]:
    """Prints how many requests the module checked (`pytest -s`; docs/cli.md quotes it)."""
    yield
    print(f"\nserve abuse: {len(CHECKED_CASES)} requests checked")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[str]]]:
    store, ids = hostile_store(tmp_path_factory.mktemp("hostile") / "store.db")
    with TestClient(create_app(store), base_url=BASE_URL) as client:
        yield client, ids
    store.close()


def check(response: httpx.Response, url: str) -> None:
    """What every answer must be, whatever was asked."""
    CHECKED_CASES.append(url)
    assert response.status_code < 500, (url, response.status_code, response.text[:300])
    headers = response.headers
    assert headers["x-content-type-options"] == "nosniff", url
    assert headers["x-frame-options"] == "DENY", url
    assert headers["referrer-policy"] == "no-referrer", url
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, url
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, url
    for name, value in headers.raw:
        assert HEADER_VALUE.fullmatch(value.decode("latin-1")), (url, name, value)
    disposition = headers.get("content-disposition")
    if disposition is not None:
        assert re.fullmatch(r"attachment; filename=\"[A-Za-z0-9._-]{1,120}\""
                            r"(; filename\*=UTF-8''[A-Za-z0-9._~%-]+)?", disposition), disposition
    if response.headers.get("content-type", "").startswith("text/html"):
        text = response.text
        for bad in ("<script>alert", "Traceback"):  # control characters: outsafe slice
            assert bad not in text, (url, bad)


# About 400 requests through the app: ~10 s alone, 46 s in the full suite's load (two cores, five
# lines), past the unit tests' 60 s default under a CPU hog. A bound for a hang, not a speed.
@pytest.mark.timeout(300)
def test_every_route_with_every_hostile_id(hostile: tuple[TestClient, list[str]],
                                           caplog: pytest.LogCaptureFixture) -> None:
    client, ids = hostile
    caplog.set_level(logging.DEBUG)
    plain = ids[-1]
    served: dict[tuple[str, str], int] = {}
    for run_id in ids:
        refs = [quote(run_id, safe=""), quote(run_id[:6], safe="")]
        for ref in refs:
            for suffix in RUN_SUFFIXES:
                url = f"/runs/{ref}{suffix}"
                answer = client.get(url)
                check(answer, url)
                if ref == refs[0]:
                    served[run_id, suffix] = answer.status_code
    # what can be served is: the plain run everywhere, a hostile id wherever a URL can name it
    assert {suffix: served[plain, suffix] for suffix in RUN_SUFFIXES} == {
        suffix: 404 if suffix.endswith("xls") else 200 for suffix in RUN_SUFFIXES}
    # (starlette's test client decodes a path twice: an id with "%" is nameable over HTTP only)
    nameable = [i for i in ids if not {"/", "\x00", "%"} & set(i) and len(i) < 200]
    assert len(nameable) >= 5
    for run_id in nameable:
        assert served[run_id, ""] == 200 and served[run_id, "/download/export"] == 200, run_id
        query = f"run={quote(run_id, safe='')}&run={plain}"
        for route in ("/compare", "/compare.csv", "/compare.json", "/compare.html"):
            check(client.get(f"{route}?{query}"), route)
    for text in HOSTILE_TEXT:
        for route in ("/runs", "/runs.csv", "/runs.json", "/history", "/history.csv",
                      "/history.json"):
            for field in ("q", "experiment", "host", "status"):
                url = f"{route}?{field}={quote(text, safe='')}"
                check(client.get(url), url)
    for route, code in LIST_ROUTES.items():
        answer = client.get(route)
        check(answer, route)
        assert answer.status_code == code, route
    assert "Traceback" not in caplog.text


def test_a_path_in_a_run_id_never_reaches_the_file_system(tmp_path: Path) -> None:
    """The reported bug: a run id of ../../ and a folder made the export download write
    `<id>.json.gz` into that folder. The export is built in memory now."""
    target = tmp_path / "victim"
    target.mkdir()
    path = tmp_path / "store.db"
    store = Store(str(path))
    made = make_run(store, "exp", reps=1)
    traversal = "../" * 12 + str(target).lstrip("/") + "/pwned"
    rename_run(path, made, traversal)
    with TestClient(create_app(store), base_url=BASE_URL) as client:
        answer = client.get("/runs/%2E%2E/download/export")  # the unique prefix ".."
        check(answer, "export by prefix ..")
    store.close()
    assert list(target.iterdir()) == []
    if answer.status_code == 200:  # served from memory: still the whole export
        document = json.loads(gzip.decompress(answer.content))
        assert document["tables"]["runs"][0]["id"] == traversal


def test_crlf_in_a_run_id_never_reaches_a_header(hostile: tuple[TestClient, list[str]]) -> None:
    client, _ids = hostile
    crlf = quote("a\r\nSet-Cookie: x=1", safe="")
    for suffix in ("/download/export", "/download/csv", "/download/json", "/download/html"):
        answer = client.get(f"/runs/{crlf}{suffix}")
        check(answer, suffix)
        assert answer.status_code == 200
        assert "set-cookie" not in answer.headers
        assert answer.headers["content-disposition"].startswith('attachment; filename="a__Set')


def test_formula_cells_show_as_text_in_pages(hostile: tuple[TestClient, list[str]]) -> None:
    client = hostile[0]
    listing = client.get("/runs").text
    for formula in FORMULAS[:1]:  # jinja2 escapes quotes: the formula is shown, never a link
        assert formula.replace("'", "&#39;") in listing
    assert "<a href=\"http://attacker.example" not in listing


HOSTS_REFUSED = ["attacker.example", "attacker.example:8023", "127.0.0.1.attacker.example",
                 "localhost.attacker.example", "", "evil\x00", "[::1", "0.0.0.0:8023"]
HOSTS_SERVED = ["127.0.0.1:8023", "localhost:8023", "localhost", "[::1]:8023", "LOCALHOST"]


def test_host_header_must_name_this_server(hostile: tuple[TestClient, list[str]]) -> None:
    """DNS rebinding: a page of attacker.example resolved to 127.0.0.1 must not read the
    store. The Host header is the only thing that tells."""
    client, _ids = hostile
    for host in HOSTS_REFUSED:
        for route in ("/runs", "/runs.json", "/static/live.js", "/nowhere"):
            answer = client.get(route, headers={"host": host})
            check(answer, f"{host!r} {route}")
            assert answer.status_code in (400, 421), (host, route)
            assert "plain-experiment" not in answer.text
    for host in HOSTS_SERVED:
        answer = client.get("/runs", headers={"host": host})
        check(answer, host)
        assert answer.status_code == 200, host


def test_allow_host_adds_a_name(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    app = create_app(store, allowed_hosts=["bench.lab.example"], bind_host="192.0.2.7")
    with TestClient(app, base_url=BASE_URL) as client:
        for host, code in (("bench.lab.example:8023", 200), ("192.0.2.7", 200),
                           ("127.0.0.1", 200), ("other.example", 400)):
            answer = client.get("/runs", headers={"host": host})
            check(answer, host)
            assert answer.status_code == code, host
    store.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE",
                                    "CONNECT", "PROPFIND", "BREW"])
def test_only_get_and_head(hostile: tuple[TestClient, list[str]], method: str) -> None:
    client, ids = hostile
    for route in ("/runs", f"/runs/{ids[-1]}", "/static/live.js", "/nowhere", "/compare"):
        answer = client.request(method, route, content=b"x" * 1000)
        check(answer, f"{method} {route}")
        assert answer.status_code == 405, (method, route)
        assert answer.headers["allow"] == "GET, HEAD"
    head = client.head(f"/runs/{ids[-1]}")
    check(head, "HEAD")
    assert head.status_code == 200 and head.content == b""


def test_oversized_requests_are_refused_with_a_clear_page(
        hostile: tuple[TestClient, list[str]]) -> None:
    client, ids = hostile
    plain = ids[-1]
    many = "&".join(f"run={plain}" for _ in range(MAX_COMPARE + 1))
    answer = client.get(f"/compare?{many}")  # duplicates count: the query asked for them
    check(answer, "compare many")
    assert answer.status_code == 400 and f"at most {MAX_COMPARE} runs" in answer.text
    long_query = "q=" + "x" * (MAX_QUERY + 1)
    for route in ("/runs", "/runs.csv", "/history", "/compare"):
        answer = client.get(f"{route}?{long_query}")
        check(answer, f"long query {route}")
        assert answer.status_code == 400 and "query string" in answer.text
    answer = client.get("/runs/" + "x" * 5000)
    check(answer, "long path")
    assert answer.status_code in (400, 404)
    for page in ("0", "-5", "abc", "1e9", "9" * 300):
        answer = client.get(f"/runs?page={page}")
        check(answer, f"page {page}")
        assert answer.status_code == 400 and "page: " in answer.text


def test_a_prefix_or_experiment_name_redirects_to_the_run_id(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = make_run(store, "named", reps=1)
    other = make_run(store, "other", reps=1)
    with TestClient(create_app(store), base_url=BASE_URL, follow_redirects=False) as client:
        for ref in (run_id[:5], "named"):
            for suffix in ("", "/body", "/progress", "/download/json"):
                answer = client.get(f"/runs/{ref}{suffix}?x=1")
                check(answer, ref + suffix)
                assert answer.status_code in (302, 307), (ref, suffix)
                assert answer.headers["location"] == f"/runs/{run_id}{suffix}?x=1"
        answer = client.get(f"/compare?run=named&run={other[:6]}")
        assert answer.status_code in (302, 307)
        assert answer.headers["location"] == f"/compare?run={run_id}&run={other}"
        assert client.get(f"/runs/{run_id}").status_code == 200
        assert client.get(f"/compare?run={run_id}&run={other}").status_code == 200
        assert client.get("/runs/nosuch").status_code == 404
    store.close()


_ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ref=_ids, suffix=st.sampled_from(RUN_SUFFIXES), host=st.sampled_from(
    HOSTS_SERVED + HOSTS_REFUSED), query=st.text(max_size=80))
def test_random_refs_hosts_and_queries(hostile: tuple[TestClient, list[str]], ref: str,
                                       suffix: str, host: str, query: str) -> None:
    client = hostile[0]
    url = f"/runs/{quote(ref, safe='')}{suffix}?{quote(query, safe='=&')}"
    check(client.get(url, headers={"host": host}), url)
    check(client.get(f"/compare?run={quote(ref, safe='')}&run={quote(query, safe='')}",
                     headers={"host": host}), "compare " + url)
    check(client.get(f"/runs?q={quote(query, safe='')}&since={quote(ref, safe='')}",
                     headers={"host": host}), "runs " + url)


def test_links_to_hostile_ids_lead_to_their_runs(hostile: tuple[TestClient, list[str]]) -> None:
    """A run id in a link is one percent-encoded path segment: "?", "#", "%", quotes or
    spaces in it neither break the link nor lead elsewhere."""
    client, ids = hostile
    listing = client.get("/runs").text
    links = re.findall(r'<a href="(/runs/[^"]*)">', listing)
    for run_id in ids:
        if "\x00" in run_id or len(run_id) > 200:
            continue
        link = f"/runs/{quote(run_id, safe='')}"
        assert link in links, run_id
        if "/" not in run_id and "%" not in run_id:  # see test_every_route_with_every_hostile_id
            page = client.get(link)
            check(page, link)
            assert page.status_code == 200
            # this run's page: live.js reads the exact id (an HTML parser turns a raw CR into
            # LF: a CR must come as a character reference)
            attribute = re.search(r'id="live" data-run="([^"]*)"', page.text)
            assert attribute is not None, run_id
            assert html.unescape(attribute[1]) == run_id and "\r" not in attribute[1], run_id


def test_a_bug_still_answers_with_the_security_headers(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A 500 comes from outside the middlewares; it must carry the headers too (and say
    nothing of the store)."""
    store = Store(str(tmp_path / "s.db"))
    make_run(store, "exp", reps=1)

    def broken() -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(store, "runs", broken)
    with TestClient(create_app(store), base_url=BASE_URL,
                    raise_server_exceptions=False) as client:
        answer = client.get("/runs")
    store.close()
    assert answer.status_code == 500 and "secret" not in answer.text
    assert answer.headers["x-frame-options"] == "DENY"
    assert "default-src 'self'" in answer.headers["content-security-policy"]


def test_download_names_follow_rfc_6266() -> None:
    assert content_disposition("8cbfb0bf7f20", "json.gz") == \
        'attachment; filename="8cbfb0bf7f20.json.gz"'
    assert content_disposition("Straße\u202e\r\n", "csv") == (
        "attachment; filename=\"Stra_e___.csv\"; filename*=UTF-8''Stra%C3%9Fe___.csv")
    assert content_disposition("../../etc/passwd", "csv") == \
        'attachment; filename="_.._etc_passwd.csv"'
    assert content_disposition("\x00\x1b", "json") == \
        'attachment; filename="download.json"'
    assert len(content_disposition("x" * 10_000, "csv")) < 150
