"""The redaction of secrets (issue 23, item 11): which variables, which values, where it applies.

The end-to-end case, a real search whose trainable raises ``ValueError("creds " +
os.environ["AWS_SECRET_ACCESS_KEY"])``, is in ``tests/faults/test_security.py``.
"""

from __future__ import annotations

import io
import logging
import os
import stat
import threading

import pytest

from showwork.redaction import (
    MIN_SECRET_LENGTH,
    RedactedStream,
    RedactingFormatter,
    Redactor,
    is_secret_name,
    owner_only_folder,
    redact,
    secret_values,
    strip_credentials,
)

from helpers import run_cli, trial_record

SECRET = "sw-secret-xyz-123"
ENVIRONMENT = {
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "HF_TOKEN": "hf_abcdefghijkl",
    "PGPASSWORD": "pg-password-9",
    "DATABASE_URL": "postgresql://me:db-pass-77@db.example.org/x",
    "SHORT_KEY": "1",  # too short: would wreck every number
    "HOME": "/home/me",
    "PATH": "/usr/bin:/bin",
}


@pytest.mark.parametrize("name", [
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "HF_TOKEN", "WANDB_API_KEY", "MLFLOW_TRACKING_PASSWORD", "GITHUB_TOKEN",
    "CLIENT_SECRET", "DB_PASSWD", "PGPASSWORD", "AWS_ACCESS_KEY_ID", "token", "my_api_key", "SECRET",
])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["HOME", "PATH", "KEYBOARD", "TOKENIZERS_PARALLELISM", "SECRETS_DIR", "MONKEY", "PYTHONHASHSEED"])
def test_names_that_are_not_secrets(name):
    assert not is_secret_name(name)


def test_secret_values_skip_short_values_and_take_the_passwords_of_uris():
    values = secret_values(ENVIRONMENT)
    assert values == {
        SECRET: "[redacted AWS_SECRET_ACCESS_KEY]",
        "hf_abcdefghijkl": "[redacted HF_TOKEN]",
        "pg-password-9": "[redacted PGPASSWORD]",
        "db-pass-77": "[redacted DATABASE_URL password]",
    }
    assert list(values) == sorted(values, key=len, reverse=True)  # the longest first
    assert MIN_SECRET_LENGTH == 6 and "1" not in values


def test_the_issues_exception_is_redacted_and_numbers_are_kept():
    text = f"ValueError: creds {SECRET}\n  score 0.1 of 1 trial, 11 epochs"
    assert redact(text, ENVIRONMENT) == "ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]\n  score 0.1 of 1 trial, 11 epochs"
    assert redact("nothing secret here: 1, 10, 100", ENVIRONMENT) == "nothing secret here: 1, 10, 100"


def test_credentials_in_uris_are_redacted_anywhere_in_text():
    redactor = Redactor.from_environment({})
    assert redactor("cannot reach http://user:p%40ss@host:5000/api (refused)") == \
        "cannot reach http://[redacted]@host:5000/api (refused)"
    assert redactor("'postgresql://u:pa@ss@db/x'") == "'postgresql://[redacted]@db/x'"  # the last @ ends the user information
    assert redactor("https://ghp_token@github.com/o/r.git and mail me@example.org") == \
        "https://[redacted]@github.com/o/r.git and mail me@example.org"
    assert redactor("https://example.org/a@b and sqlite:////home/me/mlflow.db") == \
        "https://example.org/a@b and sqlite:////home/me/mlflow.db"  # an @ in a path is no user information


def test_a_secret_that_contains_another_is_replaced_whole():
    redactor = Redactor.from_environment({"OUTER_TOKEN": "abcdef-123456", "INNER_TOKEN": "abcdef"})
    assert redactor("x abcdef-123456 y abcdef") == "x [redacted OUTER_TOKEN] y [redacted INNER_TOKEN]"


def test_strip_credentials_is_one_function():
    import showwork.environment

    assert showwork.environment.strip_credentials is strip_credentials
    assert strip_credentials("https://u:p@h/x?token=1#f") == "https://h/x"
    assert strip_credentials("postgresql://u:pa ss@db/x") == "postgresql://db/x"


