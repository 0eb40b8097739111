"""A host's api_base: the addresses fleet.yaml takes, and their one normal form.

An address is taken only when a client can reach it as written, so whatever validate, set-host
and import accept, the probe, verify and LiteLLM can turn into a request: http(s), a host that
is an ASCII name (letters, digits, '-' and '_' in dot-separated labels of 1-63 characters, at
most 253 in all), a dotted IPv4 address or a bracketed IPv6 address, an optional port and path.
httpx refuses to build a URL for many other hosts (`xn--`, a soft hyphen, `[v1.abc]`, `256.1.1.1`)
and Python's resolver refuses a label over 63 characters or an empty one, each with an error of
its own; and a name the resolver reads as a number (`0x7f.1`, `1.2.3`) reaches an address the
text does not show. Pure: validate imports no HTTP library.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from functools import lru_cache
from urllib.parse import urlsplit

from sync.fleet.plaintext import authority, quote

# A label of an ASCII host name. '_' too: Docker and Compose service names carry it, and both
# httpx and the resolver take it.
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
# What the URL standard (and glibc's inet_aton) reads as a number: a name ending in one is an
# IPv4 address in some spelling (WHATWG URL "ends in a number").
_NUMBER = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
MAX_NAME = 253
# A dotted IPv4 address exactly as ipaddress.IPv4Address takes it: four numbers 0-255, no
# leading zeros (host_problem's answer for such a host, without the parse).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
# The address every fleet writes, in plain ASCII: http(s)://host[:digits][/path] with no
# character any rule of address_problem looks at (no @ ? # [ ] %, no blank, nothing
# unprintable) and a lower-case scheme. Such an address passes every rule but the port's range
# and the host's; address_problem checks those two and skips the rest (a tenth of a large
# fleet's validation). Anything else takes the rules one by one.
_PLAIN_ADDRESS = re.compile(
    r"https?://(?P<host>[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?(?:/[A-Za-z0-9._~/-]*)?"
)
MAX_ADDRESS = 2048  # httpx refuses a URL past 65,536; browsers and proxies often past 2,048
FORM = "expected http(s)://host[:port][/path]"


def address_problem(address: str) -> str | None:
    """Why an api_base is not http(s)://host[:port][/path] with a host a client can reach as
    written, or None when it is; an address that looks like a credential (a token in its path)
    is said, never quoted. A character that is not printable is named, never printed."""
    plain = _PLAIN_ADDRESS.fullmatch(address) if len(address) <= MAX_ADDRESS else None
    if plain is not None and _in_range(plain["port"]) and host_problem(plain["host"]) is None:
        return None  # what _address_rules says of it, without them
    return _address_rules(address)


def _address_rules(address: str) -> str | None:
    """address_problem's rules, one by one, in the order their messages take precedence."""
    if "@" in authority(address):
        # Checked first, and the address never echoed: the text before @ may be a password.
        return "credentials in the address are refused; use api_key: os.environ/NAME"
    if len(address) > MAX_ADDRESS:
        return f"the address is {len(address)} characters; at most {MAX_ADDRESS}"
    if odd := _unprintable(address):
        return f"{quote(address)} contains {odd}; write the address in plain characters"
    if address != address.strip() or any(map(str.isspace, address)):
        return f"{quote(address)} contains whitespace"
    try:
        parts = urlsplit(address)
    except ValueError as exc:
        return f"{quote(address)} is not a valid address ({exc}); {FORM}"
    if parts.scheme not in {"http", "https"}:
        return f"{quote(address)} must start with http:// or https://"
    host, _, port_text = _host_and_port(parts.netloc)
    if not host:
        return f"{quote(address)} has no host; {FORM}"
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        return f"{quote(address)} has a port that is not a number; {FORM}"
    if port_text and not 1 <= int(port_text) <= 65535:
        return f"port {int(port_text)} is outside 1-65535"
    if why := host_problem(host):
        return f"{quote(address)}: {why}"
    if parts.query or parts.fragment:
        # Not echoed whole: a query may carry a token (?api_key=...).
        shown = f"{parts.scheme}://{parts.netloc}{parts.path}"
        return f"{quote(shown)} must not carry a query or fragment (remove what follows ? or #)"
    return None


