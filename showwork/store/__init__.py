"""The store: a search's ledger (:mod:`showwork.store.ledger`), the source of truth of every trial.

Each trial's record is written once, atomically, by the worker that ran it; MLflow is a projection
of it (:mod:`showwork.tracking`).
"""
