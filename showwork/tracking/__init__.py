"""MLflow, a projection of the ledger.

Its format: :mod:`~showwork.tracking.mlflow_format` (tags, a record as a run and back) and
:mod:`~showwork.tracking.mlflow_keys` (names as legal MLflow keys, injectively, and back).
Reaching MLflow: :mod:`~showwork.tracking.uris` (which store), :mod:`~showwork.tracking.store` (a store
opened, created or migrated safely), :mod:`~showwork.tracking.client` (the client with retries and
outages; :mod:`~showwork.tracking.errors` says what a failure means), :mod:`~showwork.tracking.mlflow_import`
(mlflow on first use). A search's runs: :mod:`~showwork.tracking.tracker` (the parent run and the experiment),
:mod:`~showwork.tracking.trial_runs` (one child run per trial), :mod:`~showwork.tracking.parent_payload`
and :mod:`~showwork.tracking.run_entities` (what they hold), :mod:`~showwork.tracking.ledger_sync` (the
replay of a ledger). The UI: :mod:`~showwork.tracking.ui`.
"""