def _in_range(port: str | None) -> bool:
    return port is None or 1 <= int(port) <= 65535


def _unprintable(text: str) -> str | None:
    """The first character no terminal shows as itself (a control or format character such as
    ESC, a soft hyphen or a zero-width joiner, a lone surrogate), named."""
    if text.isprintable():
        return None  # every character printable: none to name
    for index, char in enumerate(text):
        if not char.isprintable() and not char.isspace():
            name = unicodedata.name(char, "") if not 0xD800 <= ord(char) <= 0xDFFF else ""
            label = f"U+{ord(char):04X}" + (f" {name}" if name else "")
            return f"the invisible or control character {label} at position {index + 1}"
    return None


def _host_and_port(netloc: str) -> tuple[str, str, str]:
    """(host as written, ':', port text) of an authority without user:password@."""
    if netloc.startswith("["):
        inside, bracket, rest = netloc[1:].partition("]")
        if not bracket:
            return netloc, "", ""
        host = f"[{inside}]"
        if rest and not rest.startswith(":"):
            return netloc, "", ""  # text after ']' that is not a port: host_problem says so
        return host, rest[:1], rest[1:]
    host, colon, port = netloc.partition(":")
    return host, colon, port


def host_problem(host: str) -> str | None:
    """Why a host (as written in an address) is not one a client reaches as written."""
    if host.startswith("["):
        inside = host[1:-1] if host.endswith("]") else ""
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            return "the host in [] is not an IPv6 address; write [IPv6], an IPv4 address or a name"
        if "%" in inside:
            return "an IPv6 zone (%...) names an interface of one machine; remove it"
        return None
    if not host.isascii():
        return (
            "internationalised host names are refused; write the host in ASCII (a name or an "
            "IP address)"
        )
    name = host[:-1] if host.endswith(".") else host  # a trailing dot: the root, fully qualified
    if _DOTTED_QUAD.fullmatch(host):
        return None  # what IPv4Address takes (below), without its parse
    labels = name.split(".")
    if _NUMBER.fullmatch(labels[-1]):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return (
                "the host ends in a number but is not a dotted IPv4 address (four numbers "
                "0-255, no leading zeros); write a.b.c.d or a name"
            )
        return None
    if len(name) > MAX_NAME:
        return f"host name is {len(name)} characters; at most {MAX_NAME}"
    for label in labels:
        if not label:
            return "the host name has an empty label (two dots in a row, or a leading dot)"
        if len(label) > 63:
            return f"the host name has a label of {len(label)} characters; at most 63 each"
        if label[:4].lower() == "xn--":
            return (
                "internationalised host names (xn--) are refused; write the host in ASCII "
                "(a name or an IP address)"
            )
        if not _LABEL.fullmatch(label):
            return (
                "the host must be an IP address or a name of letters, digits, '-' and '_' in "
                "dot-separated labels, none starting or ending with '-'"
            )
    return None


@lru_cache(maxsize=1 << 16)
def normalise_address(address: str) -> str:
    """scheme://host:port/path, lowercase host and default port spelt out: one form for the
    spellings of one address. Cached: validate, the plan (desired and live routes) and verify
    ask it of the same ~one address per route."""
    plain = _PLAIN_ADDRESS.fullmatch(address)
    if plain is not None and _in_range(port := plain["port"]):
        # urlsplit's reading of such an address, without it: scheme as written (lower case),
        # host lowercased, the port (1-65535 here) or the default, the path after the authority.
        scheme = address[: address.index(":")]
        number = int(port) if port else {"http": 80, "https": 443}[scheme]
        path = address[plain.end("port") if port else plain.end("host") :]
        return f"{scheme}://{plain['host'].lower()}:{number}{path.rstrip('/')}"
    return _normal_form(address)


def _normal_form(address: str) -> str:
    """normalise_address by urlsplit, for every address."""
    parts = urlsplit(address)
    default = {"http": 80, "https": 443}[parts.scheme]
    port = parts.port or default
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"
