"""Report: the typed, versioned report model (`types`), built once from a scan (`model`), and
the renderers that format it (`render`: text, JSON, HTML, Markdown, SARIF, JUnit, GitHub).

The model may import `diagnosis` and below. Renderers read only the model: they import no
table library, no stage that reads tables, and decide nothing (the import contracts check it).
"""
