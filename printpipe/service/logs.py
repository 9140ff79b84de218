"""The servers' logs, as text (uvicorn's own format) or as JSON lines (``--log-format json``).

One JSON object a line, for a log shipper: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
``message``, the ``request_id`` of the request being answered when there is one (the id every
answer carries in ``X-Request-Id``), and for an access line (``--access-log``) its ``client``,
``method``, ``path``, ``http_version`` and ``status``.  The messages are the ones the text log
has: none carries a secret, a validation code or a VIRN (a code travels in a request's body,
never in its path; login and launch tokens in the link's fragment, never sent).  A traceback,
should one be logged, is one string, never several lines.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from typing import Any

LOG_FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        from printpipe.service.problems import REQUEST_ID

        data: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        access = record.name == "uvicorn.access" and isinstance(record.args, tuple)
        if access and len(record.args) == 5:  # type: ignore[arg-type]
            client, method, path, version, status = record.args  # type: ignore[misc]
            data.update(client=client, method=method, path=path, http_version=version,
                            status=status, message=f"{method} {path} {status}")  # fmt: skip
        if "message" not in data:
            data["message"] = record.getMessage()
        request_id = REQUEST_ID.get()
        if request_id is not None:
            data["request_id"] = request_id
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def uvicorn_log_config(log_format: str) -> dict[str, Any]:
    """uvicorn's logging configuration for ``log_format``; printpipe's own loggers (the
    sealer's, the guard's) write through the same handler."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    if log_format == "json":
        for name in ("default", "access"):
            config["formatters"][name] = {"()": "printpipe.service.logs.JsonFormatter"}
    config["loggers"]["printpipe"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    # warnings and errors only, but each request's line when --access-log asks for it (uvicorn
    # drops the access log's handler otherwise): the levels are set here, not by log_level,
    # which would hold the access lines back at WARNING too
    config["loggers"]["uvicorn"]["level"] = "WARNING"
    config["loggers"]["uvicorn.error"]["level"] = "WARNING"
    config["loggers"]["uvicorn.access"]["level"] = "INFO"
    return config
