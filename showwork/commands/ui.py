"""``showwork ui``."""

from __future__ import annotations

import argparse
from typing import Any

from showwork.commands.options import integer
from showwork.commands.searches import tracking_uri


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    ui = commands.add_parser(
        "ui",
        help="start the MLflow UI on 127.0.0.1 for the same tracking store",
        description="Start the MLflow UI for the tracking store showwork search logs to (default sqlite:///mlflow.db).",
    )
    ui.add_argument("--tracking-uri", metavar="URI", help="backend store (default sqlite:///mlflow.db here)")
    ui.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; another exposes the UI)")
    ui.add_argument("--port", type=integer("--port", 1, 65535), default=5000, help="port (default 5000)")
    ui.set_defaults(handler=_run_ui)


def _run_ui(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.tracking.ui import UiSettings, serve

    return serve(UiSettings(tracking_uri(args.tracking_uri), args.host, args.port))
