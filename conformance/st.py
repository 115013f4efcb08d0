"""schemathesis inside the suite: its own checks run from the bundled OpenAPI document.

Uses schemathesis' Python API (4.x): one positive case per documented operation of the RL
listener, validated with every check schemathesis enables by default.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from conformance._http import DEFAULT_MAX_BODY_BYTES, ExchangeBound, check_bounds, same_origin
from conformance.registry import CheckError, Failed
from prime_rl_dynamo.redaction import shown_url

__all__ = ["OPENAPI_DOCUMENT", "StFailure", "openapi_document", "run_schemathesis"]

#: The RL listener's OpenAPI document, relative to the bundled contract directory.
OPENAPI_DOCUMENT = "openapi/rl-frontend.openapi.json"


@dataclass(frozen=True)
class StFailure:
    """One failure schemathesis reported."""

    operation: str
    title: str
    text: str  # schemathesis' own message, with a curl reproducer
    schema_failure: bool  # response_schema_conformance (the validator may name the requirement)
    body: bytes | None


def openapi_document() -> Path:
    """Path of the bundled RL-listener OpenAPI document (works from the wheel too)."""
    from prime_rl_dynamo.resources import schema_path

    try:
        return schema_path(OPENAPI_DOCUMENT)
    except FileNotFoundError as exc:
        raise CheckError(f"the bundled OpenAPI document is missing: {exc}") from exc


class _OffOrigin(Exception):
    """A schemathesis exchange was redirected to another origin (a failure of the target)."""


def _off_origin(url: str, location: str) -> bool:
    return not same_origin(url, str(httpx.URL(url).join(location)))


class _Bounded(Exception):
    """A schemathesis exchange broke the suite's body cap or deadline (the message says which)."""


def _bounded_session(deadline: float, cap: int) -> Any:
    """A requests session whose every exchange has the suite's bounds (body cap, deadline)."""
    import requests
    from requests.adapters import HTTPAdapter

    class BoundedAdapter(HTTPAdapter):
        def send(
            self,
            request: requests.PreparedRequest,
            stream: bool = False,
            timeout: Any = None,
            verify: bool | str = True,
            cert: Any = None,
            proxies: Any = None,
        ) -> requests.Response:
            started = time.perf_counter()
            response = super().send(
                request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies
            )
            location = response.headers.get("location")
            if response.is_redirect and location and _off_origin(str(request.url), location):
                response.close()
                raise _OffOrigin(
                    f"{request.method} {shown_url(str(request.url))} answered "
                    f"{response.status_code} redirecting to another origin "
                    f"({shown_url(str(httpx.URL(str(request.url)).join(location)))}); not "
                    "followed: no header (-H) may cross an origin (HTTP-1)"
                )
            chunks, size = [], 0
            try:
                for chunk in response.iter_content(65536):
                    chunks.append(chunk)
                    size += len(chunk)
                    check_bounds(
                        str(request.method), str(request.url), size, started, deadline, cap
                    )
            except ExchangeBound as exc:  # an httpx error type: not one requests' callers expect
                raise _Bounded(str(exc)) from None
            finally:
                response.close()
            response._content = b"".join(chunks)
            response._content_consumed = True
            return response

    session = requests.Session()
    session.trust_env = False
    # No redirect is followed: requests would forward every -H header but Authorization to
    # wherever a Location points (the adapter fails an off-origin one first).
    session.get_redirect_target = lambda response: None  # type: ignore[method-assign,assignment]
    for prefix in ("http://", "https://"):
        session.mount(prefix, BoundedAdapter())
    return session


def run_schemathesis(
    base_url: str,
    *,
    timeout: float = 10.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    headers: Sequence[tuple[str, str]] = (),
    verify: bool | str = True,
) -> list[StFailure]:
    """Call every documented operation once and return what schemathesis' checks found
    (``headers`` sent with every call, ``verify`` as requests takes it).

    Every exchange has the suite's bounds: past the body cap or the deadline it is a Failed
    (HTTP-1, with the figure), as for the suite's own requests.
    """
    import schemathesis
    from schemathesis.core.failures import Failure, FailureGroup

    try:
        schema = schemathesis.openapi.from_path(str(openapi_document()))
    except CheckError:
        raise
    except Exception as exc:
        raise CheckError(f"schemathesis cannot load {openapi_document()}: {exc}") from exc
    schema.config.update(base_url=base_url)
    failures: list[StFailure] = []
    session = _bounded_session(timeout, max_body_bytes)
    for loaded in schema.get_all_operations():
        if not hasattr(loaded, "ok"):
            raise CheckError(
                f"schemathesis cannot load an operation of {openapi_document()}: {loaded}"
            )
        operation = loaded.ok()
        case = operation.Case()
        try:
            response = case.call(
                base_url=base_url,
                session=session,
                timeout=timeout,
                headers=dict(headers) or None,
                verify=verify,
            )
        except _OffOrigin as exc:
            raise Failed(f"expected an answer from the listener itself: {exc}") from None
        except _Bounded as exc:
            raise Failed(
                f"expected a complete HTTP response within the suite's bounds: {exc}"
            ) from exc
        except Exception as exc:
            raise CheckError(f"{operation.label}: request failed: {exc}") from exc
        try:
            case.validate_response(response)
        except FailureGroup as group:
            for failure in group.exceptions:
                failures.append(
                    _convert(operation.label, failure, response.content, case, base_url)
                )
        except Failure as failure:
            failures.append(_convert(operation.label, failure, response.content, case, base_url))
    return failures


def _convert(
    label: str, failure: object, body: bytes | None, case: object, base_url: str
) -> StFailure:
    title = str(getattr(failure, "title", type(failure).__name__))
    message = str(getattr(failure, "message", failure)).strip()
    curl = ""
    try:
        curl = case.as_curl_command(base_url=base_url)  # type: ignore[attr-defined]
    except Exception:  # the reproducer is a courtesy
        curl = ""
    text = f"{label}: {title}: {message.splitlines()[0] if message else ''}"
    if curl:
        text += f" (reproduce: {curl})"
    return StFailure(
        operation=label,
        title=title,
        text=text,
        schema_failure=type(failure).__name__ == "JsonSchemaError",
        body=body,
    )
