"""``estategen import``: a site's slurm.conf (with gres.conf, topology.conf and a
``sacctmgr dump``) as a blueprint.

Nodes with the same shape (CPUs, memory, GRES, features, weight, leaf switch) and the same
partitions become one pool; a partition is the union of its pools. Global parameters follow one
table, :data:`~estategen.importer.tables.PARAMETERS` (slurm.conf key -> blueprint key path +
converter); a key the table lacks goes to ``slurm.options`` when the blueprint may pass it
through, and otherwise into a comment block naming the key, its value and its source line. A
key estategen renders whose site value is what estategen renders anyway counts as mapped.
Nothing is dropped silently: every setting read ends up in
:attr:`~estategen.importer.outcomes.Imported.outcomes`.

The modules, lowest layer first: :mod:`~estategen.importer.converters` (value parsers),
:mod:`~estategen.importer.tables` (the mapping tables), :mod:`~estategen.importer.outcomes`
(each setting's outcome, the notes, the report), :mod:`~estategen.importer.files` (the site's
files read, their settings as the target release reads them),
:mod:`~estategen.importer.accounts` (sacctmgr accounts as teams),
:mod:`~estategen.importer.parameters`, :mod:`~estategen.importer.partitions`,
:mod:`~estategen.importer.pools`, :mod:`~estategen.importer.blueprint` (the text written),
:mod:`~estategen.importer.settle` (validate and compare the render) and
:mod:`~estategen.importer.site` (:func:`~estategen.importer.site.import_site`).
"""
