"""httpcore's sockets on asyncio streams directly, for the core client's connection pool.

Measured in bench/delivery.py (docs/performance.md): with httpcore's default anyio backend, a
third of the worker's CPU went to the pool around each request, not the request itself: every
reuse of a kept-alive connection asks anyio for the raw socket, and anyio builds all of a
socket's attributes to answer, a ``getpeername`` system call included; and each request left in
two writes (h11 hands over the head and the body apart), two system calls. This backend keeps
httpcore's pool, HTTP/1.1 handling, limits and timeouts, and changes only the socket layer:
``is_readable`` is answered from the stream's own state, and writes are gathered until the
response is read, so a request leaves in one ``send``.

The method signatures are httpcore's, ``timeout`` arguments included (hence ASYNC109 off here).
"""
# ruff: noqa: ASYNC109

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

_SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] \
    | tuple[int, int, None, int]


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._pending: list[bytes] = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush(timeout)
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout("the read timed out") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:  # sent with the next read: httpcore reads only once the request is written
            self._pending.append(buffer)

    async def _flush(self, timeout: float | None) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        try:
            self._writer.write(data)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout("the write timed out") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    async def aclose(self) -> None:
        self._pending.clear()
        self._writer.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # an idle kept-alive connection is "readable" when the server closed it or sent
            # something unasked: either way it must not carry the next request
            return (self._reader.at_eof() or bool(getattr(self._reader, "_buffer", b""))
                    or self._writer.is_closing())
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[_SocketOption] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None,
                    limit=2**20)
        except TimeoutError:
            raise httpcore.ConnectTimeout("the connection timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)  # type: ignore[call-overload]
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[_SocketOption] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=2**20)
        except TimeoutError:
            raise httpcore.ConnectTimeout("the connection timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's own transport (pool, limits, HTTP/1.1, proxies off) on the asyncio backend."""
    made = httpx.AsyncHTTPTransport(limits=limits)
    made._pool._network_backend = AsyncioBackend()  # httpx takes no backend argument
    return made
