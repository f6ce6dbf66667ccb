"""Logging: every logger, tracebacks included, as one JSON object per line with bound ids."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import warnings
from typing import Any

import structlog

from bot.logs import configure_logging


def _lines(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines()]


async def test_every_logger_writes_one_json_object_per_line(capsys: Any) -> None:
    """structlog, slack_bolt, slack_sdk, aiohttp, asyncio, warnings and uncaught exceptions all
    come out as single JSON lines; tracebacks are a structured field, and bound ids are merged.
    slack_sdk's debug lines (request bodies: card text) stay out even at debug level."""
    configure_logging(level="debug")
    capsys.readouterr()
    with structlog.contextvars.bound_contextvars(clarification_id="clr-1"):
        structlog.get_logger("clarify.test").info("bot.event", job_id="job-1")
        logging.getLogger("slack_bolt.AsyncApp").warning("Unhandled request\n  with\n  lines")
        logging.getLogger("slack_sdk.web.async_base_client").debug("Sending a request: body")
        logging.getLogger("slack_sdk.web.async_base_client").info("Received a response")
        try:
            raise ValueError("inner")
        except ValueError:
            logging.getLogger("aiohttp.server").exception("Error handling request")
        loop = asyncio.get_running_loop()
        loop.call_exception_handler({"message": "Exception in callback cb()",
                                     "exception": RuntimeError("lost")})
        warnings.warn("a library warning", stacklevel=1)
        try:
            raise KeyError("top")
        except KeyError:
            sys.excepthook(*sys.exc_info())  # what an uncaught exception would do
    lines = _lines(capsys.readouterr().err)
    loggers = [line["logger"] for line in lines]
    assert loggers == ["clarify.test", "slack_bolt.AsyncApp", "slack_sdk.web.async_base_client",
                       "aiohttp.server", "asyncio", "py.warnings", "clarify"]
    assert all(line["clarification_id"] == "clr-1" for line in lines)
    assert "Sending a request: body" not in json.dumps(lines)
    with_traces = [line for line in lines if "exception" in line]
    assert [t["exception"][0]["exc_type"] for t in with_traces] == [
        "ValueError", "RuntimeError", "KeyError"]
    assert with_traces[0]["exception"][0]["frames"][0]["name"].startswith("test_every_logger")


def test_levels_filter_structlog_and_library_loggers_alike(capsys: Any) -> None:
    """At level warning, info lines from structlog and from libraries are both dropped."""
    configure_logging(level="warning")
    capsys.readouterr()
    structlog.get_logger("clarify.test").info("quiet")
    logging.getLogger("slack_bolt").info("quiet too")
    structlog.get_logger("clarify.test").warning("loud")
    assert [line["event"] for line in _lines(capsys.readouterr().err)] == ["loud"]


def test_a_process_that_configures_once_builds_each_logger_once(capsys: Any) -> None:
    """``serve`` caches each logger on first use: lines come out as an uncached logger writes them,
    debug is dropped at level info, and later calls reuse the logger built for the first."""
    configure_logging(level="info", cache=True)
    try:
        capsys.readouterr()
        log = structlog.get_logger("clarify.cached")
        log.info("first", n=1)
        built = log.bind
        log.debug("dropped", n=2)
        log.info("second", n=3)
        assert log.bind is built  # the proxy holds the logger it built
        lines = _lines(capsys.readouterr().err)
        assert [(line["event"], line["n"]) for line in lines] == [("first", 1), ("second", 3)]
    finally:
        configure_logging(level="info")  # later tests reconfigure and capture again
