"""Logging set-up: one JSON object per line on stderr (or console lines) from every logger.

structlog's own events and every standard-library logger (slack_bolt, slack_sdk, aiohttp, asyncio,
warnings, uncaught exceptions) go through one ``ProcessorFormatter`` on the root logger, so
tracebacks become a structured ``exception`` field instead of extra lines. Context variables bound
with ``structlog.contextvars`` (job and clarification ids) are merged into both. Log events carry
identifiers and codes only; callers never pass span text, answers or secrets.
"""

from __future__ import annotations

import logging
import sys
import threading
from types import TracebackType

import structlog

from bot.pseudonym import LOG_FIELDS as PSEUDONYMOUS
from bot.pseudonym import is_pseudonym, pseudonym

HANDLER_NAME = "clarify-bot"
# Library loggers held above the configured level: slack_sdk and slack_bolt log request and
# response bodies (card text) at debug; httpx logs every core request at info, which the core
# client already does in its own words.
LIBRARY_FLOORS = {"slack_sdk": logging.INFO, "slack_bolt": logging.INFO,
                  "httpx": logging.WARNING, "httpcore": logging.WARNING}


class _UnparsedRequests(logging.Filter):
    """aiohttp's server logs a request it cannot parse (a Content-Length shorter than the body,
    a bad header) with a traceback whose message quotes the offending bytes: a header value or
    the body, which can hold an answer. Such a request is a refusal like any other: its line
    says ``http.request_refused`` with the status and the error's kind, never its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.name == "aiohttp.server" and _unparsed_request(error):
            record.msg, record.args, record.exc_info, record.exc_text = (
                "http.request_refused", (), None, None)
            record.__dict__.pop("message", None)  # as another handler may have formatted it
            # at info like the bot's other refusals (aiohttp's debug ones stay debug)
            record.levelno = min(record.levelno, logging.INFO)
            record.levelname = logging.getLevelName(record.levelno)
            record.status = getattr(error, "code", None) or 400
            record.reason = type(error).__name__
            return record.levelno >= logging.getLogger().getEffectiveLevel()
        return True


class _LibraryEchoes(logging.Filter):
    """Lines of the Agents SDK that quote what a request carried: an activity it cannot
    validate (pydantic's error text repeats the input, a card's typed values among it), an
    activity no handler takes ("with text: " and the message's words), a handler's failure
    (the exception's text). Each keeps its level and says what happened, with the error's kind,
    never the text; the edge logs its own refusal or ``teams.turn_failed`` beside it."""

    def filter(self, record: logging.LogRecord) -> bool:
        said = str(record.msg)
        for (logger, prefix), event in _ECHOES.items():
            if record.name == logger and said.startswith(prefix):
                error = record.exc_info[1] if record.exc_info else None
                record.msg, record.args, record.exc_info, record.exc_text = event, (), None, None
                record.stack_info = None
                # the text another handler formatted first (pytest's, for one) is not an extra
                record.__dict__.pop("message", None)
                record.reason = type(error).__name__ if error is not None else None
                break
        return True


_AGENT_APP = "microsoft_agents.hosting.core.app.agent_application"
_ECHOES = {
    ("microsoft_agents.activity.activity", "Validation error for Activity"):
        "teams.activity_invalid",
    (_AGENT_APP, "No route found for activity"): "teams.activity_unrouted",
    (_AGENT_APP, "An error occurred in the AgentApplication"): "teams.handler_failed",
    (_AGENT_APP, "Calling error handler"): "teams.handler_failed",
}


def _unparsed_request(error: BaseException | None) -> bool:
    """aiohttp's ``HttpProcessingError`` (or a subclass), recognised by name: ``bot/`` imports no
    web framework outside the service (tests/test_layers.py)."""
    return error is not None and any(
        cls.__name__ == "HttpProcessingError" and cls.__module__ == "aiohttp.http_exceptions"
        for cls in type(error).__mro__)


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is when a record arrives (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def _pseudonymise(_: object, __: str, event: structlog.typing.EventDict
                  ) -> structlog.typing.EventDict:
    """Chat identifiers and person ids as their pseudonyms (``bot.pseudonym``): a log line never
    names a Slack user, an AAD object id or a person in clear text, so an erasure need not
    rewrite logs; the same id gives the same pseudonym everywhere, so lines can be followed."""
    for name in PSEUDONYMOUS.intersection(event):
        value = event[name]
        if value is None or value == "" or value == "-" or is_pseudonym(value):
            continue
        if isinstance(value, (list, tuple, set, frozenset)):
            event[name] = [pseudonym(v) for v in value]
        else:
            event[name] = pseudonym(value)
    return event


def configure_logging(*, level: str = "info", fmt: str = "json", cache: bool = False) -> None:
    """``cache``: each module's logger is built once, on first use, instead of on every call (a
    filtered-out ``debug`` then costs nothing); for a process that configures logging once
    (``serve``), since a cached logger no longer follows a later ``configure``."""
    numeric = logging.getLevelNamesMapping()[level.upper()]
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        _pseudonymise,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=cache,
    )
    handler = _StderrHandler()
    handler.name = HANDLER_NAME
    handler.addFilter(_UnparsedRequests())
    handler.addFilter(_LibraryEchoes())
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *_render(fmt)],
    ))
    reset_logging()
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(numeric)
    for name, floor in LIBRARY_FLOORS.items():
        logging.getLogger(name).setLevel(max(numeric, floor))
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = lambda args: _log_uncaught(
        args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)


def reset_logging() -> None:
    """Remove what ``configure_logging`` installed on the root logger (tests, reconfiguring)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.name == HANDLER_NAME]:
        root.removeHandler(handler)
    logging.captureWarnings(False)
    sys.excepthook = sys.__excepthook__
    threading.excepthook = threading.__excepthook__


def _render(fmt: str) -> list[structlog.typing.Processor]:
    if fmt == "console":
        return [structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)]
    # tracebacks without local variables: locals could hold tokens, span text or answers
    return [structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)),
            structlog.processors.JSONRenderer()]


def _log_uncaught(kind: type[BaseException], error: BaseException,
                  trace: TracebackType | None) -> None:
    logging.getLogger("clarify").critical("uncaught_exception", exc_info=(kind, error, trace))
