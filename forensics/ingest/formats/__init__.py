"""File formats: one module per artifact format, each reading its files into episodes.

Owns: how a format is recognised and read, and its declaration (what the registry in
`forensics.ingest` lists). May import `ingest.api`, `ingest.parse`, the table builders
(`ingest.records`, `ingest.rows`, `ingest.jsonrecords`) and the core (`schema`, `markers`,
`limits`); never `check`, `diagnosis` or anything downstream.
"""
