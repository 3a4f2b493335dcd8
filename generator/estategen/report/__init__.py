"""`estategen report`: the estate's capacity and ownership, and what looks wrong in it.

:mod:`~estategen.report.facts` gathers the facts once, :mod:`~estategen.report.pages` writes
them as Markdown and HTML, :mod:`~estategen.report.picture` draws the estate as SVG.
"""
