"""Check: derived columns (`enrich`) and the rule engine (`engine`, rules/ run in DuckDB).

Owns: the rule pack's loading and parameters, the signals rules read, findings. Takes the turn
table ingest produced; may import `ingest` (for its tables' builders), `config` and the core;
never `diagnosis`, `report` or anything downstream.
"""
