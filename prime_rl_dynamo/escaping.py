"""Text a target sent, made safe for the medium that shows it: a terminal, HTML, JUnit XML, JSON.

One rule under all four: a character that would act instead of being read (a control character
but newline and tab, a lone surrogate, a line or paragraph separator, a bidirectional override, a
non-character) is written as a visible escape (``\\x1b``, ``\\ud800``, ``\\u202e``). Each medium
then adds its own quoting (``for_html``). Pure, standard library only.
"""

from __future__ import annotations

import html
import re
from typing import Any

from prime_rl_dynamo.redaction import map_text

__all__ = ["for_html", "for_json", "for_terminal", "for_xml", "visible", "visible_data"]

# C0 (but \t and \n) and C1 controls, DEL, surrogates, U+2028/2029, bidi embeddings, overrides and
# isolates, and the two non-characters XML 1.0 forbids.
_ACTING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every acting character written as a visible escape (newline, tab kept)."""
    return _ACTING.sub(_escape, text)


def visible_data(value: Any) -> Any:
    """JSON-like data with ``visible`` applied to every string (keys too); tuples stay tuples."""
    return map_text(value, visible)


def for_terminal(text: str) -> str:
    """``text`` as a terminal may print it: no escape sequence, no NUL, no carriage return, and
    always encodable as UTF-8."""
    return visible(str(text))


def for_html(text: str) -> str:
    """``text`` as HTML element content or a quoted attribute value."""
    return html.escape(visible(str(text)), quote=True)


def for_xml(text: str) -> str:
    """``text`` with only characters XML 1.0 allows (ElementTree quotes markup itself)."""
    return visible(str(text))


def for_json(value: Any) -> Any:
    """JSON-like data whose every string (keys too) encodes as UTF-8: a lone surrogate (which
    strict JSON parsers refuse) is written as visible text; controls stay, JSON escapes them."""
    return map_text(value, _no_surrogate)


def _no_surrogate(text: str) -> str:
    return _SURROGATE.sub(_escape, text)
