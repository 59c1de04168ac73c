"""Parsing helpers shared by readers: safe file reads under the caps, JSON heads and
position-aware walks, Python-repr literals, SDK reprs, embedded objects in text, ZIP members,
typed accessors of untrusted bodies.

Owns: turning bytes and text into Python values, with positions. Knows no table and no format:
may import only the core (`limits`, `schema`, `progress`) and itself.
"""
