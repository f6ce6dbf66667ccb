"""Failures below HTTP as aiohttp raises them, for a test's transport to raise in place of the
real one (``bot.core.http.MockTransport``): the client's wire then maps them as it maps
production's. Each takes the words a library might put in its message, so a test can show that
none of them reaches the client's error.

``tests/core/test_transport_errors.py`` checks that the real transport raises these same types
for the events they stand for (a closed port, a dropped connection, a body cut short)."""

from __future__ import annotations

import ssl

import aiohttp
from aiohttp.client_reqrep import ConnectionKey
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

_KEY = ConnectionKey(host="core.test", port=443, is_ssl=True, ssl=True, proxy=None,
                     proxy_auth=None, proxy_headers_hash=None, server_hostname=None)


def refused(words: str = "Connect call failed") -> aiohttp.ClientConnectorError:
    """Nobody listens on the core's port."""
    return aiohttp.ClientConnectorError(_KEY, ConnectionRefusedError(111, words))


def unresolved(words: str = "Name or service not known") -> aiohttp.ClientConnectorError:
    """The core's host name does not resolve."""
    return aiohttp.ClientConnectorDNSError(_KEY, OSError(-2, words))


def untrusted(words: str = "certificate verify failed") -> aiohttp.ClientConnectorError:
    """The core's TLS certificate does not verify."""
    return aiohttp.ClientConnectorCertificateError(
        _KEY, ssl.SSLCertVerificationError(1, words))


def reset(words: str = "Connection reset by peer") -> aiohttp.ClientOSError:
    """The connection was reset while the request or its answer was on its way."""
    return aiohttp.ClientOSError(104, words)


def dropped(words: str = "Server disconnected") -> aiohttp.ServerDisconnectedError:
    """The core closed the connection before answering."""
    return aiohttp.ServerDisconnectedError(words)


def cut_short(words: str = "Response payload is not completed") -> aiohttp.ClientPayloadError:
    """The answer's body ended before its Content-Length."""
    return aiohttp.ClientPayloadError(words)


def garbled(words: str = "Invalid response status") -> aiohttp.ClientResponseError:
    """The answer is not HTTP (a status line or header aiohttp cannot parse)."""
    info = aiohttp.RequestInfo(URL("https://core.test/"), "GET", CIMultiDictProxy(CIMultiDict()),
                               URL("https://core.test/"))
    return aiohttp.ClientResponseError(info, (), status=400, message=words)


def read_timeout(words: str = "Timeout on reading data from socket") -> TimeoutError:
    """The core took longer than the read timeout to answer."""
    return aiohttp.SocketTimeoutError(words)


def connect_timeout(words: str = "Connection timeout to host") -> TimeoutError:
    """No connection within the connect timeout (or no free one in the pool)."""
    return aiohttp.ConnectionTimeoutError(words)


def bad_url(words: str = "core.test:port") -> aiohttp.InvalidURL:
    """A URL aiohttp refuses before sending: it would fail the same way every time."""
    return aiohttp.InvalidURL(words)


def other(words: str = "too many redirects") -> aiohttp.ClientError:
    """Any other failure of aiohttp's client."""
    return aiohttp.ClientError(words)