def test_the_stream_redacts_a_secret_written_in_pieces():
    out = io.StringIO()
    stream = RedactedStream(out, Redactor.from_environment(ENVIRONMENT))
    print("key:", SECRET[:5], end="", file=stream)
    assert out.getvalue() == ""  # held until the line ends
    print(SECRET[5:], "next", file=stream)
    stream.write("progress " + SECRET)
    stream.flush()
    assert out.getvalue() == "key: [redacted AWS_SECRET_ACCESS_KEY] next\nprogress [redacted AWS_SECRET_ACCESS_KEY]"
    assert stream.getvalue() == out.getvalue()  # the rest is the wrapped stream's


def test_the_stream_keeps_lines_whole_across_threads():
    out = io.StringIO()
    stream = RedactedStream(out, Redactor.from_environment(ENVIRONMENT))

    def write(n):
        for _ in range(200):
            print(f"thread {n}:", SECRET, file=stream)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == 800 and all(line.endswith(": [redacted AWS_SECRET_ACCESS_KEY]") for line in lines)


def test_the_log_formatter_redacts_messages_and_tracebacks():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(RedactingFormatter("%(levelname)s %(message)s", Redactor.from_environment(ENVIRONMENT)))
    logger = logging.getLogger("showwork.test_redaction")
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("creds " + SECRET)
        except ValueError:
            logger.exception("Trial task failed: %s", SECRET)
    finally:
        logger.removeHandler(handler)
    assert SECRET not in out.getvalue() and out.getvalue().count("[redacted AWS_SECRET_ACCESS_KEY]") == 2


def test_every_command_prints_redacted(capsys, tmp_path, monkeypatch):
    """A ledger holding a secret (a record written before redaction, or by a worker that did not know the
    driver's secret): `showwork results --csv` prints it redacted, and an error line too."""
    from showwork.store import Ledger

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    Ledger(tmp_path, "old").write(trial_record(0, status="failed", score=None, test_score=None, error=f"ValueError: creds {SECRET}"))
    code, out, err = run_cli(capsys, "results", "old", "--storage", tmp_path, "--csv")
    assert code == 0, err
    assert SECRET not in out + err and "ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]" in out
    code, out, err = run_cli(capsys, "results", f"missing-{SECRET}", "--storage", tmp_path)  # the error line too
    assert code == 2 and SECRET not in err and "missing-[redacted AWS_SECRET_ACCESS_KEY]" in err


def test_the_error_tag_is_redacted(monkeypatch):
    from showwork.tracking.mlflow_format import ERROR_TAG, trial_projection

    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijkl")
    record = trial_record(0, status="failed", score=None, test_score=None, error="RuntimeError: token hf_abcdefghijkl refused")
    tags = trial_projection(record).tags
    assert tags[ERROR_TAG] == "RuntimeError: token [redacted HF_TOKEN] refused"


def test_owner_only_folder(tmp_path):
    created = owner_only_folder(tmp_path / "a" / "mlartifacts")
    assert stat.S_IMODE(created.stat().st_mode) == 0o700
    opened = tmp_path / "ray"
    opened.mkdir()
    opened.chmod(0o755)
    assert stat.S_IMODE(owner_only_folder(opened).stat().st_mode) == 0o700
    assert os.access(opened, os.W_OK)


def test_rays_log_of_the_run_is_redacted(tmp_path, monkeypatch):
    """Ray Tune's tracebacks of failed trials go to ``STORAGE/NAME/ray/run-*.log``, redacted as the terminal is."""
    from showwork.trials.ray_setup import ray_messages_to

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    log = tmp_path / "ray" / "run-1.log"
    log.parent.mkdir()  # the search's ray/ folder, which the executor makes (Ledger.ray_folder) before the log
    with ray_messages_to(log):
        try:
            raise ValueError("creds " + SECRET)
        except ValueError:
            logging.getLogger("ray.tune").exception("Trial task failed for %s", SECRET)
    text = log.read_text()
    assert "Trial task failed" in text and "ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]" in text
    assert SECRET not in text


def test_a_reports_failure_kinds_are_redacted(monkeypatch):
    """A kind is an error's first line where it names no exception: a ledger recorded before redaction kept the secret."""
    import numpy as np

    from showwork.report.inputs import FamilyResults

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    results = FamilyResults("f", np.array([0.5, np.nan, np.nan]), ("finished", "failed", "failed"), "score",
                            failure_kinds=(None, f"the trainable called sys.exit('{SECRET}')", "ValueError"))
    assert results.failure_counts() == {"the trainable called sys.exit('[redacted AWS_SECRET_ACCESS_KEY]')": 1, "ValueError": 1}
