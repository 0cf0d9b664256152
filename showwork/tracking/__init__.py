"""MLflow, a projection of the ledger: its format (:mod:`~showwork.tracking.mlflow_format`: keys, tags, a
record as a run and back), the client with retries and outages (:mod:`~showwork.tracking.mlflow_client`),
the runs of a search (:mod:`~showwork.tracking.runs`: the parent and one child per trial) and the UI
(:mod:`~showwork.tracking.ui`).
"""
