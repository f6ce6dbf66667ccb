"""Logging set-up: structlog to JSON lines (or console), with bound context variables.

Log events carry identifiers and codes only; callers never pass span text, answers or secrets.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, level: str = "info", fmt: str = "json") -> None:
    # tracebacks without local variables: locals could hold tokens, span text or answers
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
