"""Renderers: one report model, several faces (terminal text, JSON, HTML)."""
