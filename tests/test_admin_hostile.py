"""Admin pool and credentials against hostile engines and bad secrets.

An overall deadline for health and verify_topology, API keys read from secret files (trailing
newline), keys that cannot be a header, allow-list entries that can never match, the CRED-3
warning, and a sweep that greps every output for the secret.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from _client_support import VALIDATE, Dribbler, ScriptedServer, body, jreply, ok, worker

from prime_rl_dynamo.admin import AdminEngine, AdminPool, Credentials, host_allowed
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.errors import AdminError, ConfigError, PrimeRLDynamoError, TransportError

OK = jreply(200, {"status": "ok"})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- An overall deadline for the admin pool ------------------------------------------------------


@pytest.mark.integration
def test_health_against_a_dribbling_engine_ends_within_its_timeout() -> None:
    server = Dribbler()
    try:
        pool = AdminPool([AdminEngine("dynamo.e.rl#1", server.url + "/admin")], timeout=1.5)

        async def go() -> None:
            async with pool:
                await pool.health()

        start = time.monotonic()
        with pytest.raises(AdminError) as info:
            run(go())
        elapsed = time.monotonic() - start
        assert "no complete answer within 1.5 s" in str(info.value)
        assert "dynamo.e.rl#1" in str(info.value)
        assert elapsed < 10.0  # did not hang
    finally:
        server.close()


@pytest.mark.integration
def test_verify_topology_against_a_dribbling_frontend_ends_within_its_timeout() -> None:
    server = Dribbler()
    try:

        async def go() -> None:
            client = DiscoveryClient(
                server.url, ReadinessPolicy(1), PollingPolicy(request_timeout=30.0)
            )
            pool = AdminPool(
                [AdminEngine("dynamo.e.rl#1", "http://127.0.0.1:9/admin", 1)], discovery=client
            )
            async with pool, client:
                await pool.verify_topology(timeout=1.5)

        start = time.monotonic()
        with pytest.raises(TransportError) as info:
            run(go())
        assert "within 1.5 s" in str(info.value)
        assert time.monotonic() - start < 10.0  # did not hang
    finally:
        server.close()


# --- API keys from secret files, keys that cannot be a header ------------------------------------


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_one_trailing_newline_of_a_secret_file_is_stripped(ending: str) -> None:
    creds = Credentials(api_key="sk-file-1" + ending)
    assert creds.resolve({}) == {"Authorization": "Bearer sk-file-1"}
    env = Credentials.from_env(environ={"VLLM_API_KEY": "sk-file-2" + ending})
    assert env.resolve({}) == {"Authorization": "Bearer sk-file-2"}


@pytest.mark.parametrize(
    "key",
    ["sk-two\n\n", "sk-in\nside", "sk-cr\r", "sk-\x00nul", "sk-ключ", "sk-tab\x7f", " sk-lead"],
)
def test_a_key_that_cannot_be_a_header_is_refused_without_echoing_it(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Credentials(api_key=key)
    message = str(info.value)
    assert info.value.requirement == "CRED-2"
    assert "api_key" in message and "\n" not in message
    assert key.strip() not in message and "sk-" not in message


def test_header_values_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="X-Team"):
        Credentials(headers={"X-Team": "tok\nen"})
    creds = Credentials(headers_from_env={"X-Team": "TEAM"})
    with pytest.raises(ConfigError, match=r"X-Team <- \$TEAM") as info:
        creds.resolve({"TEAM": "tøken"})
    assert "tøken" not in str(info.value)
    assert creds.resolve({"TEAM": "token\n"}) == {"X-Team": "token"}


def test_config_refuses_a_bad_api_key_at_configuration_time() -> None:
    with pytest.raises(ConfigError) as info:
        DynamoClientConfig(
            dynamo_discovery_url="http://f:8001", inference_world_size=1, api_key="sk-é"
        )
    assert "sk-é" not in str(info.value) and "api_key" in str(info.value)


SECRET = "sk-LEAK-CANARY-0123456789"


@pytest.mark.integration
def test_no_output_ever_contains_the_secret(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every path a credential could leak through: errors, results, logs, reprs, stdout/stderr."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with ScriptedServer() as server:
        # The engine and a gateway in front of discovery both echo the Authorization header back.
        def echo(status: int) -> Any:
            return lambda s: jreply(
                status,
                {"status": "error", "message": f"bad token {s.headers.get('authorization')}"},
            )

        server.route("GET", "/e0/health", echo(401))
        # 503 is retried: the echo then reaches the final NotReadyError's last failure too.
        server.route("GET", "/v1/rl/workers", echo(503))
        server.script("POST", "/e1/pause", (307, {"location": "/elsewhere"}, b""))
        environ = {"VLLM_API_KEY": SECRET + "\n", "TEAM": SECRET}
        config = DynamoClientConfig(
            dynamo_discovery_url=server.url,
            inference_world_size=1,
            discovery_credentials=True,
            headers_from_env={"X-Team": "TEAM"},
            request_timeout=2.0,
            discovery_timeout=2.0,
        )
        seen += [repr(config), repr(config.credentials(environ))]
        pool = AdminPool(
            [
                AdminEngine("dynamo.e0.rl#0", f"{server.url}/e0"),
                AdminEngine("dynamo.e1.rl#1", f"{server.url}/e1"),
            ],
            **config.pool_options(environ),
        )

        async def drive() -> None:
            async with pool:
                for op in ("health", "pause"):
                    try:
                        await getattr(pool, op)()
                    except AdminError as exc:
                        seen.append(str(exc))
                        seen.extend(str(r) + repr(r) for r in (exc.results or {}).values())
            async with config.discovery_client(environ) as client:
                for call in (client.fetch(), client.wait_ready(timeout=2.0)):
                    try:
                        await call
                    except PrimeRLDynamoError as exc:
                        seen.append(f"{exc} {exc!r} {getattr(exc, 'reasons', '')}")

        run(drive())
        assert server.seen("GET", "/e0/health")[0].headers["authorization"] == f"Bearer {SECRET}"
    for bad in ("sk-\n" + SECRET, SECRET + "é"):
        try:
            Credentials(api_key=bad)
        except ConfigError as exc:
            seen.append(str(exc))
    captured = capsys.readouterr()
    seen += [captured.out, captured.err, caplog.text]
    assert len(seen) >= 8
    leaks = [text for text in seen if SECRET in text]
    assert leaks == []
    assert any("bad token" in text for text in seen)  # the echo was reported, redacted
    assert any("POLL-5" in text and "bad token <redacted>" in text for text in seen)


# --- Allow-list entries that can never match -----------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        "10.0.0.5:8000",
        "[::1]:8000",
        "engine:8000",
        "http://engine",
        "user@engine",
        "a b",
        "engine.internal..",
        ".engine",
        "*..internal",
    ],
)
def test_entries_that_can_never_match_are_refused(entry: str) -> None:
    with pytest.raises(ConfigError) as info:
        Credentials(allowed_hosts=(entry,))
    assert info.value.requirement == "CRED-3"
    assert repr(entry) in str(info.value)


@pytest.mark.parametrize(
    ("host", "entry"),
    [
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "bücher.example"),
        ("a.bücher.example", "*.xn--bcher-kva.example"),
        ("BÜCHER.example", "bücher.example"),
    ],
)
def test_punycode_and_unicode_forms_of_a_name_match(host: str, entry: str) -> None:
    Credentials(allowed_hosts=(entry,))
    assert host_allowed(host, [entry])


def test_a_punycode_allow_list_admits_the_engine_httpx_decodes() -> None:
    # httpx decodes xn-- hosts to Unicode: the allow-list entry in punycode must still match.
    pool = AdminPool(
        [AdminEngine("dynamo.e.rl#1", "http://xn--bcher-kva.example:9000/admin")],
        credentials=Credentials(api_key="sk-x", allowed_hosts=("xn--bcher-kva.example",)),
        environ={},
    )
    assert pool.anonymous == []


# --- CRED-3's warning when an engine is driven without credentials -------------------------------


@pytest.mark.integration
def test_anonymous_engines_are_warned_about_by_engine_and_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ScriptedServer() as server:
        server.script("GET", "/e1/health", OK)
        server.script("GET", "/e0/health", OK)
        caplog.set_level(logging.WARNING, logger="prime_rl_dynamo")
        pool = AdminPool(
            [
                AdminEngine("dynamo.e0.rl#0", f"http://127.0.0.1:{server.port}/e0"),
                AdminEngine("dynamo.e1.rl#1", f"http://localhost:{server.port}/e1"),
            ],
            credentials=Credentials(api_key="sk-anon", allowed_hosts=("127.0.0.1",)),
            disallowed="anonymous",
            environ={},
        )
        run(pool.aclose())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "CRED-3" in text and "dynamo.e1.rl#1" in text and "localhost" in text
    assert "dynamo.e0.rl#0" not in text and "sk-anon" not in text


def test_discovery_listing_for_pool_tests_is_valid() -> None:
    # Guard for the helpers above: the body they serve is a valid listing.
    assert VALIDATE(body(worker("e", 1, 1))).workers[0].world_size == 1
    assert ok(b"{}")[0] == 200
