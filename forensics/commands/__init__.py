"""The commands of the command line, one module per command.

`forensics.cli` lists them and imports a command's module only when it runs or when help lists
it, so each module imports nothing heavy at its top: the pipeline, the renderers and their
libraries load inside the command. A command parses its options, calls the pipeline and tools
functions, and hands the results to the renderers, the gate and the store; `shared` holds what
several commands use (errors, the settings options and their merge with `[tool.forensics]`,
the terminal style). May import every stage below it; only `forensics.cli` imports it.
"""
