"""The shape of a blueprint: one cerberus schema, its defaults, and readable errors.

The same schema is exported as JSON Schema (``estategen schema``) so editors check what we
check. Static defaults live here and nowhere else; defaults derived from other keys (a team's
namespace, the Slurm cluster name) are filled by the model, which says so where it does.

Modules, each below the ones that import it: :mod:`~estategen.schema.patterns` (regular
expressions, allowed words, change policies), :mod:`~estategen.schema.rules` (the cerberus
rules up to ``BLUEPRINT``), :mod:`~estategen.schema.values` (the ``check_with`` value
checks), :mod:`~estategen.schema.validation` (``normalise``: the compiled acceptor and
cerberus, and the findings' messages) and :mod:`~estategen.schema.json_schema` (the JSON
Schema and the key documentation). ``python -m estategen.schema`` writes ``data/schema.json``.
"""
