"""Evaluation: datasets, metrics, runner, report."""
