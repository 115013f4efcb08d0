"""The URL rules of ``prime_rl_dynamo._urls``: the standard parser's split, and hostile shapes.

``admin_key`` (LIST-6) and ``url_host_problem`` (WORKER-8) read URLs with ``urllib.parse``;
the shapes it refuses or reads differently from a naive split are pinned here, and the one host
normaliser is checked to be the one both LIST-6 and the admin host allow-list compare with.
"""

from __future__ import annotations

import pytest

from prime_rl_dynamo._urls import admin_key, host_key, url_host_problem
from prime_rl_dynamo.credentials import host_allowed

#: What LIST-6 compares, per URL as written.
KEYS = {
    "HTTP://H:8000/a/": "http://h:8000/a",
    "http://h/a": "http://h:80/a",
    "https://h/a": "https://h:443/a",
    "http://h:0080/a": "http://h:80/a",  # leading zeros of the port dropped
    "http://h:/a": "http://h:80/a",  # an empty port is the default one
    "http://h./a": "http://h:80/a",  # one trailing dot: the same DNS name
    "http://h../a": "http://h..:80/a",  # two are not
    "http://[0:0::1]:1/": "http://[::1]:1",
    "http://h:8000/%61%2f%7E": "http://h:8000/a%2F~",
    "http://h:8000/\u00e9": "http://h:8000/%C3%A9",
    # User info stays in the key (CRED-1 refuses the URL anyway): never the same endpoint.
    "http://user@h:8000/a": "http://user@h:8000/a",
    # What follows the authority is kept as written: a query is not part of the host.
    "http://h?x/y": "http://h:80?x/y",
}


@pytest.mark.parametrize("url", KEYS)
def test_admin_key_reads_urls_with_the_standard_parser(url: str) -> None:
    assert admin_key(url) == KEYS[url]


@pytest.mark.parametrize(
    "url",
    [
        "http://h:65536/a",  # a port above 65535
        "http://h:99999/a",
        "http://h:8o/a",  # not a number
        "http://[::1/a",  # an unclosed bracket
        "http://[1:2:3:4:5:6:7:8:9]/a",  # brackets around no address
        " http://h/a",  # leading white space, which urlsplit would drop
        "http://h\t/a",  # a tab, which urlsplit would drop
        "h:8000/a",  # no authority
        "",
    ],
)
def test_a_url_the_parser_refuses_is_its_own_key(url: str) -> None:
    assert admin_key(url) == url


#: URLs whose host the admin pool cannot use, and what the problem says.
UNUSABLE = {
    "http://[1:2:3:4:5:6:7:8:9]/a": "is not an IPv6 address",
    "http://user@[::zz]:80/": "is not an IPv6 address",
    "http://[v1.x]/": "is not an IPv6 address",
    "http://xn--bad/": "not valid punycode",
    "http://XN--BAD.example/": "not valid punycode",
    "http://xn--bad:99999/": "not valid punycode",  # the host is judged whatever the port
}


@pytest.mark.parametrize("url", UNUSABLE)
def test_unusable_hosts_are_named(url: str) -> None:
    found = url_host_problem(url)
    assert found is not None and UNUSABLE[url] in found


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]:8000/a",
        "http://xn--bcher-kva.example/",
        "http://h:8000/a",
        "http://[::1/a",  # unclosed: the pattern refuses it, once
        "frontend:8001",
    ],
)
def test_usable_or_unsplittable_hosts_have_no_problem(url: str) -> None:
    assert url_host_problem(url) is None


#: Pairs of hosts as written, and whether they are the same host.
SAME_HOST = {
    ("Engine-1.Internal.", "engine-1.internal"): True,
    ("engine.internal..", "engine.internal"): False,
    ("[0:0::1]", "::1"): True,
    ("[::1]", "[::2]"): False,
    ("b\u00fccher.example", "xn--bcher-kva.example"): True,
    ("10.0.0.1", "10.0.0.01"): False,
}


@pytest.mark.parametrize(("one", "other"), SAME_HOST)
def test_one_host_normaliser_serves_list_6_and_the_allow_list(one: str, other: str) -> None:
    same = SAME_HOST[one, other]
    assert (host_key(one) == host_key(other)) is same
    # The allow-list matches exactly the hosts LIST-6 would call the same (names; the literal
    # 10.0.0.01 is no IPv4 address, so it is compared as a name there too).
    assert host_allowed(one, [other]) is same
    bracket = lambda h: f"[{h}]" if ":" in h and not h.startswith("[") else h  # noqa: E731
    url_one, url_other = f"http://{bracket(one)}:1/a", f"http://{bracket(other)}:1/a"
    if one.isascii() and other.isascii():  # a Unicode host never passes WORKER-8's pattern
        assert (admin_key(url_one) == admin_key(url_other)) is same
