"""Diagnosis: findings -> root causes, ranked, with fixes whose numbers come from the data.

Owns: causes (rules/causes.toml), the facts fix texts quote, coverage (what could not be
checked), and the scan result every output reads (`result`). May import `check`, `ingest`,
`config` and the core; never `report` or a renderer.
"""
